//! A small direct SVG writer and the report's charts: grouped bars, lines with points (latency
//! against throughput, timelines with moving averages and event marks, HDR percentile curves).
//!
//! Why our own code rather than a plotting crate: the charts must be inline SVG that prints
//! well, carry the data they show as attributes (`data-value`, `data-x`, `data-y`) so tests can
//! check that every bar and point sits where the data says, and use only the handful of
//! primitives below; plotting crates bring their own backends, fonts and layout rules, and
//! several hundred thousand lines of build for a few hundred lines of output. Every plot area is
//! a `<g class="plot">` that states its pixel box and data ranges (`data-px`, `data-py`,
//! `data-pw`, `data-ph`, `data-xmin`, `data-xmax`, `data-ymin`, `data-ymax`, `data-xlog`), so the
//! mapping from values to coordinates is checkable from outside.

mod line;
mod stacked;

pub use line::{LineChart, Mark, Series, Shade, XAxis, YAxis, moving_average, nines_label};
pub use stacked::{Band, StackedChart};

use std::fmt::Write;

/// A chart's width in SVG units when it has the page's width to itself.
pub const FULL_WIDTH: f64 = 720.0;
/// A chart's width when it shares the page's width with another beside it: drawn narrower, so
/// that its text prints as large as a full-width chart's.
pub const HALF_WIDTH: f64 = 480.0;

/// The title's font size: 14, smaller when the title would not fit `width` (a bold character
/// taken as 0.64 of the size wide), so that it is never clipped.
pub fn title_size(width: f64, title: &str) -> f64 {
    let chars = title.chars().count().max(1) as f64;
    ((width - 16.0) / (0.64 * chars)).clamp(8.0, 14.0)
}

/// Okabe-Ito colours: distinguishable with colour blindness and in greyscale print.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
];

/// The palette index of a series by its target, so that a target keeps its colour on every
/// chart: `targets` are every target name in report order; a series is named `TARGET` or
/// `TARGET ...` (other swept parameters after a space). `None` for a series of no known target.
pub fn target_color(targets: &[String], series: &str) -> Option<usize> {
    targets
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            series == t.as_str()
                || series
                    .strip_prefix(t.as_str())
                    .is_some_and(|rest| rest.starts_with(' '))
        })
        .max_by_key(|(_, t)| t.len())
        .map(|(i, _)| i)
}

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Coordinates with two decimals, enough for print.
fn f(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// A value as an attribute: the shortest text that parses back to the same f64.
pub fn num_attr(v: f64) -> String {
    format!("{v}")
}

/// A linear or log10 mapping from data values to pixels.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub d0: f64,
    pub d1: f64,
    pub r0: f64,
    pub r1: f64,
    pub log: bool,
}

impl Scale {
    pub fn map(&self, v: f64) -> f64 {
        let t = if self.log {
            // Values below the axis (a zero latency) sit on its bottom, not far below it.
            (v.max(self.d0).max(f64::MIN_POSITIVE).log10() - self.d0.log10())
                / (self.d1.log10() - self.d0.log10())
        } else {
            (v - self.d0) / (self.d1 - self.d0)
        };
        self.r0 + t * (self.r1 - self.r0)
    }
}

/// A "nice" axis top at or above `max` and its tick step (1, 2, 2.5 or 5 times a power of 10),
/// at most eight steps.
pub fn nice_axis(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return (1.0, 0.2);
    }
    let raw = max / 5.0;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| s * 8.0 >= max * 0.999_999)
        .unwrap_or(10.0 * p);
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    (top, step)
}

/// Compact number for tick labels: `1.5M`, `600k`, `2.5`.
pub fn compact(v: f64) -> String {
    let a = v.abs();
    let (d, suffix) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d + 0.0; // no "-0"
    let s = if (x - x.round()).abs() < 1e-9 {
        format!("{x:.0}")
    } else if (x * 10.0 - (x * 10.0).round()).abs() < 1e-9 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    format!("{s}{suffix}")
}

