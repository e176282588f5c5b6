//! `sample` events, run by the real binary on the null target: a command printing samples, a
//! span with its bytes, a line of neither and a comment, then sampling until its step ends.
//! What it read is in the run's `samples.csv`, in `summary.json` (`samples` per series, the
//! span as a `reported` event with its duration and bytes), in the results store (`samples`
//! table, the span's bytes in `events`) and in the reports (the HTML report's chart per unit
//! under the throughput timeline, the series' table in HTML and Markdown). A command that
//! exits before its step ends is a warning, its status and exit code recorded, and the study
//! goes on. The command is stopped once an `outlive-step` wait has ended, before the step's
//! `after-step` events.

mod common;

use common::{Lab, text};

/// The null target at 5,000 operations per second, and a step of 1 s on it (its events and
/// keys follow).
macro_rules! null_step {
    () => {
        r#"interval = "100ms"

[targets.null]
type = "null"

[workloads.w]
block-size = "4KiB"
rate-ops = 5000

[[steps]]
workload = "w"
targets = ["null"]
duration = "1s"
"#
    };
}

/// Two steps of 1 s on the null target (the first with a warm-up): the first sampled by a
/// command that prints a sample of two series, a span with bytes, a line of neither, then a
/// sample of one series every 100 ms; the second by one that exits 3 after one sample.
const STUDY: &str = concat!(
    "name = \"sampled\"\n",
    null_step!(),
    r##"warmup = "200ms"

[[steps.events]]
name = "node-use"
action = "sample"
command = ["sh", "-c", """
echo 'sample node1.disk-write 1.25e7 bytes/s'
echo '# a comment, then a blank line'
echo
s=$(date +%s.%N); sleep 0.3; e=$(date +%s.%N)
echo "span $s $e resync-tenant-3 bytes=3000000 node2->node4 pg_basebackup"
echo 'cpu is high'
echo 'to stderr' >&2
i=0
while true; do i=$((i+1)); echo "sample node1.cpu 0.$i cpus"; sleep 0.1; done
"""]

[[steps]]
workload = "w"
targets = ["null"]
duration = "1s"

[[steps.events]]
name = "short"
action = "sample"
command = ["sh", "-c", "echo 'sample x 1 things'; exit 3"]
"##
);

