//! Line charts: lines with optional point markers and labels, dashed moving averages, warm-up
//! drawn apart (dotted over its shaded range), vertical event marks, linear or "nines" x axes
//! (latency against throughput, timelines, HDR percentile curves).

use super::*;

/// One curve of a line chart.
pub struct Series {
    pub name: String,
    /// (x, y, label shown next to the point; empty for none).
    pub points: Vec<(f64, f64, String)>,
    /// Draw markers at the points.
    pub markers: bool,
    /// A dashed companion curve (moving average) in the same colour.
    pub dashed: Vec<(f64, f64)>,
    /// Warm-up points (x, y), drawn dotted and thin in the same colour, apart from the
    /// measured curve (they enter no average and no figure).
    pub warmup: Vec<(f64, f64)>,
    /// Palette index (default: the series' position), to keep a target's colour across charts.
    pub color: Option<usize>,
    /// Confidence intervals (x, low, high), drawn as whiskers in the same colour.
    pub bands: Vec<(f64, f64, f64)>,
}

/// A vertical mark (phase change, injected fault) on a line chart.
pub struct Mark {
    pub x: f64,
    pub label: String,
}

/// A shaded x range behind the curves (the warm-up, a recovery after a fault), labelled at its
/// bottom left.
pub struct Shade {
    pub from: f64,
    pub to: f64,
    pub label: String,
    /// The SVG class (`shade` for the warm-up, `recovery` for a recovery interval).
    pub class: &'static str,
    pub fill: &'static str,
}

/// How a line chart's x axis is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    Linear,
    /// Percentiles as "nines": x = -log10(1 - p/100); ticks at 0, 90, 99, 99.9 ... percent.
    Nines,
}

/// How a line chart's y axis is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YAxis {
    /// From zero.
    Linear,
    /// log10, from the power of 10 at or below the smallest positive value to the one at or
    /// above the largest, a tick at each power (latency percentiles: the body and the tail
    /// both readable).
    Log,
}

/// Lines (with optional markers and dashed moving averages), vertical marks and shaded x
/// ranges (warm-up, recoveries). Axes start at zero for linear scales. Values in data units;
/// `y_div` divides y for the tick labels (e.g. ns to ms). `width` is in SVG units:
/// [`FULL_WIDTH`], or [`HALF_WIDTH`] for one of two side by side, its text as large on the page.
pub struct LineChart<'a> {
    pub labels: Labels<'a>,
    pub width: f64,
    pub y_div: f64,
    pub series: &'a [Series],
    pub x_axis: XAxis,
    pub y_axis: YAxis,
    pub marks: &'a [Mark],
    pub shades: &'a [Shade],
    /// Where the x axis starts, when not at zero (or at the smallest x of a log scale).
    pub x_min: Option<f64>,
    /// Where the x axis ends at least (beyond the data, marks and shades): charts drawn on
    /// one time axis (a run's throughput and its samples).
    pub x_max: Option<f64>,
}