/// A power of ten as an axis label: as [`compact`] from 1 up, with as many decimals as it
/// needs below 1 (0.001, never 0.00).
pub fn decade_label(v: f64) -> String {
    if v >= 1.0 || v <= 0.0 {
        return compact(v);
    }
    let decimals = (-v.log10()).round().max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// Chooses a latency unit for an axis whose largest value is `max_ns`: (divisor, name).
pub fn latency_unit(max_ns: f64) -> (f64, &'static str) {
    if max_ns >= 2e9 {
        (1e9, "s")
    } else if max_ns >= 2e6 {
        (1e6, "ms")
    } else if max_ns >= 2e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    }
}

/// An SVG document under construction.
pub struct Svg {
    pub width: f64,
    pub height: f64,
    body: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Svg {
        Svg {
            width,
            height,
            body: String::new(),
        }
    }

    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, extra: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}"{extra}/>"#,
            f(x),
            f(y),
            f(w.max(0.0)),
            f(h.max(0.0))
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, extra: &str) {
        let _ = write!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{stroke}"{extra}/>"#,
            f(x1),
            f(y1),
            f(x2),
            f(y2)
        );
    }

    pub fn path(&mut self, pts: &[(f64, f64)], stroke: &str, extra: &str) {
        if pts.is_empty() {
            return;
        }
        let mut d = String::new();
        for (i, (x, y)) in pts.iter().enumerate() {
            let _ = write!(d, "{}{},{}", if i == 0 { "M" } else { " L" }, f(*x), f(*y));
        }
        let _ = write!(
            self.body,
            r#"<path d="{d}" fill="none" stroke="{stroke}"{extra}/>"#
        );
    }

    pub fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str, extra: &str) {
        let _ = write!(
            self.body,
            r#"<circle cx="{}" cy="{}" r="{}" fill="{fill}"{extra}/>"#,
            f(x),
            f(y),
            f(r)
        );
    }

    /// Text; `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: &str, size: f64, extra: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{}" y="{}" text-anchor="{anchor}" font-size="{}"{extra}>{}</text>"#,
            f(x),
            f(y),
            f(size),
            esc(s)
        );
    }

    /// The finished element; `id` and `title` label it for readers and tests.
    pub fn finish(self, id: &str, title: &str) -> String {
        format!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{}" viewBox="0 0 {} {}" width="{}" height="{}" role="img" aria-label="{}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif"><title>{}</title><rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>{}</svg>"##,
            esc(id),
            f(self.width),
            f(self.height),
            f(self.width),
            f(self.height),
            esc(title),
            esc(title),
            f(self.width),
            f(self.height),
            self.body
        )
    }
}

/// A shaded x range (warm-up, a recovery) as a rectangle the frame's height, at least 1 unit
/// wide, with its class and data range for the page's checks.
pub fn shade_rect(svg: &mut Svg, fr: Frame, xs: Scale, sh: &Shade) {
    let (xa, xb) = (xs.map(sh.from), xs.map(sh.to));
    svg.rect(
        xa,
        fr.y,
        (xb - xa).max(1.0),
        fr.h,
        sh.fill,
        &format!(
            r#" class="{}" data-from="{}" data-to="{}""#,
            sh.class,
            num_attr(sh.from),
            num_attr(sh.to)
        ),
    );
}

/// The pixel box of a plot inside a chart.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// Opens the plot group stating how data maps to pixels (see the module documentation).
fn open_plot(svg: &mut Svg, fr: Frame, xs: Option<Scale>, ys: Scale) {
    let (xmin, xmax, xlog) = xs.map_or((0.0, 0.0, false), |s| (s.d0, s.d1, s.log));
    svg.raw(&format!(
        r#"<g class="plot" data-px="{}" data-py="{}" data-pw="{}" data-ph="{}" data-xmin="{}" data-xmax="{}" data-xlog="{}" data-ymin="{}" data-ymax="{}" data-ylog="{}">"#,
        num_attr(fr.x),
        num_attr(fr.y),
        num_attr(fr.w),
        num_attr(fr.h),
        num_attr(xmin),
        num_attr(xmax),
        xlog,
        num_attr(ys.d0),
        num_attr(ys.d1),
        ys.log
    ));
}

