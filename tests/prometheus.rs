//! Debian's Prometheus (2.42) scraping a real run's `--metrics` endpoint: the test starts its
//! own `prometheus` on a loopback port with its own configuration (scrape interval 1 s) and
//! data folder, runs a study of two null targets with warm-up and a study event, and asks
//! Prometheus's HTTP API (`/api/v1/query`):
//!
//! - during the run: `storlab_operations_total` has a series per target and operation, with
//!   exactly the labels storlab gives (the run's study, run id, step and host; target and
//!   operation; plus Prometheus's `job` and `instance`) and operations counted;
//! - after the run, at an instant at least one scrape interval after `summary.json` was
//!   written (the collector publishes its final snapshot before the summary is written, and
//!   the endpoint keeps it for `--metrics-linger-seconds`): every counter of every target and
//!   operation equals the summary's (operations, bytes, errors, latency count) and every
//!   latency quantile equals the summary's percentile to the nanosecond;
//! - the events (`storlab_event_timestamp_seconds`): warm-up, measurement and the study event,
//!   the event's time after the start of measurement as the summary has it;
//! - every query of the Grafana dashboard (`dashboards/storlab.json`: each panel's targets,
//!   its annotations, its variables' `label_values`) with the variables set to this run's
//!   values: each returns data.
//!
//! Skipped when `prometheus` is not installed (scripts/setup.sh installs it), unless
//! STORLAB_REQUIRE_SERVERS is set: then it fails.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use common::Lab;
use serde_json::Value;

const STUDY: &str = r#"name = "prom"
interval = "500ms"

[targets.a]
type = "null"

[targets.b]
type = "null"

[workloads.w]
block-size = "4KiB"
queue-depth = 2
read-share = 0.5
rate-ops = 2000

[[steps]]
workload = "w"
targets = ["a", "b"]
together = true
warmup = "1s"
# Long enough that Prometheus (scraping every second, first at an offset of its own) has
# every series while the run still goes on a busy machine: at 5 s a full test run once saw
# the first complete answer only after the run's end.
duration = "10s"

[[steps.events]]
name = "probe"
action = "exec"
at = "2s"
command = ["true"]
"#;

/// Kills the processes the test started when it ends, however it ends.
struct Started(Vec<Child>);

impl Drop for Started {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn have_prometheus() -> bool {
    Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// GET `path` (HTTP/1.0: the body ends with the connection): (status code, body).
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_string()))
}

/// Prometheus's answer to an instant query at `time` (Unix seconds; now when None).
fn query(port: u16, promql: &str, time: Option<f64>) -> Value {
    let mut path = format!("/api/v1/query?query={}", percent_encode(promql));
    if let Some(t) = time {
        path.push_str(&format!("&time={t:.3}"));
    }
    let (code, body) = get(port, &path).expect("Prometheus answers");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(code, 200, "{promql}: {body}");
    assert_eq!(v["status"], "success", "{promql}: {body}");
    v
}

/// The samples of an instant vector: (labels, value).
fn samples(answer: &Value) -> Vec<(serde_json::Map<String, Value>, f64)> {
    answer["data"]["result"]
        .as_array()
        .expect("a vector")
        .iter()
        .map(|s| {
            let v = s["value"][1].as_str().expect("a value").parse().unwrap();
            (s["metric"].as_object().expect("labels").clone(), v)
        })
        .collect()
}

