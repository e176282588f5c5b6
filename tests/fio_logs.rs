//! `storlab fio` writes fio's log files (`write_bw_log`, `write_iops_log`, `write_lat_log`,
//! `write_hist_log` with `log_avg_msec`, `log_hist_msec`, `per_job_logs`) in fio's names and
//! layout, from its stored timeline and HDR interval log, and fio's own readers read them:
//! `fiologparser_hist.py` (Debian's fio package, /usr/share/doc/fio, with python3-pandas)
//! and `fio2gnuplot` (with python3-six). Skipped without those unless STORLAB_REQUIRE_SERVERS
//! is set (scripts/test.sh: then it fails).

mod common;

use std::path::Path;
use std::process::Command;

use common::{Lab, text};

const PYTHON: &str = "/usr/bin/python3";
const HIST_PARSER_GZ: &str = "/usr/share/doc/fio/fiologparser_hist.py.gz";
const FIO2GNUPLOT: &str = "/usr/bin/fio2gnuplot";

/// fio's log readers are here (else the test is skipped, or fails under
/// STORLAB_REQUIRE_SERVERS).
fn readers_or_skip() -> bool {
    let python_ok = Command::new(PYTHON)
        .args(["-c", "import numpy, pandas, six"])
        .output()
        .is_ok_and(|o| o.status.success());
    let there = python_ok && Path::new(HIST_PARSER_GZ).exists() && Path::new(FIO2GNUPLOT).exists();
    if !there {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "fio's log readers are required: fio, python3-pandas and python3-six (scripts/setup.sh)"
        );
        eprintln!(
            "skipped: fio's log readers (fio, python3-pandas, python3-six) are not installed"
        );
    }
    there
}

/// A measured timeline row of target `x`.
struct Row {
    second: i64,
    op: String,
    ops: u64,
    p50_ns: u64,
    interval_s: f64,
}

fn timeline(lab: &Lab) -> Vec<Row> {
    let t = std::fs::read_to_string(lab.study_folder().join("run-001/timeline.csv")).unwrap();
    let mut lines = t.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|c| *c == n).unwrap();
    let (s, ph, tg, op, ops, p50, len) = (
        col("second"),
        col("phase"),
        col("target"),
        col("op"),
        col("ops"),
        col("p50_ns"),
        col("interval_s"),
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        // Not the sliver of an interval after the job's end (no I/O, a few ms).
        .filter(|c| c[ph] == "measure" && c[tg] == "x" && c[ops] != "0")
        .map(|c| Row {
            second: c[s].parse().unwrap(),
            op: c[op].to_string(),
            ops: c[ops].parse().unwrap(),
            p50_ns: c[p50].parse().unwrap(),
            interval_s: c[len].parse().unwrap(),
        })
        .collect()
}

fn fields(line: &str) -> Vec<u64> {
    line.split(", ").map(|f| f.parse().unwrap()).collect()
}

