//! A checkpoint workload's results (MLPerf Storage's checkpointing, as DLIO runs it): per run,
//! target and phase (write, read), the checkpoints' time (each one's slowest rank) and
//! throughput (the checkpoint's bytes over that time), with the checkpoint's size beside the
//! one MLPerf publishes for the model. Read from stored summaries only.

use std::fmt::Write as _;

use crate::table::{Cell, Table, TableRow};
use storlab_model::training::{
    CheckpointPass, CheckpointResult, PUBLISHED_CHECKPOINT_SIZES, mean_sd,
};
use storlab_results::summary::RunSummary;

/// What the table's figures are, said under it.
pub const CHECKPOINT_NOTE: &str = "DLIO-compatible, not an MLPerf Storage result. Each checkpoint starts when every rank has reached it (a barrier, after the time between checkpoints); its time is its slowest rank's, from that start to the end of the rank's last write (or fsync) or read; its throughput is the checkpoint's bytes (all this run's ranks' files) over that time, GiB/s (DLIO's \"GB\"), so the lowest throughput across ranks, as MLPerf Storage's rules take it. Mean and sd over the checkpoints (population sd, as DLIO). Files hold the tensors' bytes without torch.save's framing. Reads in the run that wrote them may come from the page cache: MLPerf drops it between a write run and a read run (a step's drop-caches).";

const COLUMNS: [(&str, bool); 11] = [
    ("run", true),
    ("target", false),
    ("model", false),
    ("ranks", false),
    ("checkpoint GiB", true),
    ("published", false),
    ("phase", false),
    ("checkpoints", true),
    ("seconds (sd)", true),
    ("GiB/s (sd)", true),
    ("lowest GiB/s", true),
];

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// The published size of the model's whole checkpoint, with the size this layout gives for
/// all its ranks.
fn published(r: &CheckpointResult) -> String {
    let whole = format!(
        "{} GiB for all {} ranks",
        gib_text(r.world_checkpoint_bytes),
        r.world_ranks
    );
    match PUBLISHED_CHECKPOINT_SIZES
        .iter()
        .find(|(m, _)| *m == r.model)
    {
        Some((_, size)) if r.preset_model => format!("{size} ({whole})"),
        Some((_, size)) => format!("{size} for the full model; this smaller one: {whole}"),
        None => whole,
    }
}

/// GiB to one decimal from 10 up, else to three significant digits.
fn gib_text(bytes: u64) -> String {
    let g = gib(bytes);
    if g >= 10.0 || g == 0.0 {
        format!("{g:.1}")
    } else {
        crate::baseline::significant(g)
    }
}

/// A phase's checkpoints: how many ended of how many, their seconds and GiB/s as (mean,
/// sd), and the lowest GiB/s.
struct Phase {
    ended: usize,
    total: usize,
    seconds: (f64, f64),
    gib_per_second: (f64, f64),
    lowest_gib_per_second: f64,
}

impl Phase {
    fn of(r: &CheckpointResult, passes: &[CheckpointPass]) -> Phase {
        let rates = r.gib_per_second(passes);
        let lowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
        Phase {
            ended: passes.iter().filter(|p| p.whole()).count(),
            total: passes.len(),
            seconds: mean_sd(&CheckpointResult::seconds(passes)),
            gib_per_second: mean_sd(&rates),
            lowest_gib_per_second: if lowest.is_finite() { lowest } else { 0.0 },
        }
    }

    fn cells(&self) -> [Cell; 4] {
        [
            Cell::text(if self.ended == self.total {
                self.ended.to_string()
            } else {
                format!("{} of {}", self.ended, self.total)
            }),
            Cell::text(format!("{:.3} ({:.3})", self.seconds.0, self.seconds.1)),
            Cell::text(format!(
                "{:.3} ({:.3})",
                self.gib_per_second.0, self.gib_per_second.1
            )),
            Cell::num(self.lowest_gib_per_second, 3),
        ]
    }
}

