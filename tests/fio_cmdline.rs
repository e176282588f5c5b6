//! `storlab fio` on fio's command line, the way most fio runs are written: one-line commands
//! as public guides give them (random and sequential, mixes, latency at queue depth 1,
//! `--numjobs` with `--group_reporting`, `--direct=1`, libaio and io_uring), each run by
//! Debian's fio 3.33 and by `storlab fio` on the same job, shrunk to a few MiB: both accept it
//! and, the jobs being bounded by their size, both move the same bytes in the same number of
//! I/Os; then options that fio's own examples use. Also fio's streams and exit codes: a run that succeeds writes nothing on stderr and
//! no folder in the current one; a refused job exits 1.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{Lab, text};

/// One-line fio commands (job options only; each runs in a folder of its own).
const COMMANDS: &[&str] = &[
    "--name=randread --ioengine=libaio --iodepth=16 --rw=randread --bs=4k --direct=1 --size=4m --numjobs=1",
    "--name=randwrite --ioengine=libaio --iodepth=16 --rw=randwrite --bs=4k --direct=1 --size=4m",
    "--name=seqread --rw=read --bs=1m --size=8m --ioengine=libaio --iodepth=8 --direct=1",
    "--name=seqwrite --rw=write --bs=1m --size=8m --ioengine=libaio --iodepth=8 --direct=1",
    "--name=uring --ioengine=io_uring --iodepth=32 --rw=randread --bs=4k --direct=1 --size=4m",
    "--name=qd1 --rw=randread --bs=4k --iodepth=1 --numjobs=1 --size=2m --ioengine=psync --direct=1",
    "--name=four --rw=randread --bs=4k --size=2m --numjobs=4 --group_reporting --ioengine=libaio --direct=1",
    "--name=write_iops --filename=wiops.dat --size=4m --ioengine=libaio --direct=1 --verify=0 --bs=4k --iodepth=64 --rw=randwrite --randrepeat=0 --group_reporting=1",
    "--name=seq128 --rw=write --bs=128k --size=8m --numjobs=2 --group_reporting --ioengine=psync --end_fsync=1",
    "--name=rwseq --rw=rw --bs=16k --size=16m --ioengine=sync",
    "--rw=write --ioengine=sync --fdatasync=1 --directory=. --size=1m --bs=2300 --name=mytest",
    "--name=mixed --rw=randrw --rwmixread=70 --bs=8k --size=4m --ioengine=libaio --iodepth=8 --direct=1 --numjobs=2 --group_reporting",
    "--name=randrw75 --rw=randrw --rwmixread=75 --bs=4k --size=4m --ioengine=libaio --iodepth=32 --direct=1",
    "--name=buffered --rw=read --bs=256k --size=8m --ioengine=psync",
    "--name=offset --rw=read --bs=4k --size=1m --offset=1m --filename=offset.dat",
    "--name=loops --rw=read --bs=64k --size=2m --loops=2",
    "--name=iosize --rw=randread --bs=4k --size=4m --io_size=1m",
    "--name=files --rw=write --bs=4k --size=4m --nrfiles=4",
    "--name=a --rw=randread --bs=4k --size=2m --name=b --rw=randwrite --bs=4k --size=2m",
    "--rw=randread --bs=4k --size=2m --ioengine=pvsync --name=g1 --name=g2",
    // Options of fio's own examples/ (backwards-read, disk-zone-profile, cmdprio-percentage,
    // waitfor): the same bytes and I/Os.
    "--name=back --rw=read:-8k --bs=4k --size=1m",
    "--name=zones --rw=read --bs=4k --size=2m --zonemode=strided --zonesize=64k --zoneskip=128k",
    "--name=prio --ioengine=libaio --iodepth=8 --rw=randread --bs=4k --direct=1 --size=2m --prioclass=3 --cmdprio_percentage=20 --cmdprio_class=1",
    "--filename=wf.dat --filesize=1m --threads=1 --name=w --rw=write --bs=64k --name=r --new_group --wait_for=w --rw=randread --bs=4k",
    "--filename=shared.dat --size=2m --bs=4k --name=w --rw=write --name=r --rw=randread",
];

/// fio's JSON per job name: per direction (read, write), (io_bytes, total_ios).
fn per_job(doc: &serde_json::Value) -> BTreeMap<String, [(u64, u64); 2]> {
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            let dir = |d: &str| {
                (
                    j[d]["io_bytes"].as_u64().unwrap_or(0),
                    j[d]["total_ios"].as_u64().unwrap_or(0),
                )
            };
            (
                j["jobname"].as_str().unwrap().to_string(),
                [dir("read"), dir("write")],
            )
        })
        .collect()
}

