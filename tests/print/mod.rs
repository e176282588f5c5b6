//! Checks of a report as printed and as structured, for the browser test: the PDF's pages as
//! `pdftotext -bbox` sees them (no chart cut across pages, nothing running past the right
//! margin), the pages rendered by `pdftoppm`, and the HTML's charts (none for a single value,
//! latency percentiles on a log axis, one colour per target).

use std::path::Path;
use std::process::Command;

/// One word of a PDF page with its box (points).
#[derive(Debug, Clone)]
pub struct Word {
    pub text: String,
    pub x_min: f64,
    pub y_min: f64,
    pub x_max: f64,
}

/// A PDF page: its width and its words in reading order.
#[derive(Debug, Clone)]
pub struct Page {
    pub width: f64,
    pub words: Vec<Word>,
}

fn attr(s: &str, name: &str) -> Option<String> {
    let key = format!("{name}=\"");
    let start = s.find(&key)? + key.len();
    Some(s[start..].split('"').next()?.to_string())
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The pages of a PDF, every word kept even past the page's edge (`-W`/`-H` far beyond it).
pub fn pages(pdf: &Path) -> Vec<Page> {
    let out = Command::new("pdftotext")
        .args(["-bbox", "-x", "0", "-y", "0", "-W", "20000", "-H", "20000"])
        .arg(pdf)
        .arg("-")
        .output()
        .expect("run pdftotext (Debian's poppler-utils)");
    assert!(out.status.success(), "pdftotext failed");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut pages = Vec::new();
    for p in text.split("<page ").skip(1) {
        let width: f64 = attr(p, "width").unwrap().parse().unwrap();
        let words = p
            .split("<word ")
            .skip(1)
            .map(|w| {
                let f = |n: &str| attr(w, n).unwrap().parse::<f64>().unwrap();
                let t = w.split('>').nth(1).unwrap().split('<').next().unwrap();
                Word {
                    text: unescape(t),
                    x_min: f("xMin"),
                    y_min: f("yMin"),
                    x_max: f("xMax"),
                }
            })
            .collect();
        pages.push(Page { width, words });
    }
    pages
}

/// Prints `page` to `pdf` with headless Chromium (A4 by the page's own `@page`, no header).
pub fn print_to_pdf(chromium: &str, page: &Path, pdf: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--no-pdf-header-footer",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success() && pdf.exists(),
        "printing failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Renders every page with `pdftoppm` into `dir` (`page-N.png`); returns how many.
pub fn render_pages(pdf: &Path, dir: &Path) -> usize {
    std::fs::create_dir_all(dir).unwrap();
    let out = Command::new("pdftoppm")
        .args(["-r", "60", "-png"])
        .arg(pdf)
        .arg(dir.join("page"))
        .output()
        .expect("run pdftoppm (Debian's poppler-utils)");
    assert!(out.status.success(), "pdftoppm failed");
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".png"))
        .count()
}

/// The HTML without what is not printed: elements of class `noprint` (a `<section>`, `<div>`
/// or `<span>`; not nested in one of their own kind) and closed `<details>` other than the
/// appendix (`<details class="appendix"`, which the page opens for printing).
pub fn printed(html: &str) -> String {
    let mut shown = String::new();
    let mut rest = html;
    loop {
        let next = ["<section", "<div", "<span", "<details"]
            .iter()
            .filter_map(|tag| {
                let mut from = 0;
                while let Some(i) = rest[from..].find(tag) {
                    let at = from + i;
                    let open = &rest[at..at + rest[at..].find('>').unwrap_or(0)];
                    let hidden = if *tag == "<details" {
                        !open.contains("class=\"appendix\"") && !open.contains(" open")
                    } else {
                        open.contains("class=\"noprint") || open.contains(" noprint\"")
                    };
                    if hidden {
                        return Some((at, *tag));
                    }
                    from = at + tag.len();
                }
                None
            })
            .min_by_key(|(at, _)| *at);
        let Some((at, tag)) = next else {
            shown.push_str(rest);
            return shown;
        };
        shown.push_str(&rest[..at]);
        let close = format!("</{}>", &tag[1..]);
        rest = match rest[at..].find(&close) {
            Some(j) => &rest[at + j + close.len()..],
            None => "",
        };
    }
}

/// Each chart of the HTML as printed (see [`printed`]): (title, its lowest text), both as the
/// PDF shows them (words).
pub fn charts(html: &str) -> Vec<(String, String)> {
    printed(html)
        .split("<svg ")
        .skip(1)
        .filter(|c| c.contains("class=\"chart\""))
        .map(|c| {
            let c = &c[..c.find("</svg>").unwrap()];
            let title = unescape(&attr(c, "aria-label").unwrap());
            // The text drawn lowest (greatest y): the x axis label or a note under the plot.
            let mut lowest = (f64::MIN, String::new());
            for t in c.split("<text ").skip(1) {
                let y: f64 = attr(t, "y").and_then(|y| y.parse().ok()).unwrap_or(0.0);
                let s = unescape(t.split('>').nth(1).unwrap().split('<').next().unwrap());
                let rotated = t.split('>').next().unwrap().contains("rotate");
                if !s.trim().is_empty() && !rotated && y >= lowest.0 {
                    lowest = (y, s);
                }
            }
            (title, lowest.1)
        })
        .collect()
}

/// Where `text`'s words occur in a row on a page, at or after word `from`: the index.
fn find(words: &[Word], text: &str, from: usize) -> Option<usize> {
    let want: Vec<&str> = text.split_whitespace().collect();
    if want.is_empty() {
        return None;
    }
    (from..words.len()).find(|&i| {
        want.iter()
            .enumerate()
            .all(|(k, w)| words.get(i + k).is_some_and(|x| x.text == *w))
    })
}