impl LineChart<'_> {
    /// The chart as an SVG element.
    pub fn svg(&self) -> String {
        let LineChart {
            labels:
                Labels {
                    id,
                    title,
                    x: x_label,
                    y: y_label,
                },
            width,
            y_div,
            series,
            x_axis,
            y_axis: y_axis_kind,
            marks,
            shades,
            x_min,
            x_max,
        } = *self;
        let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
        let mut notes = Vec::new();
        if series.iter().any(|s| !s.dashed.is_empty()) {
            notes.push("dashed: moving average");
        }
        if series.iter().any(|s| !s.warmup.is_empty()) {
            notes.push("dotted, on grey: warm-up (in no figure)");
        }
        if series.iter().any(|s| !s.bands.is_empty()) {
            notes.push("whiskers: confidence interval");
        }
        let note_text = (!notes.is_empty()).then(|| format!("({})", notes.join("; ")));
        let note = note_text.as_deref();
        let legend_h = 16.0 * legend_layout(&names, width - 100.0, note).len() as f64;
        let mut svg = Svg::new(width, 330.0 + legend_h);
        let fr = Frame {
            x: 70.0,
            y: 48.0 + legend_h,
            w: width - 100.0,
            h: 220.0,
        };
        svg.text(
            width / 2.0,
            20.0,
            title,
            "middle",
            title_size(width, title),
            r#" font-weight="bold""#,
        );
        let colors: Vec<usize> = series
            .iter()
            .enumerate()
            .map(|(i, s)| s.color.unwrap_or(i))
            .collect();
        legend(&mut svg, (fr.x, 38.0, fr.w), &names, &colors, note);
        let mut ext = Extent::of(series, marks, shades);
        ext.xmax = ext.xmax.max(x_max.unwrap_or(f64::MIN));
        let ys = y_scale(&mut svg, fr, y_axis_kind, &ext, y_div, y_label);
        let xs = x_scale(&mut svg, fr, &x_axis, x_min, &ext, x_label);
        shade_ranges(&mut svg, fr, xs, shades);
        open_plot(&mut svg, fr, Some(xs), ys);
        event_marks(&mut svg, fr, xs, marks);
        for (si, s) in series.iter().enumerate() {
            draw_series(&mut svg, xs, ys, s.color.unwrap_or(si), s);
        }
        svg.raw("</g>");
        svg.finish(id, title)
    }

    /// The x range its data, marks and shades span, (lowest, highest): the axis drawn covers
    /// it.
    pub fn x_extent(&self) -> (f64, f64) {
        let e = Extent::of(self.series, self.marks, self.shades);
        (e.xlo, e.xmax)
    }
}

/// The data's extent: x from the lowest to the highest of points, marks and shades; y up to
/// the highest point, and its lowest positive value (for a log axis).
struct Extent {
    xlo: f64,
    xmax: f64,
    ymax: f64,
    ylo_positive: f64,
}

impl Extent {
    fn of(series: &[Series], marks: &[Mark], shades: &[Shade]) -> Extent {
        let all = series.iter().flat_map(|s| {
            s.points
                .iter()
                .map(|p| (p.0, p.1))
                .chain(s.warmup.iter().copied())
                .chain(s.bands.iter().map(|b| (b.0, b.2)))
        });
        let (mut xmax, mut ymax) = (f64::MIN, 0.0f64);
        let mut xlo = f64::MAX;
        let mut ylo_positive = f64::MAX;
        for (x, y) in all {
            xmax = xmax.max(x);
            xlo = xlo.min(x);
            ymax = ymax.max(y);
            if y > 0.0 {
                ylo_positive = ylo_positive.min(y);
            }
        }
        for m in marks {
            xmax = xmax.max(m.x);
            xlo = xlo.min(m.x);
        }
        for sh in shades {
            xmax = xmax.max(sh.to);
            xlo = xlo.min(sh.from);
        }
        if xmax == f64::MIN {
            (xmax, xlo) = (1.0, 0.0);
        }
        Extent {
            xlo,
            xmax,
            ymax,
            ylo_positive,
        }
    }
}

/// The y axis drawn (linear from zero, or log10 over the powers of ten around the data) and
/// its scale.
fn y_scale(
    svg: &mut Svg,
    fr: Frame,
    kind: YAxis,
    ext: &Extent,
    y_div: f64,
    y_label: &str,
) -> Scale {
    let (ymax, ylo_positive) = (ext.ymax, ext.ylo_positive);
    match kind {
        YAxis::Linear => {
            let (ytop, ystep) = nice_axis(ymax);
            y_axis(svg, fr, ytop, ystep, y_div, y_label);
            Scale {
                d0: 0.0,
                d1: ytop,
                r0: fr.y + fr.h,
                r1: fr.y,
                log: false,
            }
        }
        YAxis::Log => {
            let (bottom, top) = if ylo_positive <= ymax && ymax > 0.0 {
                let b = 10f64.powf(ylo_positive.log10().floor());
                let t = 10f64.powf(ymax.log10().ceil());
                (b, if t > b { t } else { b * 10.0 })
            } else {
                (1.0, 10.0)
            };
            log_y_axis(svg, fr, bottom, top, y_div, y_label)
        }
    }
}

