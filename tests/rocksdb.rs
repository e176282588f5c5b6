//! The embedded RocksDB target end to end, through the real binary: every db_bench benchmark
//! storlab supports runs and counts as db_bench counts; db_bench's flags are taken or refused by
//! name; and the RocksDB brief's scaling study runs in quick mode on loop-device filesystems,
//! its results holding every figure the brief reports.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Lab, root_or_skip, text};
use serde_json::Value;

fn dbbench(lab: &Lab, flags: &str) -> Vec<Value> {
    let mut args = vec!["dbbench", "--json"];
    args.extend(flags.split_whitespace());
    let out = lab.run(&args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "storlab {args:?}: {stderr}");
    serde_json::from_str::<Vec<Value>>(&stdout).expect("summaries as JSON")
}

fn target(s: &Value) -> &Value {
    &s["targets"][0]
}

fn kind<'a>(s: &'a Value, op: &str) -> &'a Value {
    &target(s)["kinds"][op]
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn every_db_bench_benchmark_runs_and_counts_as_db_bench() {
    let lab = Lab::new();
    let db = lab.path().join("db");
    let n = 3000u64;
    let base = format!(
        "--num={n} --value_size=512 --db={} --compression_type=none",
        db.display()
    );

    // fillseq puts every key once: readrandom then finds every key it looks for.
    let runs = dbbench(
        &lab,
        &format!("{base} --benchmarks=fillseq,readrandom,readseq --threads=2 --reads=1000"),
    );
    assert_eq!(runs.len(), 3);
    assert_eq!(
        u(&kind(&runs[0], "write")["ops"]),
        2 * n,
        "fillseq: num writes per thread"
    );
    let reads = kind(&runs[1], "read");
    assert_eq!(
        u(&reads["ops"]),
        2000,
        "readrandom: reads per thread x threads"
    );
    assert_eq!(u(&reads["misses"]), 0, "after fillseq every key is found");
    assert_eq!(u(&kind(&runs[2], "read")["ops"]), 2000);
    assert_eq!(u(&kind(&runs[2], "read")["misses"]), 0);
    // Bytes read are key + value for each found key, as db_bench counts them.
    assert_eq!(u(&reads["bytes"]), 2000 * (16 + 512));

    // fillrandom puts num random keys: about 1 - 1/e of the key space exists afterwards.
    let runs = dbbench(
        &lab,
        &format!("{base} --benchmarks=fillrandom,readrandom --reads=20000"),
    );
    let r = kind(&runs[1], "read");
    let found = (u(&r["ops"]) - u(&r["misses"])) as f64 / u(&r["ops"]) as f64;
    assert!(
        (found - 0.632).abs() < 0.03,
        "found share after fillrandom: {found}"
    );

    // overwrite, updaterandom and deleterandom on the existing database.
    let runs = dbbench(
        &lab,
        &format!(
            "{base} --benchmarks=overwrite,updaterandom,deleterandom,readrandom --use_existing_db=1 --reads=5000"
        ),
    );
    assert_eq!(u(&kind(&runs[0], "write")["ops"]), n);
    let rmw = kind(&runs[1], "read-modify-write");
    assert_eq!(
        u(&rmw["ops"]),
        5000,
        "updaterandom: max(reads, writes) per thread"
    );
    assert!(u(&rmw["misses"]) < 5000 / 2);
    assert_eq!(u(&kind(&runs[2], "delete")["ops"]), n);
    // Deleting num random keys leaves about 1/e of what was there.
    let r = kind(&runs[3], "read");
    let found = (u(&r["ops"]) - u(&r["misses"])) as f64 / u(&r["ops"]) as f64;
    assert!(found < 0.5, "found share after deleterandom: {found}");

    // readwhilewriting: the writer's puts are kept apart from the readers' figures.
    let runs = dbbench(
        &lab,
        &format!(
            "{base} --benchmarks=readwhilewriting --use_existing_db=1 --threads=2 --duration=1 --benchmark_write_rate_limit=262144"
        ),
    );
    let s = &runs[0];
    assert!(
        target(s)["kinds"].get("write").is_none(),
        "readers only in the target: {s}"
    );
    let w = &s["background"][0];
    assert_eq!(w["name"], "db:writer");
    let puts = u(&w["kinds"]["write"]["ops"]) as f64;
    // 256 KiB/s of 528-byte puts is about 496 puts in one second.
    assert!((300.0..700.0).contains(&puts), "writer puts: {puts}");
    assert_eq!(target(s)["threads"], 2);

    // The stored summary says which library ran.
    assert_eq!(s["software"]["db.rocksdb"], "7.8.3");
}

