//! Live console output while a study runs: a progress line on a terminal, plain periodic lines
//! otherwise (logs, CI), and each run's summary table when it ends. All on stderr except the
//! tables, which go to stdout unless `--json` asked for JSON there.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use storlab_engine::Watch;
use storlab_engine::collector::Progress;
use storlab_model::units::format_ns;
use storlab_report as report;
use storlab_results::summary::RunSummary;
use storlab_study::plan::RunPlan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live line redrawn every interval.
    Live,
    /// A plain line every few seconds.
    Plain,
    Quiet,
}

pub struct Console {
    mode: ProgressMode,
    /// Print each run's table on stdout when it ends.
    pub tables: bool,
    bar: Option<indicatif::ProgressBar>,
    last_plain: Mutex<Option<Instant>>,
    plain_every: Duration,
}

impl Console {
    /// Live progress when stderr is a terminal, plain lines otherwise.
    pub fn auto(quiet: bool, tables: bool) -> Console {
        let mode = if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Live
        } else {
            ProgressMode::Plain
        };
        Console::new(mode, tables)
    }

    pub fn new(mode: ProgressMode, tables: bool) -> Console {
        let bar = (mode == ProgressMode::Live).then(|| {
            let b = indicatif::ProgressBar::new_spinner();
            b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            b.set_style(
                indicatif::ProgressStyle::with_template("{msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            b
        });
        Console {
            mode,
            tables,
            bar,
            last_plain: Mutex::new(None),
            plain_every: Duration::from_secs(5),
        }
    }
}

impl Watch for Console {
    /// Called by the collector after each interval.
    fn progress(&self, run: &RunPlan, n_runs: usize, p: &Progress, interval_ns: u64) {
        if self.mode == ProgressMode::Quiet {
            return;
        }
        let elapsed = (p.index + 1) as f64 * interval_ns as f64 / 1e9;
        let (phase, when) = if p.index < 0 {
            (
                "warm-up",
                format!(
                    "{:.0}s left",
                    (-p.index - 1) as f64 * interval_ns as f64 / 1e9
                ),
            )
        } else {
            match run.measured_length() {
                Some(d) => {
                    let total = d.as_secs_f64();
                    (
                        "measure",
                        format!(
                            "{elapsed:.0}s/{total:.0}s ETA {:.0}s",
                            (total - elapsed).max(0.0)
                        ),
                    )
                }
                None => ("measure", format!("{elapsed:.0}s")),
            }
        };
        let line = format!(
            "run {}/{} {} | {phase} {when} | {} ops/s {:.1} MB/s p99 {}{}",
            run.index,
            n_runs,
            run.label(),
            human_rate(p.rate_ops),
            p.rate_bytes / 1e6,
            format_ns(p.p99_ns as f64),
            if p.errors > 0 {
                format!(" errors {}", p.errors)
            } else {
                String::new()
            }
        );
        match self.mode {
            ProgressMode::Live => {
                if let Some(b) = &self.bar {
                    b.set_message(line);
                    b.tick();
                }
            }
            ProgressMode::Plain => {
                let mut last = self.last_plain.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                if last.is_none_or(|t| now.duration_since(t) >= self.plain_every) {
                    *last = Some(now);
                    eprintln!("{line}");
                }
            }
            ProgressMode::Quiet => {}
        }
    }

    fn clear_progress(&self) {
        if let Some(b) = &self.bar {
            b.set_message("");
            b.tick();
        }
        *self.last_plain.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Called when a run's results are stored.
    fn run_finished(&self, s: &RunSummary) {
        if let Some(b) = &self.bar {
            b.suspend(|| {});
        }
        if self.tables {
            println!("{}", report::run_text::run_table(s));
            if let Some(d) = &s.distributed {
                println!("{}", storlab_results::distributed::markdown(d));
            }
        } else if self.mode != ProgressMode::Quiet {
            eprintln!(
                "run {}/{} {}: {} ops/s, {:.1} MB/s",
                s.run_index,
                s.run_count,
                s.status.name(),
                human_rate(s.total.rate_ops),
                s.total.rate_bytes / 1e6
            );
            for v in s.targets.iter().filter_map(|t| t.verify.as_ref()) {
                eprint!("{}", v.text_table());
            }
        }
    }
}

/// 1234567.0 -> "1.23M".
pub fn human_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2}M", r / 1e6)
    } else if r >= 1e4 {
        format!("{:.1}k", r / 1e3)
    } else {
        format!("{r:.0}")
    }
}
