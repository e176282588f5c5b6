//! Stacked areas: several series over one x axis, each drawn on top of the ones before it, so
//! that the top edge is their sum (a rate schedule's tenant groups: each group's throughput
//! over time and the total they make together). Vertical marks and shaded ranges as on line
//! charts.

use super::line::event_marks;
use super::*;

/// One band of a stacked chart: its name and its value at each x.
pub struct Band {
    pub name: String,
    pub values: Vec<f64>,
}

/// Bands stacked bottom to top in the order given, over `xs` (ascending). Each band's polygon
/// carries its values (`data-values`) and its base and top at each x are the sums of the bands
/// below it, so a test can check the stacking from the SVG.
pub struct StackedChart<'a> {
    pub labels: Labels<'a>,
    pub xs: &'a [f64],
    pub bands: &'a [Band],
    pub marks: &'a [Mark],
    pub shades: &'a [Shade],
}

impl StackedChart<'_> {
    /// The chart as an SVG element.
    pub fn svg(&self) -> String {
        let StackedChart {
            labels:
                Labels {
                    id,
                    title,
                    x: x_label,
                    y: y_label,
                },
            xs,
            bands,
            marks,
            shades,
        } = *self;
        let width = 720.0;
        let names: Vec<String> = bands.iter().map(|b| b.name.clone()).collect();
        let legend_h = 16.0 * legend_layout(&names, width - 100.0, None).len() as f64;
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
            14.0,
            r#" font-weight="bold""#,
        );
        let colors: Vec<usize> = (0..bands.len()).collect();
        legend(&mut svg, (fr.x, 38.0, fr.w), &names, &colors, None);
        // Tops of the stack after each band.
        let tops = stack_tops(xs, bands);
        let below = tops.last().cloned().unwrap_or_else(|| vec![0.0; xs.len()]);
        let ymax = below.iter().copied().fold(0.0f64, f64::max);
        let (ytop, ystep) = nice_axis(ymax);
        y_axis(&mut svg, fr, ytop, ystep, 1.0, y_label);
        let ys = Scale {
            d0: 0.0,
            d1: ytop,
            r0: fr.y + fr.h,
            r1: fr.y,
            log: false,
        };
        let mut xmax = xs.iter().copied().fold(1e-9f64, f64::max);
        for m in marks {
            xmax = xmax.max(m.x);
        }
        for sh in shades {
            xmax = xmax.max(sh.to);
        }
        let (xtop, xstep) = nice_axis(xmax);
        let xsc = Scale {
            d0: 0.0,
            d1: xtop,
            r0: fr.x,
            r1: fr.x + fr.w,
            log: false,
        };
        let mut v = 0.0;
        while v <= xtop * 1.000_001 {
            let x = xsc.map(v);
            svg.line(x, fr.y + fr.h, x, fr.y + fr.h + 4.0, "#333333", "");
            svg.text(x, fr.y + fr.h + 16.0, &compact(v), "middle", 11.0, "");
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
        open_plot(&mut svg, fr, Some(xsc), ys);
        draw_bands(&mut svg, xs, bands, &tops, xsc, ys);
        outline_shades(&mut svg, fr, xsc, shades);
        event_marks(&mut svg, fr, xsc, marks);
        svg.raw("</g>");
        svg.finish(id, title)
    }
}

/// The top of the stack after each band, at each x (negative values count as 0).
fn stack_tops(xs: &[f64], bands: &[Band]) -> Vec<Vec<f64>> {
    let mut tops: Vec<Vec<f64>> = Vec::with_capacity(bands.len());
    let mut below = vec![0.0; xs.len()];
    for b in bands {
        let top: Vec<f64> = below
            .iter()
            .enumerate()
            .map(|(i, base)| base + b.values.get(i).copied().unwrap_or(0.0).max(0.0))
            .collect();
        tops.push(top.clone());
        below = top;
    }
    tops
}

/// Each band's polygon, from the top of the bands below it to its own top, with its values.
fn draw_bands(svg: &mut Svg, xs: &[f64], bands: &[Band], tops: &[Vec<f64>], xsc: Scale, ys: Scale) {
    for (bi, b) in bands.iter().enumerate() {
        let base: Vec<f64> = if bi == 0 {
            vec![0.0; xs.len()]
        } else {
            tops[bi - 1].clone()
        };
        let mut poly: Vec<(f64, f64)> = xs
            .iter()
            .zip(&tops[bi])
            .map(|(x, y)| (xsc.map(*x), ys.map(*y)))
            .collect();
        poly.extend(
            xs.iter()
                .zip(&base)
                .rev()
                .map(|(x, y)| (xsc.map(*x), ys.map(*y))),
        );
        let mut d = String::new();
        for (i, (x, y)) in poly.iter().enumerate() {
            let _ = write!(d, "{}{},{}", if i == 0 { "M" } else { "L" }, f(*x), f(*y));
        }
        d.push('Z');
        let values: Vec<String> = b.values.iter().map(|v| num_attr(*v)).collect();
        svg.raw(&format!(
        r#"<path d="{d}" fill="{}" fill-opacity="0.85" stroke="none" class="band" data-series="{}" data-values="{}"/>"#,
        PALETTE[bi % PALETTE.len()],
        esc(&b.name),
        values.join(" ")
    ));
    }
}

/// Shaded ranges (recoveries) outlined, not filled, so that the bands show through.
fn outline_shades(svg: &mut Svg, fr: Frame, xsc: Scale, shades: &[Shade]) {
    for sh in shades {
        let (xa, xb) = (xsc.map(sh.from), xsc.map(sh.to));
        svg.rect(
            xa,
            fr.y,
            (xb - xa).max(1.0),
            fr.h,
            "none",
            &format!(
                r##" stroke="#D55E00" stroke-dasharray="4 3" class="{}" data-from="{}" data-to="{}""##,
                sh.class,
                num_attr(sh.from),
                num_attr(sh.to)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_band_sits_on_the_ones_below() {
        let svg = StackedChart {
            labels: Labels {
                id: "s",
                title: "t",
                x: "x",
                y: "y",
            },
            xs: &[1.0, 2.0],
            bands: &[
                Band {
                    name: "a".into(),
                    values: vec![10.0, 30.0],
                },
                Band {
                    name: "b".into(),
                    values: vec![90.0, 70.0],
                },
            ],
            marks: &[Mark {
                x: 1.5,
                label: "loss".into(),
            }],
            shades: &[],
        }
        .svg();
        assert!(svg.contains(r#"data-series="a" data-values="10 30""#));
        assert!(svg.contains(r#"data-series="b" data-values="90 70""#));
        // The y axis covers the stack's top (100), not the largest band alone.
        assert!(svg.contains(r#"data-ymax="100""#), "{svg}");
        // b's top edge at x=1 is at 100: the plot's top.
        let b = svg.split("data-series=\"b\"").next().unwrap();
        let d = b.rsplit("d=\"").next().unwrap();
        let first = d.trim_start_matches('M').split('L').next().unwrap();
        let y: f64 = first.split(',').nth(1).unwrap().parse().unwrap();
        let top: f64 = svg
            .split("data-py=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((y - top).abs() < 0.01, "{y} vs {top}");
        assert!(svg.contains("class=\"mark\" data-x=\"1.5\""));
    }
}