#[test]
fn db_bench_style_lines_and_refused_flags() {
    let lab = Lab::new();
    let db = lab.path().join("db");
    let out = lab.run(&[
        "dbbench",
        "--benchmarks=fillrandom,readrandom",
        "--num=2000",
        &format!("--db={}", db.display()),
        "--histogram=1",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("readrandom   :"))
        .unwrap_or_else(|| panic!("no readrandom line in:\n{stdout}"));
    assert!(
        line.contains("micros/op") && line.contains("ops/sec") && line.contains("of 2000 found"),
        "{line}"
    );
    assert!(stdout.contains("Percentiles: P50:"), "{stdout}");

    for bad in [
        "--max_bytes_for_level_base=1048576",
        "--statistics",
        "--num_levels=4",
    ] {
        let out = lab.run(&["dbbench", "--num=10", bad]);
        let name = bad.trim_start_matches("--").split('=').next().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad} must be refused");
        let (_, stderr) = text(&out);
        assert!(stderr.contains(&format!("--{name}")), "{bad}: {stderr}");
    }
    let out = lab.run(&["dbbench", "--benchmarks=fillrandom,seekrandom"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("seekrandom"));

    // A database storlab did not create is never destroyed by a fill.
    let foreign = lab.path().join("foreign");
    let out = lab.run(&[
        "dbbench",
        "--benchmarks=fillseq",
        "--num=100",
        &format!("--db={}", foreign.display()),
    ]);
    assert!(out.status.success());
    std::fs::remove_file(foreign.join("STORLAB-DB")).unwrap();
    let out = lab.run(&[
        "dbbench",
        "--benchmarks=fillseq",
        "--num=100",
        &format!("--db={}", foreign.display()),
    ]);
    assert!(!out.status.success());
    assert!(text(&out).1.contains("did not create"), "{}", text(&out).1);
    assert!(foreign.join("CURRENT").exists());
}

/// A mounted loop-device filesystem, removed on drop.
struct LoopFs {
    dev: String,
    mount: PathBuf,
}

impl LoopFs {
    fn new(dir: &Path, name: &str, mkfs: &[&str], size_mib: usize) -> Option<LoopFs> {
        let img = dir.join(format!("{name}.img"));
        let f = std::fs::File::create(&img).ok()?;
        f.set_len((size_mib as u64) << 20).ok()?;
        let out = Command::new("losetup")
            .args(["--find", "--show", img.to_str()?])
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mount = dir.join(name);
        std::fs::create_dir_all(&mount).ok()?;
        let fs = LoopFs { dev, mount };
        let ok = Command::new(mkfs[0])
            .args(&mkfs[1..])
            .arg(&fs.dev)
            .output()
            .ok()?
            .status
            .success()
            && Command::new("mount")
                .arg(&fs.dev)
                .arg(&fs.mount)
                .status()
                .ok()?
                .success();
        ok.then_some(fs)
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn rocksdb_scaling_study_runs_quick_on_loop_device_filesystems() {
    if !root_or_skip("loop devices") {
        return;
    }
    let lab = Lab::new();
    let mut filesystems = Vec::new();
    for (name, mkfs) in [
        ("ext4", vec!["mkfs.ext4", "-q", "-F"]),
        ("xfs", vec!["mkfs.xfs", "-q", "-f"]),
        ("btrfs", vec!["mkfs.btrfs", "-q", "-f"]),
    ] {
        let fs = LoopFs::new(lab.path(), name, &mkfs, 400)
            .unwrap_or_else(|| panic!("could not make a {name} filesystem on a loop device"));
        filesystems.push(fs);
    }
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/rocksdb-scaling.toml");
    let out = lab
        .cmd()
        .args(["run", study.to_str().unwrap(), "--quick", "-q"])
        .env("STORLAB_ROCKSDB_A", filesystems[0].mount.join("db"))
        .env("STORLAB_ROCKSDB_B", filesystems[1].mount.join("db"))
        .env("STORLAB_ROCKSDB_C", filesystems[2].mount.join("db"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("call-out: readrandom:"), "{stdout}");

    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("rocksdb-scaling-")
        })
        .expect("study folder")
        .path();
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("comparison.json")).unwrap())
            .unwrap();
    let steps = c["steps"].as_array().unwrap();
    for name in ["readrandom", "readwhilewriting"] {
        let step = steps
            .iter()
            .find(|s| s["step"] == name)
            .unwrap_or_else(|| panic!("no {name} in comparison.json"));
        let points = step["points"].as_array().unwrap();
        let threads: Vec<&str> = points
            .iter()
            .map(|p| p["parameters"]["threads"].as_str().unwrap())
            .collect();
        assert_eq!(threads, ["8", "16", "32", "64", "96", "128"]);
        for p in points {
            let ts = p["targets"].as_array().unwrap();
            assert_eq!(ts.len(), 3, "three targets at every point: {p}");
            for t in ts {
                assert!(t["rate-ops"].as_f64().unwrap() > 0.0, "{t}");
                assert!(t["mean-latency-ns"].as_f64().unwrap() > 0.0, "{t}");
                assert!(t["p99-latency-ns"].as_u64().unwrap() > 0, "{t}");
            }
        }
        // The call-outs set the reference (ssd-a, the study's `reference-target`) against
        // each other target: the largest of its ratios and improvements over the points.
        let of = |p: &Value, name: &str, key: &str| {
            p["targets"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["target"] == name)
                .unwrap_or_else(|| panic!("no {name} in {p}"))[key]
                .as_f64()
                .unwrap()
        };
        let largest = |f: &dyn Fn(&Value, &str) -> f64| {
            points
                .iter()
                .flat_map(|p| ["ssd-b", "ssd-c"].map(|other| f(p, other)))
                .fold(f64::MIN, f64::max)
        };
        let ratio = &step["largest-ops-ratio"];
        let max_ratio = largest(&|p, o| of(p, "ssd-a", "rate-ops") / of(p, o, "rate-ops"));
        assert!(
            (ratio["value"].as_f64().unwrap() - max_ratio).abs() < 1e-9,
            "{ratio}"
        );
        let p99 = &step["largest-p99-improvement"];
        let max_p99 =
            largest(&|p, o| 1.0 - of(p, "ssd-a", "p99-latency-ns") / of(p, o, "p99-latency-ns"));
        assert!(
            (p99["value"].as_f64().unwrap() - max_p99).abs() < 1e-9,
            "{p99}"
        );
        for c in [ratio, p99] {
            assert_eq!(c["best"], "ssd-a", "{c}");
        }
        // Each call-out says how sure it is: quick runs last one interval, too little for an
        // interval, and the text says so.
        for c in [ratio, &step["largest-p99-improvement"]] {
            let text = c["text"].as_str().unwrap();
            match c.get("interval") {
                Some(i) => assert!(text.contains("95% CI") && i["confidence"] == 0.95, "{c}"),
                None => assert!(
                    text.ends_with("(no interval: too little measured to tell how sure)"),
                    "{c}"
                ),
            }
        }
    }

    // Each readrandom run found every key the load put, and the page cache was dropped first.
    let mut checked = 0;
    for e in std::fs::read_dir(&folder).unwrap().flatten() {
        let p = e.path().join("summary.json");
        let Ok(t) = std::fs::read_to_string(&p) else {
            continue;
        };
        let s: Value = serde_json::from_str(&t).unwrap();
        if s["step"] == "readrandom" {
            let r = kind(&s, "read");
            assert_eq!(u(&r["misses"]), 0, "{}", p.display());
            assert!(
                s["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["kind"] == "page-cache-dropped"),
                "{}",
                p.display()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 18);

    // The brief's call-outs sit beside the ones measured here.
    let out = lab
        .cmd()
        .args([
            "report",
            "--format",
            "md",
            "-o",
            "-",
            folder.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (md, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("(Call-outs)")).collect();
    assert_eq!(rows.len(), 4, "{md}");
    for (row, published) in rows.iter().zip(["1.59x", "54%", "2.1x", "49%"]) {
        assert!(
            row.contains(published) && row.contains("ssd-a vs ssd-"),
            "{row}"
        );
        assert!(!row.contains("not measured here"), "{row}");
    }
}

/// The share of a readrandom run's gets that found their key.
fn found_share(s: &Value) -> f64 {
    let r = kind(s, "read");
    (u(&r["ops"]) - u(&r["misses"])) as f64 / u(&r["ops"]) as f64
}

#[test]
fn reads_after_a_random_fill_find_one_minus_one_over_e_of_the_keys() {
    // num random puts over num keys leave 1 - (1 - 1/num)^num = 1 - 1/e of them in the
    // database; reads drawn independently of the fill find that share. A read that replays the
    // fill's key sequence finds every key it looks for.
    let expected = 1.0 - (-1.0f64).exp();
    let lab = Lab::new();
    let db = lab.path().join("db");
    let n = 200_000u64;
    // A study whose fill and read workloads leave `seed` at its default, as the brief does.
    let study = lab.write(
        "fill-read.toml",
        &format!(
            r#"[targets.db]
type = "rocksdb"
path = "{db}"
compression = "none"

[workloads.fill]
type = "db-bench"
benchmark = "fillrandom"
num = {n}

[workloads.read]
type = "db-bench"
benchmark = "readrandom"
num = {n}

[[steps]]
workload = "fill"
targets = ["db"]
ops = {n}

[[steps]]
workload = "read"
targets = ["db"]
ops = {n}
"#,
            db = db.display()
        ),
    );
    let out = lab.run(&["run", "--json", "-q", study.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let runs: Vec<Value> = serde_json::from_str(&stdout).expect("summaries as JSON");
    let found = found_share(&runs[1]);
    assert!(
        (found - expected).abs() < 0.005,
        "the study's readrandom after fillrandom found {:.2}% of its keys, not {:.2}%",
        found * 100.0,
        expected * 100.0
    );

    // db_bench's flags, the read in a later invocation on the database the study filled.
    let runs = dbbench(
        &lab,
        &format!(
            "--benchmarks=readrandom --use_existing_db=1 --num={n} --db={} --compression_type=none",
            db.display()
        ),
    );
    let found = found_share(&runs[0]);
    assert!(
        (found - expected).abs() < 0.005,
        "dbbench readrandom on the filled database found {:.2}% of its keys, not {:.2}%",
        found * 100.0,
        expected * 100.0
    );
}