/// fio 3.33 on `args` in `dir`: its JSON document; None when fio is not installed (and not
/// required).
fn run_fio(dir: &Path, args: &[&str]) -> Option<serde_json::Value> {
    let mut all = args.to_vec();
    all.push("--output-format=json");
    let o = common::peer_fio(dir, &all)?;
    let (out, _) = text(&o);
    // fio prints notes ("fio: ...") before the document on some jobs.
    let at = out.find('{').expect("fio's JSON");
    Some(serde_json::from_str(&out[at..]).expect("fio's JSON"))
}

/// `storlab fio` on `args` in a folder of its own: its JSON document. It must succeed and
/// write nothing on stderr.
fn run_storlab(args: &[&str]) -> serde_json::Value {
    let lab = Lab::new();
    let out = lab.path().join("out.json");
    let o = lab
        .cmd()
        .arg("fio")
        .args(args)
        .args(["--output-format=json", "--output", out.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "storlab fio {args:?}: {err}");
    assert_eq!(err, "", "storlab fio {args:?}: stderr");
    serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
}

#[test]
fn one_line_commands_move_what_fio_moves() {
    for line in COMMANDS {
        let args: Vec<&str> = line.split(' ').collect();
        let fio_lab = Lab::new();
        let Some(want) = run_fio(fio_lab.path(), &args) else {
            return;
        };
        let got = run_storlab(&args);
        let (want, got) = (per_job(&want), per_job(&got));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>(),
            "{line}"
        );
        for (name, w) in &want {
            let g = got[name];
            let total = |d: [(u64, u64); 2]| (d[0].0 + d[1].0, d[0].1 + d[1].1);
            assert_eq!(total(g), total(*w), "{line}: job {name}: bytes and I/Os");
            if line.contains("--rw=randrw") || line.contains("--rw=rw ") {
                // A mix draws each I/O's direction: the split is each tool's own draw (both
                // seeded the same way every time), the same share within four standard
                // deviations of the difference of two such draws.
                let share = |d: [(u64, u64); 2]| d[0].1 as f64 / (d[0].1 + d[1].1) as f64;
                let (p, n) = (share(*w), (w[0].1 + w[1].1) as f64);
                let tolerance = 4.0 * (2.0 * p * (1.0 - p) / n).sqrt();
                assert!(
                    (share(g) - p).abs() < tolerance,
                    "{line}: job {name}: read share {} vs fio's {p} (tolerance {tolerance})",
                    share(g)
                );
            } else {
                assert_eq!(g, *w, "{line}: job {name}: per direction");
            }
        }
    }
}

#[test]
fn a_successful_run_writes_only_its_output_and_keeps_results_per_user() {
    let lab = Lab::new();
    let home = lab.path().join("home");
    let work = lab.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let o = Command::new(common::bin())
        .args(["fio", "--name=t", "--rw=randread", "--bs=4k", "--size=1m"])
        .args(["--filename=x.dat", "--runtime=200ms", "--time_based"])
        .current_dir(&work)
        .env_remove("STORLAB_RESULTS")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", &home)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert_eq!(err, "", "nothing on stderr");
    let results = home.join(".local/share/storlab/results");
    assert!(
        out.starts_with(&format!("storlab: results: {}/fio-", results.display())),
        "{out}"
    );
    assert!(out.contains("\nt: (groupid=0, jobs=1): err= 0: "), "{out}");
    let mut here: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    here.sort();
    assert_eq!(here, ["x.dat"], "only the job's file in the current folder");
    let stored = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("fio-"))
        .expect("the study folder");
    let jobs = std::fs::read_to_string(stored.path().join("fio-jobs/0-command-line.fio")).unwrap();
    assert_eq!(
        jobs,
        "[t]\nrw=randread\nbs=4k\nsize=1m\nfilename=x.dat\nruntime=200ms\ntime_based\n"
    );
}

