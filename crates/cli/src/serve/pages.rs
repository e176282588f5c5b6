//! The pages `storlab serve` writes itself (the list of runs, a history, the pages that say
//! what went wrong); a run's report and a comparison are the report layer's own pages. Every
//! text that comes from a request or from the store is escaped.

use std::fmt::Write;

use storlab_model::units::format_ns;
use storlab_report::svg::{self, Mark, Series, XAxis, YAxis, esc};
use storlab_results::comparison::history::{Change, HistoryRun};
use storlab_results::comparison::uncertainty::Interval;

use super::query::{Filters, HistoryQuery, STATUSES};

/// A run as the list shows it: the store's row and what its folder adds.
pub struct Listed {
    pub row: storlab_results::store::RunRow,
    /// The run's targets (from its summary; none for a run without one).
    pub targets: Vec<String>,
    /// The host it ran on (its system capture's hostname).
    pub system: Option<String>,
    /// Service latency p99 over all targets, ns.
    pub p99_ns: Option<u64>,
}

/// A page with the serve pages' style and the way back to the list.
pub fn shell(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{style}{SERVE_STYLE}</style></head><body>\n{nav}<h1>{t}</h1>\n{body}</body></html>\n",
        t = esc(title),
        style = storlab_report::html::STYLE,
        nav = NAV,
    )
}

/// The bar on top of every served page (the report and comparison pages get it too).
pub const NAV: &str = "<nav class=\"serve\"><a href=\"/\">storlab: all runs</a></nav>\n";

const SERVE_STYLE: &str = "nav.serve{font-size:13px;margin-bottom:8px}nav.serve a{color:#0072B2}form.filters{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:end;font-size:13px;margin:8px 0}form.filters label{display:flex;flex-direction:column}.error{background:#fff4e5;border:2px solid #D55E00;padding:10px 14px}";

/// Puts [`NAV`] at the top of a page made elsewhere (after its `<body>`).
pub fn with_nav(page: &str) -> String {
    match page.find("<body>") {
        Some(at) => {
            let at = at + "<body>".len();
            format!("{}\n{NAV}{}", &page[..at], &page[at..])
        }
        None => format!("{NAV}{page}"),
    }
}

/// The page that says what went wrong.
pub fn error_page(status: u16, title: &str, detail: &str) -> String {
    shell(
        title,
        &format!(
            "<div class=\"error\" id=\"error\" data-status=\"{status}\"><p>{}</p></div>\n",
            esc(detail)
        ),
    )
}

/// `/`: the filter form, then the runs (ticked ones compared).
pub fn list_page(all: &[Listed], shown: &[&Listed], f: &Filters, results: &str) -> String {
    let mut h = String::new();
    let distinct = |get: &dyn Fn(&Listed) -> Vec<String>| {
        let mut v: Vec<String> = all.iter().flat_map(get).collect();
        v.sort();
        v.dedup();
        v
    };
    let _ = writeln!(
        h,
        "<p class=\"meta\">{} of {} runs stored in {}.</p>",
        shown.len(),
        all.len(),
        esc(results)
    );
    h.push_str("<form class=\"filters\" method=\"get\" action=\"/\">\n");
    let studies = distinct(&|l| vec![l.row.study.clone()]);
    let targets = distinct(&|l| l.targets.clone());
    let systems = distinct(&|l| l.system.iter().cloned().collect());
    let statuses: Vec<String> = STATUSES.iter().map(|s| s.to_string()).collect();
    select(&mut h, "study", &studies, f.study.as_deref());
    select(&mut h, "target", &targets, f.target.as_deref());
    select(&mut h, "system", &systems, f.system.as_deref());
    select(&mut h, "status", &statuses, f.status.as_deref());
    for (name, day) in [("from", &f.from), ("to", &f.to)] {
        let _ = writeln!(
            h,
            "<label>{name} (UTC day)<input type=\"date\" name=\"{name}\" value=\"{}\"></label>",
            day.as_ref().map(|d| esc(d.as_str())).unwrap_or_default()
        );
    }
    h.push_str(
        "<button type=\"submit\" id=\"filter\">Filter</button> <a href=\"/\">clear</a></form>\n",
    );
    h.push_str("<form method=\"get\" action=\"/compare\">\n<p><button type=\"submit\" id=\"compare\">Compare ticked runs</button> (the first ticked is A)</p>\n");
    h.push_str("<table id=\"runs\"><thead><tr><th></th><th>run</th><th>study</th><th>step</th><th>point</th><th>targets (history)</th><th>system</th><th>status</th><th>started (UTC)</th><th>ops/s</th><th>p99</th></tr></thead><tbody>\n");
    for l in shown {
        list_row(&mut h, l);
    }
    h.push_str("</tbody></table></form>\n");
    if shown.is_empty() {
        h.push_str("<p id=\"none\">No stored run matches these filters.</p>\n");
    }
    shell("storlab runs", &h)
}