#[test]
fn a_sample_event_stores_its_series_and_spans_and_the_report_draws_them() {
    let lab = Lab::new();
    let study = lab.write("sampled.toml", STUDY);
    let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let folder = lab.study_folder();
    let summary = |run: &str| -> serde_json::Value {
        let path = folder.join(run).join("summary.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let s = summary("run-001");
    assert_eq!(s["status"], "complete", "{s}");

    // Per series over the measurement: the CPU sampled every 100 ms through the 1 s, the disk
    // only during the warm-up (no value in the measurement).
    let cpu = &s["samples"]["node1.cpu"];
    assert_eq!(cpu["unit"], "cpus", "{s}");
    assert!(cpu["count"].as_u64().unwrap() >= 5, "{cpu}");
    let (min, max) = (cpu["min"].as_f64().unwrap(), cpu["max"].as_f64().unwrap());
    assert!(min <= cpu["mean"].as_f64().unwrap() && max > min, "{cpu}");
    assert_eq!(s["samples"]["node1.disk-write"]["unit"], "bytes/s");

    // The span, on the timeline's clock, with its duration and bytes; the event's own row.
    let events: Vec<&serde_json::Value> = s["events"].as_array().unwrap().iter().collect();
    let resync = events
        .iter()
        .find(|e| e["name"] == "resync-tenant-3")
        .unwrap_or_else(|| panic!("{s}"));
    assert_eq!(resync["kind"], "reported");
    assert_eq!(resync["status"], "ok");
    assert_eq!(resync["detail"], "node2->node4 pg_basebackup");
    assert_eq!(resync["bytes"], 3_000_000);
    let took = resync["duration-seconds"].as_f64().unwrap();
    assert!((0.29..1.0).contains(&took), "{resync}");
    let rate = resync["rate-bytes"].as_f64().unwrap();
    assert!((rate - 3e6 / took).abs() < 1.0, "{resync}");
    let start = resync["start-ns"].as_i64().unwrap();
    assert!((-200_000_000..500_000_000).contains(&start), "{resync}");
    let own = events.iter().find(|e| e["name"] == "node-use").unwrap();
    assert_eq!(
        (&own["kind"], &own["status"]),
        (&"sample".into(), &"ok".into())
    );
    assert!(
        own["start-ns"].as_i64().unwrap() < 0,
        "from the warm-up's start: {own}"
    );
    assert!(own["end-ns"].as_i64().unwrap() >= 1_000_000_000, "{own}");

    // The line of neither is one warning, quoted; the comment and the blank line are not.
    let warnings: Vec<&str> = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let bad: Vec<&&str> = warnings.iter().filter(|w| w.contains("node-use")).collect();
    assert_eq!(bad.len(), 1, "{warnings:?}");
    assert!(bad[0].contains("1 line was not a sample or a span, the first: `cpu is high`"));

    // Every sample in the run's folder, stamped from the start of measurement.
    let csv = std::fs::read_to_string(folder.join("run-001/samples.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("t_ns,series,value,unit"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][1..], ["node1.disk-write", "12500000", "bytes/s"]);
    assert!(
        rows[0][0].parse::<i64>().unwrap() < 0,
        "during warm-up: {csv}"
    );
    assert!(rows.len() >= 6, "{csv}");
    let stderr = std::fs::read_to_string(folder.join("processes/node-use-run001.log")).unwrap();
    assert_eq!(stderr, "to stderr\n");

    // The results store: one row per sample, the span's bytes.
    let db = rusqlite::Connection::open(lab.results().join("results.db")).unwrap();
    let id = s["run-id"].as_str().unwrap();
    let stored: i64 = db
        .query_row(
            "SELECT count(*) FROM samples WHERE run_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored as usize, rows.len());
    let unit: String = db
        .query_row(
            "SELECT unit FROM samples WHERE run_id = ?1 AND position = 0",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(unit, "bytes/s");
    let bytes: i64 = db
        .query_row(
            "SELECT bytes FROM events WHERE name = 'resync-tenant-3' AND action = 'reported'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(bytes, 3_000_000);

    // The reports, from the stored results: a chart per unit under the run's throughput
    // timeline, the span marked with its duration and listed with its bytes, each series'
    // figures in a table.
    let out = lab.run(&["report", folder.to_str().unwrap()]);
    assert!(out.status.success(), "{:?}", text(&out));
    let html = std::fs::read_to_string(folder.join("report.html")).unwrap();
    let timeline = html
        .find("id=\"timeline-1\"")
        .expect("the throughput timeline");
    let cpus = html.find("id=\"samples-1-1\"").expect("the chart of cpus");
    assert!(timeline < cpus, "under the throughput timeline");
    let chart = &html[cpus..html[cpus..].find("</svg>").unwrap() + cpus];
    assert!(chart.contains("samples in cpus"), "{chart}");
    assert!(chart.contains("data-series=\"node1.cpu\""), "{chart}");
    assert!(chart.contains("resync-tenant-3 (reported, "), "{chart}");
    assert!(html.contains("id=\"samples-1-0\"") && html.contains("samples in bytes/s"));
    assert!(html.contains("node2-&gt;node4 pg_basebackup (3000000 bytes, "));
    assert!(
        html.contains("<td>node1.disk-write</td>"),
        "the samples table"
    );
    let out = lab.run(&[
        "report",
        folder.to_str().unwrap(),
        "--format",
        "md",
        "-o",
        "-",
    ]);
    let md = text(&out).0;
    assert!(
        md.contains("## Samples") && md.contains("| 1 | node1.cpu | cpus |"),
        "{md}"
    );

    // A command that exits before its step ends: recorded, a warning, the study went on.
    let s = summary("run-002");
    assert_eq!(s["status"], "complete", "{s}");
    let short = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "short")
        .unwrap();
    assert_eq!(
        (&short["status"], &short["exit-code"]),
        (&"failed".into(), &3.into())
    );
    assert!(
        short["detail"]
            .as_str()
            .unwrap()
            .contains("exited before the step ended"),
        "{short}"
    );
    assert!(
        s["warnings"]
            .to_string()
            .contains("event `short` (sample) failed"),
        "{s}"
    );
}

/// A step of 1 s whose `wait-for` (with `outlive-step`) succeeds 0.6 s after its load ended:
/// the sample command is stopped only after it, and before the step's `after-step` event, so
/// it reads values after the load too (in `samples.csv`, in none of the summary's figures).
#[test]
fn a_sample_event_is_stopped_after_an_outlive_step_wait_and_before_after_step_events() {
    let lab = Lab::new();
    let flag = lab.path().join("redundant");
    let study = format!(
        concat!(
            "name = \"outlived\"\n",
            null_step!(),
            r#"
[[steps.events]]
name = "use"
action = "sample"
command = ["sh", "-c", "while :; do echo 'sample n1.cpu 0.5 cpus'; sleep 0.05; done"]

[[steps.events]]
name = "copy"
action = "start"
at = "0.1s"
command = ["sh", "-c", "sleep 1.5; touch {flag}"]

[[steps.events]]
name = "resynced"
action = "wait-for"
at = "0.2s"
command = ["test", "-e", "{flag}"]
poll = "50ms"
timeout = "20s"
outlive-step = true

[[steps.events]]
name = "after"
action = "exec"
after-step = true
command = ["true"]
"#
        ),
        flag = flag.display()
    );
    let path = lab.write("outlived.toml", &study);
    let out = lab.run(&["run", path.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let folder = lab.study_folder().join("run-001");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("summary.json")).unwrap())
            .unwrap();
    let event = |name: &str| {
        s["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {s}"))
            .clone()
    };
    let ns = |e: &serde_json::Value, k: &str| e[k].as_i64().unwrap();
    let (sampled, resynced, after) = (event("use"), event("resynced"), event("after"));
    assert_eq!(resynced["status"], "ok", "{resynced}");
    assert_eq!(sampled["status"], "ok", "{sampled}");
    assert!(ns(&resynced, "end-ns") > 1_300_000_000, "{resynced}");
    assert!(
        ns(&sampled, "end-ns") >= ns(&resynced, "end-ns"),
        "{sampled} {resynced}"
    );
    assert!(
        ns(&after, "start-ns") >= ns(&sampled, "end-ns"),
        "{after} {sampled}"
    );
    // Values read while the wait outlived the load: stored, but not in the figures.
    let measured_ns = (s["measured-seconds"].as_f64().unwrap() * 1e9) as i64;
    let csv = std::fs::read_to_string(folder.join("samples.csv")).unwrap();
    let times: Vec<i64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    let inside = times
        .iter()
        .filter(|t| (0..=measured_ns).contains(*t))
        .count();
    assert!(
        times.iter().any(|t| *t > measured_ns + 200_000_000),
        "{csv}"
    );
    assert_eq!(s["samples"]["n1.cpu"]["count"], inside as u64, "{s}");
}
