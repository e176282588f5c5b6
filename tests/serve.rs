//! `storlab serve` over a real results folder (two quick runs of examples/null-engine.toml):
//! the pages fetched with a plain HTTP client and checked against the store and against
//! `storlab report` / `storlab compare --html` (the same HTML), bad input answered with a page
//! that says so (400, 404, 405, 503) while the server keeps answering; then the list, a
//! filtered list, a run, a comparison and a history loaded in headless Chromium, each DOM
//! checked and each screenshot saved as a test artifact (`<target dir>/artifacts/serve-*.png`).
//!
//! Chromium is `/usr/bin/chromium`; without it that part says so and passes, unless
//! STORLAB_REQUIRE_CHROMIUM is set (as scripts/test.sh does).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Lab, shot::artifacts, text};

const CHROMIUM: &str = "/usr/bin/chromium";

const OTHER_STUDY: &str = r#"
name = "other-lab"

[targets.disk]
type = "null"

[workloads.reads]
block-size = "4KiB"
read-share = 1.0

[[steps]]
name = "reads"
workload = "reads"
targets = ["disk"]
duration = "1s"
"#;

/// The running server, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(lab: &Lab) -> Server {
    start_server_with(lab, &[])
}

/// `storlab serve` on a free loopback port, with `extra` arguments.
fn start_server_with(lab: &Lab, extra: &[&str]) -> Server {
    let mut child = lab
        .cmd()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start storlab serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the address line");
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Server { child, addr }
}

/// GET (or `method`) `path`: (status code, body).
fn request(addr: &str, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to storlab serve");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers and body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("status line: {head}"));
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/html; charset=utf-8"),
        "{head}"
    );
    (status, body.to_string())
}

fn get(addr: &str, path: &str) -> (u16, String) {
    request(addr, "GET", path)
}

/// The page without the link back to the list that serve puts after `<body>`.
fn without_nav(page: &str) -> String {
    let start = page.find("\n<nav class=\"serve\">").expect("the nav");
    let end = page[start..].find("</nav>\n").expect("the nav's end") + start + "</nav>\n".len();
    format!("{}{}", &page[..start], &page[end..])
}

fn rows(page: &str) -> usize {
    page.matches("<tr data-run=").count()
}

/// The stored runs: (run id, ops/s, UTC day started) from `storlab results list --json`.
fn stored(lab: &Lab) -> Vec<(String, f64, String)> {
    let out = lab.run(&["results", "list", "--json"]);
    assert!(out.status.success(), "{}", text(&out).1);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run-id"].as_str().unwrap().to_string(),
                r["rate-ops"].as_f64().unwrap(),
                r["started-at"].as_str().unwrap()[..10].to_string(),
            )
        })
        .collect()
}

