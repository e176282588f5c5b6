//! Per-run timelines as small multiples: one figure per workload group, a grid of small plots
//! of ops/s per interval, one per run, all on the same axes (seconds from the start of
//! measurement, operations per second from zero), so that runs compare at a glance and a
//! group of many runs prints on a part of a page instead of a page per two runs. Each small
//! plot keeps what the full-size timeline shows: every target's curve in its colour, the
//! moving average dashed, the warm-up dotted over its shaded range, the events as vertical
//! marks, recoveries shaded. Every plot is a `<g class="plot">` stating its pixel box and data
//! ranges, as on every chart (see [`crate::svg`]), with its run (`data-run`).

use std::fmt::Write;

use crate::html::charts::{MOVING_AVERAGE_INTERVALS, event_marks, run_shades};
use crate::html::{charts, params_text};
use crate::model::Group;
use crate::svg::{self, Frame, Mark, PALETTE, Scale, Series, Shade, Svg, compact, esc, num_attr};
use storlab_results::stored::StoredRun;

/// One run's small plot.
struct Cell {
    title: String,
    run_index: usize,
    series: Vec<Series>,
    marks: Vec<Mark>,
    shades: Vec<Shade>,
}

/// Marks every run has (its warm-up and measurement bounds): drawn, not labelled, in a small
/// plot.
const ROUTINE_MARKS: [&str; 3] = ["warmup-start", "measure-start", "measure-end"];

/// The grid's geometry, in SVG units.
struct Layout {
    cols: usize,
    cell_w: f64,
    /// Left of the first plot: the y axis label and tick labels.
    left: f64,
    /// Top of the first row: title and legend.
    top: f64,
}

const GAP_X: f64 = 22.0;
/// The width (SVG units) drawn across the whole page.
const WIDE_WIDTH: f64 = 860.0;
const PLOT_H: f64 = 96.0;
/// A cell: its title, the plot, the x tick labels, space below.
const CELL_H: f64 = 16.0 + PLOT_H + 24.0;

impl Layout {
    fn frame(&self, i: usize) -> Frame {
        let (row, col) = (i / self.cols, i % self.cols);
        Frame {
            x: self.left + col as f64 * (self.cell_w + GAP_X),
            y: self.top + row as f64 * CELL_H + 16.0,
            w: self.cell_w,
            h: PLOT_H,
        }
    }

    fn width(&self) -> f64 {
        self.left + self.cols as f64 * self.cell_w + (self.cols - 1) as f64 * GAP_X + 14.0
    }
}

/// A nice axis top at or above `max` and a step giving at most `steps` steps (1, 2 or 5 times
/// a power of ten): few ticks, for a small plot.
fn coarse_axis(max: f64, steps: f64) -> (f64, f64) {
    if !max.is_finite() || max <= 0.0 {
        return (1.0, 0.5);
    }
    let p = 10f64.powf((max / steps).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| s * steps >= max * 0.999_999)
        .unwrap_or(10.0 * p);
    ((max / step - 1e-9).ceil().max(1.0) * step, step)
}