/// One row per checkpoint result and phase of every run, or None when no run checkpointed.
pub fn checkpoint_table<'a>(runs: impl IntoIterator<Item = &'a RunSummary>) -> Option<Table> {
    let mut rows = Vec::new();
    for s in runs {
        for r in &s.checkpoint {
            for (phase, passes) in [("write", &r.writes), ("read", &r.reads)] {
                if passes.is_empty() {
                    continue;
                }
                let mut cells = vec![
                    Cell::num(s.run_index as f64, 0),
                    Cell::text(r.target.clone()),
                    Cell::text(r.model.clone()),
                    Cell::text(format!("{} of {}", r.ranks, r.world_ranks)),
                    Cell::num(gib(r.checkpoint_bytes), 3),
                    Cell::text(published(r)),
                    Cell::text(if phase == "write" && r.fsync {
                        "write + fsync".to_string()
                    } else {
                        phase.to_string()
                    }),
                ];
                cells.extend(Phase::of(r, passes).cells());
                rows.push(TableRow {
                    keys: vec![("run", s.run_index.to_string()), ("phase", phase.into())],
                    cells,
                });
            }
        }
    }
    (!rows.is_empty()).then(|| Table {
        columns: COLUMNS.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        rows,
    })
}

/// The section of a study's Markdown report (empty without checkpoint runs).
pub fn markdown(summaries: &[RunSummary]) -> String {
    match checkpoint_table(summaries) {
        Some(t) => format!(
            "\n## Checkpointing\n\n{}\n{CHECKPOINT_NOTE}\n",
            t.markdown()
        ),
        None => String::new(),
    }
}

/// Lines for the console after a run.
pub fn text_lines(s: &RunSummary) -> String {
    let mut out = String::new();
    for r in &s.checkpoint {
        let _ = writeln!(
            out,
            "checkpoint {} on {}: {} of {} ranks, {:.3} GiB in {} files per checkpoint",
            r.model,
            r.target,
            r.ranks,
            r.world_ranks,
            gib(r.checkpoint_bytes),
            r.files
        );
        for (phase, passes) in [("write", &r.writes), ("read", &r.reads)] {
            if passes.is_empty() {
                continue;
            }
            let p = Phase::of(r, passes);
            let _ = writeln!(
                out,
                "  {phase}: {} of {} checkpoints, {:.3} s each (sd {:.3}), {:.3} GiB/s (sd {:.3}), lowest {:.3} GiB/s",
                p.ended,
                p.total,
                p.seconds.0,
                p.seconds.1,
                p.gib_per_second.0,
                p.gib_per_second.1,
                p.lowest_gib_per_second
            );
        }
        if r.cut_short() {
            let _ = writeln!(out, "  cut short: a rank did not end every checkpoint");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(k: u32, ns: &[(u64, u64)]) -> CheckpointPass {
        CheckpointPass {
            checkpoint: k,
            ranks: ns.iter().map(|r| Some(*r)).collect(),
        }
    }

    /// The slowest rank sets each checkpoint's time; throughput is the bytes over it.
    #[test]
    fn a_checkpoint_run_gets_a_row_per_phase_and_console_lines() {
        let mut s = storlab_results::fixtures::summary(1, "ckpt", &[], &[("data", 1.0, 1)]);
        assert!(checkpoint_table([&s]).is_none());
        s.checkpoint.push(CheckpointResult {
            target: "data".into(),
            model: "llama3-8b".into(),
            ranks: 2,
            world_ranks: 8,
            checkpoint_bytes: 1 << 30,
            world_checkpoint_bytes: 4 << 30,
            preset_model: true,
            files: 4,
            fsync: true,
            time_between_ns: 0,
            io_bytes: 1 << 20,
            // 1 GiB in 1 s (slowest rank) and in 2 s: 1 and 0.5 GiB/s.
            writes: vec![
                pass(1, &[(0, 500_000_000), (0, 1_000_000_000)]),
                pass(2, &[(0, 2_000_000_000), (0, 1_000_000_000)]),
            ],
            reads: vec![],
        });
        let t = checkpoint_table([&s]).unwrap();
        assert_eq!(t.rows.len(), 1, "no read row without reads");
        let md = t.markdown();
        assert!(md.contains("1.500 (0.500)"), "{md}");
        assert!(md.contains("0.750 (0.250)"), "{md}");
        assert!(md.contains("105 GB (4.00 GiB for all 8 ranks)"), "{md}");
        s.checkpoint[0].preset_model = false;
        let md = checkpoint_table([&s]).unwrap().markdown();
        assert!(
            md.contains("105 GB for the full model; this smaller one: 4.00 GiB for all 8 ranks"),
            "{md}"
        );
        let text = text_lines(&s);
        assert!(
            text.contains("write: 2 of 2 checkpoints, 1.500 s each (sd 0.500)"),
            "{text}"
        );
        assert!(text.contains("lowest 0.500 GiB/s"), "{text}");
    }
}