fn select(h: &mut String, name: &str, values: &[String], chosen: Option<&str>) {
    let _ = write!(
        h,
        "<label>{name}<select name=\"{name}\"><option value=\"\">(any)</option>"
    );
    let mut values: Vec<&str> = values.iter().map(String::as_str).collect();
    // A value asked for that no run has is still shown as chosen.
    if let Some(c) = chosen.filter(|c| !values.contains(c)) {
        values.push(c);
    }
    for v in values {
        let _ = write!(
            h,
            "<option{}>{}</option>",
            if Some(v) == chosen { " selected" } else { "" },
            esc(v)
        );
    }
    h.push_str("</select></label>\n");
}

fn list_row(h: &mut String, l: &Listed) {
    let r = &l.row;
    let id = esc(&r.run_id);
    let targets: Vec<String> = l
        .targets
        .iter()
        .map(|t| {
            format!(
                "<a href=\"/history?study={}&amp;target={}\">{}</a>",
                esc(&url_encode(&r.study)),
                esc(&url_encode(t)),
                esc(t)
            )
        })
        .collect();
    let _ = writeln!(
        h,
        "<tr data-run=\"{id}\"><td><input type=\"checkbox\" name=\"run\" value=\"{id}\"></td><td><a href=\"/run/{}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
        esc(&url_encode(&r.run_id)),
        esc(&r.study),
        esc(&r.step),
        esc(&r.parameters),
        targets.join(", "),
        esc(l.system.as_deref().unwrap_or("-")),
        esc(&r.status),
        esc(&r.started_at),
        r.rate_ops
            .map(|x| format!("{x:.0}"))
            .unwrap_or_else(|| "-".into()),
        l.p99_ns
            .map(|ns| esc(&format_ns(ns as f64)))
            .unwrap_or_else(|| "-".into()),
    );
}

/// Percent-encodes everything but unreserved characters (for a link's query or path).
pub fn url_encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

