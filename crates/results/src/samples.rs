//! What a step's `sample` events read from the system under test: one value of a named series
//! at a time, stamped by storlab on the timeline's clock. Kept in the run folder as
//! `samples.csv` (written as the values arrive), in the results store's `samples` table, and
//! per series in `summary.json` (`samples`): its unit, and the count, mean, minimum and maximum
//! of the values the command printed during measurement. Plain data and its files; the engine
//! reads the command, the reports draw the series.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The run folder's file of samples.
pub const SAMPLES_FILE: &str = "samples.csv";
/// Its header line (without the newline).
pub const SAMPLES_HEADER: &str = "t_ns,series,value,unit";

/// One value of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// When storlab read it: ns from the start of measurement (negative during warm-up).
    pub t_ns: i64,
    /// The series' name (no space, comma or quote).
    pub series: String,
    pub value: f64,
    /// One word (no space, comma or quote): `cpus`, `bytes/s`.
    pub unit: String,
}

impl Sample {
    /// Its line of `samples.csv`, newline included. The series and the unit hold no comma or
    /// quote (the line protocol refuses them), so no field is quoted.
    pub fn csv_line(&self) -> String {
        format!(
            "{},{},{},{}\n",
            self.t_ns, self.series, self.value, self.unit
        )
    }
}

/// Parses `samples.csv` by column name; rows that do not parse are skipped.
pub fn parse_samples(text: &str) -> Vec<Sample> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let at = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(t), Some(series), Some(value), Some(unit)) =
        (at("t_ns"), at("series"), at("value"), at("unit"))
    else {
        return Vec::new();
    };
    lines
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            Some(Sample {
                t_ns: f.get(t)?.trim().parse().ok()?,
                series: f.get(series)?.to_string(),
                value: f.get(value)?.trim().parse().ok()?,
                unit: f.get(unit)?.to_string(),
            })
        })
        .collect()
}

/// One series over a run's measurement: the values the command printed, as printed (no
/// interpolation, no weighting by time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SeriesSummary {
    pub unit: String,
    /// Values read during measurement (from its start to `measured-seconds`).
    pub count: u64,
    /// Mean, lowest and highest of those values; none when there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// Per series (by name): its unit and its values' count, mean, minimum and maximum over the
/// measurement, from 0 to `measured_seconds`. A series read only outside it (during warm-up,
/// or after the load while an `outlive-step` wait went on) has a count of 0.
pub fn summarize(samples: &[Sample], measured_seconds: f64) -> BTreeMap<String, SeriesSummary> {
    let end_ns = (measured_seconds * 1e9) as i64;
    let mut out: BTreeMap<String, (SeriesSummary, f64)> = BTreeMap::new();
    for s in samples {
        let (sum, total) = out.entry(s.series.clone()).or_insert_with(|| {
            (
                SeriesSummary {
                    unit: s.unit.clone(),
                    count: 0,
                    mean: None,
                    min: None,
                    max: None,
                },
                0.0,
            )
        });
        if s.t_ns < 0 || s.t_ns > end_ns {
            continue;
        }
        sum.count += 1;
        *total += s.value;
        sum.min = Some(sum.min.map_or(s.value, |m| m.min(s.value)));
        sum.max = Some(sum.max.map_or(s.value, |m| m.max(s.value)));
    }
    out.into_iter()
        .map(|(name, (mut sum, total))| {
            if sum.count > 0 {
                sum.mean = Some(total / sum.count as f64);
            }
            (name, sum)
        })
        .collect()
}

/// The series of one unit, each with its points (t_ns, value) in the order read.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitSeries {
    pub unit: String,
    pub series: Vec<(String, Vec<(i64, f64)>)>,
}

/// The series of `samples` grouped by unit, in the order each unit and series first came. One
/// chart per unit draws them.
pub fn by_unit(samples: &[Sample]) -> Vec<UnitSeries> {
    let mut out: Vec<UnitSeries> = Vec::new();
    for s in samples {
        let i = match out.iter().position(|u| u.unit == s.unit) {
            Some(i) => i,
            None => {
                out.push(UnitSeries {
                    unit: s.unit.clone(),
                    series: Vec::new(),
                });
                out.len() - 1
            }
        };
        let unit = &mut out[i].series;
        match unit.iter_mut().find(|(name, _)| *name == s.series) {
            Some((_, points)) => points.push((s.t_ns, s.value)),
            None => unit.push((s.series.clone(), vec![(s.t_ns, s.value)])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_ns: i64, series: &str, value: f64, unit: &str) -> Sample {
        Sample {
            t_ns,
            series: series.into(),
            value,
            unit: unit.into(),
        }
    }

    #[test]
    fn samples_go_through_their_file_unchanged() {
        let all = vec![
            sample(-500_000_000, "node1.cpu", 0.25, "cpus"),
            sample(1_000, "node1.disk-write", 1.25e7, "bytes/s"),
            sample(2_000_000_000, "node1.cpu", -0.5, "cpus"),
        ];
        let mut text = format!("{SAMPLES_HEADER}\n");
        for s in &all {
            text.push_str(&s.csv_line());
        }
        text.push_str("garbage,row\n");
        assert_eq!(parse_samples(&text), all);
        assert!(parse_samples("").is_empty());
    }

    #[test]
    fn a_series_is_summarized_over_the_measurement_only() {
        let all = vec![
            sample(-1, "a", 100.0, "cpus"),
            sample(0, "a", 1.0, "cpus"),
            sample(500_000_000, "a", 3.0, "cpus"),
            sample(1_000_000_000, "a", 2.0, "cpus"),
            sample(1_000_000_001, "a", 50.0, "cpus"),
            sample(2_000_000_000, "late", 7.0, "bytes"),
        ];
        let s = summarize(&all, 1.0);
        let a = &s["a"];
        assert_eq!((a.unit.as_str(), a.count), ("cpus", 3));
        assert_eq!((a.mean, a.min, a.max), (Some(2.0), Some(1.0), Some(3.0)));
        let late = &s["late"];
        assert_eq!((late.count, late.mean), (0, None));
        let json = serde_json::to_string(late).unwrap();
        assert_eq!(json, r#"{"unit":"bytes","count":0}"#);
    }

    #[test]
    fn series_are_grouped_by_unit_in_the_order_they_came() {
        let all = vec![
            sample(1, "n1.cpu", 0.5, "cpus"),
            sample(2, "n1.write", 9.0, "bytes/s"),
            sample(3, "n2.cpu", 0.7, "cpus"),
            sample(4, "n1.cpu", 0.6, "cpus"),
        ];
        let g = by_unit(&all);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].unit, "cpus");
        assert_eq!(
            g[0].series[0],
            ("n1.cpu".to_string(), vec![(1, 0.5), (4, 0.6)])
        );
        assert_eq!(g[0].series[1].0, "n2.cpu");
        assert_eq!(g[1].unit, "bytes/s");
    }
}
