//! `storlab fio`: fio job files (written by Debian's genfio, and modelled on fio's HOWTO and
//! examples, in tests/fio_jobs/) run unchanged with `--quick`, or are refused naming the option
//! and its line; json+ output is read by fio's own `fio_jsonplus_clat2csv`, whose counts must
//! equal storlab's stored ones; normal output has fio's lines.

mod common;

use std::path::{Path, PathBuf};

use common::{Lab, text};

fn job(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fio_jobs")
        .join(name)
}

fn fio(lab: &Lab, args: &[&str]) -> (bool, String, String) {
    let o = lab
        .cmd()
        .arg("fio")
        .args(args)
        .env("SIZE", "16m")
        .env("NUMJOBS", "2")
        .output()
        .expect("run storlab fio");
    let (out, err) = text(&o);
    (o.status.success(), out, err)
}

/// The stored summary of run `n` of the one study.
fn summary(lab: &Lab, n: usize) -> serde_json::Value {
    let p = lab.study_folder().join(format!("run-{n:03}/summary.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).expect("summary")).expect("json")
}

/// `storlab fio --quick --output-format=FORMAT` of job file `file` in `lab`: fio's JSON
/// document as written to the output file, and storlab's notes in it (`storlab.notes`, one a
/// line). The run must succeed with nothing on stderr.
fn fio_json(lab: &Lab, format: &str, file: &str) -> (serde_json::Value, String) {
    let out = lab.path().join("out.json");
    let (ok, _, err) = fio(
        lab,
        &[
            "--quick",
            &format!("--output-format={format}"),
            "--output",
            out.to_str().unwrap(),
            job(file).to_str().unwrap(),
        ],
    );
    assert!(ok, "{file}: {err}");
    assert_eq!(err, "", "{file}: stderr of a successful run");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let notes: Vec<&str> = doc["storlab"]["notes"]
        .as_array()
        .expect("storlab.notes")
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let notes = notes.join("\n");
    (doc, notes)
}

/// Operations of `op` over every target of a stored run.
fn stored_ops(s: &serde_json::Value, op: &str) -> u64 {
    s["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kinds"][op]["ops"].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn supported_job_files_run_unchanged() {
    // (file, fio job entries expected in the report, groups)
    let cases: &[(&str, usize, usize)] = &[
        ("genfio-seq.fio", 2, 2),
        ("genfio-par.fio", 8, 4),
        ("genfio-cached.fio", 1, 1),
        ("howto-two-jobs.fio", 2, 1),
        ("howto-random-writers.fio", 4, 1),
        ("howto-env.fio", 2, 1),
        ("ssd-test.fio", 4, 4),
        ("verify-crc32c.fio", 1, 1),
        ("mixed-split.fio", 1, 1),
        ("reader-writer.fio", 2, 1),
        ("comments-aliases.fio", 2, 1),
        ("engines.fio", 4, 4),
        ("many-small-files.fio", 2, 1),
        ("files-log-writer.fio", 2, 2),
        ("sizes-think.fio", 2, 2),
    ];
    for (file, entries, groups) in cases {
        let lab = Lab::new();
        let (doc, err) = fio_json(&lab, "json", file);
        let jobs = doc["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), *entries, "{file}: {doc}");
        let ids: std::collections::BTreeSet<u64> = jobs
            .iter()
            .map(|j| j["groupid"].as_u64().unwrap())
            .collect();
        assert_eq!(ids.len(), *groups, "{file}");
        for (i, j) in jobs.iter().enumerate() {
            let ios = j["read"]["total_ios"].as_u64().unwrap()
                + j["write"]["total_ios"].as_u64().unwrap();
            assert!(ios > 0, "{file}: job {i} did no I/O: {j}");
        }
        // Every group's I/O count is the stored run's.
        for g in 0..*groups {
            let s = summary(&lab, g + 1);
            for op in ["read", "write"] {
                let reported: u64 = jobs
                    .iter()
                    .filter(|j| j["groupid"].as_u64() == Some(g as u64))
                    .map(|j| j[op]["total_ios"].as_u64().unwrap())
                    .sum();
                assert_eq!(reported, stored_ops(&s, op), "{file} group {g} {op}");
            }
        }
        // The job file, copied, and the job model the report was made from.
        let stored = lab.study_folder().join("fio-jobs");
        assert_eq!(stored.read_dir().unwrap().count(), 2, "{file}");
        let model: serde_json::Value =
            serde_json::from_slice(&std::fs::read(stored.join("jobs.json")).unwrap()).unwrap();
        assert_eq!(model["groups"].as_array().unwrap().len(), *groups, "{file}");
        for j in jobs {
            let name = &j["jobname"];
            assert!(
                model["jobs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| &m["name"] == name),
                "{file}: {name} is not in the stored model {model}"
            );
        }
        if file.starts_with("genfio") {
            // genfio asks for fio's bandwidth and IOPS logs.
            let logs = std::fs::read_dir(lab.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                .count();
            assert_eq!(logs, 2 * entries, "{file}");
        }
        // Every engine storlab runs on another of its own is said and stored.
        let text = std::fs::read_to_string(job(file)).unwrap();
        for (fio_engine, on) in [
            ("libaio", "io_uring"),
            ("posixaio", "io_uring"),
            ("sync", "psync"),
            ("pvsync2", "psync"),
        ] {
            if !text.contains(&format!("ioengine={fio_engine}\n")) {
                continue;
            }
            let said = format!("ioengine={fio_engine} ran on {on}");
            assert!(err.contains(&said), "{file}: {err}");
            let study = std::fs::read_to_string(lab.study_folder().join("run-001/study.toml"))
                .unwrap_or_default();
            assert!(study.contains(&said), "{file}: {study}");
        }
        if file == &"many-small-files.fio" {
            // unlink=1: the 2 x 64 files are gone after the job.
            let left = std::fs::read_dir(lab.path().join("spool")).unwrap().count();
            assert_eq!(left, 0, "{file}");
        }
        if file == &"engines.fio" {
            // The null job ran on storlab's null target and made no file.
            let s = summary(&lab, 1);
            assert_eq!(s["targets"][0]["name"], "nothing", "{s}");
            assert!(!lab.path().join("nothing.0.0").exists());
        }
    }
}

#[test]
fn refused_job_files_name_the_option_and_line() {
    let cases: &[(&str, &[&str])] = &[
        (
            "zoned.fio",
            &[
                "zoned.fio:4: zonemode=zbd: storlab fio does not drive zoned block devices",
                "zoned.fio:5: option `max_open_zones` is not supported by storlab fio",
                "zoned.fio:14: job `write`: zonesize without zonemode=strided",
            ],
        ),
        (
            "howto-mb-memory.fio",
            &["howto-mb-memory.fio:5: expansion `$mb_memory`"],
        ),
    ];
    for (file, expected) in cases {
        let lab = Lab::new();
        let (ok, _, err) = fio(&lab, &["--quick", job(file).to_str().unwrap()]);
        assert!(!ok, "{file} ran: {err}");
        for e in *expected {
            assert!(err.contains(e), "{file}: `{e}` not in:\n{err}");
        }
        assert!(
            !lab.results().exists()
                || std::fs::read_dir(lab.results())
                    .unwrap()
                    .flatten()
                    .all(|e| !e.path().is_dir()),
            "{file}: something ran"
        );
    }
}

#[test]
fn json_plus_is_read_by_fio_jsonplus_clat2csv() {
    let lab = Lab::new();
    let (doc, _) = fio_json(&lab, "json+", "mixed-split.fio");
    let out = lab.path().join("out.json");
    let csv = lab.path().join("clat.csv");
    let o = std::process::Command::new("fio_jsonplus_clat2csv")
        .arg(&out)
        .arg(&csv)
        .output()
        .expect("fio_jsonplus_clat2csv (Debian's fio package) must be installed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(lab.path().join("clat_job0.csv")).expect("clat_job0.csv");
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    let (rc, wc) = (col("read_clat_ns_count"), col("write_clat_ns_count"));
    let (mut reads, mut writes, mut rows) = (0u64, 0u64, 0);
    for l in lines.filter(|l| !l.trim().is_empty()) {
        let cells: Vec<&str> = l.split(',').map(|c| c.trim()).collect();
        reads += cells[rc].parse::<u64>().unwrap_or(0);
        writes += cells[wc].parse::<u64>().unwrap_or(0);
        rows += 1;
    }
    let s = summary(&lab, 1);
    assert!(rows > 10, "{rows} latency rows");
    assert!(reads > 0 && writes > 0);
    assert_eq!(reads, stored_ops(&s, "read"));
    assert_eq!(writes, stored_ops(&s, "write"));
    assert_eq!(
        reads,
        doc["jobs"][0]["read"]["clat_ns"]["N"].as_u64().unwrap()
    );
    // fio's own check: the CSV's bins are the JSON's.
    let o = std::process::Command::new("fio_jsonplus_clat2csv")
        .arg(&out)
        .arg(&csv)
        .arg("--validate")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("validated"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // fio's layout: keys fio writes.
    let j = &doc["jobs"][0];
    for k in [
        "jobname",
        "groupid",
        "error",
        "job options",
        "read",
        "write",
        "trim",
        "sync",
        "job_runtime",
        "usr_cpu",
        "sys_cpu",
        "ctx",
        "latency_ns",
        "latency_us",
        "latency_ms",
    ] {
        assert!(j.get(k).is_some(), "job key {k}");
    }
    for k in [
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "iops",
        "runtime",
        "total_ios",
        "short_ios",
        "drop_ios",
        "slat_ns",
        "clat_ns",
        "lat_ns",
        "bw_min",
        "bw_max",
        "bw_agg",
        "bw_mean",
        "bw_dev",
        "iops_min",
        "iops_max",
        "iops_mean",
        "iops_stddev",
    ] {
        assert!(j["read"].get(k).is_some(), "read key {k}");
    }
    assert_eq!(j["read"]["slat_ns"]["N"], 0);
    assert!(
        j["read"]["clat_ns"]["percentile"]["99.000000"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(doc.get("global options").is_some());
    assert!(
        j["sync"]["total_ios"].as_u64().unwrap() > 0,
        "fsync=32 issued fsyncs"
    );
}

#[test]
fn normal_output_has_fio_lines() {
    let lab = Lab::new();
    let (ok, out, err) = fio(&lab, &["--quick", job("mixed-split.fio").to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("mix: (groupid=0, jobs=1): err= 0"), "{out}");
    let read = out
        .lines()
        .find(|l| l.trim_start().starts_with("read: IOPS="))
        .expect(&out);
    assert!(
        read.contains(", BW=") && read.contains("MiB/s") || read.contains("KiB/s"),
        "{read}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("write: IOPS=")),
        "{out}"
    );
    assert!(out.contains("clat percentiles"), "{out}");
    assert!(out.contains("Run status group 0 (all jobs):"), "{out}");
    assert!(out.contains("READ: bw="), "{out}");
}

/// fio's steady state (`ss`, `ss_dur`, `ss_ramp`) becomes the step's: the example job file
/// runs in quick mode with its criterion in the results; a rate-limited job reaches
/// `iops:50%` over a 2 s window and stops long before its 30 s runtime; `ss` without
/// `ss_dur` (fio's default 0 turns detection off) is refused with its line.
#[test]
fn steady_state_options_stop_a_job_once_its_iops_settle() {
    let lab = Lab::new();
    let (ok, _, err) = fio(
        &lab,
        &["--quick", job("steady-state.fio").to_str().unwrap()],
    );
    assert!(ok, "{err}");
    let s = summary(&lab, 1);
    assert_eq!(
        s["steady-state"]["criterion"], "iops_slope:0.1%",
        "{}",
        s["steady-state"]
    );

    let lab = Lab::new();
    let settled = lab.write(
        "settle.fio",
        "[settle]\nfilename=settle.dat\nsize=4m\nrw=randread\nbs=4k\nrate_iops=2000\nruntime=30s\ntime_based\nss=iops:50%\nss_dur=2s\n",
    );
    let (ok, out, err) = fio(&lab, &[settled.to_str().unwrap()]);
    assert!(ok, "{out}\n{err}");
    let s = summary(&lab, 1);
    let ss = &s["steady-state"];
    assert_eq!(ss["reached"], true, "{ss}");
    assert!(ss["reached-after-seconds"].as_f64().unwrap() < 30.0, "{ss}");
    assert_eq!(s["status"], "complete", "{}", s["status"]);

    let lab = Lab::new();
    let bad = lab.write(
        "bad.fio",
        "[nowindow]\nfilename=x.dat\nsize=4m\nrw=read\nruntime=10s\nss=iops:10%\n",
    );
    let (ok, _, err) = fio(&lab, &[bad.to_str().unwrap()]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("bad.fio:1:") && err.contains("ss=iops:10% needs ss_dur"),
        "{err}"
    );
}

/// A reader and a writer in one group (no stonewall) run at the same time, each with its own
/// workload, as fio runs them: the reader's entry only reads, the writer's only writes, both
/// in one stored run; each job's runtime is its own target's measured time (the one that
/// finished first is not charged the other's), and its IOPS are its I/Os over that time.
#[test]
fn jobs_doing_different_io_run_together_each_timed_on_its_own() {
    let lab = Lab::new();
    let (doc, _) = fio_json(&lab, "json", "reader-writer.fio");
    let jobs = doc["jobs"].as_array().unwrap();
    let by_name = |n: &str| jobs.iter().find(|j| j["jobname"] == n).unwrap();
    let (reader, writer) = (by_name("reader"), by_name("writer"));
    assert_eq!(reader["groupid"], writer["groupid"]);
    assert!(reader["read"]["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(reader["write"]["total_ios"], 0);
    assert!(writer["write"]["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(writer["read"]["total_ios"], 0);
    // One stored run with both targets, each with its own workload.
    let s = summary(&lab, 1);
    assert!(!lab.study_folder().join("run-002").exists());
    assert_eq!(s["end-reason"], "ops", "{s}");
    let run_s = s["measured-seconds"].as_f64().unwrap();
    let targets = s["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_ne!(targets[0]["workload"], targets[1]["workload"], "{s}");
    let mut own_times = 0;
    for (j, dir) in [(reader, "read"), (writer, "write")] {
        let name = j["jobname"].as_str().unwrap();
        let t = targets.iter().find(|t| t["name"] == name).unwrap();
        let secs = t["measured-seconds"].as_f64().unwrap_or(run_s);
        own_times += t["measured-seconds"].is_f64() as u32;
        assert!(secs <= run_s, "{name}: {secs} > {run_s}");
        assert_eq!(
            j[dir]["runtime"].as_u64().unwrap(),
            (secs * 1000.0).round() as u64,
            "{name}"
        );
        let ios = j[dir]["total_ios"].as_f64().unwrap();
        // The same division up to the last bit (the summary divides by nanoseconds).
        let rate = t["rate-ops"].as_f64().unwrap();
        assert!(
            (rate - ios / secs).abs() <= 1e-12 * rate,
            "{name}: {rate} against {}",
            ios / secs
        );
    }
    // The job that finished first has its own, shorter time; the other ends the run.
    assert_eq!(own_times, 1, "{s}");
    // A reader beside a writer is no comparison of targets: no call-out.
    let cmp: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.study_folder().join("comparison.json")).unwrap(),
    )
    .unwrap();
    let steps = cmp["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{cmp}");
    assert!(steps[0]["largest-ops-ratio"].is_null(), "{cmp}");
    assert!(steps[0]["largest-p99-improvement"].is_null(), "{cmp}");
}

/// fio's JSON `job_runtime` of a group reported as one is the sum of its clones' running
/// times (fio 3.33 prints 4008 for `numjobs=4`, `runtime=1`, `group_reporting` on the null
/// engine, with a read runtime of 1008): storlab gave the longest, as for one job.
#[test]
fn a_reported_groups_job_runtime_sums_its_clones() {
    let lab = Lab::new();
    let (doc, err) = fio_json(&lab, "json", "group-runtime.fio");
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{err}");
    let job_ms = jobs[0]["job_runtime"].as_f64().unwrap();
    let read_ms = jobs[0]["read"]["runtime"].as_f64().unwrap();
    assert!(read_ms > 0.0, "{}", jobs[0]);
    let clones = job_ms / read_ms;
    assert!(
        (3.8..=4.05).contains(&clones),
        "job_runtime {job_ms} ms against a read runtime of {read_ms} ms"
    );
}

/// Issue 29: a job started late by `startdelay` runs its whole `runtime` from its own start,
/// as fio's, and its runtime and IOPS are over its own running time: with `runtime=1`, the
/// job delayed 1 s did no I/O before (its group ended at 1 s, counted from its start).
#[test]
fn a_delayed_job_runs_its_own_runtime_after_its_startdelay() {
    let lab = Lab::new();
    let (doc, err) = fio_json(&lab, "json", "startdelay.fio");
    let jobs = doc["jobs"].as_array().unwrap();
    let by_name = |n: &str| jobs.iter().find(|j| j["jobname"] == n).unwrap();
    let (now, later) = (by_name("now"), by_name("later"));
    assert_eq!(now["groupid"], later["groupid"], "{err}");
    for j in [now, later] {
        let name = &j["jobname"];
        let read = &j["read"];
        let (ios, ms) = (
            read["total_ios"].as_f64().unwrap(),
            read["runtime"].as_f64().unwrap(),
        );
        assert!(ios > 0.0, "{name} did no I/O: {j}");
        assert!((950.0..1300.0).contains(&ms), "{name}: runtime {ms} ms");
        let job_ms = j["job_runtime"].as_f64().unwrap();
        assert!(
            (950.0..1300.0).contains(&job_ms),
            "{name}: job_runtime {job_ms} ms"
        );
        // IOPS over the job's own runtime (fio's rounding of it to ms aside).
        let iops = read["iops"].as_f64().unwrap();
        assert!(
            (iops - ios * 1000.0 / ms).abs() <= 0.01 * iops,
            "{name}: {iops} IOPS"
        );
    }
    // The same job a second later: the same order of IOPS (each ran alone on the null
    // engine), not the delayed one's I/Os spread over the group's 2 s.
    let iops = |j: &serde_json::Value| j["read"]["iops"].as_f64().unwrap();
    let ratio = iops(later) / iops(now);
    assert!((0.2..5.0).contains(&ratio), "later/now IOPS {ratio}");
    // Stored: the run measured until the delayed job was done; each target's own window.
    let s = summary(&lab, 1);
    let run_s = s["measured-seconds"].as_f64().unwrap();
    assert!((1.95..2.6).contains(&run_s), "the group measured {run_s} s");
    let target = |n: &str| {
        s["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()
            .clone()
    };
    let (t_now, t_later) = (target("now"), target("later"));
    assert_eq!(t_later["start-offset-seconds"].as_f64(), Some(1.0), "{s}");
    assert!(t_now["start-offset-seconds"].is_null(), "{s}");
    for t in [&t_now, &t_later] {
        let own = t["measured-seconds"].as_f64().unwrap();
        assert!((0.95..1.3).contains(&own), "{}: {own} s", t["name"]);
    }
}

/// fio's measurement switches are taken with a note that storlab measures anyway; the job's
/// `percentile_list` and `lat_percentiles` choose the percentiles of the JSON and normal
/// output, as fio 3.33 prints them.
#[test]
fn timing_options_are_noted_and_percentile_list_is_printed() {
    let lab = Lab::new();
    let (doc, err) = fio_json(&lab, "json", "timing.fio");
    assert!(
        err.contains("gtod_reduce=1, disable_slat=1 taken, but storlab measures"),
        "{err}"
    );
    let read = &doc["jobs"][0]["read"];
    for lat in ["clat_ns", "lat_ns"] {
        let keys: Vec<&String> = read[lat]["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["50.000000", "99.000000", "99.900000"], "{lat}");
    }
    let study = std::fs::read_to_string(lab.study_folder().join("run-001/study.toml")).unwrap();
    assert!(
        study.contains("storlab measures every I/O's latency"),
        "{study}"
    );
    let lab = Lab::new();
    let (ok, out, err) = fio(&lab, &["--quick", job("timing.fio").to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("    clat percentiles ("), "{out}");
    assert!(out.contains("    lat percentiles ("), "{out}");
    assert!(out.contains("| 50.0th=["), "{out}");
    assert!(out.contains(", 99.9th=["), "{out}");
}

/// `--output-format=terse` writes fio's version-3 line: as many fields as fio 3.33 writes for
/// the same null job, fio's percentile fields for its `percentile_list`, and storlab's
/// measured I/O count behind the KiB field.
#[test]
fn terse_output_has_fio_fields() {
    let lab = Lab::new();
    let jobfile = lab.write(
        "terse.fio",
        "[t]\nioengine=null\nsize=4m\nrw=randread\nbs=4k\npercentile_list=50:99\n",
    );
    let fio_line = std::process::Command::new("fio")
        .arg("--output-format=terse")
        .arg(&jobfile)
        .output()
        .expect("fio (Debian's fio package) must be installed");
    let fio_line = String::from_utf8_lossy(&fio_line.stdout).to_string();
    let fio_fields: Vec<&str> = fio_line.trim().split(';').collect();
    let (ok, out, err) = fio(&lab, &["--output-format=terse", jobfile.to_str().unwrap()]);
    assert!(ok, "{err}");
    // fio's lines only: what storlab does not measure is in docs/fio.md and the JSON.
    assert_eq!(err, "");
    let fields: Vec<&str> = out.trim().split(';').collect();
    assert_eq!(
        fields.len(),
        fio_fields.len(),
        "fio: {fio_line}\nstorlab: {out}"
    );
    assert_eq!(&fields[..5], &fio_fields[..5]);
    let key = |f: &str| f.split('=').next().unwrap().to_string();
    let keys = |fs: &[&str]| fs[17..37].iter().map(|f| key(f)).collect::<Vec<_>>();
    assert_eq!(keys(&fields), keys(&fio_fields));
    assert_eq!(fields[17].split('=').next(), Some("50.000000%"));
    // 4 MiB of 4 KiB reads: the KiB field, and the stored run's read count.
    assert_eq!(fields[5], fio_fields[5]);
    assert_eq!(fields[5], "4096");
    assert_eq!(stored_ops(&summary(&lab, 1), "read"), 1024);
}

/// fio's control options: `exec_prerun` runs before its job's group (a before-step exec
/// event), `randrepeat=0` draws a seed recorded with the results, `random_generator` names
/// storlab's generator; a CPU the machine lacks (`cpus_allowed`) and a policy fio lacks are
/// refused by name and line.
#[test]
fn control_options_run_or_are_refused() {
    let lab = Lab::new();
    let (doc, err) = fio_json(&lab, "json", "control.fio");
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 2);
    assert!(lab.path().join("prerun-ran.txt").exists(), "{err}");
    assert!(
        err.contains("random_generator=lfsr taken; storlab draws offsets with"),
        "{err}"
    );
    assert!(err.contains("job `first`: thread taken: storlab's clones are always threads"));
    assert!(err.contains("job `second`: io_submit_mode=offload taken: storlab submits"));
    let study = std::fs::read_to_string(lab.study_folder().join("run-001/study.toml")).unwrap();
    assert!(
        study.contains("randrepeat=0: offsets drawn from seed"),
        "{study}"
    );
    assert_eq!(summary(&lab, 1)["status"], "complete");
    let lab = Lab::new();
    let bad = lab.write(
        "bad.fio",
        "[a]\nioengine=null\nsize=1m\ncpus_allowed=0,1023\ncpus_allowed_policy=spread\n",
    );
    let (ok, _, err) = fio(&lab, &[bad.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("bad.fio:4: cpus_allowed=0,1023: CPU 1023 is not one this process may run on"),
        "{err}"
    );
    assert!(
        err.contains("bad.fio:5: cpus_allowed_policy=spread: fio's policies are shared and split"),
        "{err}"
    );
}

/// The CPUs this test may run on (`Cpus_allowed_list` of /proc/self/status).
fn allowed_cpus() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    storlab_model::cpus::CpuList::parse(list)
        .unwrap()
        .cpus()
        .to_vec()
}

/// `exec_postrun` runs once its group's workers have stopped (an after-step exec event:
/// after `exec_prerun`'s command and after the end of measurement), its output stored with
/// the run's events; `cpus_allowed` pins every clone's thread to the set, `cpumask` with
/// `cpus_allowed_policy=split` each clone to one CPU of the mask, round robin, and what each
/// worker was pinned to is stored with the run.
#[test]
fn exec_postrun_runs_after_the_group_and_cpus_pin_its_clones() {
    let allowed = allowed_cpus();
    let (a, b) = (allowed[0], allowed[allowed.len().min(2) - 1]);
    let mask = (1u64 << a) | (1u64 << b);
    let lab = Lab::new();
    let jobfile = lab.write(
        "post.fio",
        &format!(
            "[global]\nioengine=null\nsize=4m\nrw=randread\nnumjobs=2\n\n[post]\ncpus_allowed={a}\nexec_prerun=echo pre > order.txt\nexec_postrun=echo post >> order.txt && echo postrun-said\n\n[split]\nstonewall\ncpumask={mask:#x}\ncpus_allowed_policy=split\n"
        ),
    );
    let (ok, _, err) = fio(&lab, &[jobfile.to_str().unwrap()]);
    assert!(ok, "{err}");
    let order = std::fs::read_to_string(lab.path().join("order.txt")).unwrap();
    assert_eq!(order, "pre\npost\n");
    let s = summary(&lab, 1);
    let post = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "post-postrun")
        .unwrap_or_else(|| panic!("no post-postrun event: {s}"));
    assert_eq!(post["status"], "ok", "{post}");
    assert_eq!(post["on-failure"], "continue", "{post}");
    assert!(
        post["stdout"].as_str().unwrap().contains("postrun-said"),
        "{post}"
    );
    // It started once the measurement was over.
    let measured_ns = (s["measured-seconds"].as_f64().unwrap() * 1e9) as i64;
    assert!(post["start-ns"].as_i64().unwrap() >= measured_ns, "{s}");
    let pinned = |s: &serde_json::Value| -> Vec<String> {
        s["targets"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["workers"].as_array().unwrap().iter())
            .map(|w| w["pinned-cpus"].as_str().unwrap_or("none").to_string())
            .collect()
    };
    // Two clones, a file (a null target) each, both on the job's set.
    assert_eq!(pinned(&s), [a.to_string(), a.to_string()], "{s}");
    // Split: the clones dealt the mask's CPUs in turn.
    assert_eq!(pinned(&summary(&lab, 2)), [a.to_string(), b.to_string()]);
}

/// `--status-interval` prints fio's status lines of cumulative values while the job runs,
/// every interval asked, before the final report; with JSON output it is refused.
#[test]
fn status_interval_prints_cumulative_status() {
    let lab = Lab::new();
    let jobfile = lab.write(
        "status.fio",
        "[st]\nioengine=null\nsize=16m\nrw=randread\nrate_iops=1000\nruntime=2500ms\ntime_based\n",
    );
    let (ok, out, err) = fio(&lab, &["--status-interval=1", jobfile.to_str().unwrap()]);
    assert!(ok, "{err}");
    let dumps: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("st: (groupid=0, jobs=1): err= 0: status after"))
        .collect();
    assert_eq!(dumps.len(), 2, "{out}");
    assert!(dumps[0].ends_with("after 1000 msec"), "{out}");
    // Cumulative: the second dump covers 2 s at about 1000 IOPS.
    let reads: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("read: IOPS="))
        .collect();
    assert_eq!(reads.len(), 3, "two dumps and the report: {out}");
    assert!(reads[1].ends_with("/2000msec)"), "{}", reads[1]);
    let report_at = out.find("Run status group 0").unwrap();
    assert!(out.find("status after 2000 msec").unwrap() < report_at);
    let (ok, _, err) = fio(
        &lab,
        &[
            "--status-interval=1",
            "--output-format=json",
            jobfile.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("--status-interval with another output than normal"),
        "{err}"
    );
}

/// A compressor's output size of `path` (`zstd -c` or `lz4 -c`).
fn compressed_bytes(tool: &str, path: &Path) -> u64 {
    let o = std::process::Command::new(tool)
        .args(["-q", "-c"])
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e} (scripts/setup.sh installs it)"));
    assert!(o.status.success(), "{tool} {}", path.display());
    o.stdout.len() as u64
}

/// Distinct 4 KiB blocks of a file: what a deduplicating array keeps.
fn distinct_blocks(path: &Path) -> usize {
    let data = std::fs::read(path).unwrap();
    data.chunks(4096)
        .collect::<std::collections::HashSet<_>>()
        .len()
}

/// The data storlab writes is the data fio writes, in distribution: the same job file's
/// 8 MiB written by fio 3.33 and by `storlab fio` compress by zstd and lz4 within 5% of each
/// other, for compress percentages, a chunk size, a pattern and dedupe (whose distinct 4 KiB
/// blocks are also within 5%).
#[test]
fn buffer_options_write_data_that_compresses_as_fios() {
    let lab = Lab::new();
    let cases: &[(&str, &str)] = &[
        ("c0", "buffer_compress_percentage=0\n"),
        ("c25", "buffer_compress_percentage=25\n"),
        ("c50", "buffer_compress_percentage=50\n"),
        ("c75", "buffer_compress_percentage=75\n"),
        (
            "chunk",
            "buffer_compress_percentage=60\nbuffer_compress_chunk=4k\n",
        ),
        (
            "pattern",
            "buffer_compress_percentage=40\nbuffer_pattern=\"storlab\"\n",
        ),
        ("dedupe", "dedupe_percentage=40\n"),
        (
            "dedupe-compress",
            "dedupe_percentage=30\nbuffer_compress_percentage=50\n",
        ),
        ("scramble", "scramble_buffers=1\n"),
    ];
    for (name, options) in cases {
        let body = format!("[w]\nrw=write\nbs=4k\nsize=8m\nioengine=psync\n{options}");
        let by_fio = lab.path().join(format!("{name}.fio.dat"));
        let by_storlab = lab.path().join(format!("{name}.storlab.dat"));
        let fio_job = lab.write(
            &format!("{name}-fio.fio"),
            &format!("{body}filename={}\n", by_fio.display()),
        );
        let o = std::process::Command::new("fio")
            .arg("--output=/dev/null")
            .arg(&fio_job)
            .output()
            .expect("fio (scripts/setup.sh installs it)");
        assert!(o.status.success(), "fio {name}: {}", text(&o).1);
        let storlab_job = lab.write(
            &format!("{name}-storlab.fio"),
            &format!("{body}filename={}\n", by_storlab.display()),
        );
        let (ok, _, err) = fio(&lab, &["--output=/dev/null", storlab_job.to_str().unwrap()]);
        assert!(ok, "{name}: {err}");
        for tool in ["zstd", "lz4"] {
            let size = 8u64 << 20;
            let theirs = size as f64 / compressed_bytes(tool, &by_fio) as f64;
            let ours = size as f64 / compressed_bytes(tool, &by_storlab) as f64;
            eprintln!("{name} {tool}: fio {theirs:.3}, storlab {ours:.3}");
            assert!(
                (ours / theirs - 1.0).abs() < 0.05,
                "{name} {tool}: fio's ratio {theirs:.3}, storlab's {ours:.3}"
            );
        }
        let (theirs, ours) = (distinct_blocks(&by_fio), distinct_blocks(&by_storlab));
        eprintln!("{name} distinct 4 KiB blocks: fio {theirs}, storlab {ours}");
        assert!(
            (ours as f64 / theirs as f64 - 1.0).abs() < 0.05,
            "{name}: fio {theirs} distinct blocks, storlab {ours}"
        );
    }
}

/// fio's dedupe working set (`dedupe_mode=working_set`), per job and shared by two jobs
/// (`dedupe_global`, fio's `examples/dedupe-global.fio` at 8 MiB a file): the distinct 4 KiB
/// blocks of each file and of both together are fio 3.33's, within four standard deviations
/// of the difference of two draws (each block is a repeat with probability 1/2, so a
/// file's count of unique writes has a standard deviation of sqrt(blocks / 4); both tools
/// seed deterministically, so this is not a flaky bound). Shared, each file alone keeps
/// far more distinct blocks than half its blocks (about 2/3), and both together about half:
/// one job's repeats are the other's blocks.
#[test]
fn a_dedupe_working_set_shared_by_two_jobs_dedupes_across_files_as_fios() {
    let lab = Lab::new();
    for global in [0, 1] {
        let body = format!(
            "[global]\nioengine=libaio\niodepth=16\nsize=8m\ndedupe_mode=working_set\ndedupe_global={global}\ndedupe_percentage=50\nblocksize=4k\nrw=write\nbuffer_compress_percentage=50\ndedupe_working_set_percentage=50\n"
        );
        let mut distinct = Vec::new();
        for tool in ["fio", "storlab"] {
            let dir = lab.path().join(format!("{tool}-{global}"));
            std::fs::create_dir_all(&dir).unwrap();
            let job = lab.write(
                &format!("{tool}-{global}.fio"),
                &format!("{body}directory={}\n[a]\n[b]\n", dir.display()),
            );
            if tool == "fio" {
                let o = std::process::Command::new("fio")
                    .arg("--output=/dev/null")
                    .arg(&job)
                    .output()
                    .expect("fio (scripts/setup.sh installs it)");
                assert!(o.status.success(), "fio: {}", text(&o).1);
            } else {
                let (ok, _, err) = fio(&lab, &["--output=/dev/null", job.to_str().unwrap()]);
                assert!(ok, "{err}");
            }
            let (a, b) = (dir.join("a.0.0"), dir.join("b.0.0"));
            let both = dir.join("both");
            let mut all = std::fs::read(&a).unwrap();
            all.extend(std::fs::read(&b).unwrap());
            std::fs::write(&both, all).unwrap();
            distinct.push([
                distinct_blocks(&a),
                distinct_blocks(&b),
                distinct_blocks(&both),
            ]);
        }
        let (theirs, ours) = (distinct[0], distinct[1]);
        eprintln!(
            "dedupe_global={global}: distinct blocks of a, b, both: fio {theirs:?}, storlab {ours:?}"
        );
        for (i, blocks) in [2048.0, 2048.0, 4096.0_f64].into_iter().enumerate() {
            let bound = 4.0 * (2.0 * blocks / 4.0).sqrt();
            assert!(
                (ours[i] as f64 - theirs[i] as f64).abs() < bound,
                "dedupe_global={global}: fio {theirs:?}, storlab {ours:?}"
            );
        }
        // 2048 blocks a file, half of them repeats: per job, each file keeps about half
        // and both together the sum; shared, each file about 2/3, both together half.
        if global == 1 {
            assert!(
                ours[0] > 1250 && ours[1] > 1250 && ours[2] < 2 * 1150,
                "{ours:?}"
            );
        } else {
            assert!(
                ours[0] < 1150 && ours[1] < 1150 && ours[2] > 2 * 900,
                "{ours:?}"
            );
        }
    }
}

/// rate: bytes per second paced as I/Os; rate_process=poisson runs at the same mean;
/// rate_iops_min that the rate cannot meet fails the command with fio's message; rate_min
/// that is met does not.
#[test]
fn rates_pace_and_rate_min_fails_a_slow_job() {
    let lab = Lab::new();
    let paced = lab.write(
        "paced.fio",
        "[global]\nioengine=null\nsize=64m\nrw=randread\nbs=4k\nruntime=3s\ntime_based\n[p]\nrate=4m\nrate_process=poisson\nrate_min=3m\nratecycle=500\n",
    );
    let (ok, _, err) = fio(&lab, &["--output=/dev/null", paced.to_str().unwrap()]);
    assert!(ok, "{err}");
    let s = summary(&lab, 1);
    let iops = stored_ops(&s, "read") as f64 / 3.0;
    // 4 MiB/s of 4 KiB: 1024 I/Os per second, a Poisson process of that mean.
    assert!((iops / 1024.0 - 1.0).abs() < 0.1, "{iops} IOPS");
    let study = std::fs::read_to_string(lab.study_folder().join("run-001/study.toml")).unwrap();
    assert!(study.contains("rate-process = \"poisson\""), "{study}");
    assert!(study.contains("interval = \"500ms\""), "{study}");
    let lab = Lab::new();
    let slow = lab.write(
        "slow.fio",
        "[s]\nioengine=null\nsize=64m\nrw=write\nrate_iops=100\nrate_iops_min=500\nruntime=3s\ntime_based\n",
    );
    let (ok, _, err) = fio(&lab, &["--output=/dev/null", slow.to_str().unwrap()]);
    assert!(!ok, "{err}");
    assert!(
        err.contains("s: rate_iops_min=500 not met, got 100 IOPS")
            || err.contains("s: rate_iops_min=500 not met, got 99 IOPS"),
        "{err}"
    );
}

/// Names and sizes (bytes) of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    files.sort();
    files
}

/// A job on many files makes the files fio makes (`JOBNAME.CLONE.FILENUM` in `directory`,
/// `filesize` each, or `size / nrfiles`), compared with fio 3.33 run on the same job file;
/// `unlink` removes them at the end, in both; `fdatasync` and `end_fsync` are said and
/// recorded with the results.
#[test]
fn file_sets_are_laid_out_as_fios() {
    let text = "[global]\nioengine=psync\nbs=4k\ndirectory=set\n\
        [w]\nrw=write\nnrfiles=4\nfilesize=16k\nfdatasync=2\nend_fsync=1\nnumjobs=2\n\
        [r]\nstonewall\nrw=randread\nnrfiles=3\nsize=40k\nfile_service_type=random\n\
        [u]\nstonewall\nrw=write\nnrfiles=2\nfilesize=8k\nunlink=1\n";
    let ours = Lab::new();
    let jobfile = ours.write("set.fio", text);
    let (ok, out, err) = fio(&ours, &[jobfile.to_str().unwrap()]);
    assert!(ok, "{err}");
    let theirs = tempfile::tempdir().unwrap();
    std::fs::create_dir(theirs.path().join("set")).unwrap();
    std::fs::write(theirs.path().join("set.fio"), text).unwrap();
    let o = std::process::Command::new("fio")
        .arg("--output=/dev/null")
        .arg("set.fio")
        .current_dir(theirs.path())
        .output()
        .expect("fio (Debian's fio package) must be installed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let made = listing(&ours.path().join("set"));
    assert_eq!(made, listing(&theirs.path().join("set")));
    // 2 clones x 4 files of 16 KiB, 3 files of 40 KiB / 3; u's files unlinked.
    assert_eq!(made.len(), 11, "{made:?}");
    assert!(made.contains(&("w.1.3".to_string(), 16384)), "{made:?}");
    assert!(made.contains(&("r.0.2".to_string(), 13653)), "{made:?}");
    assert!(out.contains("\nstorlab: job `w`: end_fsync"), "{out}");
    // fio's bytes: 4 x 16 KiB written per clone, with 7 fdatasyncs each (none after the
    // last write), on 4 files.
    let s = summary(&ours, 1);
    assert_eq!(stored_ops(&s, "write"), 2 * 16, "{s}");
    assert_eq!(stored_ops(&s, "fsync"), 2 * 7, "{s}");
    let used = &s["targets"][0]["session-used"];
    assert_eq!(used["file.fsync-call"], "fdatasync", "{s}");
    assert_eq!(used["file.end-fsync"], "yes", "{s}");
    assert_eq!(used["file.files"], "4", "{s}");
    // Whole 4 KiB blocks of the 13653-byte files: 3 each, as fio.
    assert_eq!(stored_ops(&summary(&ours, 2), "read"), 9);
}

/// tests/fio_jobs/corpus/: job files written the way fio's users write them (one per use:
/// an OLTP mix on a zipf hot set, paced video streams, a mail spool of small files, ...), each
/// parsed by fio 3.33 (`fio --parse-only`), run unchanged in quick mode: every job entry does
/// I/O and the job file is stored with the results byte for byte.
#[test]
fn the_corpus_of_users_job_files_runs_unchanged() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fio_jobs/corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "the corpus has {} job files",
        files.len()
    );
    for file in &files {
        let lab = Lab::new();
        let out = lab.path().join("out.json");
        let (ok, _, err) = fio(
            &lab,
            &[
                "--quick",
                "--output-format=json",
                "--output",
                out.to_str().unwrap(),
                file.to_str().unwrap(),
            ],
        );
        let name = file.file_name().unwrap().to_string_lossy();
        assert!(ok, "{name}: {err}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let jobs = doc["jobs"].as_array().unwrap();
        assert!(!jobs.is_empty(), "{name}: {doc}");
        for j in jobs {
            let ios = j["read"]["total_ios"].as_u64().unwrap()
                + j["write"]["total_ios"].as_u64().unwrap();
            assert!(ios > 0, "{name}: job {} did no I/O", j["jobname"]);
        }
        // Stored as `N-NAME` (N: the job file's place on the command line).
        let stored = lab
            .study_folder()
            .join("fio-jobs")
            .join(format!("1-{name}"));
        assert_eq!(
            std::fs::read(&stored).unwrap_or_default(),
            std::fs::read(file).unwrap(),
            "{name}: the job file stored with the results"
        );
    }
}