/// `/history`: a chart of ops/s and one of p99 per run over time (a series per step and
/// sweep point), each run with its interval as a whisker and each change point marked, then
/// the table.
pub fn history_page(q: &HistoryQuery, points: &[HistoryRun], confidence: f64) -> String {
    let mut h = String::new();
    let first = points
        .iter()
        .map(|p| p.started_seconds)
        .fold(f64::INFINITY, f64::min);
    let last = points
        .iter()
        .map(|p| p.started_seconds)
        .fold(first, f64::max);
    let (unit_seconds, unit) = time_unit(last - first);
    let first_at = points
        .iter()
        .min_by(|a, b| a.started_seconds.total_cmp(&b.started_seconds))
        .map(|p| p.started_at.as_str())
        .unwrap_or("");
    let _ = writeln!(
        h,
        "<p class=\"meta\">Target {} of study {}{}: {} runs with figures, the first at {}. Each line is one step and sweep point; each point one run (its service latency p99 and its ops/s over its measured time), its whisker the run's own {:.0}% interval (from its batches or repetitions: the noise within the run). A marked run is a change point: outside the {:.0}% prediction interval of the runs of its line before it (docs/metrics.md).</p>",
        esc(&q.target),
        esc(&q.study),
        q.step
            .as_ref()
            .map(|s| format!(", step {}", esc(s)))
            .unwrap_or_default(),
        points.len(),
        esc(first_at),
        confidence * 100.0,
        confidence * 100.0,
    );
    let x_label = format!("{unit} since {first_at}");
    let x_of = |p: &HistoryRun| (p.started_seconds - first) / unit_seconds;
    let chart = |figure: HistoryFigure| -> String {
        let series = history_series(points, &x_of, figure);
        let marks: Vec<Mark> = points
            .iter()
            .filter_map(|p| {
                let change = figure.change(p)?;
                Some(Mark {
                    x: x_of(p),
                    label: format!("{} {}", figure.name(), change.name()),
                })
            })
            .collect();
        let max_p99 = points.iter().map(|p| p.p99_ns).max().unwrap_or(0) as f64;
        let (y_div, y_label) = match figure {
            HistoryFigure::Ops => (1.0, "operations per second".to_string()),
            HistoryFigure::P99 => {
                let (div, unit) = svg::latency_unit(max_p99);
                (div, format!("p99 latency ({unit})"))
            }
        };
        svg::LineChart {
            labels: svg::Labels {
                id: figure.chart_id(),
                title: &format!("{}: {} per run", q.target, figure.title()),
                x: &x_label,
                y: &y_label,
            },
            width: svg::FULL_WIDTH,
            y_div,
            series: &series,
            x_axis: XAxis::Linear,
            y_axis: YAxis::Linear,
            marks: &marks,
            shades: &[],
            x_min: None,
            x_max: None,
        }
        .svg()
    };
    h.push_str(&chart(HistoryFigure::Ops));
    h.push_str(&chart(HistoryFigure::P99));
    history_table(&mut h, points, confidence);
    shell(&format!("storlab history: {} / {}", q.study, q.target), &h)
}

/// The two figures a history draws.
#[derive(Clone, Copy)]
enum HistoryFigure {
    Ops,
    P99,
}

impl HistoryFigure {
    fn name(self) -> &'static str {
        match self {
            HistoryFigure::Ops => "ops/s",
            HistoryFigure::P99 => "p99",
        }
    }

    fn title(self) -> &'static str {
        match self {
            HistoryFigure::Ops => "ops/s",
            HistoryFigure::P99 => "p99 service latency",
        }
    }

    fn chart_id(self) -> &'static str {
        match self {
            HistoryFigure::Ops => "history-ops",
            HistoryFigure::P99 => "history-p99",
        }
    }

    fn value(self, p: &HistoryRun) -> f64 {
        match self {
            HistoryFigure::Ops => p.rate_ops,
            HistoryFigure::P99 => p.p99_ns as f64,
        }
    }

    fn interval(self, p: &HistoryRun) -> Option<Interval> {
        match self {
            HistoryFigure::Ops => p.rate_ops_interval,
            HistoryFigure::P99 => p.p99_interval,
        }
    }

    fn change(self, p: &HistoryRun) -> Option<Change> {
        match self {
            HistoryFigure::Ops => p.rate_ops_change,
            HistoryFigure::P99 => p.p99_change,
        }
    }
}

/// A line per step and sweep point: each run's figure, its interval as a band.
fn history_series(
    points: &[HistoryRun],
    x_of: &dyn Fn(&HistoryRun) -> f64,
    figure: HistoryFigure,
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for p in points {
        let name = p.series();
        let x = x_of(p);
        let point = (x, figure.value(p), String::new());
        let band = figure.interval(p).map(|i| (x, i.low, i.high));
        match out.iter_mut().find(|s| s.name == name) {
            Some(s) => {
                s.points.push(point);
                s.bands.extend(band);
            }
            None => out.push(Series {
                name,
                points: vec![point],
                markers: true,
                dashed: Vec::new(),
                warmup: Vec::new(),
                color: None,
                bands: band.into_iter().collect(),
            }),
        }
    }
    out
}