#[test]
fn serve_lists_filters_reports_compares_and_charts_history() {
    let lab = Lab::new();
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/null-engine.toml");
    for _ in 0..2 {
        let out = lab.run(&["run", study.to_str().unwrap(), "--quick", "-q"]);
        assert!(out.status.success(), "{}", text(&out).1);
    }
    // Another study, on a target of another name: what the filters leave out.
    let other = lab.write("other.toml", OTHER_STUDY);
    let out = lab.run(&["run", other.to_str().unwrap(), "--quick", "-q"]);
    assert!(out.status.success(), "{}", text(&out).1);
    let all = stored(&lab);
    assert_eq!(all.len(), 7, "{all:?}");
    let runs: Vec<_> = all[..6].to_vec();
    assert!(
        runs.iter().all(|r| r.0.starts_with("null-engine-")),
        "{runs:?}"
    );
    let server = start_server(&lab);
    let addr = server.addr.as_str();

    // The list: every run, newest first, a box to tick each and a link to its report.
    let (status, list) = get(addr, "/");
    assert_eq!(status, 200, "{list}");
    assert_eq!(rows(&list), 7);
    for (id, rate_ops, _) in &all {
        assert!(list.contains(&format!("value=\"{id}\"")), "{id}");
        assert!(list.contains(&format!("href=\"/run/{id}\"")), "{id}");
        assert!(
            list.contains(&format!(">{rate_ops:.0}<")),
            "{id} {rate_ops}"
        );
    }
    let newest = &all[6].0;
    assert!(list.find(newest.as_str()) < list.find(runs[0].0.as_str()));
    assert!(list.contains("action=\"/compare\"") && list.contains("name=\"run\""));

    // Filters, as the form sends them (empty fields filter nothing).
    // The runs started on one day (or across midnight: then only the first's).
    let today = runs[0].2.clone();
    let on_day = all.iter().filter(|r| r.2 == today).count();
    let on_day_here = runs.iter().filter(|r| r.2 == today).count();
    for (query, expected) in [
        (
            "study=null-engine&target=&system=&status=complete&from=&to=",
            6,
        ),
        ("target=null", 6),
        ("target=disk", 1),
        ("study=other-lab&status=complete", 1),
        ("study=another", 0),
        ("status=failed", 0),
        (&format!("from={today}&to={today}") as &str, on_day),
        ("from=2999-01-01", 0),
        ("to=2000-01-01", 0),
    ] {
        let (status, page) = get(addr, &format!("/?{query}"));
        assert_eq!(status, 200, "{query}: {page}");
        assert_eq!(rows(&page), expected, "{query}");
    }
    let (_, none) = get(addr, "/?study=another");
    assert!(none.contains("No stored run matches"));

    // A run's report is `storlab report`'s HTML; a comparison is `storlab compare --html`'s.
    let (a, b) = (&runs[0].0, &runs[3].0);
    let (status, report) = get(addr, &format!("/run/{a}"));
    assert_eq!(status, 200);
    let out = lab.run(&["report", a, "-o", "-"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(without_nav(&report), text(&out).0);
    let (status, compared) = get(addr, &format!("/compare?run={a}&run={b}"));
    assert_eq!(status, 200, "{compared}");
    let html = lab.path().join("compare.html");
    let out = lab.run(&["compare", a, b, "--html", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(
        without_nav(&compared),
        std::fs::read_to_string(&html).unwrap()
    );

    // The history of the null target: every run, its ops/s, two charts.
    let (status, history) = get(addr, "/history?study=null-engine&target=null");
    assert_eq!(status, 200, "{history}");
    let table = history.split("<table id=\"history\">").nth(1).unwrap();
    assert_eq!(table.matches("<tr><td>").count(), 6);
    for (id, rate_ops, _) in &runs {
        assert!(table.contains(id.as_str()) && table.contains(&format!(">{rate_ops:.0}<")));
    }
    assert!(history.contains("id=\"history-ops\"") && history.contains("id=\"history-p99\""));
    // A point per run on each chart.
    assert_eq!(history.matches("class=\"pt\"").count(), 12, "{history}");
    let (status, one_step) = get(
        addr,
        "/history?study=null-engine&target=null&step=open-loop",
    );
    assert_eq!(status, 200);
    assert_eq!(one_step.matches("<tr><td>").count(), 2);

    bad_input_is_a_page_that_says_so(&lab, addr, a);
    if chromium_available() {
        let filter = format!("study=null-engine&from={today}&to={today}&status=complete");
        in_chromium(addr, &filter, &format!("{on_day_here} of 7 runs"), a, b);
    }
}

fn bad_input_is_a_page_that_says_so(lab: &Lab, addr: &str, run: &str) {
    for (path, status, says) in [
        ("/run/no-such-run", 404, "no run `no-such-run`"),
        ("/run/%3Cscript%3E", 404, "no run `&lt;script&gt;`"),
        (
            "/?from=2026-02-30",
            400,
            "from: `2026-02-30`: month 2 of 2026 has no day 30",
        ),
        (
            "/?to=soon",
            400,
            "to: `soon` is not a date of the form YYYY-MM-DD",
        ),
        ("/?status=done", 400, "status: `done` is not a run status"),
        ("/?colour=red", 400, "colour: not a filter of the list"),
        (
            "/?study=%zz",
            400,
            "a `%` not followed by two hexadecimal digits",
        ),
        (
            &format!("/compare?run={run}") as &str,
            400,
            "run: a comparison needs 2",
        ),
        (
            &format!("/compare?run={run}&run=gone") as &str,
            404,
            "no run `gone`",
        ),
        ("/history?study=null-engine", 400, "target: missing"),
        (
            "/history?study=null-engine&target=nope",
            404,
            "no run of study `null-engine` has figures of a target `nope`",
        ),
        ("/nothing-here", 404, "no page /nothing-here"),
    ] {
        let (got, page) = get(addr, path);
        assert_eq!(got, status, "{path}: {page}");
        assert!(page.contains(says), "{path}: {page}");
        assert!(!page.contains("<script>"), "{path}: not escaped");
    }
    let (got, page) = request(addr, "POST", "/");
    assert_eq!(got, 405, "{page}");

    // A store that is damaged, then gone: 503 pages; restored: the list again.
    let db = lab.results().join("results.db");
    let kept = lab.path().join("results.db.kept");
    std::fs::rename(&db, &kept).unwrap();
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    let (got, page) = get(addr, "/");
    assert_eq!(got, 503, "{page}");
    assert!(
        page.contains("damaged") && page.contains("storlab results reindex"),
        "{page}"
    );
    let (got, _) = get(addr, &format!("/run/{run}"));
    assert_eq!(got, 503);
    std::fs::remove_file(&db).unwrap();
    let (got, page) = get(addr, "/history?study=null-engine&target=null");
    assert_eq!(got, 503, "{page}");
    assert!(page.contains("no results store at"), "{page}");
    std::fs::rename(&kept, &db).unwrap();
    let (got, page) = get(addr, "/");
    assert_eq!(
        got, 200,
        "the server answers after the bad requests: {page}"
    );
    assert_eq!(rows(&page), 7);
}

fn chromium_available() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    assert!(
        std::env::var_os("STORLAB_REQUIRE_CHROMIUM").is_none(),
        "{CHROMIUM} is missing and STORLAB_REQUIRE_CHROMIUM is set: install Debian's chromium package (scripts/setup.sh does)"
    );
    eprintln!("SKIPPED: {CHROMIUM} is missing: the pages were not loaded in a browser");
    false
}

/// Headless Chromium on `url` with `extra` arguments: its stdout (the DOM with --dump-dom).
fn chromium(url: &str, extra: &[&str]) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=3000",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium: {}", text(&out).1);
    text(&out).0
}

/// Loads each page in Chromium: its DOM checked, its first screen saved and checked to be a
/// picture with something on it.
fn in_chromium(addr: &str, filter: &str, filtered: &str, a: &str, b: &str) {
    let pages = [
        ("list", "/".to_string(), "Compare ticked runs"),
        ("list-filtered", format!("/?{filter}"), filtered),
        ("run", format!("/run/{a}"), "data-charts=\"OK:"),
        (
            "compare",
            format!("/compare?run={a}&run={b}"),
            "compare-bars",
        ),
        (
            "history",
            "/history?study=null-engine&target=null".to_string(),
            "history-p99",
        ),
    ];
    for (name, path, expected) in pages {
        let url = format!("http://{addr}{path}");
        let dom = chromium(&url, &["--dump-dom"]);
        assert!(dom.contains(expected), "{name}: {expected} not in {dom}");
        assert!(dom.contains("storlab: all runs"), "{name}: no way back");
        if name == "list" {
            // The forms as the browser parsed them build the URLs loaded here: the filters'
            // fields by the names the server reads, the ticked runs' boxes as `run`.
            let filters = dom
                .split("<form class=\"filters\"")
                .nth(1)
                .expect("filter form");
            let filters = filters.split("</form>").next().unwrap();
            assert!(filters.contains("method=\"get\" action=\"/\""), "{filters}");
            for field in ["study", "target", "system", "status", "from", "to"] {
                assert!(filters.contains(&format!("name=\"{field}\"")), "{field}");
            }
            assert!(dom.contains("<form method=\"get\" action=\"/compare\">"));
            assert_eq!(dom.matches("type=\"checkbox\" name=\"run\"").count(), 7);
        }
        let shot = artifacts().join(format!("serve-{name}.png"));
        let _ = std::fs::remove_file(&shot);
        chromium(&url, &[&format!("--screenshot={}", shot.display())]);
        let png = std::fs::read(&shot).expect("screenshot written");
        assert!(&png[1..4] == b"PNG", "{name}: not a PNG");
        // A blank first screen compresses to a few kB; these have tables and charts.
        assert!(png.len() > 20_000, "{name}: {} bytes", png.len());
        eprintln!("screenshot: {}", shot.display());
    }
}

/// GET `path` with `headers` (each `Name: value`): (status code, response head).
fn get_with(addr: &str, path: &str, headers: &[&str]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to storlab serve");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let raw = String::from_utf8_lossy(&raw).to_string();
    let head = raw.split_once("\r\n\r\n").map_or(raw.as_str(), |(h, _)| h);
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("status line: {head}"));
    (status, head.to_string())
}

