//! Live metrics for dashboards (`--metrics ADDR`): an OpenMetrics text exposition served on
//! `GET /metrics` by a small HTTP server (tiny_http) on its own thread. The collector renders
//! a snapshot once per timeline interval from what it has merged anyway (run totals, the
//! interval just completed, the run-so-far HDR histograms) and publishes it here; a scrape
//! only copies the last snapshot. No worker ever touches any of it.
//!
//! Per target and operation: `storlab_operations_total`, `storlab_bytes_total`,
//! `storlab_errors_total` (counters over the current run's measurement), the last interval's
//! `storlab_throughput_operations_per_second` and `storlab_throughput_bytes_per_second`
//! (gauges; warm-up intervals included, so that a dashboard sees the ramp), the run-so-far
//! latency as a summary `storlab_latency_seconds` (quantiles 0.5, 0.9, 0.99, 0.999 from the
//! merged HDR histograms, exact `_sum` and `_count`) and `storlab_latency_max_seconds`.
//! Counters start again at each run of a study (a counter reset, as for a restarted process).
//!
//! Events, for a dashboard's annotations: `storlab_event_timestamp_seconds{kind,event}`, a
//! gauge per mark of the current run holding the Unix time at which it happened, with the
//! summary's event kinds: `warmup-start`, `measure-start` (marked by the run and the
//! collector from the times they keep) and each study event's action (`exec`, `kill`,
//! `power-off`...) with its name, marked by the event thread as it starts the event.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use storlab_record::totals::KindTotals;

/// The content type of the exposition (OpenMetrics 1.0).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The quantiles of the latency summary, and the percentiles they are (as the summary's).
pub const QUANTILES: [(&str, f64); 4] = [
    ("0.5", 50.0),
    ("0.9", 90.0),
    ("0.99", 99.0),
    ("0.999", 99.9),
];

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("serving metrics on {addr}: {message}")]
    Bind { addr: SocketAddr, message: String },
    #[error("starting the metrics thread: {0}")]
    Thread(std::io::Error),
}

/// A mark of the current run: an event's kind (and name, for a study event) and when it
/// happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The summary's event kind: `warmup-start`, `measure-start` or a study event's action.
    pub kind: String,
    /// The study event's name (empty for a phase mark).
    pub event: String,
    /// Unix time, seconds.
    pub unix_s: f64,
}

