//! What a run with `steady-state` stores about it (`summary.json`, `steady-state`): whether
//! steady state was reached and when, the criterion, and the last window judged (its mean and
//! the measured deviation or slope); or that the run went to its duration without reaching
//! it. `run::steady` computes it; the terminal and the Markdown report print [`sentence`].
//!
//! [`sentence`]: SteadyStateResult::sentence

use serde::{Deserialize, Serialize};

/// A run's steady-state outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SteadyStateResult {
    /// fio's syntax: `iops:10%`, `iops_slope:0.1%`, `bw:20971520`.
    pub criterion: String,
    /// The window judged, seconds (whole timeline intervals).
    pub window_seconds: f64,
    /// Measured time ignored before the window started filling, seconds.
    pub ramp_seconds: f64,
    /// The step's duration: the longest the run could last.
    pub max_seconds: Option<f64>,
    pub reached: bool,
    /// Not reached because the run stopped before its limit (interrupted, an error).
    #[serde(default)]
    pub cut_short: bool,
    /// From the start of measurement to the end of the interval that completed the window.
    pub reached_after_seconds: Option<f64>,
    /// Unit of the samples, the mean and the deviation: `ops/s` or `bytes/s`.
    pub unit: String,
    /// How many full windows were judged.
    pub windows_judged: u64,
    /// Of the last window judged (the one that held, when reached).
    pub window_mean: Option<f64>,
    /// `iops`/`bw`: the largest distance of a sample from the window's mean.
    pub deviation: Option<f64>,
    pub deviation_percent: Option<f64>,
    /// `iops_slope`/`bw_slope`: the least-squares slope of the window, per second.
    pub slope_per_second: Option<f64>,
    pub slope_percent: Option<f64>,
}

impl SteadyStateResult {
    /// One line for the terminal and the report.
    pub fn sentence(&self) -> String {
        let judged = match (self.window_mean, self.deviation, self.slope_per_second) {
            (Some(m), Some(d), _) => format!(
                "; last window: mean {m:.1} {u}, largest deviation {d:.1} {u} ({})",
                pct(self.deviation_percent),
                u = self.unit
            ),
            (Some(m), _, Some(s)) => format!(
                "; last window: mean {m:.1} {u}, slope {s:.2} {u} per second ({} of the mean per second)",
                pct(self.slope_percent),
                u = self.unit
            ),
            _ => String::new(),
        };
        let window = format!(
            "{} over a {} s window{}",
            self.criterion,
            self.window_seconds,
            if self.ramp_seconds > 0.0 {
                format!(" after a {} s ramp", self.ramp_seconds)
            } else {
                String::new()
            }
        );
        match self.reached_after_seconds {
            Some(t) => format!("steady state reached after {t:.2} s ({window}){judged}"),
            None if self.cut_short => format!(
                "steady state not reached: the run stopped before its limit{} ({window}, {} windows judged){judged}",
                limit(self.max_seconds),
                self.windows_judged
            ),
            None if self.windows_judged == 0 => format!(
                "steady state not reached: ran to its limit{} without a full window to judge ({window})",
                limit(self.max_seconds)
            ),
            None => format!(
                "steady state not reached: ran to its limit{} ({window}, {} windows judged){judged}",
                limit(self.max_seconds),
                self.windows_judged
            ),
        }
    }
}

fn pct(p: Option<f64>) -> String {
    p.map_or("n/a".into(), |p| format!("{p:.2}%"))
}

fn limit(max: Option<f64>) -> String {
    max.map_or(String::new(), |m| format!(" of {m} s"))
}