/// Serving beyond loopback needs a token; with one, a request without it is refused (401,
/// with the challenge a browser answers by asking for it), one with it answered.
#[test]
fn beyond_loopback_serve_needs_a_token_and_every_request_carries_it() {
    let lab = Lab::new();
    let out = lab.run(&["serve", "--listen", "0.0.0.0:0"]);
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("--listen 0.0.0.0:0 is not a loopback address")
            && err.contains("--token FILE"),
        "{err}"
    );
    let token = lab.write("token", "s3cret-token-of-24-chars\n");
    let server = start_server_with(&lab, &["--token", token.to_str().unwrap()]);
    let (status, head) = get_with(&server.addr, "/", &[]);
    assert_eq!(status, 401, "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: basic realm=\"storlab\""),
        "{head}"
    );
    let (status, _) = get_with(
        &server.addr,
        "/",
        &["Authorization: Bearer wrong-token-of-24-chars"],
    );
    assert_eq!(status, 401);
    // With the token: served (no store yet: the page says so, not 401).
    let (status, head) = get_with(
        &server.addr,
        "/",
        &["Authorization: Bearer s3cret-token-of-24-chars"],
    );
    assert_ne!(status, 401, "{head}");
    // A browser's Basic authentication, the token as the password.
    let (status, head) = get_with(
        &server.addr,
        "/",
        &["Authorization: Basic dXNlcjpzM2NyZXQtdG9rZW4tb2YtMjQtY2hhcnM="],
    );
    assert_ne!(status, 401, "{head}");
}