/// The group's runs as small multiples, the whole figure in a `div.fig` (`div.fig.wide`, the
/// page's width, for three runs or more). `targets`: every target name in report order.
pub fn timeline_multiples(
    h: &mut String,
    gi: usize,
    g: &Group,
    runs: &[StoredRun],
    targets: &[String],
) {
    let mut cells = Vec::new();
    let mut missing = Vec::new();
    for &ri in &g.runs {
        let r = &runs[ri];
        let s = &r.summary;
        let series = charts::timeline_series(r, targets);
        let params = params_text(&s.parameters);
        let title = if params == "-" {
            format!("run {}", s.run_index)
        } else {
            format!("run {}: {params}", s.run_index)
        };
        if series.is_empty() {
            missing.push(title);
            continue;
        }
        cells.push(Cell {
            title,
            run_index: s.run_index,
            series,
            marks: event_marks(s, true),
            shades: run_shades(s),
        });
    }
    let title = if g.runs.len() == 1 {
        format!("{}: ops/s per interval", g.step)
    } else {
        format!("{}: ops/s per interval, run by run, same axes", g.step)
    };
    if !missing.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"warning\">{}: no timeline stored for {}.</p>",
            esc(&title),
            esc(&missing.join(", "))
        );
    }
    if cells.is_empty() {
        return;
    }
    let svg = multiples_svg(&format!("timelines-{gi}"), &title, &cells);
    if cells.len() == 1 {
        // One small plot: half the page's width, beside the next figure.
        let _ = writeln!(h, "<div class=\"fig\">{svg}</div>");
    } else {
        // The page's width for four plots in a row, in proportion for fewer: the same size
        // of text whatever the number of plots.
        let share = (svg_width(cells.len()) / WIDE_WIDTH * 100.0).min(100.0);
        let _ = writeln!(
            h,
            "<div class=\"fig wide\">{}</div>",
            svg.replacen("<svg ", &format!("<svg style=\"width:{share:.0}%\" "), 1)
        );
    }
}

/// The grid for `n` plots: up to four in a row.
fn layout(n: usize) -> Layout {
    let cols = n.clamp(1, 4);
    Layout {
        cols,
        cell_w: match cols {
            1 => 300.0,
            2 => 250.0,
            3 => 230.0,
            _ => 180.0,
        },
        left: 58.0,
        top: 0.0,
    }
}

/// The figure's width for `n` plots.
fn svg_width(n: usize) -> f64 {
    layout(n).width()
}