/// The metrics endpoint: the last snapshot and the thread serving it.
pub struct Exporter {
    snapshot: Arc<Mutex<String>>,
    /// The current run's marks, rendered with each snapshot.
    marks: Mutex<Vec<Mark>>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Exporter {
    /// Listens on `addr` (port 0: any free port, see [`Exporter::addr`]) and serves from its
    /// own thread until dropped.
    pub fn start(addr: SocketAddr) -> Result<Exporter, MetricsError> {
        let server = tiny_http::Server::http(addr).map_err(|e| MetricsError::Bind {
            addr,
            message: e.to_string(),
        })?;
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| MetricsError::Bind {
                addr,
                message: "not an IP listener".into(),
            })?;
        let server = Arc::new(server);
        let snapshot = Arc::new(Mutex::new(String::from("# EOF\n")));
        let thread = {
            let (server, snapshot) = (server.clone(), snapshot.clone());
            std::thread::Builder::new()
                .name("storlab-metrics".into())
                .spawn(move || serve(&server, &snapshot))
                .map_err(MetricsError::Thread)?
        };
        Ok(Exporter {
            snapshot,
            marks: Mutex::new(Vec::new()),
            server,
            thread: Some(thread),
            addr: bound,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A run begins: the marks of the one before are forgotten.
    pub fn begin_run(&self) {
        if let Ok(mut m) = self.marks.lock() {
            m.clear();
        }
    }

    /// Marks an event of the current run at `at` (a later mark of the same kind and name
    /// replaces an earlier one). Shown from the next snapshot on.
    pub fn mark(&self, kind: &str, event: &str, at: std::time::SystemTime) {
        let unix_s = at
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        if let Ok(mut m) = self.marks.lock() {
            m.retain(|x| !(x.kind == kind && x.event == event));
            m.push(Mark {
                kind: kind.to_string(),
                event: event.to_string(),
                unix_s,
            });
        }
    }

    /// The current run's marks, in the order they were made.
    pub fn marks(&self) -> Vec<Mark> {
        self.marks.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Replaces the snapshot scrapes return.
    pub fn publish(&self, text: String) {
        if let Ok(mut s) = self.snapshot.lock() {
            *s = text;
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, snapshot: &Mutex<String>) {
    for request in server.incoming_requests() {
        let path = request.url().split('?').next().unwrap_or("");
        let response = match (request.method(), path) {
            (tiny_http::Method::Get, "/metrics") => {
                let body = snapshot.lock().map(|s| s.clone()).unwrap_or_default();
                let response = tiny_http::Response::from_string(body);
                // A constant, valid header: from_bytes only fails on bytes it holds none of.
                match tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE) {
                    Ok(header) => response.with_header(header),
                    Err(()) => response,
                }
            }
            (tiny_http::Method::Get, _) => {
                tiny_http::Response::from_string("storlab serves GET /metrics\n")
                    .with_status_code(404)
            }
            _ => tiny_http::Response::from_string("only GET\n").with_status_code(405),
        };
        // A scraper that hung up is its own business.
        let _ = request.respond(response);
    }
}

/// One target's and operation's figures, for [`render`].
pub struct Row<'a> {
    pub target: &'a str,
    pub operation: &'a str,
    /// Measured totals of the run so far.
    pub totals: &'a KindTotals,
    /// Exact sum of the service times of `totals.ops`, ns.
    pub service_sum_ns: u64,
    /// The last completed interval's rates.
    pub rate_ops: f64,
    pub rate_bytes: f64,
}

/// The OpenMetrics exposition of `rows` and `marks`.
pub fn render(rows: &[Row<'_>], marks: &[Mark]) -> String {
    let mut out = String::with_capacity(256 + rows.len() * 1024);
    let labels = |r: &Row<'_>| {
        format!(
            "target=\"{}\",operation=\"{}\"",
            escape(r.target),
            escape(r.operation)
        )
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    type Value = fn(&Row<'_>) -> String;
    /// (name, type, unit, help, label, value)
    type Family<'a> = (&'a str, &'a str, Option<&'a str>, &'a str, &'a str, Value);
    let simple: [Family; 5] = [
        (
            "storlab_operations",
            "counter",
            None,
            "_total",
            "Successful operations measured in the current run.",
            |r| r.totals.ops.to_string(),
        ),
        (
            "storlab_bytes",
            "counter",
            Some("bytes"),
            "_total",
            "Bytes moved by the successful operations measured in the current run.",
            |r| r.totals.bytes.to_string(),
        ),
        (
            "storlab_errors",
            "counter",
            None,
            "_total",
            "Failed operations measured in the current run.",
            |r| r.totals.error_count().to_string(),
        ),
        (
            "storlab_throughput_operations_per_second",
            "gauge",
            None,
            "",
            "Successful operations per second over the last completed timeline interval.",
            |r| float(r.rate_ops),
        ),
        (
            "storlab_throughput_bytes_per_second",
            "gauge",
            Some("bytes_per_second"),
            "",
            "Bytes per second over the last completed timeline interval (MB/s = this / 1e6).",
            |r| float(r.rate_bytes),
        ),
    ];
    for (name, kind, unit, suffix, help, value) in simple {
        family(&mut out, name, kind, unit, help);
        for r in rows {
            let _ = writeln!(out, "{name}{suffix}{{{}}} {}", labels(r), value(r));
        }
    }
    let name = "storlab_latency_seconds";
    family(
        &mut out,
        name,
        "summary",
        Some("seconds"),
        "Service time (submission to completion) of the current run's measured operations so far, from the merged HDR histograms.",
    );
    for r in rows {
        let l = labels(r);
        if !r.totals.service.is_empty() {
            for (q, pct) in QUANTILES {
                let v = r.totals.service.value_at_percentile(pct);
                let _ = writeln!(out, "{name}{{{l},quantile=\"{q}\"}} {}", float(secs(v)));
            }
        }
        let _ = writeln!(out, "{name}_sum{{{l}}} {}", float(secs(r.service_sum_ns)));
        let _ = writeln!(out, "{name}_count{{{l}}} {}", r.totals.service.len());
    }
    let name = "storlab_latency_max_seconds";
    family(
        &mut out,
        name,
        "gauge",
        Some("seconds"),
        "Longest service time of the current run's measured operations so far.",
    );
    for r in rows.iter().filter(|r| !r.totals.service.is_empty()) {
        let _ = writeln!(
            out,
            "{name}{{{}}} {}",
            labels(r),
            float(secs(r.totals.service.max()))
        );
    }
    let name = "storlab_event_timestamp_seconds";
    family(
        &mut out,
        name,
        "gauge",
        Some("seconds"),
        "Unix time of each event of the current run: warmup-start, measure-start, and each study event's start (kind: its action; event: its name).",
    );
    for m in marks {
        let _ = writeln!(
            out,
            "{name}{{kind=\"{}\",event=\"{}\"}} {}",
            escape(&m.kind),
            escape(&m.event),
            float(m.unix_s)
        );
    }
    out.push_str("# EOF\n");
    out
}

fn family(out: &mut String, name: &str, kind: &str, unit: Option<&str>, help: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    if let Some(u) = unit {
        let _ = writeln!(out, "# UNIT {name} {u}");
    }
    let _ = writeln!(out, "# HELP {name} {help}");
}

/// A number as OpenMetrics writes it (Rust's shortest round-trip form, never an exponent).
fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "NaN".into()
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_replaces_its_earlier_self_and_a_run_forgets_the_last_ones() {
        let e = Exporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_millis(s);
        e.mark("warmup-start", "", at(1_000));
        e.mark("kill", "crash", at(2_500));
        e.mark("kill", "crash", at(3_000));
        let marks = e.marks();
        assert_eq!(marks.len(), 2, "{marks:?}");
        assert_eq!((marks[1].kind.as_str(), marks[1].unix_s), ("kill", 3.0));
        e.begin_run();
        assert!(e.marks().is_empty());
    }

    #[test]
    fn exposition_has_every_family_and_ends_with_eof() {
        let mut t = KindTotals::new(false);
        for v in [1_000u64, 2_000, 3_000, 1_000_000] {
            t.service.record(v).unwrap();
        }
        t.ops = 4;
        t.bytes = 4 * 4096;
        t.errors[0] = 2;
        let empty = KindTotals::new(false);
        let rows = [
            Row {
                target: "disk \"a\"",
                operation: "read",
                totals: &t,
                service_sum_ns: 1_006_000,
                rate_ops: 4.0,
                rate_bytes: 16384.0,
            },
            Row {
                target: "b",
                operation: "write",
                totals: &empty,
                service_sum_ns: 0,
                rate_ops: 0.0,
                rate_bytes: 0.0,
            },
        ];
        let marks = [Mark {
            kind: "kill".into(),
            event: "crash".into(),
            unix_s: 1_700_000_000.25,
        }];
        let text = render(&rows, &marks);
        assert!(text.ends_with("# EOF\n"), "{text}");
        let l = "target=\"disk \\\"a\\\"\",operation=\"read\"";
        for line in [
            format!("storlab_operations_total{{{l}}} 4"),
            format!("storlab_bytes_total{{{l}}} 16384"),
            format!("storlab_errors_total{{{l}}} 2"),
            format!("storlab_throughput_operations_per_second{{{l}}} 4"),
            format!("storlab_latency_seconds_count{{{l}}} 4"),
            format!("storlab_latency_seconds_sum{{{l}}} 0.001006"),
            "# UNIT storlab_latency_seconds seconds".to_string(),
            "# TYPE storlab_operations counter".to_string(),
            "storlab_operations_total{target=\"b\",operation=\"write\"} 0".to_string(),
            "storlab_event_timestamp_seconds{kind=\"kill\",event=\"crash\"} 1700000000.25"
                .to_string(),
        ] {
            assert!(text.lines().any(|x| x == line), "missing {line} in\n{text}");
        }
        let max = text
            .lines()
            .find(|x| x.starts_with(&format!("storlab_latency_max_seconds{{{l}}}")))
            .unwrap();
        let v: f64 = max.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((v - 0.001).abs() < 0.001 * 0.001, "{max}");
        let p50 = text
            .lines()
            .find(|x| x.starts_with(&format!("storlab_latency_seconds{{{l},quantile=\"0.5\"}}")))
            .unwrap();
        let v: f64 = p50.rsplit(' ').next().unwrap().parse().unwrap();
        assert!((0.000_001_9..0.000_002_1).contains(&v), "{p50}");
        // No quantiles for a histogram without values.
        assert!(!text.contains("target=\"b\",operation=\"write\",quantile"));
    }
}