/// The x axis drawn (from `x_min`, else from zero or the lowest x; linear or "nines"), its
/// ticks and label, and its scale.
fn x_scale(
    svg: &mut Svg,
    fr: Frame,
    x_axis: &XAxis,
    x_min: Option<f64>,
    ext: &Extent,
    x_label: &str,
) -> Scale {
    let (xlo, xmax) = (ext.xlo, ext.xmax);
    let x0 = x_min.unwrap_or(0.0f64.min(xlo));
    let (xtop, xstep) = match x_axis {
        XAxis::Linear if x0 < 0.0 => {
            let (t, s) = nice_axis(xmax - x0);
            ((x0 + t).max(xmax), s)
        }
        XAxis::Linear => nice_axis(xmax),
        XAxis::Nines => (xmax.ceil().max(1.0), 1.0),
    };
    let xs = Scale {
        d0: x0,
        d1: xtop,
        r0: fr.x,
        r1: fr.x + fr.w,
        log: false,
    };
    // x ticks
    let mut v = match x_axis {
        XAxis::Linear if x0 < 0.0 => (x0 / xstep).ceil() * xstep + 0.0,
        _ => x0,
    };
    while v <= xtop * 1.000_001 + 1e-12 {
        let x = xs.map(v);
        svg.line(x, fr.y + fr.h, x, fr.y + fr.h + 4.0, "#333333", "");
        let label = match x_axis {
            XAxis::Linear => compact(v),
            XAxis::Nines => nines_label(v),
        };
        svg.text(x, fr.y + fr.h + 16.0, &label, "middle", 11.0, "");
        v += xstep;
    }
    svg.text(
        fr.x + fr.w / 2.0,
        fr.y + fr.h + 34.0,
        x_label,
        "middle",
        12.0,
        "",
    );
    xs
}

/// Shaded x ranges behind the curves (warm-up, recoveries), each labelled at its bottom left.
fn shade_ranges(svg: &mut Svg, fr: Frame, xs: Scale, shades: &[Shade]) {
    for (i, sh) in shades.iter().enumerate() {
        let xa = xs.map(sh.from);
        super::shade_rect(svg, fr, xs, sh);
        svg.text(
            xa + 3.0,
            fr.y + fr.h - 4.0 - 12.0 * (i % 2) as f64,
            &sh.label,
            "start",
            10.0,
            r##" fill="#777777""##,
        );
    }
}

