//! The HTML brief of a real file-target sweep in headless Chromium: it must load without any
//! console error, every chart must draw something (the page's own check sets `data-charts`),
//! and a screenshot is saved as a test artifact (`<target dir>/artifacts/report.png`); the
//! same for the RocksDB scaling study and for a Redis killed mid-run (its recovery on the
//! timeline).
//!
//! Needs `/usr/bin/chromium` (Debian's `chromium` package, installed by scripts/setup.sh). When
//! it is missing the test says so and passes, unless STORLAB_REQUIRE_CHROMIUM is set (as
//! scripts/test.sh does), in which case it fails.

mod common;
mod print;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Lab, text};

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium_available() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    if std::env::var_os("STORLAB_REQUIRE_CHROMIUM").is_some() {
        panic!(
            "{CHROMIUM} is missing and STORLAB_REQUIRE_CHROMIUM is set: install Debian's chromium package (scripts/setup.sh does)"
        );
    }
    eprintln!(
        "SKIPPED: {CHROMIUM} is missing (install Debian's chromium package; set STORLAB_REQUIRE_CHROMIUM=1 to make this a failure)"
    );
    false
}

/// Runs headless Chromium on a page with `extra` arguments; returns (stdout, stderr).
fn chromium(page: &Path, extra: &[&str]) -> (String, String) {
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
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            &format!("--user-data-dir={}", profile.path().display()),
        ])
        .args(
            // A tall window unless the caller sized it (a first screen).
            (!extra.iter().any(|a| a.starts_with("--window-size")))
                .then_some("--window-size=1280,4000"),
        )
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "chromium failed: {stderr}");
    (stdout, stderr)
}