/// With a certificate and its key, serve speaks TLS only: a client that trusts the
/// certificate gets the pages (the token asked for as without TLS), plain HTTP gets none.
#[test]
fn with_a_certificate_serve_answers_over_tls_only() {
    let lab = Lab::new();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = lab.write("lab.crt", &made.cert.pem());
    let key = lab.write("lab.key", &made.signing_key.serialize_pem());
    let token = lab.write("token", "s3cret-token-of-24-chars\n");
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let args = [
        "--token".to_string(),
        path(&token),
        "--tls-cert".to_string(),
        path(&cert),
        "--tls-key".to_string(),
        path(&key),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = start_server_with(&lab, &args);
    let ask = |authorization: &str| {
        let mut s = common::tls::client(&server.addr, made.cert.der());
        write!(
            s,
            "GET / HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw)
            .expect("a whole answer, closed with TLS's close_notify");
        raw
    };
    let refused = ask("");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let page = ask("Authorization: Bearer s3cret-token-of-24-chars\r\n");
    assert!(page.starts_with("HTTP/1.1 "), "{page}");
    assert!(!page.starts_with("HTTP/1.1 401"), "{page}");
    assert!(page.contains("</html>"), "{page}");
    let mut plain = TcpStream::connect(&server.addr).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        plain,
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = plain.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    assert!(!raw.contains("HTTP/1."), "plain HTTP got an answer: {raw}");
    // A key that is not the certificate's: refused before listening, naming both files.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let wrong_key = lab.write("other.key", &other.signing_key.serialize_pem());
    let out = lab.run(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        &path(&cert),
        "--tls-key",
        &path(&wrong_key),
    ]);
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("--tls-cert {}", cert.display()))
            && err.contains(&format!("--tls-key {}", wrong_key.display())),
        "{err}"
    );
}