/// One series: its line, its warm-up dotted, its moving average dashed, its markers and
/// labels, in palette colour `si`.
fn draw_series(svg: &mut Svg, xs: Scale, ys: Scale, si: usize, s: &Series) {
    let color = PALETTE[si % PALETTE.len()];
    let px: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (xs.map(p.0), ys.map(p.1)))
        .collect();
    svg.path(
        &px,
        color,
        &format!(
            r#" stroke-width="2" class="series" data-series="{}"{}"#,
            esc(&s.name),
            series_dash(si)
        ),
    );
    for &(x, low, high) in &s.bands {
        let (x, lo, hi) = (xs.map(x), ys.map(low), ys.map(high));
        let attrs = format!(
            r#" stroke-width="1.2" class="band" data-series="{}" data-low="{}" data-high="{}""#,
            esc(&s.name),
            num_attr(low),
            num_attr(high)
        );
        svg.path(&[(x, lo), (x, hi)], color, &attrs);
        svg.path(
            &[(x - 3.0, lo), (x + 3.0, lo)],
            color,
            r#" stroke-width="1.2""#,
        );
        svg.path(
            &[(x - 3.0, hi), (x + 3.0, hi)],
            color,
            r#" stroke-width="1.2""#,
        );
    }
    if !s.warmup.is_empty() {
        let w: Vec<(f64, f64)> = s
            .warmup
            .iter()
            .map(|p| (xs.map(p.0), ys.map(p.1)))
            .collect();
        svg.path(
            &w,
            color,
            &format!(
                r#" stroke-width="1.5" stroke-dasharray="2 3" class="warmup" data-series="{}""#,
                esc(&s.name)
            ),
        );
        for (p, (x, y)) in s.warmup.iter().zip(&w) {
            svg.circle(
                *x,
                *y,
                2.5,
                "#ffffff",
                &format!(
                    r#" stroke="{color}" class="warmup-pt" data-x="{}" data-y="{}""#,
                    num_attr(p.0),
                    num_attr(p.1)
                ),
            );
        }
    }
    if !s.dashed.is_empty() {
        let d: Vec<(f64, f64)> = s
            .dashed
            .iter()
            .map(|p| (xs.map(p.0), ys.map(p.1)))
            .collect();
        svg.path(
            &d,
            color,
            r#" stroke-width="1.5" stroke-dasharray="6 4" class="average""#,
        );
    }
    if s.markers {
        for (p, (x, y)) in s.points.iter().zip(&px) {
            svg.circle(
                *x,
                *y,
                4.0,
                color,
                &format!(
                    r#" class="pt" data-series="{}" data-x="{}" data-y="{}""#,
                    esc(&s.name),
                    num_attr(p.0),
                    num_attr(p.1)
                ),
            );
            if !p.2.is_empty() {
                svg.text(*x + 6.0, *y - 6.0, &p.2, "start", 10.0, "");
            }
        }
    }
}

