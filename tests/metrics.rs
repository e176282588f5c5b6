//! Live metrics (`--metrics`) of a real run on the null target, scraped over loopback during
//! the run and once its summary is stored (the endpoint stays up for
//! `--metrics-linger-seconds`): the text parses as OpenMetrics (every sample of a declared
//! family, units matching names, `# EOF` last), every sample carries the run's labels, after the
//! run its counters equal the stored summary's, and asked for Prometheus's text format the
//! endpoint serves that, which `promtool check metrics` accepts.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Lab;

const STUDY: &str = r#"name = "metrics"
interval = "200ms"

[targets.n]
type = "null"

[workloads.w]
block-size = "4KiB"
queue-depth = 2
read-share = 0.5
rate-ops = 4000

[[steps]]
workload = "w"
targets = ["n"]
warmup = "200ms"
duration = "2s"
"#;

/// One sample: metric name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Checks `text` as an OpenMetrics exposition and returns its samples. Panics with the
/// offending line otherwise.
fn parse_openmetrics(text: &str) -> Vec<Sample> {
    assert!(text.ends_with("# EOF\n"), "must end with # EOF:\n{text}");
    let body = &text[..text.len() - "# EOF\n".len()];
    assert!(!body.contains("# EOF"), "one # EOF, last");
    let mut families: HashMap<String, String> = HashMap::new();
    let mut current: Option<String> = None;
    let mut samples = Vec::new();
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    };
    for line in body.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (kind, name, rest) = (
                parts.next().unwrap(),
                parts.next().expect("a family name"),
                parts.next().unwrap_or(""),
            );
            assert!(name_ok(name), "bad family name: {line}");
            match kind {
                "TYPE" => {
                    assert!(
                        [
                            "counter",
                            "gauge",
                            "summary",
                            "histogram",
                            "info",
                            "stateset",
                            "unknown",
                            "gaugehistogram"
                        ]
                        .contains(&rest),
                        "bad type: {line}"
                    );
                    assert!(
                        families
                            .insert(name.to_string(), rest.to_string())
                            .is_none(),
                        "family declared twice: {line}"
                    );
                    current = Some(name.to_string());
                }
                "UNIT" | "HELP" => {
                    assert_eq!(
                        current.as_deref(),
                        Some(name),
                        "metadata of another family: {line}"
                    );
                    if kind == "UNIT" {
                        assert!(
                            name.ends_with(&format!("_{rest}")),
                            "the unit must end the name: {line}"
                        );
                    }
                }
                _ => panic!("unknown metadata: {line}"),
            }
            continue;
        }
        assert!(
            !line.starts_with('#') && !line.is_empty(),
            "bad line: {line:?}"
        );
        let (name_labels, value) = line.rsplit_once(' ').expect("name and value");
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        let (name, labels) = match name_labels.split_once('{') {
            Some((n, l)) => (n, l.strip_suffix('}').expect("labels end with }")),
            None => (name_labels, ""),
        };
        let family = current.as_deref().expect("a sample before any family");
        let kind = &families[family];
        let suffixes: &[&str] = match kind.as_str() {
            "counter" => &["_total", "_created"],
            "summary" => &["", "_sum", "_count", "_created"],
            _ => &[""],
        };
        assert!(
            suffixes.iter().any(|s| name == format!("{family}{s}")),
            "sample {name} is not of the family {family} ({kind}): {line}"
        );
        let mut map = BTreeMap::new();
        let mut rest = labels;
        while !rest.is_empty() {
            let (k, v) = rest.split_once("=\"").expect("label=\"value\"");
            assert!(name_ok(k), "bad label name: {line}");
            // The value ends at the first unescaped quote.
            let mut end = None;
            let mut escaped = false;
            for (i, c) in v.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        end = Some(i);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let end = end.expect("a closing quote");
            map.insert(k.to_string(), v[..end].to_string());
            rest = v[end + 1..].strip_prefix(',').unwrap_or(&v[end + 1..]);
        }
        if kind == "counter" && name.ends_with("_total") {
            assert!(value >= 0.0, "a counter is never negative: {line}");
        }
        samples.push((name.to_string(), map, value));
    }
    samples
}

/// The address of the metrics endpoint storlab prints on stderr (`metrics: OpenMetrics on
/// SCHEME://ADDR/metrics`), the lines before it read.
fn endpoint_address(stderr: &mut impl BufRead, scheme: &str) -> String {
    let prefix = format!("metrics: OpenMetrics on {scheme}://");
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(addr) = line
            .trim()
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix("/metrics"))
        {
            return addr.to_string();
        }
        line.clear();
    }
    panic!("no {scheme} metrics address on stderr")
}

/// GET /metrics over loopback: (status line, content type, body).
fn scrape(addr: &str) -> (String, String, String) {
    scrape_accepting(addr, None)
}

/// A scrape with an `Accept` header, when given.
fn scrape_accepting(addr: &str, accept: Option<&str>) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers and body");
    let status = head.lines().next().unwrap_or("").to_string();
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    (status, ctype, body.to_string())
}

/// `promtool check metrics` (Debian's prometheus package, scripts/setup.sh) on `text`: exits 0
/// with nothing to say. Skipped without promtool unless STORLAB_REQUIRE_SERVERS is set.
fn promtool_accepts(text: &str) {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "promtool is not installed and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!("skipped: promtool is not installed (scripts/setup.sh installs prometheus)");
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {:?} {said}\n{text}",
        out.status.code()
    );
}

fn value(samples: &[Sample], name: &str, op: &str) -> f64 {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && l.get("operation").map(String::as_str) == Some(op)
                && !l.contains_key("quantile")
        })
        .unwrap_or_else(|| panic!("no {name} for {op}: {samples:?}"))
        .2
}