/// Charts cut across pages: a chart's title and its lowest text not on one page, the lowest
/// below the title. A chart whose title the PDF does not show at all is reported too.
pub fn cut_charts(pages: &[Page], charts: &[(String, String)]) -> Vec<String> {
    let mut cut = Vec::new();
    for (title, bottom) in charts {
        let found = pages.iter().enumerate().find_map(|(pi, p)| {
            let i = find(&p.words, title, 0)?;
            Some((pi, i))
        });
        let Some((pi, i)) = found else {
            cut.push(format!("{title}: title not in the PDF"));
            continue;
        };
        let p = &pages[pi];
        let title_y = p.words[i].y_min;
        let after = i + title.split_whitespace().count();
        let whole = find(&p.words, bottom, after).is_some_and(|j| p.words[j].y_min > title_y);
        if !whole {
            cut.push(format!(
                "{title}: title on page {}, its lowest text ({bottom}) not below it there",
                pi + 1
            ));
        }
    }
    cut
}

/// Column headers of the HTML's tables as printed (see [`printed`]: those on screen only or
/// inside a closed `<details>` are left out).
pub fn table_headers(html: &str) -> Vec<String> {
    printed(html)
        .split("<th>")
        .skip(1)
        .map(|t| unescape(t.split("</th>").next().unwrap()))
        .map(|t| t.replace("<sup>", "").replace("</sup>", ""))
        .collect()
}

/// What ran past the page: a table header (`headers`, see [`table_headers`]) the PDF lacks
/// (Chromium clips a line wider than the page, after shrinking the page as far as it will),
/// and a word ending past the right margin, taken as wide as the left one (the leftmost word
/// on any page), with a point of slack.
pub fn overflow(pages: &[Page], headers: &[String]) -> Vec<String> {
    let left = pages
        .iter()
        .flat_map(|p| p.words.iter().map(|w| w.x_min))
        .fold(f64::MAX, f64::min);
    let mut out = Vec::new();
    let all: Vec<&Word> = pages.iter().flat_map(|p| &p.words).collect();
    for h in headers {
        let want: Vec<&str> = h.split_whitespace().collect();
        let found = (0..all.len()).any(|i| {
            want.iter()
                .enumerate()
                .all(|(k, w)| all.get(i + k).is_some_and(|x| x.text == *w))
        });
        if !want.is_empty() && !found {
            out.push(format!("table column '{h}' is not in the PDF"));
        }
    }
    for (pi, p) in pages.iter().enumerate() {
        for w in &p.words {
            if w.x_max > p.width - left + 1.0 {
                out.push(format!(
                    "page {}: '{}' ends at {:.0} pt of {:.0}",
                    pi + 1,
                    w.text,
                    w.x_max,
                    p.width
                ));
            }
        }
    }
    out
}

/// No chart for a single value: every bar chart has two bars or more, every p99-against-ops/s
/// chart two points or more; the latency percentile charts have a log latency axis.
pub fn no_single_value_chart(html: &str) {
    assert!(!html.contains("(no swept parameter)"));
    let mut percentile_charts = 0;
    for c in html.split("<svg ").skip(1) {
        let id = attr(c, "id").unwrap_or_default();
        let c = &c[..c.find("</svg>").unwrap()];
        if id.starts_with("bars-") {
            assert!(c.matches("class=\"bar\"").count() >= 2, "{id}: one bar");
        }
        if id.starts_with("latency-") {
            assert!(c.matches("<circle").count() >= 2, "{id}: one point");
        }
        if id.starts_with("percentiles-") {
            percentile_charts += 1;
            assert!(
                c.contains("data-ylog=\"true\""),
                "{id}: linear latency axis"
            );
        }
    }
    assert!(percentile_charts >= 1, "no latency percentile chart");
}

/// A target's bars have one colour on every chart: (target, fill) pairs never disagree.
pub fn one_colour_per_target(html: &str) {
    let mut seen: Vec<(String, String)> = Vec::new();
    for r in html.split("<rect ").skip(1) {
        let r = r.split('>').next().unwrap();
        if !r.contains("class=\"bar\"") {
            continue;
        }
        let (Some(series), Some(fill)) = (attr(r, "data-series"), attr(r, "fill")) else {
            continue;
        };
        match seen.iter().find(|(s, _)| *s == series) {
            Some((_, f)) => assert_eq!(*f, fill, "{series} has two colours"),
            None => seen.push((series, fill)),
        }
    }
}

/// The pages of the body and of the whole: the body ends at the first line that begins with
/// "Appendix" (a heading: the appendix's own are the only lines that do); the page it is on
/// counts as the body's unless the line opens that page. No such line: the body is the whole.
pub fn body_and_whole(pages: &[Page]) -> (usize, usize) {
    for (pi, p) in pages.iter().enumerate() {
        for (i, w) in p.words.iter().enumerate() {
            let line_start = i == 0 || (p.words[i - 1].y_min - w.y_min).abs() > 2.0;
            if line_start && w.text.starts_with("Appendix") {
                return (if i == 0 { pi } else { pi + 1 }, pages.len());
            }
        }
    }
    (pages.len(), pages.len())
}

/// The items of the page's warning boxes (`<div class="warning"`) said more than once.
pub fn repeated_warnings(html: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut repeated = Vec::new();
    for b in html.split("<div class=\"warning\"").skip(1) {
        let b = &b[..b.find("</div>").unwrap_or(b.len())];
        for li in b.split("<li>").skip(1) {
            let text = li.split("</li>").next().unwrap_or("").to_string();
            if text.starts_with("<details") {
                continue;
            }
            if seen.contains(&text) {
                repeated.push(text);
            } else {
                seen.push(text);
            }
        }
    }
    repeated
}