#[test]
fn fios_log_readers_read_storlabs_logs() {
    if !readers_or_skip() {
        return;
    }
    let lab = Lab::new();
    let data = lab.path().join("data");
    let job = lab.write(
        "logs.fio",
        &format!(
            "[global]\ntime_based\nruntime=2\nbs=4k\nlog_avg_msec=500\n\
             [x]\nfilename={}\nsize=4m\nrw=randrw\nwrite_bw_log=x\nwrite_iops_log=x\nwrite_lat_log=x\nwrite_hist_log=x\nlog_hist_msec=500\n\
             [b]\nioengine=null\nsize=1m\nrw=read\nnumjobs=2\nwrite_iops_log\nper_job_logs=0\n\
             [c]\nioengine=null\nsize=1m\nrw=read\nnumjobs=2\nwrite_bw_log=c\n",
            data.display()
        ),
    );
    let o = lab.cmd().arg("fio").arg(&job).output().unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("_slat logs are empty"), "{out}");
    // fio's names: PREFIX_KIND.N.log per clone, N fio's thread number (x is 1, b's clones 2
    // and 3, c's 4 and 5); per_job_logs=0 and no prefix: JOB_KIND.log.
    let mut logs: Vec<String> = std::fs::read_dir(lab.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".log"))
        .collect();
    logs.sort();
    assert_eq!(
        logs,
        [
            "b_iops.log",
            "c_bw.4.log",
            "c_bw.5.log",
            "x_bw.1.log",
            "x_clat.1.log",
            "x_clat_hist.1.log",
            "x_iops.1.log",
            "x_lat.1.log",
            "x_slat.1.log"
        ]
    );
    let study = std::fs::read_to_string(lab.study_folder().join("run-001/study.toml")).unwrap();
    assert!(study.contains("interval = \"500ms\""), "{study}");
    let read = |n: &str| std::fs::read_to_string(lab.path().join(n)).unwrap();
    let rows = timeline(&lab);
    assert_eq!(rows.len(), 8);
    // Averaged rows: `msec, value, ddir, 0, 0`, one per 500 ms window and direction, at
    // the window's end; IOPS are the timeline's operations over the window's length.
    let iops: Vec<Vec<u64>> = read("x_iops.1.log").lines().map(fields).collect();
    assert_eq!(iops.len(), 8);
    for (r, t) in iops.iter().zip(&rows) {
        assert_eq!(r.len(), 5);
        let end_ms = (t.second as f64 * 0.5 + t.interval_s) * 1000.0;
        assert_eq!(r[0], end_ms.round() as u64, "{r:?}");
        // The last window holds the operations that completed after the run's end (the
        // drain), so it ends when they did: later than its nominal end, never earlier.
        let nominal_ms = (t.second as u64 + 1) * 500;
        if t.second < 3 {
            assert!(r[0].abs_diff(nominal_ms) < 10, "{r:?}");
        } else {
            assert!(r[0] + 10 > nominal_ms, "{r:?}");
        }
        assert_eq!(r[2], u64::from(t.op == "write"));
        assert_eq!(&r[3..], [0, 0]);
        assert_eq!(r[1], (t.ops as f64 / t.interval_s) as u64, "{r:?}");
    }
    assert!(read("x_slat.1.log").is_empty());
    assert_eq!(read("x_clat.1.log"), read("x_lat.1.log"));
    assert_eq!(read("x_clat.1.log").lines().count(), 8);
    // Two clones, one direction, four windows, into one file.
    assert_eq!(read("b_iops.log").lines().count(), 8);
    // Histogram rows: msec, ddir, bs, fio's 1856 bins, their sum the window's operations.
    let hist = read("x_clat_hist.1.log");
    assert_eq!(hist.lines().count(), 8);
    for (line, t) in hist.lines().zip(&rows) {
        let f = fields(line);
        assert_eq!(f.len(), 3 + 1856);
        assert_eq!((f[1], f[2]), (u64::from(t.op == "write"), 4096));
        assert_eq!(f[3..].iter().sum::<u64>(), t.ops);
    }

    // fio's fiologparser_hist.py: per 500 ms and direction, the samples are storlab's
    // operations and the median is within 3% of storlab's p50 of the same interval.
    let parser = lab.path().join("fiologparser_hist.py");
    let o = Command::new("zcat").arg(HIST_PARSER_GZ).output().unwrap();
    std::fs::write(&parser, o.stdout).unwrap();
    let o = Command::new(PYTHON)
        .arg(&parser)
        .args(["--directions", "rw", "-i", "500"])
        .arg(lab.path().join("x_clat_hist.1.log"))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    eprintln!("fiologparser_hist.py:\n{out}");
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "end-time, dir, samples, min, avg, median, 90%, 95%, 99%, max"
    );
    let parsed: Vec<Vec<&str>> = lines.map(|l| l.split(", ").collect()).collect();
    // The parser keeps a row stamped after a window's end for the next window too: a
    // direction whose last row the drain ended past 2000 ms gets a window ending at 2500 ms
    // as well, with that row's samples, as fio's own late last row would.
    let late: Vec<Vec<u64>> = hist.lines().map(fields).filter(|f| f[0] > 2000).collect();
    assert_eq!(parsed.len(), 8 + late.len(), "late rows {late:?}:\n{out}");
    for (p, f) in parsed[8..].iter().zip(&late) {
        assert_eq!(p[0], "2500");
        assert_eq!(p[1], if f[1] == 0 { "r" } else { "w" });
        assert_eq!(p[2], f[3..].iter().sum::<u64>().to_string());
    }
    for (p, t) in parsed.iter().zip(&rows) {
        assert_eq!(p[0], ((t.second + 1) * 500).to_string());
        assert_eq!(p[1], if t.op == "read" { "r" } else { "w" });
        assert_eq!(p[2], t.ops.to_string());
        let median: f64 = p[5].parse().unwrap();
        let off = (median - t.p50_ns as f64).abs() / t.p50_ns as f64;
        assert!(off < 0.03, "median {median} vs storlab's p50 {}", t.p50_ns);
    }

    // fio's fio2gnuplot (no gnuplot needed without -g): its statistics of the bandwidth log
    // are those of storlab's rows.
    let g = lab.path().join("g");
    std::fs::create_dir(&g).unwrap();
    std::fs::copy(lab.path().join("x_bw.1.log"), g.join("x_bw.1.log")).unwrap();
    let o = Command::new(PYTHON)
        .arg(FIO2GNUPLOT)
        .args(["-b", "-k", "-d", "out"])
        .current_dir(&g)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("|-> x_bw.1.log"), "{out}");
    let global = std::fs::read_to_string(g.join("out/result.global")).unwrap();
    eprintln!("fio2gnuplot result.global:\n{global}");
    let bw: Vec<u64> = read("x_bw.1.log").lines().map(|l| fields(l)[1]).collect();
    let mean = bw.iter().sum::<u64>() as f64 / bw.len() as f64;
    assert!(global.contains(&format!("avg={mean:.2}\n")), "{global}");
    assert!(global.contains("values_count=8\n"), "{global}");
    let max = bw.iter().max().unwrap();
    assert!(global.contains(&format!("max={max}.00\n")), "{global}");
}