fn y_axis(svg: &mut Svg, fr: Frame, top: f64, step: f64, div: f64, label: &str) {
    let ys = Scale {
        d0: 0.0,
        d1: top,
        r0: fr.y + fr.h,
        r1: fr.y,
        log: false,
    };
    let mut v = 0.0;
    while v <= top * 1.000_001 {
        let y = ys.map(v);
        svg.line(fr.x, y, fr.x + fr.w, y, "#dddddd", r#" stroke-width="1""#);
        svg.text(fr.x - 6.0, y + 4.0, &compact(v / div), "end", 11.0, "");
        v += step;
    }
    axis_lines(svg, fr, label);
}

/// The plot's left and bottom axis lines and the y axis label, turned upright.
fn axis_lines(svg: &mut Svg, fr: Frame, label: &str) {
    svg.line(fr.x, fr.y, fr.x, fr.y + fr.h, "#333333", "");
    svg.line(fr.x, fr.y + fr.h, fr.x + fr.w, fr.y + fr.h, "#333333", "");
    let cy = fr.y + fr.h / 2.0;
    svg.text(
        14.0,
        cy,
        label,
        "middle",
        12.0,
        &format!(r#" transform="rotate(-90 14 {})""#, f(cy)),
    );
}

/// A log10 y axis from `bottom` to `top` (powers of 10): a grid line and a label at each power,
/// light grid lines at 2 and 5 times it. Returns the scale.
fn log_y_axis(svg: &mut Svg, fr: Frame, bottom: f64, top: f64, div: f64, label: &str) -> Scale {
    let ys = Scale {
        d0: bottom,
        d1: top,
        r0: fr.y + fr.h,
        r1: fr.y,
        log: true,
    };
    let mut power = bottom;
    while power <= top * 1.000_001 {
        let y = ys.map(power);
        svg.line(fr.x, y, fr.x + fr.w, y, "#dddddd", r#" stroke-width="1""#);
        svg.text(
            fr.x - 6.0,
            y + 4.0,
            &decade_label(power / div),
            "end",
            11.0,
            "",
        );
        for m in [2.0, 5.0] {
            let v = power * m;
            if v < top {
                let y = ys.map(v);
                svg.line(fr.x, y, fr.x + fr.w, y, "#f0f0f0", r#" stroke-width="1""#);
            }
        }
        power *= 10.0;
    }
    axis_lines(svg, fr, &format!("{label}, log scale"));
    ys
}

/// Legend entries laid out in lines that fit `width`: (x offset, index, name) per line.
fn legend_layout(
    names: &[String],
    width: f64,
    note: Option<&str>,
) -> Vec<Vec<(f64, usize, String)>> {
    let mut lines: Vec<Vec<(f64, usize, String)>> = vec![Vec::new()];
    let mut cx = 0.0;
    let entries = names
        .iter()
        .enumerate()
        .map(|(i, n)| (Some(i), n.clone()))
        .chain(note.map(|n| (None, n.to_string())));
    for (i, n) in entries {
        let w = 28.0 + 6.6 * n.chars().count() as f64;
        if cx > 0.0 && cx + w > width {
            lines.push(Vec::new());
            cx = 0.0;
        }
        lines
            .last_mut()
            .expect("a line")
            .push((cx, i.unwrap_or(usize::MAX), n));
        cx += w;
    }
    lines
}

/// Draws the legend from its top-left corner; `colors[i]` is the palette index of `names[i]`.
/// Returns its height.
fn legend(
    svg: &mut Svg,
    (x, y, width): (f64, f64, f64),
    names: &[String],
    colors: &[usize],
    note: Option<&str>,
) -> f64 {
    let lines = legend_layout(names, width, note);
    for (li, line) in lines.iter().enumerate() {
        let ly = y + 16.0 * li as f64;
        for (dx, i, n) in line {
            if *i == usize::MAX {
                svg.text(x + dx, ly + 1.0, n, "start", 11.0, r##" fill="#555555""##);
                continue;
            }
            let c = colors.get(*i).copied().unwrap_or(*i);
            let color = PALETTE[c % PALETTE.len()];
            if c >= PALETTE.len() {
                svg.line(
                    x + dx,
                    ly - 3.0,
                    x + dx + 12.0,
                    ly - 3.0,
                    color,
                    r#" stroke-width="3" stroke-dasharray="3 2""#,
                );
            } else {
                svg.rect(x + dx, ly - 9.0, 12.0, 12.0, color, "");
            }
            svg.text(x + dx + 16.0, ly + 1.0, n, "start", 11.0, "");
        }
    }
    16.0 * lines.len() as f64
}

/// Dashes for series beyond the palette, so that no two series look the same.
fn series_dash(i: usize) -> &'static str {
    if i >= PALETTE.len() {
        r#" stroke-dasharray="8 3 2 3""#
    } else {
        ""
    }
}

/// A highlighted finding drawn on a chart (the reference brief's "59% Higher").
pub struct Highlight {
    pub x: String,
    pub text: String,
}

/// What every chart says of itself: its element id, its title and its axes' labels.
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub x: &'a str,
    pub y: &'a str,
}

/// Grouped bars: one group per x value, one bar per series (the reference brief's Figures 1
/// and 3), at least `width` units wide (see [`LineChart`]) and wider when its bars need it.
pub struct BarChart<'a> {
    pub labels: Labels<'a>,
    pub width: f64,
    pub x_values: &'a [String],
    pub series: &'a [String],
    pub highlight: Option<&'a Highlight>,
    /// The palette index of each series.
    pub colors: &'a [usize],
}

impl BarChart<'_> {
    /// The chart as an SVG element; `value(x, series)` is a bar's height in data units.
    pub fn svg(&self, value: impl Fn(&str, &str) -> Option<f64>) -> String {
        let BarChart {
            labels:
                Labels {
                    id,
                    title,
                    x: x_label,
                    y: y_label,
                },
            width,
            x_values,
            series,
            highlight,
            colors,
        } = *self;
        let width = width.max(90.0 + x_values.len() as f64 * (series.len() as f64 * 18.0 + 24.0));
        let legend_h = 16.0 * legend_layout(series, width - 90.0, None).len() as f64;
        let mut svg = Svg::new(width, 344.0 + legend_h);
        let fr = Frame {
            x: 70.0,
            y: 32.0 + legend_h,
            w: width - 90.0,
            h: 240.0,
        };
        svg.text(
            width / 2.0,
            20.0,
            title,
            "middle",
            title_size(width, title),
            r#" font-weight="bold""#,
        );
        let colors: Vec<usize> = (0..series.len())
            .map(|i| colors.get(i).copied().unwrap_or(i))
            .collect();
        legend(&mut svg, (fr.x, 38.0, fr.w), series, &colors, None);
        let max = x_values
            .iter()
            .flat_map(|x| series.iter().filter_map(|s| value(x, s)))
            .fold(0.0, f64::max);
        let (top, step) = nice_axis(max);
        y_axis(&mut svg, fr, top, step, 1.0, y_label);
        let ys = Scale {
            d0: 0.0,
            d1: top,
            r0: fr.y + fr.h,
            r1: fr.y,
            log: false,
        };
        open_plot(&mut svg, fr, None, ys);
        let band = fr.w / x_values.len().max(1) as f64;
        let bar_w = (band * 0.8 / series.len().max(1) as f64).min(60.0);
        for (xi, x) in x_values.iter().enumerate() {
            let group_x = fr.x + band * xi as f64 + (band - bar_w * series.len() as f64) / 2.0;
            for (si, s) in series.iter().enumerate() {
                let Some(v) = value(x, s) else { continue };
                let y = ys.map(v);
                let color = PALETTE[colors[si] % PALETTE.len()];
                svg.rect(
                    group_x + bar_w * si as f64,
                    y,
                    bar_w - 1.0,
                    fr.y + fr.h - y,
                    color,
                    &format!(
                        r#" class="bar" data-series="{}" data-x="{}" data-value="{}""#,
                        esc(s),
                        esc(x),
                        num_attr(v)
                    ),
                );
            }
            svg.text(
                fr.x + band * (xi as f64 + 0.5),
                fr.y + fr.h + 16.0,
                x,
                "middle",
                11.0,
                "",
            );
            if let Some(h) = highlight.filter(|h| &h.x == x) {
                highlight_group(&mut svg, fr, band, xi, h);
            }
        }
        svg.raw("</g>");
        svg.text(
            fr.x + fr.w / 2.0,
            fr.y + fr.h + 30.0,
            x_label,
            "middle",
            12.0,
            "",
        );
        svg.finish(id, title)
    }
}

/// The highlighted group `xi` (of width `band`) outlined, its finding written under it.
fn highlight_group(svg: &mut Svg, fr: Frame, band: f64, xi: usize, h: &Highlight) {
    let cx = fr.x + band * (xi as f64 + 0.5);
    svg.rect(
        cx - band / 2.0 + 2.0,
        fr.y - 4.0,
        band - 4.0,
        fr.h + 24.0,
        "none",
        r##" stroke="#D55E00" stroke-width="2" stroke-dasharray="5 3" class="highlight""##,
    );
    svg.text(
        cx,
        fr.y + fr.h + 44.0,
        &h.text,
        "middle",
        12.0,
        r##" fill="#D55E00" font-weight="bold""##,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pulls `name="value"` out of an element's text.
    fn attr(el: &str, name: &str) -> Option<String> {
        let key = format!(" {name}=\"");
        let start = el.find(&key)? + key.len();
        Some(el[start..].split('"').next()?.to_string())
    }

    #[test]
    fn nice_axes_and_labels() {
        assert_eq!(nice_axis(616_344.0), (700_000.0, 100_000.0));
        assert_eq!(nice_axis(1.0), (1.0, 0.2));
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        assert_eq!(nice_axis(9.0), (10.0, 2.0));
        assert_eq!(compact(600_000.0), "600k");
        assert_eq!(compact(1_500_000.0), "1.5M");
        assert_eq!(compact(2.5), "2.5");
        assert_eq!(decade_label(1e3 / 1e6), "0.001");
        assert_eq!(decade_label(1e4 / 1e6), "0.01");
        assert_eq!(decade_label(1e7 / 1e6), "10");
        assert_eq!(nines_label(0.0), "0%");
        assert_eq!(nines_label(1.0), "90%");
        assert_eq!(nines_label(2.0), "99%");
        assert_eq!(nines_label(4.0), "99.99%");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let ma = moving_average(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)], 2);
        assert_eq!(ma, vec![(0.0, 1.0), (1.0, 2.0), (2.0, 4.0)]);
    }

    #[test]
    fn bars_sit_where_the_values_say() {
        let xs = vec!["8".to_string(), "64".to_string()];
        let ss = vec!["A".to_string(), "B".to_string()];
        let v = |x: &str, s: &str| {
            Some(match (x, s) {
                ("8", "A") => 100.0,
                ("8", "B") => 50.0,
                ("64", "A") => 388_751.0,
                _ => 616_344.0,
            })
        };
        let svg = BarChart {
            labels: Labels {
                id: "c",
                title: "t",
                x: "threads",
                y: "ops/s",
            },
            width: FULL_WIDTH,
            x_values: &xs,
            series: &ss,
            highlight: None,
            colors: &[],
        }
        .svg(v);
        let plot = svg.split("<g class=\"plot\"").nth(1).unwrap();
        let ph: f64 = attr(plot, "data-ph").unwrap().parse().unwrap();
        let py: f64 = attr(plot, "data-py").unwrap().parse().unwrap();
        let ymax: f64 = attr(plot, "data-ymax").unwrap().parse().unwrap();
        assert_eq!(ymax, 700_000.0);
        let bars: Vec<&str> = svg
            .split("<rect")
            .filter(|r| r.contains("class=\"bar\""))
            .collect();
        assert_eq!(bars.len(), 4);
        let mut last_x = f64::MIN;
        for b in bars {
            let value: f64 = attr(b, "data-value").unwrap().parse().unwrap();
            let y: f64 = attr(b, "y").unwrap().parse().unwrap();
            let h: f64 = attr(b, "height").unwrap().parse().unwrap();
            let x: f64 = attr(b, "x").unwrap().parse().unwrap();
            assert!(
                (h - value / ymax * ph).abs() < 0.01,
                "bar {value}: height {h}"
            );
            assert!(
                (y + h - (py + ph)).abs() < 0.01,
                "bar {value} does not stand on the axis"
            );
            assert!(x > last_x, "bars out of order");
            last_x = x;
        }
    }
}