/// The figure: title, legend, the grid of small plots on shared axes, the x axis label.
fn multiples_svg(id: &str, title: &str, cells: &[Cell]) -> String {
    let mut lay = layout(cells.len());
    let cols = lay.cols;
    let rows = cells.len().div_ceil(cols);
    let names = legend_names(cells);
    let width = lay.width();
    let legend_lines = legend_lines(&names, width - 20.0);
    lay.top = 30.0 + 14.0 * legend_lines.len() as f64;
    let height = lay.top + rows as f64 * CELL_H + 22.0;
    let mut svg = Svg::new(width, height);
    svg.text(
        width / 2.0,
        18.0,
        title,
        "middle",
        svg::title_size(width, title).min(13.0),
        r#" font-weight="bold""#,
    );
    draw_legend(&mut svg, 10.0, 34.0, &legend_lines);
    let (x0, x1, ymax) = shared_extent(cells);
    let (_, xstep) = coarse_axis(x1 - x0, 4.0);
    let (ytop, ystep) = coarse_axis(ymax, 3.0);
    for (i, c) in cells.iter().enumerate() {
        let fr = lay.frame(i);
        let xs = Scale {
            d0: x0,
            d1: x1,
            r0: fr.x,
            r1: fr.x + fr.w,
            log: false,
        };
        let ys = Scale {
            d0: 0.0,
            d1: ytop,
            r0: fr.y + fr.h,
            r1: fr.y,
            log: false,
        };
        cell_axes(&mut svg, fr, (xs, xstep), (ys, ystep), i % cols == 0);
        svg.text(
            fr.x + fr.w / 2.0,
            fr.y - 5.0,
            &c.title,
            "middle",
            11.0,
            r#" font-weight="bold""#,
        );
        draw_cell(&mut svg, fr, xs, ys, c);
    }
    let mid_y = lay.top + rows as f64 * CELL_H / 2.0;
    svg.text(
        14.0,
        mid_y,
        "operations per second",
        "middle",
        11.0,
        &format!(r#" transform="rotate(-90 14 {mid_y})""#),
    );
    svg.text(
        lay.left + (width - lay.left - 14.0) / 2.0,
        height - 8.0,
        "seconds from the start of measurement",
        "middle",
        11.0,
        "",
    );
    svg.finish(id, title)
}

/// The x range (from the warm-up's start or zero to the last point, mark or shade) and the
/// highest ops/s over all the cells.
fn shared_extent(cells: &[Cell]) -> (f64, f64, f64) {
    let (mut x0, mut x1, mut ymax) = (0.0f64, f64::MIN, 0.0f64);
    for c in cells {
        for s in &c.series {
            for (x, y) in s
                .points
                .iter()
                .map(|p| (p.0, p.1))
                .chain(s.warmup.iter().copied())
            {
                x0 = x0.min(x);
                x1 = x1.max(x);
                ymax = ymax.max(y);
            }
        }
        for m in &c.marks {
            x0 = x0.min(m.x);
            x1 = x1.max(m.x);
        }
        for sh in &c.shades {
            x0 = x0.min(sh.from);
            x1 = x1.max(sh.to);
        }
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    (x0, x1, ymax)
}

/// A cell's grid, axis lines and tick labels (y labels on the first column only: the axes are
/// shared).
fn cell_axes(
    svg: &mut Svg,
    fr: Frame,
    (xs, xstep): (Scale, f64),
    (ys, ystep): (Scale, f64),
    first_col: bool,
) {
    let mut v = 0.0;
    while v <= ys.d1 * 1.000_001 {
        let y = ys.map(v);
        svg.line(fr.x, y, fr.x + fr.w, y, "#dddddd", r#" stroke-width="1""#);
        if first_col {
            svg.text(fr.x - 5.0, y + 4.0, &compact(v), "end", 10.0, "");
        }
        v += ystep;
    }
    let mut v = (xs.d0 / xstep).ceil() * xstep + 0.0;
    while v <= xs.d1 * 1.000_001 + 1e-12 {
        let x = xs.map(v);
        svg.line(x, fr.y + fr.h, x, fr.y + fr.h + 3.0, "#333333", "");
        svg.text(x, fr.y + fr.h + 14.0, &compact(v), "middle", 10.0, "");
        v += xstep;
    }
    svg.line(fr.x, fr.y, fr.x, fr.y + fr.h, "#333333", "");
    svg.line(fr.x, fr.y + fr.h, fr.x + fr.w, fr.y + fr.h, "#333333", "");
}

/// A cell's shades, marks and curves, inside its plot group.
fn draw_cell(svg: &mut Svg, fr: Frame, xs: Scale, ys: Scale, c: &Cell) {
    for sh in &c.shades {
        let xa = xs.map(sh.from);
        svg::shade_rect(svg, fr, xs, sh);
        if sh.class != "shade" {
            svg.text(
                xa + 2.0,
                fr.y + fr.h - 3.0,
                &sh.label,
                "start",
                8.0,
                r##" fill="#777777""##,
            );
        }
    }
    svg.raw(&format!(
        r#"<g class="plot" data-run="{}" data-px="{}" data-py="{}" data-pw="{}" data-ph="{}" data-xmin="{}" data-xmax="{}" data-xlog="false" data-ymin="0" data-ymax="{}" data-ylog="false">"#,
        c.run_index,
        num_attr(fr.x),
        num_attr(fr.y),
        num_attr(fr.w),
        num_attr(fr.h),
        num_attr(xs.d0),
        num_attr(xs.d1),
        num_attr(ys.d1),
    ));
    for (mi, m) in c.marks.iter().enumerate() {
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
        // The run's own bounds are the plot's: their lines only, unlabelled.
        if ROUTINE_MARKS.iter().any(|r| m.label.starts_with(r)) {
            continue;
        }
        let ly = fr.y + 10.0 + 10.0 * (mi % 3) as f64;
        let right = x + 2.0 + 4.6 * m.label.chars().count() as f64 > fr.x + fr.w;
        let (lx, anchor) = if right {
            (x - 2.0, "end")
        } else {
            (x + 2.0, "start")
        };
        svg.text(lx, ly, &m.label, anchor, 8.0, r##" fill="#555555""##);
    }
    for (si, s) in c.series.iter().enumerate() {
        draw_curve(svg, xs, ys, s.color.unwrap_or(si), s);
    }
    svg.raw("</g>");
}

/// One target's curve in a cell: measured solid, warm-up dotted, moving average dashed.
fn draw_curve(svg: &mut Svg, xs: Scale, ys: Scale, ci: usize, s: &Series) {
    let color = PALETTE[ci % PALETTE.len()];
    let map = |pts: &mut dyn Iterator<Item = (f64, f64)>| -> Vec<(f64, f64)> {
        pts.map(|(x, y)| (xs.map(x), ys.map(y))).collect()
    };
    let measured = map(&mut s.points.iter().map(|p| (p.0, p.1)));
    svg.path(
        &measured,
        color,
        &format!(
            r#" stroke-width="1.5" class="series" data-series="{}""#,
            esc(&s.name)
        ),
    );
    if s.markers {
        for (p, (x, y)) in s.points.iter().zip(&measured) {
            svg.circle(
                *x,
                *y,
                3.0,
                color,
                &format!(
                    r#" class="pt" data-series="{}" data-x="{}" data-y="{}""#,
                    esc(&s.name),
                    num_attr(p.0),
                    num_attr(p.1)
                ),
            );
        }
    }
    let warmup = map(&mut s.warmup.iter().copied());
    svg.path(
        &warmup,
        color,
        &format!(
            r#" stroke-width="1.2" stroke-dasharray="2 2" class="warmup" data-series="{}""#,
            esc(&s.name)
        ),
    );
    let average = map(&mut s.dashed.iter().copied());
    svg.path(
        &average,
        color,
        r#" stroke-width="1.2" stroke-dasharray="5 3" class="average""#,
    );
}

/// The legend: each target in its colour, then what the line styles and shading mean.
fn legend_names(cells: &[Cell]) -> Vec<(Option<usize>, String)> {
    let mut names: Vec<(Option<usize>, String)> = Vec::new();
    for (si, s) in cells.iter().flat_map(|c| c.series.iter().enumerate()) {
        if !names.iter().any(|(_, n)| *n == s.name) {
            names.push((Some(s.color.unwrap_or(si)), s.name.clone()));
        }
    }
    names.push((
        None,
        format!("dashed: moving average of {MOVING_AVERAGE_INTERVALS} intervals;"),
    ));
    if cells
        .iter()
        .any(|c| c.series.iter().any(|s| !s.warmup.is_empty()))
    {
        names.push((None, "dotted: warm-up (in no figure);".into()));
    }
    if cells
        .iter()
        .any(|c| c.shades.iter().any(|s| s.class == "shade"))
    {
        names.push((None, "grey: warm-up;".into()));
    }
    if cells.iter().any(|c| !c.marks.is_empty()) {
        names.push((None, "dashed vertical lines: events".into()));
    }
    names
}

/// Legend entries in lines that fit `width`: (x offset, colour or none, text) per line.
fn legend_lines(
    names: &[(Option<usize>, String)],
    width: f64,
) -> Vec<Vec<(f64, Option<usize>, String)>> {
    let mut lines: Vec<Vec<(f64, Option<usize>, String)>> = vec![Vec::new()];
    let mut cx = 0.0;
    for (c, n) in names {
        let w = if c.is_some() { 20.0 } else { 6.0 } + 5.5 * n.chars().count() as f64;
        if cx > 0.0 && cx + w > width {
            lines.push(Vec::new());
            cx = 0.0;
        }
        if let Some(line) = lines.last_mut() {
            line.push((cx, *c, n.clone()));
        }
        cx += w;
    }
    lines
}

fn draw_legend(svg: &mut Svg, x: f64, y: f64, lines: &[Vec<(f64, Option<usize>, String)>]) {
    for (li, line) in lines.iter().enumerate() {
        let ly = y + 14.0 * li as f64;
        for (dx, c, n) in line {
            match c {
                Some(c) => {
                    svg.rect(x + dx, ly - 8.0, 10.0, 10.0, PALETTE[c % PALETTE.len()], "");
                    svg.text(x + dx + 14.0, ly + 1.0, n, "start", 10.0, "");
                }
                None => svg.text(x + dx, ly + 1.0, n, "start", 10.0, r##" fill="#555555""##),
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model;
    use storlab_results::fixtures::{figures, summary};
    use storlab_results::{fixtures::new_style, timeline::parse_timeline};

    /// Two runs of step `w` (queue-depth 1 and 32) of target `a`, each with the hand-written
    /// timeline: two warm-up seconds, then 2.25 s measured.
    pub(crate) fn two_runs() -> Vec<StoredRun> {
        [("1", 1), ("32", 2)]
            .into_iter()
            .map(|(qd, i)| {
                let mut s = summary(i, "w", &[("queue-depth", qd)], &[("a", 1000.0, 5)]);
                s.warmup_seconds = 2.0;
                s.measured_seconds = 2.25;
                StoredRun {
                    folder: std::path::PathBuf::new(),
                    summary: s,
                    system: None,
                    study_text: None,
                    plan: None,
                    timeline: parse_timeline(&new_style()),
                    samples: Vec::new(),
                    from_store: None,
                }
            })
            .collect()
    }

    fn attr(el: &str, name: &str) -> String {
        let key = format!(" {name}=\"");
        let start = el.find(&key).unwrap_or_else(|| panic!("no {name}")) + key.len();
        el[start..].split('"').next().unwrap_or("").to_string()
    }

    #[test]
    fn one_figure_of_small_plots_on_the_same_axes() {
        let runs = two_runs();
        let sums: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
        let groups = model::group_runs(&figures(&sums));
        assert_eq!(groups.len(), 1);
        let mut h = String::new();
        timeline_multiples(&mut h, 0, &groups[0], &runs, &["a".to_string()]);
        assert_eq!(h.matches("<svg ").count(), 1, "one figure: {h}");
        assert!(h.contains("id=\"timelines-0\"") && h.contains("class=\"fig wide\""));
        let plots: Vec<&str> = h.split("<g class=\"plot\"").skip(1).collect();
        assert_eq!(plots.len(), 2, "a plot per run");
        assert_eq!(attr(plots[0], "data-run"), "1");
        assert_eq!(attr(plots[1], "data-run"), "2");
        for key in [
            "data-xmin",
            "data-xmax",
            "data-ymax",
            "data-pw",
            "data-ph",
            "data-py",
        ] {
            assert_eq!(attr(plots[0], key), attr(plots[1], key), "{key} shared");
        }
        // From the warm-up's start to the end of measurement; ops/s from zero past 1000.
        assert_eq!(attr(plots[0], "data-xmin"), "-2");
        assert_eq!(attr(plots[0], "data-xmax"), "2.25");
        assert!(attr(plots[0], "data-ymax").parse::<f64>().unwrap() >= 1000.0);
        for p in &plots {
            let p = &p[..p.find("</g>").unwrap()];
            for class in ["series", "average", "warmup"] {
                assert!(p.contains(&format!("class=\"{class}\"")), "{class} drawn");
            }
        }
        assert_eq!(
            h.matches("class=\"shade\"").count(),
            2,
            "each run's warm-up shaded"
        );
        for title in ["run 1: queue-depth=1", "run 2: queue-depth=32"] {
            assert!(h.contains(&format!(">{title}<")), "{title}");
        }
    }

    #[test]
    fn a_run_without_a_timeline_is_said() {
        let mut runs = two_runs();
        runs[1].timeline = parse_timeline("");
        let sums: Vec<_> = runs.iter().map(|r| r.summary.clone()).collect();
        let groups = model::group_runs(&figures(&sums));
        let mut h = String::new();
        timeline_multiples(&mut h, 0, &groups[0], &runs, &["a".to_string()]);
        assert!(
            h.contains("no timeline stored for run 2: queue-depth=32"),
            "{h}"
        );
        assert_eq!(
            h.split("<g class=\"plot\"").count(),
            2,
            "the other run's plot"
        );
    }

    #[test]
    fn coarse_axes_have_few_nice_steps() {
        assert_eq!(coarse_axis(170_000.0, 3.0), (200_000.0, 100_000.0));
        assert_eq!(coarse_axis(4.5, 4.0), (6.0, 2.0));
        assert_eq!(coarse_axis(0.0, 3.0), (1.0, 0.5));
    }
}
