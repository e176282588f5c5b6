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
//! The last interval's latency percentiles are the gauge `storlab_interval_latency_seconds`
//! (service time; label `percentile`: 50, 90, 99, 99.9), from that interval's merged
//! histograms.
//!
//! Every sample carries the run's labels: `study`, `run` (its id), `step`, `host`, and each
//! sweep parameter of the run (its name with `-` and `.` as `_`; `param_` before a name that
//! would clash), so that two runs, or two points of a sweep, are two series.
//!
//! A scrape that asks for OpenMetrics (`Accept: application/openmetrics-text`, as Prometheus
//! does), or names no format, gets OpenMetrics 1.0; one that asks for Prometheus's text format
//! (`text/plain`) gets that (version 0.0.4: `HELP` and `TYPE` named as the samples, no `UNIT`,
//! no `# EOF`), which `promtool check metrics` accepts.
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

/// The content type of the OpenMetrics 1.0 exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of Prometheus's text format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The two expositions a scrape may get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Prometheus,
}

impl Format {
    /// What a scrape's `Accept` header asks for: OpenMetrics when it names it or names
    /// nothing, Prometheus's text format when it asks for `text/plain` without OpenMetrics.
    pub fn negotiate(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if !a.contains("application/openmetrics-text") && a.contains("text/plain") => {
                Format::Prometheus
            }
            _ => Format::OpenMetrics,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => CONTENT_TYPE,
            Format::Prometheus => PROMETHEUS_CONTENT_TYPE,
        }
    }
}

/// The last snapshot, in both formats.
#[derive(Debug, Clone)]
struct Snapshot {
    openmetrics: String,
    prometheus: String,
}

impl Snapshot {
    fn get(&self, format: Format) -> &str {
        match format {
            Format::OpenMetrics => &self.openmetrics,
            Format::Prometheus => &self.prometheus,
        }
    }
}

/// The quantiles of the latency summary, and the percentiles they are (as the summary's).
pub const QUANTILES: [(&str, f64); 4] = [
    ("0.5", 50.0),
    ("0.9", 90.0),
    ("0.99", 99.0),
    ("0.999", 99.9),
];

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("serving metrics: {0}")]
    Listen(#[from] crate::http::HttpError),
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
    snapshot: Arc<Mutex<Snapshot>>,
    /// The current run's marks, rendered with each snapshot.
    marks: Mutex<Vec<Mark>>,
    /// The current run's labels, rendered (`study="...",run="...",...`).
    run_labels: Mutex<String>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    /// The listener (and its TLS front), kept until the thread has ended.
    http: crate::http::HttpServer,
}

