//! `storlab fio` with fio's size and pacing options (issue 29 part 4b), against fio 3.33 on
//! the same job files: the I/O counts of `loops`, `io_size`, `number_ios`, `rw=read:8k` and
//! `rw=read:-8k` (fio's JSON and storlab's, exactly), the offsets of `rw=read:8k`,
//! `rw=read:-8k` (backwards), strided zones (`zonesize`, `zonerange`, `zoneskip`) and
//! `rw=randread:N` with
//! `rw_sequencer` (fio's `write_iolog` and storlab's generator for the same job), the block
//! sizes of `bsrange`, `bs=A-B`, `bs_unaligned` and a `bssplit` per direction (the same
//! sizes, in fio's proportions),
//! and `thinktime`'s pauses. Skipped when fio is not installed, unless
//! `STORLAB_REQUIRE_SERVERS` is set (as tests/fio_latency.rs).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{Lab, text};
use storlab_model::{Op, Region};

/// fio run on `job` in `dir`; false when fio is not installed (and not required).
fn run_fio(dir: &Path, job: &Path, args: &[&str]) -> bool {
    let mut all = args.to_vec();
    all.push(job.to_str().expect("a UTF-8 path"));
    common::peer_fio(dir, &all).is_some()
}

/// Each job's (read + write) I/Os in fio's JSON document at `path`, by job name.
fn ios(path: &Path) -> BTreeMap<String, u64> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("json")).expect("json");
    doc["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            let n = j["read"]["total_ios"].as_u64().unwrap()
                + j["write"]["total_ios"].as_u64().unwrap();
            (j["jobname"].as_str().unwrap().to_string(), n)
        })
        .collect()
}

