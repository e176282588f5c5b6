//! `storlab plan --detect`: what a study must measure to tell a change from the noise
//! ([`storlab_results::comparison::detect`]), as a table.

use std::fmt::Write;

use crate::table::render;
use storlab_results::comparison::detect::{MAX_REPETITIONS, Need};
use storlab_results::comparison::uncertainty::GroupsFrom;

/// The table, then what its columns mean and what a run measured once leaves unknown.
pub fn detect_text(needs: &[Need], change: f64, confidence: f64, power: f64) -> String {
    let header = [
        "step",
        "point",
        "target",
        "figure",
        "spread measured from",
        "spread",
        "repetitions per side",
        "or a run this much longer",
    ];
    let rows: Vec<Vec<String>> = needs
        .iter()
        .map(|n| {
            let from = match n.from {
                GroupsFrom::Repetitions => format!("{} repetitions", n.groups),
                GroupsFrom::Batches => format!("{} batches of one run", n.groups),
            };
            let reps = match (n.from, n.repetitions) {
                (GroupsFrom::Repetitions, Some(r)) => r.to_string(),
                (GroupsFrom::Repetitions, None) => format!("over {MAX_REPETITIONS}"),
                (GroupsFrom::Batches, _) => "unknown".into(),
            };
            let longer = n.run_length_factor.map_or("-".to_string(), |f| {
                if f <= 1.0 {
                    "long enough".into()
                } else {
                    format!("{f:.1}x")
                }
            });
            vec![
                n.step.clone(),
                if n.point.is_empty() {
                    "-".into()
                } else {
                    n.point.clone()
                },
                n.target.clone(),
                n.figure.name().to_string(),
                from,
                format!("{:.2}%", n.spread_log * 100.0),
                reps,
                longer,
            ]
        })
        .collect();
    let mut out = render(&header, &rows);
    let _ = writeln!(
        out,
        "to see a change of {:.1}% at {:.0}% confidence with a {:.0}% chance of seeing it when it is there; \
         spread: of the figure's logarithm, run to run (repetitions) or of one run (batches)",
        change * 100.0,
        confidence * 100.0,
        power * 100.0
    );
    if needs.iter().any(|n| n.from == GroupsFrom::Batches) {
        let _ = writeln!(
            out,
            "a point measured once shows only the noise within its run: how much one run differs \
             from the next is unknown, so the repetitions it needs are too; run the study with \
             `repetitions = 3` (or more) and plan again"
        );
    }
    out
}
