//! The series a run's `sample` events read (its stored `samples.csv`), drawn under its
//! throughput timeline: one chart per unit (every `cpus` series on one, every `bytes/s` on
//! another), a line per series, on the throughput chart's time axis, the warm-up drawn as there
//! (its values dotted over the shaded range, in no figure) and the events marked.

use crate::svg::{self, Mark, Series, Shade, XAxis, YAxis};
use storlab_results::samples::{UnitSeries, by_unit};
use storlab_results::stored::StoredRun;

/// A run's series, one chart's worth per unit.
pub struct UnitCharts {
    units: Vec<(String, Vec<Series>)>,
    /// The lowest and highest time of a value, seconds from the start of measurement.
    span: Option<(f64, f64)>,
}

impl UnitCharts {
    /// The series of `r`'s samples, by unit (none: the run has no samples).
    pub fn of(r: &StoredRun) -> UnitCharts {
        let units = by_unit(&r.samples)
            .into_iter()
            .map(|UnitSeries { unit, series }| (unit, series.into_iter().map(line).collect()))
            .collect();
        let seconds = r.samples.iter().map(|s| s.t_ns as f64 / 1e9);
        let span = seconds.fold(None, |span: Option<(f64, f64)>, t| {
            Some(span.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))))
        });
        UnitCharts { units, span }
    }

    /// The time axis shared with the throughput chart whose x range is `chart` (its data,
    /// marks and shades): from the lowest to the highest of both, 0 at least at the left.
    /// None without samples (the throughput chart keeps its own axis).
    pub fn shared_axis(&self, chart: (f64, f64)) -> Option<(f64, f64)> {
        let (lo, hi) = self.span?;
        Some((lo.min(chart.0).min(0.0), hi.max(chart.1)))
    }

    /// One chart per unit on the time axis `axis`, with the run's `marks` and `shades`; each
    /// chart's id is `ID-RUN-UNIT` (`id`: "samples" under the run's timeline, "schedule-samples"
    /// under the rate schedule's total chart).
    pub fn draw(
        &self,
        h: &mut String,
        r: &StoredRun,
        (marks, shades): (&[Mark], &[Shade]),
        (axis, id): ((f64, f64), &str),
    ) {
        let s = &r.summary;
        for (ui, (unit, series)) in self.units.iter().enumerate() {
            let title = format!(
                "run {}: {} [{}] samples in {unit}",
                s.run_index,
                s.step,
                crate::html::params_text(&s.parameters)
            );
            h.push_str(
                &svg::LineChart {
                    labels: svg::Labels {
                        id: &format!("{id}-{}-{ui}", s.run_index),
                        title: &title,
                        x: "seconds from the start of measurement",
                        y: unit,
                    },
                    width: svg::FULL_WIDTH,
                    y_div: 1.0,
                    series,
                    x_axis: XAxis::Linear,
                    y_axis: YAxis::Linear,
                    marks,
                    shades,
                    x_min: Some(axis.0),
                    x_max: Some(axis.1),
                }
                .svg(),
            );
        }
    }
}

