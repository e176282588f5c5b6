//! fio's file engines (`filecreate`, `filestat`, `filedelete`, `ftruncate`, `falloc`) under
//! Debian's fio 3.33 and `storlab fio`: one small job per engine, run by each in a folder of
//! its own. What is measurable must match: the I/Os and bytes counted per direction (falloc's
//! punched holes under trim), the timed operations (fio's `clat_ns` samples, one per
//! file for the set engines, which record no `lat_ns`), the files created or removed, and the sizes and allocated
//! blocks that ftruncate and falloc leave.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{Lab, text};

/// One job: its fio options, and what it leaves in its folder.
struct Case {
    args: &'static str,
    after: fn(&Path) -> String,
}

/// The names and sizes of the folder's files (`results` and the outputs aside).
fn listing(dir: &Path) -> String {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json"))
        .map(|n| format!("{n}:{}", std::fs::metadata(dir.join(&n)).unwrap().len()))
        .collect();
    files.sort();
    files.join(" ")
}

/// A file's size and allocated bytes, in whole 64 KiB (the filesystem may add a block of
/// its own, an extent tree's, when the allocations it was asked for were not contiguous).
fn extent(dir: &Path, name: &str) -> String {
    let m = std::fs::metadata(dir.join(name)).unwrap();
    let units = m.blocks() * 512 / 65536;
    format!("{name}: {} bytes, {units} x 64 KiB allocated", m.len())
}

const CASES: &[Case] = &[
    Case {
        args: "--name=fc --ioengine=filecreate --create_on_open=1 --nrfiles=40 --filesize=4k --openfiles=1 --fallocate=none",
        after: listing,
    },
    Case {
        args: "--name=fs --ioengine=filestat --nrfiles=30 --filesize=4k --thread",
        after: listing,
    },
    Case {
        args: "--name=fx --ioengine=filestat --nrfiles=10 --filesize=4k --stat_type=statx",
        after: listing,
    },
    Case {
        args: "--name=fd --ioengine=filedelete --nrfiles=30 --filesize=4k --unlink=0 --rw=write",
        after: listing,
    },
    Case {
        args: "--name=tr --ioengine=ftruncate --filename=tr.dat --size=1m --bs=4k --rw=write",
        after: |d| extent(d, "tr.dat"),
    },
    Case {
        args: "--name=fa --ioengine=falloc --filename=fa.dat --size=1m --bs=64k --rw=write --fallocate=none",
        after: |d| extent(d, "fa.dat"),
    },
    Case {
        args: "--name=pt --ioengine=falloc --filename=pt.dat --nrfiles=1 --filesize=1m --bs=64k --rw=trim",
        after: |d| extent(d, "pt.dat"),
    },
];

/// Per direction (read, write, trim): (io_bytes, total_ios, clat samples, lat samples) of the
/// one job (fio's set engines record only clat).
fn counts(doc: &serde_json::Value) -> [(u64, u64, u64, u64); 3] {
    let j = &doc["jobs"][0];
    ["read", "write", "trim"].map(|d| {
        let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        (
            n(&j[d]["io_bytes"]),
            n(&j[d]["total_ios"]),
            n(&j[d]["clat_ns"]["N"]),
            n(&j[d]["lat_ns"]["N"]),
        )
    })
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn each_file_engine_counts_and_leaves_what_fio_does() {
    for case in CASES {
        let args: Vec<&str> = case.args.split(' ').collect();
        let fio_lab = Lab::new();
        let mut fio_args = args.clone();
        fio_args.extend(["--output-format=json", "--output=fio.json"]);
        if common::peer_fio(fio_lab.path(), &fio_args).is_none() {
            return;
        }
        let want = counts(&json(&fio_lab.path().join("fio.json")));
        let lab = Lab::new();
        let o = lab
            .cmd()
            .arg("fio")
            .args(&args)
            .args(["--output-format=json", "--output=storlab.json"])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "storlab fio {}: {}",
            case.args,
            text(&o).1
        );
        let got = counts(&json(&lab.path().join("storlab.json")));
        assert_eq!(
            got, want,
            "{}: (bytes, I/Os, clat and lat samples) per direction",
            case.args
        );
        assert_eq!(
            (case.after)(lab.path()),
            (case.after)(fio_lab.path()),
            "{}: the files left",
            case.args
        );
    }
}

#[test]
fn what_fio_does_otherwise_is_refused_before_anything_runs() {
    for (args, why) in [
        (
            "--name=r --ioengine=ftruncate --filename=r.dat --size=1m --rw=read",
            "EINVAL",
        ),
        (
            "--name=s --ioengine=filestat --nrfiles=4 --filesize=8k",
            "one file operation per file",
        ),
        ("--name=t --rw=trim --size=1m", "does not trim"),
    ] {
        let lab = Lab::new();
        let o = lab.cmd().arg("fio").args(args.split(' ')).output().unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{args}: {err}");
        assert!(err.contains(why), "{args}: {err}");
        assert!(!lab.path().join("r.dat").exists() && !lab.path().join("s.0.0").exists());
    }
}