impl Exporter {
    /// Listens on `addr` (port 0: any free port, see [`Exporter::addr`]) and serves from its
    /// own thread until dropped; with `token`, only to scrapes that carry it (see
    /// [`crate::access`]).
    pub fn start(
        addr: SocketAddr,
        token: Option<crate::access::Token>,
        tls: Option<&crate::http::TlsIdentity>,
    ) -> Result<Exporter, MetricsError> {
        let http = crate::http::HttpServer::bind(addr, tls)?;
        let server = http.server.clone();
        let snapshot = Arc::new(Mutex::new(Snapshot {
            openmetrics: String::from("# EOF\n"),
            prometheus: String::new(),
        }));
        let thread = {
            let (server, snapshot) = (server.clone(), snapshot.clone());
            std::thread::Builder::new()
                .name("storlab-metrics".into())
                .spawn(move || serve(&server, &snapshot, token.as_ref()))
                .map_err(MetricsError::Thread)?
        };
        Ok(Exporter {
            snapshot,
            marks: Mutex::new(Vec::new()),
            run_labels: Mutex::new(String::new()),
            server,
            thread: Some(thread),
            http,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.http.addr()
    }

    /// The scrape URL.
    pub fn url(&self) -> String {
        format!("{}://{}/metrics", self.http.scheme(), self.http.addr())
    }

    /// A run begins, with its labels (name, value): the marks of the one before are
    /// forgotten.
    pub fn begin_run(&self, labels: &[(String, String)]) {
        if let Ok(mut m) = self.marks.lock() {
            m.clear();
        }
        if let Ok(mut l) = self.run_labels.lock() {
            *l = render_labels(labels);
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

    /// Renders `rows` with the run's labels and marks into the snapshot scrapes return.
    pub fn publish(&self, rows: &[Row<'_>]) {
        let marks = self.marks();
        let labels = self
            .run_labels
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default();
        let snapshot = Snapshot {
            openmetrics: render(rows, &marks, &labels, Format::OpenMetrics),
            prometheus: render(rows, &marks, &labels, Format::Prometheus),
        };
        if let Ok(mut s) = self.snapshot.lock() {
            *s = snapshot;
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

/// A request header's value.
fn header(request: &tiny_http::Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}

fn serve(
    server: &tiny_http::Server,
    snapshot: &Mutex<Snapshot>,
    token: Option<&crate::access::Token>,
) {
    for request in server.incoming_requests() {
        let path = request.url().split('?').next().unwrap_or("");
        let admitted = token.is_none_or(|t| t.admits(header(&request, "Authorization").as_deref()));
        let response = match (request.method(), path) {
            _ if !admitted => {
                let response = tiny_http::Response::from_string(
                    "a token is needed: Authorization: Bearer TOKEN\n",
                )
                .with_status_code(401);
                match tiny_http::Header::from_bytes("WWW-Authenticate", crate::access::CHALLENGE) {
                    Ok(h) => response.with_header(h),
                    Err(()) => response,
                }
            }
            (tiny_http::Method::Get, "/metrics") => {
                let accept = header(&request, "Accept");
                let format = Format::negotiate(accept.as_deref());
                let body = snapshot
                    .lock()
                    .map(|s| s.get(format).to_string())
                    .unwrap_or_default();
                let response = tiny_http::Response::from_string(body);
                // A constant, valid header: from_bytes only fails on bytes it holds none of.
                match tiny_http::Header::from_bytes("Content-Type", format.content_type()) {
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
    /// The last completed interval's service-time quantiles ([`QUANTILES`]), ns; None when it
    /// completed no operation.
    pub interval_quantiles_ns: Option<[u64; 4]>,
}

/// A run's labels as a sample's label text: `name="value",...` (names made valid: `-` and `.`
/// as `_`).
fn render_labels(labels: &[(String, String)]) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{}=\"{}\"", label_name(k), escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// Labels every sample has besides the run's: a sweep parameter of one of these names gets
/// `param_` before it.
const RESERVED_LABELS: [&str; 9] = [
    "study",
    "run",
    "step",
    "host",
    "target",
    "operation",
    "quantile",
    "percentile",
    "kind",
];

/// A sweep parameter's name as a label name: `[a-zA-Z_][a-zA-Z0-9_]*`, clear of the labels
/// storlab gives itself.
pub fn parameter_label(name: &str) -> String {
    let n = label_name(name);
    if RESERVED_LABELS.contains(&n.as_str()) || n == "event" || n.starts_with("__") {
        format!("param_{n}")
    } else {
        n
    }
}

fn label_name(name: &str) -> String {
    let mut n: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if n.is_empty() || n.starts_with(|c: char| c.is_ascii_digit()) {
        n.insert(0, '_');
    }
    n
}

/// The exposition of `rows` and `marks` in `format`, every sample with `run_labels` (see
/// [`Exporter::begin_run`]).
pub fn render(rows: &[Row<'_>], marks: &[Mark], run_labels: &str, format: Format) -> String {
    let mut e = Exposition {
        out: String::with_capacity(256 + rows.len() * 1024),
        format,
        run: if run_labels.is_empty() {
            String::new()
        } else {
            format!("{run_labels},")
        },
    };
    e.counters_and_rates(rows);
    e.latencies(rows);
    e.events(marks);
    if format == Format::OpenMetrics {
        e.out.push_str("# EOF\n");
    }
    e.out
}

/// An exposition being written: its text, its format and the run's labels (`name="v",`).
struct Exposition {
    out: String,
    format: Format,
    run: String,
}

/// Seconds of a count of nanoseconds.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Exposition {
    /// A row's labels: the run's, its target and its operation.
    fn labels(&self, r: &Row<'_>) -> String {
        format!(
            "{}target=\"{}\",operation=\"{}\"",
            self.run,
            escape(r.target),
            escape(r.operation)
        )
    }

    fn family(&mut self, name: (&str, &str), kind: &str, unit: Option<&str>, help: &str) {
        family(&mut self.out, self.format, name, kind, unit, help);
    }

    /// The counters of the run so far and the last interval's rates.
    fn counters_and_rates(&mut self, rows: &[Row<'_>]) {
        type Value = fn(&Row<'_>) -> String;
        /// (name, type, unit, sample suffix, help, value)
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
            self.family((name, suffix), kind, unit, help);
            for r in rows {
                let l = self.labels(r);
                let _ = writeln!(self.out, "{name}{suffix}{{{l}}} {}", value(r));
            }
        }
    }

    /// The run-so-far summary and maximum, and the last interval's quantiles.
    fn latencies(&mut self, rows: &[Row<'_>]) {
        let name = "storlab_latency_seconds";
        self.family(
            (name, ""),
            "summary",
            Some("seconds"),
            "Service time (submission to completion) of the current run's measured operations so far, from the merged HDR histograms.",
        );
        for r in rows {
            let l = self.labels(r);
            if !r.totals.service.is_empty() {
                for (q, pct) in QUANTILES {
                    let v = r.totals.service.value_at_percentile(pct);
                    let _ = writeln!(
                        self.out,
                        "{name}{{{l},quantile=\"{q}\"}} {}",
                        float(secs(v))
                    );
                }
            }
            let _ = writeln!(
                self.out,
                "{name}_sum{{{l}}} {}",
                float(secs(r.service_sum_ns))
            );
            let _ = writeln!(self.out, "{name}_count{{{l}}} {}", r.totals.service.len());
        }
        let name = "storlab_latency_max_seconds";
        self.family(
            (name, ""),
            "gauge",
            Some("seconds"),
            "Longest service time of the current run's measured operations so far.",
        );
        for r in rows.iter().filter(|r| !r.totals.service.is_empty()) {
            let l = self.labels(r);
            let max = float(secs(r.totals.service.max()));
            let _ = writeln!(self.out, "{name}{{{l}}} {max}");
        }
        let name = "storlab_interval_latency_seconds";
        self.family(
            (name, ""),
            "gauge",
            Some("seconds"),
            "Service time quantiles of the operations completed in the last completed timeline interval, from its merged HDR histograms.",
        );
        for r in rows {
            let Some(q_ns) = r.interval_quantiles_ns else {
                continue;
            };
            let l = self.labels(r);
            // `percentile`, not `quantile`: Prometheus keeps that label to summaries, and a
            // gauge is what this is (the interval's, not a running summary).
            for ((_, pct), v) in QUANTILES.iter().zip(q_ns) {
                let _ = writeln!(
                    self.out,
                    "{name}{{{l},percentile=\"{pct}\"}} {}",
                    float(secs(v))
                );
            }
        }
    }

    /// The run's marks, for a dashboard's annotations.
    fn events(&mut self, marks: &[Mark]) {
        let name = "storlab_event_timestamp_seconds";
        self.family(
            (name, ""),
            "gauge",
            Some("seconds"),
            "Unix time of each event of the current run: warmup-start, measure-start, and each study event's start (kind: its action; event: its name).",
        );
        for m in marks {
            let _ = writeln!(
                self.out,
                "{name}{{{}kind=\"{}\",event=\"{}\"}} {}",
                self.run,
                escape(&m.kind),
                escape(&m.event),
                float(m.unix_s)
            );
        }
    }
}

/// A family's metadata: OpenMetrics names the family (`TYPE`, `UNIT`, `HELP`); Prometheus's
/// text format names the samples (`storlab_operations_total`) and has no `UNIT`.
fn family(
    out: &mut String,
    format: Format,
    (name, suffix): (&str, &str),
    kind: &str,
    unit: Option<&str>,
    help: &str,
) {
    match format {
        Format::OpenMetrics => {
            let _ = writeln!(out, "# TYPE {name} {kind}");
            if let Some(u) = unit {
                let _ = writeln!(out, "# UNIT {name} {u}");
            }
            let _ = writeln!(out, "# HELP {name} {help}");
        }
        Format::Prometheus => {
            let _ = writeln!(out, "# HELP {name}{suffix} {help}");
            let _ = writeln!(out, "# TYPE {name}{suffix} {kind}");
        }
    }
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
        let e = Exporter::start("127.0.0.1:0".parse().unwrap(), None, None).unwrap();
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_millis(s);
        e.mark("warmup-start", "", at(1_000));
        e.mark("kill", "crash", at(2_500));
        e.mark("kill", "crash", at(3_000));
        let marks = e.marks();
        assert_eq!(marks.len(), 2, "{marks:?}");
        assert_eq!((marks[1].kind.as_str(), marks[1].unix_s), ("kill", 3.0));
        e.begin_run(&[]);
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
                interval_quantiles_ns: Some([2_000, 3_000, 1_000_000, 1_000_000]),
            },
            Row {
                target: "b",
                operation: "write",
                totals: &empty,
                service_sum_ns: 0,
                rate_ops: 0.0,
                rate_bytes: 0.0,
                interval_quantiles_ns: None,
            },
        ];
        let marks = [Mark {
            kind: "kill".into(),
            event: "crash".into(),
            unix_s: 1_700_000_000.25,
        }];
        let run = render_labels(&[
            ("study".into(), "s".into()),
            (parameter_label("queue-depth"), "32".into()),
            (parameter_label("target"), "x".into()),
        ]);
        assert_eq!(run, "study=\"s\",queue_depth=\"32\",param_target=\"x\"");
        let text = render(&rows, &marks, &run, Format::OpenMetrics);
        assert!(text.ends_with("# EOF\n"), "{text}");
        let l = format!("{run},target=\"disk \\\"a\\\"\",operation=\"read\"");
        for line in [
            format!("storlab_operations_total{{{l}}} 4"),
            format!("storlab_bytes_total{{{l}}} 16384"),
            format!("storlab_errors_total{{{l}}} 2"),
            format!("storlab_throughput_operations_per_second{{{l}}} 4"),
            format!("storlab_latency_seconds_count{{{l}}} 4"),
            format!("storlab_latency_seconds_sum{{{l}}} 0.001006"),
            "# UNIT storlab_latency_seconds seconds".to_string(),
            "# TYPE storlab_operations counter".to_string(),
            format!("storlab_operations_total{{{run},target=\"b\",operation=\"write\"}} 0"),
            format!(
                "storlab_event_timestamp_seconds{{{run},kind=\"kill\",event=\"crash\"}} 1700000000.25"
            ),
            format!("storlab_interval_latency_seconds{{{l},percentile=\"90\"}} 0.000003"),
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
        // Prometheus's text format: metadata named as the samples, no UNIT, no EOF.
        let prom = render(&rows, &marks, &run, Format::Prometheus);
        for line in [
            "# HELP storlab_operations_total Successful operations measured in the current run.",
            "# TYPE storlab_operations_total counter",
            "# TYPE storlab_latency_seconds summary",
        ] {
            assert!(prom.lines().any(|x| x == line), "missing {line} in\n{prom}");
        }
        assert!(
            !prom.contains("# UNIT") && !prom.contains("# EOF"),
            "{prom}"
        );
        assert_eq!(
            prom.lines().filter(|x| !x.starts_with('#')).count(),
            text.lines().filter(|x| !x.starts_with('#')).count(),
            "the same samples"
        );
    }

    #[test]
    fn a_scrape_gets_the_format_it_asks_for() {
        use Format::*;
        for (accept, want) in [
            (None, OpenMetrics),
            (
                Some(
                    "application/openmetrics-text; version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
                ),
                OpenMetrics,
            ),
            (Some("text/plain; version=0.0.4"), Prometheus),
            (Some("text/plain"), Prometheus),
            (Some("*/*"), OpenMetrics),
        ] {
            assert_eq!(Format::negotiate(accept), want, "{accept:?}");
        }
    }
}