fn one(answer: &Value, target: &str, op: &str) -> f64 {
    let found: Vec<f64> = samples(answer)
        .into_iter()
        .filter(|(l, _)| l["target"] == target && l["operation"] == op)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(found.len(), 1, "one sample for {target} {op}: {answer}");
    found[0]
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Starts Prometheus scraping `127.0.0.1:metrics_port` every second; returns it and its port
/// once it is ready.
fn start_prometheus(lab: &Lab, metrics_port: u16) -> (Child, u16) {
    let dir = lab.path().join("prometheus");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: storlab\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    let started = Instant::now();
    while get(port, "/-/ready").is_none_or(|(code, _)| code != 200) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "Prometheus not ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, port)
}

/// Where the run's summary is, once written.
fn summary_path(lab: &Lab) -> Option<std::path::PathBuf> {
    std::fs::read_dir(lab.results())
        .ok()?
        .flatten()
        .map(|e| e.path().join("run-001/summary.json"))
        .find(|p| p.exists())
}

/// The run's summary, once written (and complete).
fn wait_for_summary(lab: &Lab, deadline: Instant) -> Value {
    loop {
        if let Some(v) = summary_path(lab)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        {
            return v;
        }
        assert!(Instant::now() < deadline, "no summary");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn prometheus_scrapes_a_run_and_every_dashboard_query_has_data() {
    if !have_prometheus() {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "prometheus is not installed and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!("skipped: prometheus is not installed (scripts/setup.sh installs it)");
        return;
    }
    let lab = Lab::new();
    let study = lab.write("s.toml", STUDY);
    let metrics_port = free_port();
    let (prometheus, port) = start_prometheus(&lab, metrics_port);
    let mut started = Started(vec![prometheus]);
    let storlab = lab
        .cmd()
        .args(["run", "--quiet", "--metrics"])
        .arg(format!("127.0.0.1:{metrics_port}"))
        .args(["--metrics-linger-seconds", "10", study.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start storlab");
    started.0.push(storlab);
    let t0 = Instant::now();

    // During the run: operations counted, per target and operation, with storlab's labels.
    let during = loop {
        let answer = query(port, "storlab_operations_total", None);
        let s = samples(&answer);
        if s.len() == 4 && s.iter().all(|(_, v)| *v > 0.0) {
            break answer;
        }
        assert!(t0.elapsed() < Duration::from_secs(15), "no data: {answer}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        summary_path(&lab).is_none(),
        "the answer came while the run was going"
    );
    eprintln!("Prometheus during the run: {during}");
    for (labels, _) in samples(&during) {
        let mut keys: Vec<&str> = labels.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "__name__",
                "host",
                "instance",
                "job",
                "operation",
                "run",
                "step",
                "study",
                "target"
            ],
            "{labels:?}"
        );
        assert_eq!(labels["job"], "storlab");
        assert_eq!(labels["study"], "prom");
        assert!(
            labels["run"].as_str().unwrap().ends_with("-r001"),
            "{labels:?}"
        );
    }

    // After the run: a scrape that began after the summary was written holds the final
    // snapshot; one began within a scrape interval (1 s) of it.
    let summary = wait_for_summary(&lab, t0 + Duration::from_secs(30));
    let after_t = unix_now() + 2.5;
    while unix_now() < after_t + 0.2 {
        std::thread::sleep(Duration::from_millis(100));
    }
    let at = Some(after_t);
    let families = [
        ("storlab_operations_total", "ops"),
        ("storlab_bytes_total", "bytes"),
        ("storlab_errors_total", "errors"),
    ];
    let answers: Vec<Value> = families.iter().map(|(q, _)| query(port, q, at)).collect();
    eprintln!("Prometheus after the run: {}", answers[0]);
    let count = query(port, "storlab_latency_seconds_count", at);
    let quantiles =
        [("0.5", "p50-ns"), ("0.99", "p99-ns"), ("0.999", "p99.9-ns")].map(|(q, key)| {
            let promql = format!("storlab_latency_seconds{{quantile=\"{q}\"}}");
            (query(port, &promql, at), key)
        });
    let mut checked = 0;
    for t in summary["targets"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        for (op, k) in t["kinds"].as_object().unwrap() {
            for ((_, key), answer) in families.iter().zip(&answers) {
                assert_eq!(
                    one(answer, name, op),
                    k[key].as_f64().unwrap(),
                    "{name} {op} {key}"
                );
            }
            assert_eq!(one(&count, name, op), k["ops"].as_f64().unwrap());
            for (answer, key) in &quantiles {
                let want = k["service-latency"][key].as_f64().unwrap();
                let got = one(answer, name, op) * 1e9;
                assert!(
                    (got - want).abs() <= 1.0,
                    "{name} {op} {key}: {got} vs {want}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "a and b, read and write");

    // The events: warm-up, measurement, and the study event 2 s into measurement.
    let events = query(port, "storlab_event_timestamp_seconds", at);
    eprintln!("Prometheus's events: {events}");
    let event_at = |kind: &str| {
        samples(&events)
            .into_iter()
            .find(|(l, _)| l["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}: {events}"))
            .1
    };
    let (warm, measure, probe) = (
        event_at("warmup-start"),
        event_at("measure-start"),
        event_at("exec"),
    );
    assert!((measure - warm - 1.0).abs() < 1e-3, "{warm} {measure}");
    let probe_s = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "exec")
        .expect("the probe event")["time-seconds"]
        .as_f64()
        .unwrap();
    assert!(
        ((probe - measure) - probe_s).abs() < 0.25,
        "probe at {} s after measure-start, the summary says {probe_s}",
        probe - measure
    );

    dashboard_queries_have_data(port, after_t);
}

/// Every query of the dashboard, its variables set to `a` and `read`, returns data.
fn dashboard_queries_have_data(port: u16, at: f64) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dashboards/storlab.json");
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let concrete = |expr: &str| {
        let e = expr
            .replace("$__rate_interval", "4s")
            .replace("$__interval", "1s")
            .replace("$target", "a")
            .replace("$operation", "read");
        assert!(!e.contains('$'), "a variable left in {e}");
        e
    };
    let mut exprs: Vec<(String, String)> = Vec::new();
    let mut panels: Vec<&Value> = dash["panels"].as_array().unwrap().iter().collect();
    while let Some(p) = panels.pop() {
        // Rows hold panels of their own.
        panels.extend(p["panels"].as_array().into_iter().flatten());
        for t in p["targets"].as_array().into_iter().flatten() {
            exprs.push((p["title"].to_string(), t["expr"].as_str().unwrap().into()));
        }
    }
    assert!(exprs.len() >= 8, "{exprs:?}");
    for a in dash["annotations"]["list"].as_array().unwrap() {
        if let Some(e) = a["expr"].as_str() {
            exprs.push((a["name"].to_string(), e.into()));
        }
    }
    for (title, expr) in &exprs {
        let answer = query(port, &concrete(expr), Some(at));
        assert!(!samples(&answer).is_empty(), "{title}: {expr}: {answer}");
    }
    // The variables' `label_values(METRIC, LABEL)`, as Grafana asks for them.
    for v in dash["templating"]["list"].as_array().unwrap() {
        let Some(q) = v["query"]["query"].as_str() else {
            continue;
        };
        let inner = q
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
            .expect("label_values");
        let (metric, label) = inner.rsplit_once(',').unwrap();
        let path = format!(
            "/api/v1/label/{}/values?match[]={}",
            label.trim(),
            percent_encode(&concrete(metric.trim()))
        );
        let (code, body) = get(port, &path).unwrap();
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(code, 200, "{body}");
        let values = answer["data"].as_array().unwrap();
        assert!(!values.is_empty(), "{q}: {body}");
    }
    eprintln!(
        "dashboard: {} queries and its variables answered",
        exprs.len()
    );
}