/// Vertical marks over the plot `fr` (x mapped by `xs`), each labelled: the look of the
/// marks on every chart (line and stacked). Labels are staggered, so that marks close
/// together keep readable labels; a label that would run past the plot's right edge sits
/// left of its mark.
pub(super) fn event_marks(svg: &mut Svg, fr: Frame, xs: Scale, marks: &[Mark]) {
    for (mi, m) in marks.iter().enumerate() {
        let x = xs.map(m.x);
        svg.line(
            x,
            fr.y,
            x,
            fr.y + fr.h,
            "#555555",
            &format!(
                r#" stroke-dasharray="3 3" class="mark" data-x="{}""#,
                num_attr(m.x)
            ),
        );
        let ly = fr.y + 22.0 + 12.0 * (mi % 3) as f64;
        let label_w = 5.6 * m.label.chars().count() as f64;
        if x + 3.0 + label_w > fr.x + fr.w {
            svg.text(x - 3.0, ly, &m.label, "end", 10.0, r##" fill="#555555""##);
        } else {
            svg.text(x + 3.0, ly, &m.label, "start", 10.0, r##" fill="#555555""##);
        }
    }
}

/// `0%`, `90%`, `99%`, `99.9%` for 0, 1, 2, 3 nines.
pub fn nines_label(n: f64) -> String {
    if n < 0.5 {
        return "0%".into();
    }
    let k = n.round() as usize;
    if k == 1 {
        "90%".into()
    } else {
        format!("99.{}%", "9".repeat(k - 2)).replace("99.%", "99%")
    }
}

/// Trailing moving average over `window` points.
pub fn moving_average(points: &[(f64, f64)], window: usize) -> Vec<(f64, f64)> {
    let w = window.max(1);
    (0..points.len())
        .map(|i| {
            let lo = (i + 1).saturating_sub(w);
            let slice = &points[lo..=i];
            let mean = slice.iter().map(|p| p.1).sum::<f64>() / slice.len() as f64;
            (points[i].0, mean)
        })
        .collect()
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
    fn points_sit_where_the_values_say() {
        let s = Series {
            name: "A".into(),
            points: vec![
                (100_000.0, 240_000.0, "8".into()),
                (600_000.0, 520_000.0, "64".into()),
            ],
            markers: true,
            dashed: vec![],
            warmup: vec![],
            color: None,
            bands: Vec::new(),
        };
        let svg = LineChart {
            labels: Labels {
                id: "l",
                title: "t",
                x: "ops/s",
                y: "p99 (ms)",
            },
            width: FULL_WIDTH,
            y_div: 1e6,
            series: &[s],
            x_axis: XAxis::Linear,
            y_axis: YAxis::Linear,
            marks: &[],
            shades: &[],
            x_min: None,
            x_max: None,
        }
        .svg();
        let plot = svg.split("<g class=\"plot\"").nth(1).unwrap();
        let g = |n: &str| -> f64 { attr(plot, n).unwrap().parse().unwrap() };
        let (px, py, pw, ph) = (g("data-px"), g("data-py"), g("data-pw"), g("data-ph"));
        let (xmax, ymax) = (g("data-xmax"), g("data-ymax"));
        let pts: Vec<&str> = svg.split("<circle").skip(1).collect();
        assert_eq!(pts.len(), 2);
        for p in pts {
            let (x, y) = (
                attr(p, "data-x").unwrap().parse::<f64>().unwrap(),
                attr(p, "data-y").unwrap().parse::<f64>().unwrap(),
            );
            let cx: f64 = attr(p, "cx").unwrap().parse().unwrap();
            let cy: f64 = attr(p, "cy").unwrap().parse().unwrap();
            assert!((cx - (px + x / xmax * pw)).abs() < 0.01);
            assert!((cy - (py + ph - y / ymax * ph)).abs() < 0.01);
        }
    }

    #[test]
    fn a_log_y_axis_spans_whole_powers_of_ten_and_places_points_by_their_logarithm() {
        let s = Series {
            name: "A".into(),
            points: vec![
                (0.0, 0.0, String::new()),
                (1.0, 2_000.0, String::new()),
                (3.0, 300_000.0, String::new()),
            ],
            markers: true,
            dashed: vec![],
            warmup: vec![],
            color: None,
            bands: Vec::new(),
        };
        let svg = LineChart {
            labels: Labels {
                id: "p",
                title: "t",
                x: "percentile",
                y: "latency (µs)",
            },
            width: FULL_WIDTH,
            y_div: 1e3,
            series: &[s],
            x_axis: XAxis::Nines,
            y_axis: YAxis::Log,
            marks: &[],
            shades: &[],
            x_min: Some(0.0),
            x_max: None,
        }
        .svg();
        let plot = svg.split("<g class=\"plot\"").nth(1).unwrap();
        let g = |n: &str| -> f64 { attr(plot, n).unwrap().parse().unwrap() };
        assert_eq!(attr(plot, "data-ylog").as_deref(), Some("true"));
        // 2,000 and 300,000 ns: from 1,000 to 1,000,000 ns.
        assert_eq!((g("data-ymin"), g("data-ymax")), (1_000.0, 1_000_000.0));
        let (py, ph) = (g("data-py"), g("data-ph"));
        for p in svg.split("<circle").skip(1) {
            let y: f64 = attr(p, "data-y").unwrap().parse().unwrap();
            let cy: f64 = attr(p, "cy").unwrap().parse().unwrap();
            let want = py + ph - (y.max(1_000.0).log10() - 3.0) / 3.0 * ph;
            assert!((cy - want).abs() < 0.01, "{y}: {cy} vs {want}");
        }
        assert!(svg.contains("latency (µs), log scale"));
        // A label at each power of ten, in the axis unit.
        for label in [">1<", ">10<", ">100<", ">1000<"] {
            assert!(svg.contains(label), "{label}");
        }
    }
}