/// Console messages and uncaught errors the page produced.
fn console_problems(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

/// The page's chart check: `OK:<charts>` or `EMPTY:<ids>`.
fn charts_marker(dom: &str) -> String {
    let key = "data-charts=\"";
    let start = dom.find(key).unwrap_or_else(|| {
        panic!(
            "the page's chart check did not run: {}",
            &dom[..dom.len().min(400)]
        )
    }) + key.len();
    dom[start..].split('"').next().unwrap().to_string()
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}

/// The study folder of the one study run in `lab`, its HTML report written to
/// `<lab>/<name>.html` and loaded in Chromium: (folder, page, DOM, charts drawn). Fails on any
/// console output or an empty chart.
fn rendered_report(lab: &Lab, name: &str) -> (PathBuf, PathBuf, String, usize) {
    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    let page = lab.path().join(format!("{name}.html"));
    let out = lab.run(&[
        "report",
        folder.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out).1);
    let (dom, stderr) = chromium(&page, &["--dump-dom"]);
    let problems = console_problems(&stderr);
    assert!(
        problems.is_empty(),
        "console output from the report: {problems:#?}"
    );
    let marker = charts_marker(&dom);
    let n: usize = marker
        .strip_prefix("OK:")
        .unwrap_or_else(|| panic!("charts did not render: {marker}"))
        .parse()
        .unwrap();
    (folder, page, dom, n)
}

/// A screenshot of `page`, saved as `<target dir>/artifacts/<name>.png`.
fn screenshot(page: &Path, name: &str) {
    screenshot_sized(page, name, "1280,4000");
}

/// A screenshot of `page` in a window of `size` (`1280,1000`: the first screen).
fn screenshot_sized(page: &Path, name: &str, size: &str) {
    let shot = artifacts().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    let (_, stderr) = chromium(
        page,
        &[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={size}"),
        ],
    );
    assert!(console_problems(&stderr).is_empty(), "{stderr}");
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.len() > 20_000 && &png[1..4] == b"PNG",
        "screenshot of {} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn report_of_a_real_sweep_renders_in_chromium_without_errors_or_empty_charts() {
    if !chromium_available() {
        return;
    }
    let lab = Lab::new();
    let study = lab.write(
        "sweep.toml",
        r#"
name = "browser-sweep"
description = "Queue-depth sweep on two files, for the browser test"

[targets.file-a]
type = "file"
path = "a.dat"
size = "16MiB"
engine = "io-uring"

[targets.file-b]
type = "file"
path = "b.dat"
size = "16MiB"
engine = "io-uring"

[workloads.randread]
block-size = "4KiB"
read-share = 1.0

[[steps]]
name = "qd-sweep"
workload = "randread"
targets = ["file-a", "file-b"]
warmup = "200ms"
duration = "1s"
sweep.queue-depth = [1, 8]
"#,
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", text(&out).1);
    let (_, page, _, n) = rendered_report(&lab, "report");
    // Bars, latency against ops/s, percentiles, and a timeline per run (4 runs).
    assert!(n >= 3 + 4, "only {n} charts");
    screenshot(&page, "report");
}

/// The RocksDB brief's scaling study (quick), reported and rendered: its grouped bars (Figures
/// 1 and 3) and p99 against ops/s curves (Figures 2 and 4) are drawn, without console errors.
#[test]
fn rocksdb_scaling_study_report_renders_in_chromium() {
    if !chromium_available() {
        return;
    }
    let lab = Lab::new();
    let study =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/rocksdb-scaling.toml");
    let out = lab
        .cmd()
        .args(["run", study.to_str().unwrap(), "--quick", "-q"])
        .env_remove("STORLAB_ROCKSDB_A")
        .env_remove("STORLAB_ROCKSDB_B")
        .env_remove("STORLAB_ROCKSDB_C")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let (_, page, _, n) = rendered_report(&lab, "scaling");
    let html = std::fs::read_to_string(&page).unwrap();
    for step in ["readrandom", "readwhilewriting"] {
        assert!(
            html.contains(&format!("Workload: {step}")),
            "{step} missing"
        );
    }
    assert!(
        html.contains("threads=64") || html.contains("threads = 64"),
        "no thread axis"
    );
    // Per step (load, readrandom, readwhilewriting): bars and p99 against ops/s; the three
    // db_bench steps' percentile curves overlaid on one chart.
    assert!(n > 3 * 2, "only {n} charts");
    // The brief's highlighted points beside the measured ones, each drive's on its target.
    let published = html
        .split("id=\"published\"")
        .nth(1)
        .expect("the published figures");
    let published = published.split("</table>").next().unwrap();
    assert!(!published.contains("not measured here"), "{published}");
    for (drive, figure) in [
        ("Micron 7500", "616,344 ops/s"),
        ("Competitor A", "388,751 ops/s"),
    ] {
        assert!(
            published.contains(drive) && published.contains(figure),
            "{drive}: {published}"
        );
    }
    screenshot(&page, "rocksdb-scaling-full");
    screenshot_sized(&page, "rocksdb-scaling", "1280,1000");
    let html = std::fs::read_to_string(&page).unwrap();
    print::no_single_value_chart(&html);
}

fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

/// `examples/redis-kill.toml` in quick mode: the study starts a Redis, kills it mid-run and
/// starts it again. Its report shows the events, the recovery metrics and the phases, and the
/// timeline marks the kill and shades the recovery; the screenshot is
/// `<target dir>/artifacts/redis-kill.png`.
#[test]
fn a_killed_redis_shows_its_recovery_on_the_reports_timeline() {
    if !chromium_available() {
        return;
    }
    if !have("redis-server") || !have("redis-cli") {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "redis-server or redis-cli is not installed and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!(
            "SKIPPED: redis-server or redis-cli is not installed (scripts/servers.sh install)"
        );
        return;
    }
    let lab = Lab::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let study = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/redis-kill.toml");
    let out = lab
        .cmd()
        .args(["run", study.to_str().unwrap(), "--quick", "-q"])
        .env("STORLAB_REDIS_KILL_PORT", port.to_string())
        .current_dir(lab.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    let (folder, page, dom, _) = rendered_report(&lab, "redis-kill");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("run-001/summary.json")).unwrap(),
    )
    .unwrap();
    let recovery = &summary["recovery"][0];
    assert_eq!(recovery["event"], "crash", "{summary:#}");
    assert!(
        recovery["outage-seconds"].as_f64().unwrap() > 0.0,
        "{recovery:#}"
    );
    // The kill is marked on the timeline at its time, and the recovery after it is shaded.
    let kill_s = summary["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "crash")
        .and_then(|e| e["time-seconds"].as_f64())
        .expect("the crash event");
    let values_after = |key: &str| -> Vec<f64> {
        dom.split(key)
            .skip(1)
            .filter_map(|rest| rest.split('"').next()?.parse().ok())
            .collect()
    };
    let near = |v: &[f64]| v.iter().any(|x| (x - kill_s).abs() < 1e-6);
    assert!(
        near(&values_after("class=\"mark\" data-x=\"")),
        "no mark at {kill_s}"
    );
    assert!(
        near(&values_after("class=\"recovery\" data-from=\"")),
        "no recovery shade from {kill_s}"
    );
    // One run of one target: its single ops/s and p99 are table rows, not charts; the
    // percentile curve and the timeline remain.
    for absent in ["id=\"bars-0\"", "id=\"latency-0\""] {
        assert!(!dom.contains(absent), "a chart of a single value: {absent}");
    }
    for present in ["id=\"percentiles-0\"", "id=\"timeline-"] {
        assert!(dom.contains(present), "{present} missing");
    }
    for heading in ["Events and recovery", "`crash`", "`redis-again`"] {
        assert!(dom.contains(heading), "{heading} missing from the report");
    }
    screenshot(&page, "redis-kill");
}

/// The checks above can fail: a page with an empty chart and a script error is caught.
#[test]
fn the_browser_checks_catch_an_empty_chart_and_a_script_error() {
    if !chromium_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    // The report's own chart check, on an empty chart, plus an uncaught error.
    std::fs::write(
        &page,
        format!(
            r#"<!DOCTYPE html><html><body><svg class="chart" id="empty-1" width="100" height="100"><g class="plot"><rect class="bar" x="10" y="90" width="10" height="0"/></g></svg>
<script>undefinedFunction();</script><script>{}</script></body></html>"#,
            storlab_report::html::SCRIPT
        ),
    )
    .unwrap();
    let (dom, stderr) = chromium(&page, &["--dump-dom"]);
    assert_eq!(charts_marker(&dom), "EMPTY:empty-1");
    let problems = console_problems(&stderr);
    assert!(
        problems.iter().any(|p| p.contains("empty charts")),
        "{stderr}"
    );
    assert!(problems.iter().any(|p| p.contains("Uncaught")), "{stderr}");
}

fn poppler_available() -> bool {
    let ok = ["pdftotext", "pdftoppm"].iter().all(|p| have(p));
    if !ok && std::env::var_os("STORLAB_REQUIRE_CHROMIUM").is_some() {
        panic!(
            "pdftotext/pdftoppm are missing and STORLAB_REQUIRE_CHROMIUM is set: install Debian's poppler-utils (scripts/setup.sh does)"
        );
    }
    if !ok {
        eprintln!("SKIPPED: pdftotext/pdftoppm missing (Debian's poppler-utils)");
    }
    ok
}

/// `storlab brief --quick` as a new user sees it: the headline table on the first screen
/// (saved as `<target dir>/artifacts/brief.png`), no chart for a single value, latency
/// percentiles on a log axis, a colour per target, each warning said once, the appendix
/// collapsed; printed to PDF (A4) it is short (the body, everything before the first heading
/// that starts with "Appendix", at most 6 pages, the whole at most 12, as the published
/// briefs), the appendix printed and last, no chart is cut across pages and nothing runs past
/// the right margin, and the pages render. The checks are shown to catch a cut chart, an
/// overflowing line and a long body on a page made to have all three.
#[test]
fn brief_reads_well_on_screen_and_printed() {
    if !chromium_available() || !poppler_available() {
        return;
    }
    let lab = Lab::new();
    let data = lab.path().join("data");
    let out = lab.run(&["brief", "--quick", "-q", "--dir", data.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let html_line = stderr.lines().find(|l| l.starts_with("html:")).unwrap();
    let page = lab
        .path()
        .join(html_line.trim_start_matches("html:").trim());
    let (dom, stderr) = chromium(&page, &["--dump-dom"]);
    assert!(console_problems(&stderr).is_empty(), "{stderr}");
    assert!(
        charts_marker(&dom).starts_with("OK:"),
        "{}",
        charts_marker(&dom)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // The top: a sentence per target, then the headline, before any workload's tables.
    let headline = html.find("id=\"headline\"").expect("a headline");
    assert!(html.find("class=\"tested\"").unwrap() < headline);
    assert!(headline < html.find("class=\"workload\"").unwrap());
    for row in [
        "sequential 1MiB read, QD 8",
        "random 4KiB read, QD 1",
        "random 4KiB write, QD 32",
        "readrandom, 4 threads",
    ] {
        assert!(
            html.contains(&format!("data-test=\"{row}\"")),
            "headline row {row}"
        );
    }
    assert!(html.find("Appendix: what each step ran").unwrap() > headline);
    // A warning is said once: in the summary's box, not again beside each workload.
    let repeated = print::repeated_warnings(&html);
    assert!(repeated.is_empty(), "warnings said twice: {repeated:#?}");
    // The appendix, after every figure, is collapsed on screen once the page has loaded.
    let appendix = html
        .find("<details class=\"appendix\"")
        .expect("the appendix");
    assert!(html.rfind("class=\"workload\"").unwrap() < appendix);
    let shown = &dom[dom
        .find("<details class=\"appendix\"")
        .expect("the appendix")..];
    assert!(
        !shown[..shown.find('>').unwrap()].contains("open"),
        "the appendix is open on screen"
    );
    print::no_single_value_chart(&html);
    print::one_colour_per_target(&html);
    screenshot_sized(&page, "brief", "1280,1000");

    // Printed.
    let pdf = artifacts().join("brief.pdf");
    let _ = std::fs::remove_file(&pdf);
    print::print_to_pdf(CHROMIUM, &page, &pdf);
    let pages = print::pages(&pdf);
    assert!(pages.len() >= 2, "{} pages", pages.len());
    // Short: the body at most 6 pages, the whole at most 12; the appendix printed, last.
    let (body, whole) = print::body_and_whole(&pages);
    eprintln!("printed: body {body} pages, whole {whole}");
    assert!(body <= 6, "the body prints to {body} pages (at most 6)");
    assert!(
        whole <= 12,
        "the brief prints to {whole} pages (at most 12)"
    );
    assert!(body < whole, "no appendix heading in the PDF");
    let appendix_text: Vec<&str> = pages[body..]
        .iter()
        .flat_map(|p| p.words.iter().map(|w| w.text.as_str()))
        .collect();
    for word in ["disclosure", "Efficiency", "Study"] {
        assert!(
            appendix_text.contains(&word),
            "{word} not printed in the appendix"
        );
    }
    let charts = print::charts(&html);
    assert!(charts.len() >= 5, "{charts:?}");
    let cut = print::cut_charts(&pages, &charts);
    assert!(cut.is_empty(), "charts cut across pages: {cut:#?}");
    let headers = print::table_headers(&html);
    assert!(headers.iter().any(|h| h == "IOPS"), "{headers:?}");
    let over = print::overflow(&pages, &headers);
    assert!(over.is_empty(), "past the right margin: {over:#?}");
    let rendered = artifacts().join("brief-pages");
    let _ = std::fs::remove_dir_all(&rendered);
    assert_eq!(print::render_pages(&pdf, &rendered), pages.len());

    // The same checks on a page made to fail them: a chart in a box taller than a page (the
    // only chart Chromium cuts: it moves a smaller one whole to the next page), stretched to
    // fill it so that its title and its axis label land on different pages, and a table
    // wider than Chromium shrinks a page for.
    let first_chart = &html[html.find("<svg ").unwrap()..];
    let first_chart = &first_chart[..first_chart.find("</svg>").unwrap() + 6];
    let tall = first_chart.replacen(
        "<svg ",
        "<svg preserveAspectRatio=\"none\" style=\"display:block;width:100%;height:2000px\" ",
        1,
    );
    let wide: String = (0..60).map(|i| format!("<th>column{i}</th>")).collect();
    let bad = lab.path().join("bad.html");
    std::fs::write(
        &bad,
        format!(
            "<!DOCTYPE html><html><head><style>@page{{size:A4;margin:12mm}}body{{margin:0}}th{{white-space:nowrap}}</style></head><body><div style=\"height:300px\">top</div>{tall}<table><tr>{wide}</tr></table><div style=\"height:12000px\">long</div><h2>Appendix: the end</h2><p>last</p></body></html>"
        ),
    )
    .unwrap();
    let bad_pdf = lab.path().join("bad.pdf");
    print::print_to_pdf(CHROMIUM, &bad, &bad_pdf);
    let bad_pages = print::pages(&bad_pdf);
    let (bad_body, bad_whole) = print::body_and_whole(&bad_pages);
    assert!(
        bad_body > 6 && bad_whole == bad_pages.len() && bad_body <= bad_whole,
        "the long body was not counted: {bad_body} of {bad_whole} pages"
    );
    let cut = print::cut_charts(&bad_pages, &charts[..1]);
    assert_eq!(cut.len(), 1, "the cut chart was not caught");
    let over = print::overflow(&bad_pages, &print::table_headers(&wide));
    assert!(
        over.iter().any(|o| o.contains("column59")),
        "the overflow was not caught: {over:?}"
    );
    eprintln!("caught as they should be: {cut:?} {:?}", &over[..1]);
}