#[test]
fn metrics_are_served_during_the_run_and_match_the_stored_summary() {
    let lab = Lab::new();
    let study = lab.write("s.toml", STUDY);
    let mut child = lab
        .cmd()
        .args([
            "run",
            "--quiet",
            "--json",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-linger-seconds",
            "20",
            study.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storlab");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = endpoint_address(&mut stderr, "http");
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    // The rest of stderr, kept for failures.
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    // During the run: a valid exposition; once measurement has started, operations.
    let started = Instant::now();
    let mut during = None;
    while started.elapsed() < Duration::from_secs(20) {
        let (status, ctype, body) = scrape(&addr);
        assert!(status.contains(" 200 "), "{status}");
        assert_eq!(
            ctype,
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
        let samples = parse_openmetrics(&body);
        if samples
            .iter()
            .any(|(n, _, v)| n == "storlab_operations_total" && *v > 0.0)
        {
            during = Some(samples);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = during.expect("operations counted while the run goes");
    assert!(value(&during, "storlab_throughput_operations_per_second", "read") > 0.0);

    // After the run (its summary stored; the endpoint lingers): the final figures.
    let summary_path = loop {
        let found = std::fs::read_dir(lab.results())
            .ok()
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("run-001/summary.json"))
            .find(|p| p.exists());
        if let Some(p) = found {
            // Written in one go; wait until it parses.
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(
                &std::fs::read_to_string(&p).unwrap_or_default(),
            ) {
                break v;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no summary");
        std::thread::sleep(Duration::from_millis(50));
    };
    let summary = summary_path;
    let (_, _, body) = scrape(&addr);
    let after = parse_openmetrics(&body);
    // Every sample carries the run's labels.
    let run_id = summary["run-id"].as_str().unwrap();
    for (name, labels, _) in &after {
        assert_eq!(
            labels.get("study").map(String::as_str),
            Some("metrics"),
            "{name}"
        );
        assert_eq!(
            labels.get("run").map(String::as_str),
            Some(run_id),
            "{name}"
        );
    }
    assert!(
        after
            .iter()
            .any(|(n, l, _)| n == "storlab_interval_latency_seconds" && l["percentile"] == "99"),
        "the last interval's quantiles: {body}"
    );
    // Asked for Prometheus's text format, the endpoint serves it, and promtool accepts it.
    let (status, ctype, prom) = scrape_accepting(&addr, Some("text/plain; version=0.0.4"));
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(ctype, "text/plain; version=0.0.4; charset=utf-8");
    promtool_accepts(&prom);
    let target = &summary["targets"][0];
    assert_eq!(target["name"], "n");
    let mut ops_total = 0.0;
    for op in ["read", "write"] {
        let k = &target["kinds"][op];
        let ops = value(&after, "storlab_operations_total", op);
        assert_eq!(ops, k["ops"].as_f64().unwrap(), "{op}: {body}");
        assert_eq!(value(&after, "storlab_latency_seconds_count", op), ops);
        assert_eq!(
            value(&after, "storlab_bytes_total", op),
            k["bytes"].as_f64().unwrap()
        );
        assert_eq!(
            value(&after, "storlab_errors_total", op),
            k["errors"].as_f64().unwrap()
        );
        // The run's maximum latency, as the summary has it (both from the same histograms).
        let max_ns = k["service-latency"]["max-ns"].as_f64().unwrap();
        let max_s = value(&after, "storlab_latency_max_seconds", op);
        assert!(
            (max_s * 1e9 - max_ns).abs() <= 1.0,
            "{op}: {max_s} s vs {max_ns} ns"
        );
        let q: Vec<f64> = after
            .iter()
            .filter(|(n, l, _)| n == "storlab_latency_seconds" && l["operation"] == op)
            .map(|s| s.2)
            .collect();
        assert_eq!(q.len(), 4, "p50, p90, p99, p99.9 of {op}");
        assert!(q.windows(2).all(|w| w[0] <= w[1]) && q[3] <= max_s, "{q:?}");
        // The same percentiles as the summary's, from the same merged histograms.
        let lat = &k["service-latency"];
        for (got, key) in q.iter().zip(["p50-ns", "p90-ns", "p99-ns", "p99.9-ns"]) {
            let want = lat[key].as_f64().unwrap();
            assert!(
                (got * 1e9 - want).abs() <= 1.0,
                "{op} {key}: {got} s vs {want} ns"
            );
        }
        ops_total += ops;
    }
    assert_eq!(ops_total, summary["total"]["ops"].as_f64().unwrap());
    assert!(ops_total > 0.0);

    child.kill().ok();
    child.wait().ok();
    let _ = rest.join();
}

/// With `--metrics-tls-cert` and `--metrics-tls-key` the endpoint is https: a scraper that
/// trusts the certificate gets the exposition; the address printed says https.
#[test]
fn metrics_over_tls_are_scraped_by_a_client_that_trusts_the_certificate() {
    let lab = Lab::new();
    let study = lab.write("s.toml", STUDY);
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = lab.write("m.crt", &made.cert.pem());
    let key = lab.write("m.key", &made.signing_key.serialize_pem());
    let mut child = lab
        .cmd()
        .args(["run", "--quiet", "--json", "--metrics", "127.0.0.1:0"])
        .args(["--metrics-linger-seconds", "20", "--metrics-tls-cert"])
        .args([&cert, Path::new("--metrics-tls-key"), &key, &study])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storlab");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = endpoint_address(&mut stderr, "https");
    let mut s = common::tls::client(&addr, made.cert.der());
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    let read = s.read_to_string(&mut raw);
    let _ = child.kill();
    let _ = child.wait();
    read.expect("a whole answer over TLS");
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.trim_end().ends_with("# EOF"), "{raw}");
}