#[test]
fn fio_flags_check_show_and_refuse_as_fio_does() {
    let lab = Lab::new();
    let run = |args: &[&str]| {
        let o = lab.cmd().arg("fio").args(args).output().unwrap();
        let (out, err) = text(&o);
        (o.status.code(), out, err)
    };
    // A refused option exits 1, naming its argument.
    let (code, _, err) = run(&["--name=a", "--bs=4q", "--size=1m"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("command line, argument 2: bs=4q: "), "{err}");
    // --parse-only and --showcmd run nothing.
    let (code, out, err) = run(&["--parse-only", "--name=a", "--rw=write", "--size=1m"]);
    assert_eq!((code, out.as_str(), err.as_str()), (Some(0), "", ""));
    assert!(!lab.path().join("a.0.0").exists());
    let job = lab.write("j.fio", "[global]\nbs=8k\n[w]\nrw=write\nsize=1m\n");
    let (code, out, _) = run(&["--showcmd", "--name=c", "--rw=read", job.to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "fio --name=c --rw=read\nfio --name=global --bs=8k --name=w --rw=write --size=1m\n"
    );
    // --readonly refuses a job that writes; --section picks the jobs that run.
    let (code, _, err) = run(&["--readonly", job.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("job <w> has write bit set"), "{err}");
    let two = lab.write(
        "two.fio",
        "[global]\nioengine=null\nsize=1m\n[r]\nrw=read\n[w]\nrw=write\n",
    );
    let (code, out, err) = run(&[
        "--section=r",
        "--readonly",
        "--output-format=terse",
        two.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("3;fio-3.33;r;"), "{out}");
    // fio's flags that storlab cannot honour are refused by name; --version says storlab.
    let (code, _, err) = run(&["--debug=io", "--name=a", "--size=1m"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--debug=io"), "{err}");
    let (code, out, _) = run(&["--version"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("storlab-"), "{out}");
    let (code, _, err) = run(&["--output-format=xml", "--name=a", "--size=1m"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("`xml` is not one of fio's formats"), "{err}");
}

/// fio's flow control (examples/flow.fio): two jobs with weights 1 and 8 on one flow id do
/// their I/Os in that proportion, under fio and under storlab.
#[test]
fn flow_keeps_the_weights_proportion() {
    let args = [
        "--ioengine=null",
        "--size=1g",
        "--bs=4k",
        "--time_based",
        "--runtime=1",
        "--name=light",
        "--rw=write",
        "--flow=1",
        "--flow_sleep=100",
        "--name=heavy",
        "--rw=randread",
        "--flow=8",
    ];
    let fio_lab = Lab::new();
    let Some(want) = run_fio(fio_lab.path(), &args) else {
        return;
    };
    let got = run_storlab(&args);
    let ratio = |doc: &serde_json::Value| {
        let ios = per_job(doc);
        let n = |j: &str| (ios[j][0].1 + ios[j][1].1) as f64;
        (n("heavy") / n("light"), ios)
    };
    // fio's gate holds a job back by sleeping, so how close fio comes to 8 depends on how
    // its threads were scheduled (4.4 on a loaded 2-core CI machine): it must favour the
    // heavy job, no more. storlab's gate counts operations, so it keeps the weights'
    // proportion however the workers are scheduled.
    let (fio_ratio, fio_ios) = ratio(&want);
    assert!(
        fio_ratio > 2.0,
        "fio: heavy/light {fio_ratio} ({fio_ios:?})"
    );
    let (got_ratio, got_ios) = ratio(&got);
    assert!(
        (7.5..8.5).contains(&got_ratio),
        "storlab: heavy/light {got_ratio} (fio {fio_ratio}; {got_ios:?})"
    );
}

/// The MiB of `path` that hold written data (not zeros).
fn written_mib(path: &Path) -> Vec<usize> {
    let data = std::fs::read(path).unwrap();
    data.chunks(1 << 20)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|b| *b != 0))
        .map(|(i, _)| i)
        .collect()
}

/// offset_increment: each clone of a job on one file starts its increment further (in bytes,
/// or a share of the file's size), each reported apart, as fio 3.33 places and reports them.
#[test]
fn offset_increment_places_each_clone_where_fio_does() {
    let lab = Lab::new();
    for (name, inc) in [
        ("bytes", "--offset_increment=8m"),
        ("share", "--offset_increment=25%"),
    ] {
        let mut placed = Vec::new();
        for tool in ["fio", "storlab"] {
            let file = lab.path().join(format!("{name}-{tool}.dat"));
            // A 20 MiB file of zeros: the share is of its size.
            std::fs::write(&file, vec![0u8; 20 << 20]).unwrap();
            let filename = format!("--filename={}", file.display());
            let args = [
                "--name=t",
                filename.as_str(),
                "--rw=write",
                "--bs=64k",
                "--size=1m",
                "--numjobs=3",
                inc,
            ];
            let doc = if tool == "fio" {
                match run_fio(lab.path(), &args) {
                    Some(d) => d,
                    None => return,
                }
            } else {
                run_storlab(&args)
            };
            let bytes: Vec<u64> = doc["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["write"]["io_bytes"].as_u64().unwrap())
                .collect();
            placed.push((written_mib(&file), bytes));
        }
        assert_eq!(placed[0], placed[1], "{name}: fio, then storlab");
        let want = if name == "bytes" {
            [0, 8, 16]
        } else {
            [0, 5, 10]
        };
        assert_eq!(placed[1].0, want, "{name}");
        assert_eq!(placed[1].1, [1 << 20; 3], "{name}");
    }
}
