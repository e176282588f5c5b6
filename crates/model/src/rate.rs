//! Rates over time: the interval a run reports at when a study does not say, and the rate
//! changes of a schedule that a worker's pacer follows.

use std::time::Duration;

/// Interval length used when a study does not say.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// From `at_ns` on, the worker starts `rate_ops` operations per second. Laid out before the
/// run relative to the start of measurement; the engine's `Pacer::new` moves them onto the run clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateChange {
    pub at_ns: u64,
    pub rate_ops: f64,
}

/// How an open loop spaces its intended starts (fio's `rate_process`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateProcess {
    /// Evenly: one gap of 1/rate between starts.
    #[default]
    Linear,
    /// A Poisson process: exponential gaps of mean 1/rate, from a seeded stream.
    Poisson,
}

impl RateProcess {
    pub fn is_linear(&self) -> bool {
        *self == RateProcess::Linear
    }
}