/// (offset, length) of each read or write in fio's `write_iolog` file.
fn iolog(path: &Path) -> Vec<(u64, u64)> {
    std::fs::read_to_string(path)
        .expect("iolog")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.as_slice() {
                [_, _, "read" | "write", o, l] => Some((o.parse().ok()?, l.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// The first `n` (offset, length) pairs storlab's generator gives thread 0 of group `group`
/// of the job file `job` (on a region of `size` bytes).
fn storlab_ops(job: &Path, group: usize, size: u64, n: usize) -> Vec<(u64, u64)> {
    let plan = storlab_study::fio::load(&[job.to_path_buf()]).expect("plan");
    let study = storlab_study::parse("fio.toml", &plan.study_text).expect("study");
    let w = &study.runs[group].targets[0].workload;
    let region = Region {
        offset_bytes: 0,
        size_bytes: size,
    };
    let mut s = w.source(region, 0, w.run_seed(1, 1, 1));
    (0..n)
        .map(|_| match s.next_op() {
            Some(Op::Read { offset, len } | Op::Write { offset, len }) => (offset, len),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Job file `NAME.fio` of `body` for storlab, and `NAME-fio.fio` that also writes fio's
/// iolog to `NAME.log`; runs fio on the second. None when fio is not installed; else
/// storlab's job file and fio's I/Os.
fn logged(lab: &Lab, name: &str, body: &str) -> Option<(std::path::PathBuf, Vec<(u64, u64)>)> {
    let ours = lab.write(&format!("{name}.fio"), body);
    let theirs = lab.write(
        &format!("{name}-fio.fio"),
        &format!("{body}write_iolog={name}.log\n"),
    );
    if !run_fio(lab.path(), &theirs, &["--output=/dev/null"]) {
        return None;
    }
    Some((ours, iolog(&lab.path().join(format!("{name}.log")))))
}

#[test]
fn io_counts_are_fios() {
    let lab = Lab::new();
    let body = "[global]\nioengine=null\nbs=4k\nrw=read\nsize=16k\n\
        [plain]\n\
        [loops]\nstonewall\nloops=3\n\
        [io_size]\nstonewall\nio_size=40k\n\
        [io_size_loops]\nstonewall\nio_size=40k\nloops=2\n\
        [io_size_small]\nstonewall\nio_size=8k\nloops=2\n\
        [number_ios]\nstonewall\nnumber_ios=3\nloops=2\n\
        [number_ios_io_size]\nstonewall\nio_size=40k\nnumber_ios=7\n\
        [holes]\nstonewall\nsize=64k\nrw=read:8k\n\
        [holes_62k]\nstonewall\nsize=62k\nrw=read:8k\n\
        [holes_loops]\nstonewall\nsize=64k\nrw=write:8k\nloops=2\n\
        [holes_wrap]\nstonewall\nsize=64k\nrw=write:4k\n\
        [random_io_size]\nstonewall\nrw=randread\nio_size=8k\nloops=2\n\
        [backwards]\nstonewall\nsize=64k\nrw=read:-8k\n\
        [zones]\nstonewall\nsize=128k\nzonemode=strided\nzonesize=16k\nzoneskip=32k\n";
    let job = lab.write("counts.fio", body);
    if !run_fio(
        lab.path(),
        &job,
        &["--output-format=json", "--output=fio.json"],
    ) {
        return;
    }
    let out = lab.path().join("storlab.json");
    let o = lab
        .cmd()
        .arg("fio")
        .args(["--output-format=json", "--output", out.to_str().unwrap()])
        .arg(&job)
        .output()
        .expect("storlab fio");
    assert!(o.status.success(), "{}", text(&o).1);
    let theirs = ios(&lab.path().join("fio.json"));
    assert_eq!(theirs.len(), 14, "{theirs:?}");
    assert_eq!(ios(&out), theirs);
    // storlab's notes are in the JSON, never on stderr.
    assert_eq!(text(&o).1, "");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let notes = doc["storlab"]["notes"].to_string();
    assert!(notes.contains("job `loops`: loops=3: one run"), "{notes}");
}

#[test]
fn offsets_are_fios() {
    let lab = Lab::new();
    // Sequential with holes: the same offsets, wrapping as fio with io_size.
    let body = "[j]\nioengine=null\nbs=4k\nsize=64k\nrw=read:8k\nio_size=64k\n";
    let Some((job, theirs)) = logged(&lab, "holes", body) else {
        return;
    };
    assert_eq!(theirs.len(), 16);
    assert_eq!(storlab_ops(&job, 0, 64 << 10, 16), theirs);
    // A hole that reaches the end wraps to the start (fio: 0, 8k, ... 56k, 0, 8k, ...).
    let body = "[j]\nioengine=null\nbs=4k\nsize=64k\nrw=write:4k\n";
    let (job, theirs) = logged(&lab, "wrap", body).expect("fio");
    assert_eq!(theirs.len(), 16);
    assert_eq!(theirs[8].0, 0, "{theirs:?}");
    assert_eq!(storlab_ops(&job, 0, 64 << 10, 16), theirs);
    // Backwards (fio's examples/backwards-read.fio): 0, then from 8k before the end down.
    let body = "[j]\nioengine=null\nbs=4k\nsize=64k\nrw=read:-8k\nio_size=96k\n";
    let (job, theirs) = logged(&lab, "backwards", body).expect("fio");
    assert_eq!(theirs.len(), 24);
    assert_eq!((theirs[1].0, theirs[15].0), (56 << 10, 0), "{theirs:?}");
    assert_eq!(storlab_ops(&job, 0, 64 << 10, 24), theirs);
    // Strided zones (fio's examples/disk-zone-profile.fio): 16k per zone, 32k skipped; a
    // range below the size goes over the zone again.
    for (name, zones) in [("zones", ""), ("zonerange", "zonerange=8k\n")] {
        let body = format!(
            "[j]\nioengine=null\nbs=4k\nsize=128k\nrw=read\nzonemode=strided\nzonesize=16k\nzoneskip=32k\n{zones}"
        );
        let (job, theirs) = logged(&lab, name, &body).expect("fio");
        assert_eq!(theirs.len(), 32, "{name}");
        assert_eq!(storlab_ops(&job, 0, 128 << 10, 32), theirs, "{name}");
    }
    // Random runs: fio's first I/O is random, then a new random offset every 3 I/Os; the
    // ones between repeat it (identical) or continue from where it ended (sequential).
    // storlab draws other random offsets (no random map), in the same runs.
    for (sequencer, step) in [("identical", 0), ("sequential", 4096)] {
        let body = format!(
            "[j]\nioengine=null\nbs=4k\nsize=1m\nrw=randread:3\nrw_sequencer={sequencer}\nio_size=96k\n"
        );
        let (job, theirs) = logged(&lab, sequencer, &body).expect("fio");
        let ours = storlab_ops(&job, 0, 1 << 20, theirs.len());
        for ops in [&theirs, &ours] {
            for run in ops.chunks(3) {
                for k in 1..run.len() {
                    assert_eq!(run[k].0, run[k - 1].0 + step, "{sequencer}: {ops:?}");
                }
            }
            let firsts: std::collections::BTreeSet<u64> = ops.chunks(3).map(|r| r[0].0).collect();
            assert!(firsts.len() > 4, "{sequencer}: random starts {ops:?}");
        }
    }
}

/// Distinct sizes and their shares.
fn shares(ops: &[(u64, u64)]) -> BTreeMap<u64, f64> {
    let mut m = BTreeMap::new();
    for (_, l) in ops {
        *m.entry(*l).or_insert(0.0) += 1.0 / ops.len() as f64;
    }
    m
}

#[test]
fn block_sizes_are_drawn_as_fios() {
    let lab = Lab::new();
    // 4k-16k: 4 sizes, a quarter each; 1k-10k: multiples of 1k up to 10k; a range per
    // direction; unaligned: any size, the largest a tenth (min / max) of the draws.
    let cases = [
        ("range", "rw=read\nbsrange=4k-16k\n"),
        ("clamp", "rw=randread\nbsrange=4k-10k\nnorandommap\n"),
        ("unaligned", "rw=read\nbsrange=1k-10k\nbs_unaligned\n"),
        // fio 3.33 reads `bs=4k-16k` as a read,write pair: reads of 4k only.
        ("pair", "rw=read\nbs=4k-16k\n"),
    ];
    for (name, options) in cases {
        let body = format!("[j]\nioengine=null\nsize=32m\n{options}");
        let Some((job, theirs)) = logged(&lab, name, &body) else {
            return;
        };
        let ours = storlab_ops(&job, 0, 32 << 20, theirs.len());
        let (t, o) = (shares(&theirs), shares(&ours));
        eprintln!(
            "{name}: {} I/Os; fio {:?}",
            theirs.len(),
            t.iter().take(12).collect::<Vec<_>>()
        );
        if name == "unaligned" {
            let max = |m: &BTreeMap<u64, f64>| m.get(&10240).copied().unwrap_or(0.0);
            assert!(
                (max(&t) - 0.1).abs() < 0.03 && (max(&o) - 0.1).abs() < 0.03,
                "{t:?} {o:?}"
            );
            for m in [&t, &o] {
                assert!(m.keys().all(|l| (1024..=10240).contains(l)));
                assert!(m.keys().filter(|l| *l % 512 != 0).count() > 100);
            }
        } else {
            assert_eq!(
                t.keys().collect::<Vec<_>>(),
                o.keys().collect::<Vec<_>>(),
                "{name}"
            );
            for (l, share) in &t {
                assert!(
                    (o[l] - share).abs() < 0.04,
                    "{name} {l}: fio {share}, storlab {}",
                    o[l]
                );
            }
        }
    }
    // Per direction: reads in 1k-4k, writes in 8k-16k.
    let body = "[j]\nioengine=null\nsize=8m\nrw=randrw\nbsrange=1k-4k,8k-16k\nnorandommap\n";
    let ((ours, _), (theirs, _)) = by_direction(&lab, "dirs", body).expect("fio");
    let keys = |m: &BTreeMap<u64, f64>| m.keys().copied().collect::<Vec<_>>();
    assert_eq!(keys(&ours[0]), keys(&theirs[0]));
    assert_eq!(keys(&ours[1]), keys(&theirs[1]));
    assert_eq!(keys(&ours[0]), [1024, 2048, 3072, 4096]);
    // A split per direction (fio's bssplit=READS,WRITES): each direction's sizes in its
    let body =
        "[j]\nioengine=null\nsize=8m\nrw=randrw\nbssplit=4k/30:64k/70,16k/40:32k/60\nnorandommap\n";
    let ((ours, n_ours), (theirs, n_theirs)) = by_direction(&lab, "split-dirs", body).expect("fio");
    assert_eq!(keys(&ours[0]), [4096, 65536]);
    assert_eq!(keys(&ours[1]), [16384, 32768]);
    for d in 0..2 {
        assert_eq!(keys(&ours[d]), keys(&theirs[d]));
        let n = (n_theirs[d] as f64, n_ours[d] as f64);
        for (l, share) in &theirs[d] {
            let sd = (share * (1.0 - share) * (1.0 / n.0 + 1.0 / n.1)).sqrt();
            assert!(
                (ours[d][l] - share).abs() < 4.0 * sd,
                "{d} {l}: fio {share} of {}, storlab {} of {}",
                n.0,
                ours[d][l],
                n.1
            );
        }
    }
}

/// Each direction's share of each size, and its I/Os.
type BySize = ([BTreeMap<u64, f64>; 2], [usize; 2]);

/// The share of each size among the reads and among the writes, and how many there are:
/// storlab's generator's first 2000 I/Os for job file `body`, and those of fio's
/// `write_iolog` (None without fio).
fn by_direction(lab: &Lab, name: &str, body: &str) -> Option<(BySize, BySize)> {
    let (job, _) = logged(lab, name, body)?;
    let log = std::fs::read_to_string(lab.path().join(format!("{name}.log"))).unwrap();
    let plan = storlab_study::fio::load(std::slice::from_ref(&job)).unwrap();
    let study = storlab_study::parse("fio.toml", &plan.study_text).unwrap();
    let w = &study.runs[0].targets[0].workload;
    let mut s = w.source(
        Region {
            offset_bytes: 0,
            size_bytes: 8 << 20,
        },
        0,
        1,
    );
    let mut ours = [Vec::new(), Vec::new()];
    for _ in 0..2000 {
        match s.next_op() {
            Some(Op::Read { len, .. }) => ours[0].push((0, len)),
            Some(Op::Write { len, .. }) => ours[1].push((0, len)),
            other => panic!("{other:?}"),
        }
    }
    let mut theirs = [Vec::new(), Vec::new()];
    for l in log.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            [_, _, "read", _, n] => theirs[0].push((0, n.parse::<u64>().unwrap())),
            [_, _, "write", _, n] => theirs[1].push((0, n.parse::<u64>().unwrap())),
            _ => {}
        }
    }
    let share =
        |v: &[Vec<(u64, u64)>; 2]| ([shares(&v[0]), shares(&v[1])], [v[0].len(), v[1].len()]);
    Some((share(&ours), share(&theirs)))
}

#[test]
fn think_time_pauses_after_every_n_ios() {
    let lab = Lab::new();
    // 16 I/Os, a 20 ms pause after every 4 (the first 5 ms spun): fio pauses 4 times
    // (after the last too), storlab 3 times (before the 5th, 9th and 13th).
    let job = lab.write(
        "think.fio",
        "[t]\nioengine=null\nbs=4k\nsize=64k\nrw=read\nthinktime=20ms\nthinktime_blocks=4\nthinktime_spin=5ms\n",
    );
    if !run_fio(
        lab.path(),
        &job,
        &["--output-format=json", "--output=fio.json"],
    ) {
        return;
    }
    let out = lab.path().join("storlab.json");
    let o = lab
        .cmd()
        .arg("fio")
        .args(["--output-format=json", "--output", out.to_str().unwrap()])
        .arg(&job)
        .output()
        .expect("storlab fio");
    assert!(o.status.success(), "{}", text(&o).1);
    let runtime = |p: &Path| {
        let d: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        d["jobs"][0]["read"]["runtime"].as_u64().unwrap()
    };
    let (theirs, ours) = (runtime(&lab.path().join("fio.json")), runtime(&out));
    eprintln!("runtime: fio {theirs} ms, storlab {ours} ms");
    assert!(theirs >= 80, "fio {theirs} ms");
    assert!(
        (60..1000).contains(&ours),
        "storlab {ours} ms: 3 pauses of 20 ms expected"
    );
    assert_eq!(ios(&out), ios(&lab.path().join("fio.json")));
}

#[test]
fn what_storlab_cannot_honour_is_refused_by_line() {
    let lab = Lab::new();
    let job = lab.write(
        "refused.fio",
        "[a]\nsize=1m\nthinktime=10\nthinktime_iotime=1s\n[b]\nfilename=b.dat\nsize=1m\nbsrange=1k-4k\nbs_unaligned\ndirect=1\n",
    );
    let o = lab
        .cmd()
        .arg("fio")
        .arg(&job)
        .output()
        .expect("storlab fio");
    let err = text(&o).1;
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("refused.fio:4: thinktime_iotime"), "{err}");
    assert!(
        err.contains("refused.fio:5: job `b`: bs_unaligned with direct=1"),
        "{err}"
    );
}

#[test]
fn files_smaller_than_the_largest_block_take_the_ios_fio_gives_them() {
    // fio 3.33 lays out 8 files of 4k-32k (multiples of 4k) and reads them in 4k-16k pieces,
    // a file drawn for each I/O: in a file smaller than 16k it draws the size again until
    // the I/O fits before the file's end. storlab's file target places the pattern source's
    // I/Os (over the largest file) in the same files: per file, the same (offset, size)
    // pairs in the same shares.
    let lab = Lab::new();
    let body = "[j]\nioengine=psync\nnrfiles=8\nfilesize=4k-32k\nbsrange=4k-16k\nrw=randread\nnorandommap\nfile_service_type=random\nio_size=1g\nnumber_ios=40000\nwrite_iolog=small.log\n";
    let job = lab.write("small.fio", body);
    if !run_fio(lab.path(), &job, &["--output=/dev/null"]) {
        return;
    }
    let size_of = |i: usize| {
        std::fs::metadata(lab.path().join(format!("j.0.{i}")))
            .expect("fio's file")
            .len()
    };
    let sizes: Vec<u64> = (0..8).map(size_of).collect();
    let largest = *sizes.iter().max().unwrap();
    assert!(sizes.iter().any(|s| *s < 16384), "no small file: {sizes:?}");
    let mut theirs: Vec<BTreeMap<(u64, u64), f64>> = vec![BTreeMap::new(); 8];
    let log = std::fs::read_to_string(lab.path().join("small.log")).expect("iolog");
    for l in log.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let [_, file, "read", o, n] = f.as_slice() {
            let i: usize = file.rsplit('.').next().unwrap().parse().unwrap();
            let (o, n) = (o.parse::<u64>().unwrap(), n.parse::<u64>().unwrap());
            assert!(o + n <= sizes[i], "fio: {file} {o} {n} {sizes:?}");
            *theirs[i].entry((o, n)).or_insert(0.0) += 1.0;
        }
    }
    let w = storlab_workload::block::BlockWorkload::from_table(
        toml::from_str("block-size-range = { min = \"4KiB\", max = \"16KiB\" }").unwrap(),
    )
    .unwrap();
    let draw = storlab_workload::block::size_draw::SizeDraw::of(&w);
    let mut s = storlab_workload::Workload::Block(w).source(
        Region {
            offset_bytes: 0,
            size_bytes: largest,
        },
        0,
        1,
    );
    let mut picker = storlab_targets::file::set::Picker::new(
        sizes.clone(),
        storlab_targets::file::FileService::Random,
        false,
        3,
        Some(draw),
    );
    let mut ours: Vec<BTreeMap<(u64, u64), f64>> = vec![BTreeMap::new(); 8];
    for _ in 0..40_000 {
        let Some(Op::Read { offset, len }) = s.next_op() else {
            panic!("a read")
        };
        let (i, at, n) = picker.pick(offset, len, false);
        assert!(at + n <= sizes[i], "storlab: {i} {at} {n} {sizes:?}");
        *ours[i].entry((at, n)).or_insert(0.0) += 1.0;
    }
    for i in 0..8 {
        let total = |m: &BTreeMap<(u64, u64), f64>| m.values().sum::<f64>().max(1.0);
        let (tt, to) = (total(&theirs[i]), total(&ours[i]));
        let keys: std::collections::BTreeSet<_> = theirs[i].keys().chain(ours[i].keys()).collect();
        eprintln!(
            "file {i} of {} bytes: {} I/Os of fio, {} of storlab, {} pairs",
            sizes[i],
            tt,
            to,
            keys.len()
        );
        // About 5,000 I/Os per file: a share's standard error is at most 0.007, that of a
        // difference 0.01; 0.035 is 3.5 of them.
        for k in keys {
            let (t, o) = (
                theirs[i].get(k).copied().unwrap_or(0.0) / tt,
                ours[i].get(k).copied().unwrap_or(0.0) / to,
            );
            assert!(
                (t - o).abs() < 0.035,
                "file {i} ({} bytes), offset {} size {}: fio {t:.3}, storlab {o:.3}",
                sizes[i],
                k.0,
                k.1
            );
        }
    }
}