/// The history's table: each run, its figures with their intervals, and its change.
fn history_table(h: &mut String, points: &[HistoryRun], confidence: f64) {
    let _ = writeln!(
        h,
        "<table id=\"history\"><thead><tr><th>run</th><th>started (UTC)</th><th>step</th><th>point</th><th>status</th><th>ops/s</th><th>ops/s {c:.0}% CI</th><th>p99</th><th>p99 {c:.0}% CI</th><th>change</th></tr></thead><tbody>",
        c = confidence * 100.0
    );
    let range = |i: Option<Interval>, show: &dyn Fn(f64) -> String| {
        i.map_or("-".to_string(), |i| {
            format!("{}-{}", show(i.low), show(i.high))
        })
    };
    for p in points {
        let change: Vec<String> = [(p.rate_ops_change, "ops/s"), (p.p99_change, "p99")]
            .iter()
            .filter_map(|(c, what)| c.map(|c| format!("{what} {}", c.name())))
            .collect();
        let _ = writeln!(
            h,
            "<tr><td><a href=\"/run/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.0}</td><td class=\"n\">{}</td><td class=\"n\" data-p99-ns=\"{}\">{}</td><td class=\"n\">{}</td><td class=\"change\">{}</td></tr>",
            esc(&url_encode(&p.run_id)),
            esc(&p.run_id),
            esc(&p.started_at),
            esc(&p.step),
            esc(&p.parameters),
            esc(&p.status),
            p.rate_ops,
            range(p.rate_ops_interval, &|v| format!("{v:.0}")),
            p.p99_ns,
            esc(&format_ns(p.p99_ns as f64)),
            esc(&range(p.p99_interval, &|v| format_ns(v))),
            esc(&change.join(", ")),
        );
    }
    h.push_str("</tbody></table>\n");
}

/// The x axis' unit for a span of `seconds`: (seconds per unit, its name).
fn time_unit(seconds: f64) -> (f64, &'static str) {
    if seconds < 120.0 {
        (1.0, "seconds")
    } else if seconds < 2.0 * 3600.0 {
        (60.0, "minutes")
    } else if seconds < 2.0 * 86_400.0 {
        (3600.0, "hours")
    } else {
        (86_400.0, "days")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_pages_escape_what_they_quote() {
        let p = error_page(404, "no such run", "no run `<script>alert(1)</script>`");
        assert!(!p.contains("<script>alert"), "{p}");
        assert!(p.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(p.contains("data-status=\"404\""));
    }

    #[test]
    fn links_carry_any_name() {
        assert_eq!(url_encode("a b&c/d\"é"), "a%20b%26c%2Fd%22%C3%A9");
        assert_eq!(url_encode("run-01_x.y~"), "run-01_x.y~");
    }

    #[test]
    fn the_nav_goes_after_body() {
        let p = with_nav("<html><head></head><body><h1>x</h1></body></html>");
        assert!(p.starts_with("<html><head></head><body>\n<nav"), "{p}");
        assert!(p.contains("</nav>\n<h1>x</h1>"));
    }

    #[test]
    fn the_list_escapes_stored_names_and_keeps_chosen_filters() {
        let row = storlab_results::store::RunRow {
            run_id: "r<1>".into(),
            study: "s&\"q\"".into(),
            step: "<b>".into(),
            run_index: 1,
            run_count: 1,
            parameters: String::new(),
            status: "complete".into(),
            started_at: "2026-11-20T00:00:00Z".into(),
            folder: "/x".into(),
            rate_ops: Some(1234.4),
            note: String::new(),
        };
        let l = Listed {
            row,
            targets: vec!["t<i>".into()],
            system: Some("host".into()),
            p99_ns: Some(1500),
        };
        let f = Filters {
            study: Some("gone<".into()),
            ..Filters::default()
        };
        let p = list_page(std::slice::from_ref(&l), &[&l], &f, "/r");
        assert!(
            !p.contains("<b>") && !p.contains("t<i>") && !p.contains("r<1>"),
            "{p}"
        );
        assert!(p.contains("/run/r%3C1%3E"));
        assert!(p.contains("/history?study=s%26%22q%22&amp;target=t%3Ci%3E"));
        assert!(p.contains("<option selected>gone&lt;</option>"));
        assert!(p.contains(">1234<"));
    }

    #[test]
    fn time_axis_units_follow_the_span() {
        assert_eq!(time_unit(30.0).1, "seconds");
        assert_eq!(time_unit(600.0).1, "minutes");
        assert_eq!(time_unit(86_400.0).1, "hours");
        assert_eq!(time_unit(30.0 * 86_400.0).1, "days");
    }
}