/// One series as a line: its values from the start of measurement, those of the warm-up
/// apart (drawn dotted); a single value as a dot.
fn line((name, points): (String, Vec<(i64, f64)>)) -> Series {
    let at = |&(t_ns, v): &(i64, f64)| (t_ns as f64 / 1e9, v);
    let warmup: Vec<(f64, f64)> = points.iter().filter(|p| p.0 < 0).map(at).collect();
    let measured: Vec<(f64, f64, String)> = points
        .iter()
        .filter(|p| p.0 >= 0)
        .map(|p| {
            let (x, y) = at(p);
            (x, y, String::new())
        })
        .collect();
    Series {
        name,
        markers: measured.len() == 1,
        points: measured,
        dashed: Vec::new(),
        warmup,
        color: None,
        bands: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::html::charts::timeline_chart;
    use storlab_results::events::Event;
    use storlab_results::samples::Sample;
    use storlab_results::stored::StoredRun;
    use storlab_results::{fixtures::new_style, timeline::parse_timeline};

    /// The `data-xmin` and `data-xmax` of each plot, in page order.
    fn x_ranges(html: &str) -> Vec<(String, String)> {
        html.split("<g class=\"plot\"")
            .skip(1)
            .map(|p| {
                let attr = |name: &str| {
                    let key = format!(" {name}=\"");
                    let at = p.find(&key).unwrap() + key.len();
                    p[at..].split('"').next().unwrap().to_string()
                };
                (attr("data-xmin"), attr("data-xmax"))
            })
            .collect()
    }

    /// A run of 2.25 s after 2 s of warm-up, sampled from the warm-up to past its end (an
    /// `outlive-step` wait): a chart per unit under the throughput chart, all on one time
    /// axis, warm-up values dotted, the reported span marked with its duration.
    #[test]
    fn samples_are_drawn_per_unit_on_the_throughput_charts_time_axis() {
        let mut s = storlab_results::fixtures::summary(4, "w", &[], &[("a", 1000.0, 5)]);
        s.warmup_seconds = 2.0;
        s.measured_seconds = 2.25;
        s.events.push(Event::reported(
            "resync-tenant-3",
            "node2->node4".into(),
            (500_000_000, 1_700_000_000),
            Some(1_200_000),
        ));
        let mut run = StoredRun::of_summary(s);
        run.timeline = parse_timeline(&new_style());
        let sample = |t_s: f64, series: &str, value: f64, unit: &str| Sample {
            t_ns: (t_s * 1e9) as i64,
            series: series.into(),
            value,
            unit: unit.into(),
        };
        run.samples = vec![
            sample(-1.5, "node1.cpu", 0.2, "cpus"),
            sample(0.5, "node1.cpu", 0.4, "cpus"),
            sample(0.6, "node2.cpu", 0.7, "cpus"),
            sample(1.0, "node1.disk-write", 1.25e7, "bytes/s"),
            sample(4.5, "node1.cpu", 0.3, "cpus"),
        ];
        let mut h = String::new();
        timeline_chart(&mut h, &run, &["a".to_string()]);
        let ids: Vec<&str> = h
            .split("<svg ")
            .skip(1)
            .map(|s| s.split("id=\"").nth(1).unwrap().split('"').next().unwrap())
            .collect();
        assert_eq!(ids, ["timeline-4", "samples-4-0", "samples-4-1"]);
        let ranges = x_ranges(&h);
        assert_eq!(ranges.len(), 3);
        assert!(ranges.iter().all(|r| *r == ranges[0]), "{ranges:?}");
        assert!(ranges[0].1.parse::<f64>().unwrap() >= 4.5, "{ranges:?}");
        let cpus = h.split("<svg ").nth(2).unwrap();
        assert!(cpus.contains("samples in cpus"));
        assert!(
            cpus.contains("data-series=\"node1.cpu\"")
                && cpus.contains("data-series=\"node2.cpu\"")
        );
        assert!(
            cpus.contains("class=\"warmup-pt\" data-x=\"-1.5\" data-y=\"0.2\""),
            "{cpus}"
        );
        assert!(cpus.contains("resync-tenant-3 (reported, 1.2 s)"), "{cpus}");
        assert!(cpus.contains("class=\"shade\""), "the warm-up shaded");
        let bytes = h.split("<svg ").nth(3).unwrap();
        assert!(bytes.contains("samples in bytes/s") && !bytes.contains("node1.cpu"));
    }

    #[test]
    fn a_run_without_samples_keeps_its_one_chart() {
        let s = storlab_results::fixtures::summary(4, "w", &[], &[("a", 1000.0, 5)]);
        let mut run = StoredRun::of_summary(s);
        run.timeline = parse_timeline(&new_style());
        let mut h = String::new();
        timeline_chart(&mut h, &run, &["a".to_string()]);
        assert_eq!(h.matches("<svg ").count(), 1);
    }
}
