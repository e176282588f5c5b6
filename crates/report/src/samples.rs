//! What the `sample` events of stored runs read, as a table: per run and series its unit and
//! the count, mean, minimum and maximum of the values its command printed during measurement
//! (`summary.json` `samples`). The terminal, Markdown and HTML reports show it; the HTML report
//! also draws every value under the run's throughput timeline (`html::samples`).

use crate::table::{Cell, Table, TableRow};
use storlab_results::summary::RunSummary;

const COLUMNS: [(&str, bool); 7] = [
    ("run", true),
    ("series", false),
    ("unit", false),
    ("values", true),
    ("mean", true),
    ("min", true),
    ("max", true),
];

/// What the sample figures mean, under their table.
pub const SAMPLES_NOTE: &str = "Samples: the values the `sample` events' commands printed during measurement (from its start to its end; warm-up values are drawn, not counted), each as printed: mean, lowest and highest of those values, not weighted by time. Every value is in the run folder's samples.csv.";

/// A value as printed: more decimals for small ones.
fn value(v: Option<f64>) -> Cell {
    match v {
        None => Cell::text("-"),
        Some(v) if v.abs() >= 1e4 => Cell::num(v, 0),
        Some(v) if v.abs() >= 100.0 => Cell::num(v, 1),
        Some(v) => Cell::num(v, 3),
    }
}

/// The series of `runs`, or None when none had any.
pub fn samples_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for (name, x) in &s.samples {
            rows.push(TableRow {
                keys: vec![("run", s.run_index.to_string()), ("series", name.clone())],
                cells: vec![
                    Cell::text(s.run_index.to_string()),
                    Cell::text(name.clone()),
                    Cell::text(x.unit.clone()),
                    Cell::num(x.count as f64, 0),
                    value(x.mean),
                    value(x.min),
                    value(x.max),
                ],
            });
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS
            .iter()
            .map(|(n, num)| (n.to_string(), *num))
            .collect(),
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_results::samples::SeriesSummary;

    #[test]
    fn each_series_is_a_row_with_its_unit_and_figures() {
        let mut s = storlab_results::fixtures::summary(2, "w", &[], &[("a", 10.0, 5)]);
        assert!(samples_table([&s]).is_none());
        let series = |unit: &str, count, mean| SeriesSummary {
            unit: unit.into(),
            count,
            mean,
            min: mean,
            max: mean.map(|m| m * 2.0),
        };
        s.samples
            .insert("node1.cpu".into(), series("cpus", 4, Some(0.25)));
        s.samples.insert(
            "node1.disk-write".into(),
            series("bytes/s", 3, Some(1.25e7)),
        );
        s.samples.insert("late".into(), series("x", 0, None));
        let t = samples_table([&s]).unwrap();
        let shown: Vec<Vec<&str>> = t
            .rows
            .iter()
            .map(|r| r.cells.iter().map(|c| c.shown.as_str()).collect())
            .collect();
        assert_eq!(shown[0], ["2", "late", "x", "0", "-", "-", "-"]);
        assert_eq!(
            shown[1],
            ["2", "node1.cpu", "cpus", "4", "0.250", "0.250", "0.500"]
        );
        assert_eq!(
            shown[2],
            [
                "2",
                "node1.disk-write",
                "bytes/s",
                "3",
                "12500000",
                "12500000",
                "25000000"
            ]
        );
        assert!(t.markdown().contains("| node1.cpu | cpus |"));
    }
}
