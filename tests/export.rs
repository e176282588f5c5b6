//! `storlab results export` of a real sweep (two runs of the null target, `queue-depth` 1
//! and 2): the runs and the intervals, in CSV and in Parquet, read back the way a notebook
//! would: the CSV by pandas (`pd.read_csv(PATH)`, Debian's python3-pandas, which
//! scripts/setup.sh installs; Python's csv module when pandas is absent, unless
//! STORLAB_REQUIRE_SERVERS is set: then pandas is required) and the Parquet by the parquet
//! crate's reader. Every figure read back equals the stored summary's: one row per run with
//! `param_queue-depth`, the total and per target and operation figures; one row per interval,
//! target and operation whose measured operations add up to the summary's.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Lab, text};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

const STUDY: &str = r#"name = "export"
interval = "250ms"

# Named as pandas' missing value, which it keeps when told to (keep_default_na=False).
[targets.null]
type = "null"

[workloads.w]
block-size = "4KiB"
read-share = 0.5
rate-ops = 2000

[[steps]]
workload = "w"
targets = ["null"]
warmup = "250ms"
duration = "1s"
sweep.queue-depth = [1, 2]
"#;

/// The stored summaries, by run id.
fn summaries(lab: &Lab) -> BTreeMap<String, Value> {
    common::walk(&lab.results())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "summary.json"))
        .map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            (v["run-id"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

fn export(lab: &Lab, format: &str, kind: &str) -> PathBuf {
    let out = lab.path().join(format!("{kind}.{format}"));
    let o = lab.run(&[
        "results",
        "export",
        "--format",
        format,
        "--kind",
        kind,
        "--output",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}{stderr}");
    assert!(stderr.contains(" rows, "), "{stderr}");
    out
}

/// Parquet rows as column name to field.
fn parquet_rows(path: &Path) -> Vec<BTreeMap<String, Field>> {
    let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| r.unwrap().into_columns().into_iter().collect())
        .collect()
}

fn float(f: &Field) -> f64 {
    match f {
        Field::Double(v) => *v,
        Field::Long(v) => *v as f64,
        other => panic!("not a number: {other:?}"),
    }
}

/// Debian's python3 (where its python3-pandas is), else the one on PATH.
fn python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// Reads the CSV exports in Python: with pandas (one line each), else with the csv module.
/// Prints, per run id, its queue depth, total rate and measured interval operations.
fn read_csv_in_python(runs: &Path, intervals: &Path) -> (bool, BTreeMap<String, Value>) {
    let script = r#"
import json, sys
runs_path, intervals_path = sys.argv[1], sys.argv[2]
try:
    import pandas as pd
except ImportError:
    pd = None
out = {}
if pd is not None:
    # round_trip: pandas' default float parser may miss a number's last bit.
    # As docs/reports.md says: a target named "null" stays a name.
    kw = dict(float_precision="round_trip", keep_default_na=False, na_values=[""])
    runs = pd.read_csv(runs_path, **kw)
    intervals = pd.read_csv(intervals_path, **kw)
    measured = intervals[intervals.phase == "measure"].groupby(["run_id", "operation"]).ops.sum()
    targets = sorted(set(intervals.target))
    for _, r in runs.iterrows():
        out[r.run_id] = {"qd": int(r["param_queue-depth"]), "rate_ops": float(r.rate_ops),
                         "p99_latency_ns": int(r.p99_latency_ns),
                         "targets": targets,
                         "read_ops": int(measured[(r.run_id, "read")]),
                         "write_ops": int(measured[(r.run_id, "write")])}
else:
    import csv
    for r in csv.DictReader(open(runs_path)):
        out[r["run_id"]] = {"qd": int(r["param_queue-depth"]), "rate_ops": float(r["rate_ops"]),
                            "p99_latency_ns": int(r["p99_latency_ns"]), "read_ops": 0, "write_ops": 0}
    for r in csv.DictReader(open(intervals_path)):
        if r["phase"] == "measure":
            out[r["run_id"]][r["operation"] + "_ops"] += int(r["ops"])
print(json.dumps({"pandas": pd is not None, "runs": out}))
"#;
    let o = Command::new(python())
        .args(["-c", script])
        .arg(runs)
        .arg(intervals)
        .output()
        .expect("python3 runs");
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}{stderr}");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    let runs = v["runs"].as_object().unwrap().clone().into_iter().collect();
    (v["pandas"].as_bool().unwrap(), runs)
}

#[test]
fn runs_and_intervals_export_to_csv_and_parquet_and_read_back_equal() {
    let lab = Lab::new();
    let study = lab.write("s.toml", STUDY);
    let o = lab.run(&["run", "--quiet", study.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}{stderr}");
    let stored = summaries(&lab);
    assert_eq!(stored.len(), 2);

    // CSV, as a notebook reads it.
    let runs_csv = export(&lab, "csv", "runs");
    let intervals_csv = export(&lab, "csv", "intervals");
    let (pandas, read) = read_csv_in_python(&runs_csv, &intervals_csv);
    assert!(
        pandas || std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
        "python3-pandas is not installed and STORLAB_REQUIRE_SERVERS is set"
    );
    eprintln!(
        "read by {}: {read:?}",
        if pandas { "pandas" } else { "csv" }
    );
    assert_eq!(read.len(), 2);
    for (id, s) in &stored {
        let r = &read[id];
        let qd: i64 = s["parameters"]["queue-depth"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(r["qd"], qd);
        assert_eq!(r["rate_ops"].as_f64(), s["total"]["rate-ops"].as_f64());
        assert_eq!(r["p99_latency_ns"], s["total"]["service-latency"]["p99-ns"]);
        if pandas {
            assert_eq!(r["targets"], serde_json::json!(["null"]), "not NaN");
        }
        for op in ["read", "write"] {
            let ops = &s["targets"][0]["kinds"][op]["ops"];
            assert_eq!(&r[format!("{op}_ops")], ops, "{id} {op}");
        }
    }

    // Parquet, read back by the parquet crate: the same figures.
    let runs = parquet_rows(&export(&lab, "parquet", "runs"));
    assert_eq!(runs.len(), 2);
    for row in &runs {
        let Field::Str(id) = &row["run_id"] else {
            panic!("{row:?}")
        };
        let s = &stored[id];
        // A parameter whose values are all integers is an integer column.
        let qd: i64 = s["parameters"]["queue-depth"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(row["param_queue-depth"], Field::Long(qd));
        assert_eq!(row["status"], Field::Str("complete".into()));
        assert!(
            matches!(row["started_at"], Field::TimestampMicros(_)),
            "{:?}",
            row["started_at"]
        );
        // Where and by what the run was made, from its system.json.
        let system: Value = serde_json::from_str(
            &std::fs::read_to_string(
                common::walk(&lab.results())
                    .into_iter()
                    .find(|p| {
                        p.ends_with("system.json")
                            && p.parent().unwrap().join("summary.json").exists()
                            && std::fs::read_to_string(p.parent().unwrap().join("summary.json"))
                                .unwrap()
                                .contains(id.as_str())
                    })
                    .unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            row["host"],
            Field::Str(system["hostname"].as_str().unwrap().into())
        );
        assert_eq!(
            row["storlab_version"],
            Field::Str(system["storlab-version"].as_str().unwrap().into())
        );
        assert_eq!(row["null.target_type"], Field::Str("null".into()));
        let k = &s["targets"][0]["kinds"]["read"];
        assert_eq!(float(&row["null.read.ops"]), k["ops"].as_f64().unwrap());
        assert_eq!(
            float(&row["null.read.rate_ops"]),
            k["rate-ops"].as_f64().unwrap()
        );
        assert_eq!(
            float(&row["null.read.rate_mb_s"]),
            k["rate-bytes"].as_f64().unwrap() / 1e6
        );
        for (column, key) in [
            ("null.read.p999_latency_ns", "p99.9-ns"),
            ("null.read.p95_latency_ns", "p95-ns"),
            ("null.read.p9999_latency_ns", "p99.99-ns"),
        ] {
            assert_eq!(
                float(&row[column]),
                k["service-latency"][key].as_f64().unwrap(),
                "{column}"
            );
        }
        // Open loop (rate-ops): the latency from each operation's intended start too.
        assert_eq!(
            float(&row["null.read.intended_p99_latency_ns"]),
            k["intended-latency"]["p99-ns"].as_f64().unwrap()
        );
    }
    let intervals = parquet_rows(&export(&lab, "parquet", "intervals"));
    let csv_lines = std::fs::read_to_string(&intervals_csv)
        .unwrap()
        .lines()
        .count();
    assert_eq!(intervals.len(), csv_lines - 1, "the same rows as the CSV");
    for (id, s) in &stored {
        let measured: f64 = intervals
            .iter()
            .filter(|r| r["run_id"] == Field::Str(id.clone()))
            .filter(|r| r["phase"] == Field::Str("measure".into()))
            .map(|r| float(&r["ops"]))
            .sum();
        assert_eq!(measured, s["total"]["ops"].as_f64().unwrap(), "{id}");
    }
}
