//! Steady-state detection on the collector's side: each completed timeline interval of the
//! run (every foreground target together, as fio's group reporting does) adds one sample,
//! ops/s or bytes/s over the interval's real length; once the window (`steady-state-seconds`)
//! is full of samples taken after the ramp, the criterion is judged at every interval as fio's
//! steadystate.c judges it each second: `iops`/`bw` when every sample lies within the limit of
//! the window's mean (strictly below it), `iops_slope`/`bw_slope` when the least-squares slope
//! of the window, per second, does. The run stops as soon as it holds; the workers never see
//! any of this (they poll a flag, see `worker::Control`).

use std::collections::VecDeque;

use storlab_results::steady::SteadyStateResult;
use storlab_study::steady::{SteadyLimit, SteadyMetric, SteadyPlan, SteadyState};

/// One judgement of a full window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// Mean of the window's samples (ops/s or bytes/s).
    pub mean: f64,
    /// Largest distance of a sample from the mean (same unit).
    pub deviation: f64,
    /// Least-squares slope of the samples, per second.
    pub slope: f64,
    /// What was compared with the limit: the deviation or the slope's magnitude, in percent
    /// of the mean for a percentage limit.
    pub criterion: f64,
    pub holds: bool,
}

/// Judges a full window of samples taken `interval_s` apart against `criterion`.
pub fn judge(samples: &[f64], interval_s: f64, criterion: &SteadyState) -> Judged {
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n.max(1.0);
    let deviation = samples.iter().map(|x| (x - mean).abs()).fold(0.0, f64::max);
    // Least squares over x = 0, 1, ..., n-1 (samples equally spaced, as fio assumes).
    let x_mean = (n - 1.0) / 2.0;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in samples.iter().enumerate() {
        let dx = i as f64 - x_mean;
        sxy += dx * (y - mean);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 {
        sxy / sxx / interval_s
    } else {
        0.0
    };
    let measure = if criterion.metric.is_slope() {
        slope.abs()
    } else {
        deviation
    };
    let (criterion_value, limit) = match criterion.limit {
        SteadyLimit::Percent(p) => (100.0 * measure / mean, p),
        SteadyLimit::Absolute(a) => (measure, a),
    };
    Judged {
        mean,
        deviation,
        slope,
        criterion: criterion_value,
        // A window of nothing (mean 0 with a percentage) never holds: NaN compares false.
        holds: criterion_value < limit,
    }
}

/// Follows a run's intervals and says when steady state is reached.
pub struct Detector {
    plan: SteadyPlan,
    interval_ns: u64,
    interval_s: f64,
    window: usize,
    samples: VecDeque<f64>,
    last: Option<Judged>,
    reached_after_s: Option<f64>,
    windows_judged: u64,
}

impl Detector {
    pub fn new(plan: SteadyPlan, interval_ns: u64) -> Detector {
        let interval_s = interval_ns as f64 / 1e9;
        let window = ((plan.window_seconds / interval_s).round() as usize).max(2);
        Detector {
            plan,
            interval_ns,
            interval_s,
            window,
            samples: VecDeque::with_capacity(window + 1),
            last: None,
            reached_after_s: None,
            windows_judged: 0,
        }
    }

    /// Adds interval `index` (0 = the first measured one; warm-up intervals are negative and
    /// ignored, as are those starting before the ramp ends) whose rates were `rate_ops` and
    /// `rate_bytes`. Returns true when steady state is reached with it.
    pub fn push(&mut self, index: i64, rate_ops: f64, rate_bytes: f64) -> bool {
        if self.reached_after_s.is_some() || index < 0 {
            return false;
        }
        let start_s = index as f64 * self.interval_s;
        if start_s + 1e-9 < self.plan.ramp_seconds {
            return false;
        }
        let metric = self.plan.criterion.metric;
        self.samples.push_back(if metric.is_bytes() {
            rate_bytes
        } else {
            rate_ops
        });
        if self.samples.len() > self.window {
            self.samples.pop_front();
        }
        if self.samples.len() < self.window {
            return false;
        }
        let window: Vec<f64> = self.samples.iter().copied().collect();
        let j = judge(&window, self.interval_s, &self.plan.criterion);
        self.windows_judged += 1;
        self.last = Some(j);
        if j.holds {
            self.reached_after_s = Some(self.seconds(index as u64 + 1));
        }
        j.holds
    }

    /// `intervals` timeline intervals, in seconds (exact for whole milliseconds).
    fn seconds(&self, intervals: u64) -> f64 {
        (intervals * self.interval_ns) as f64 / 1e9
    }

    /// When steady state was reached, seconds from the start of measurement.
    pub fn reached_after_s(&self) -> Option<f64> {
        self.reached_after_s
    }

    /// What the results say; `max_seconds` is the step's duration (the limit).
    pub fn result(&self, max_seconds: Option<f64>) -> SteadyStateResult {
        let metric: SteadyMetric = self.plan.criterion.metric;
        let last = self.last;
        let pct = |v: f64, mean: f64| (mean > 0.0).then(|| 100.0 * v / mean);
        SteadyStateResult {
            criterion: self.plan.criterion.to_string(),
            window_seconds: self.seconds(self.window as u64),
            ramp_seconds: self.plan.ramp_seconds,
            max_seconds,
            reached: self.reached_after_s.is_some(),
            cut_short: false,
            reached_after_seconds: self.reached_after_s,
            unit: metric.unit().to_string(),
            windows_judged: self.windows_judged,
            window_mean: last.map(|j| j.mean),
            deviation: last.filter(|_| !metric.is_slope()).map(|j| j.deviation),
            deviation_percent: last
                .filter(|_| !metric.is_slope())
                .and_then(|j| pct(j.deviation, j.mean)),
            slope_per_second: last.filter(|_| metric.is_slope()).map(|j| j.slope),
            slope_percent: last
                .filter(|_| metric.is_slope())
                .and_then(|j| pct(j.slope, j.mean)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_study::steady::parse_steady_state;

    fn plan(c: &str, window: f64, ramp: f64) -> SteadyPlan {
        SteadyPlan {
            criterion: parse_steady_state(c).unwrap(),
            window_seconds: window,
            ramp_seconds: ramp,
        }
    }

    fn feed(d: &mut Detector, series: &[f64]) -> Option<usize> {
        series
            .iter()
            .enumerate()
            .find(|(i, v)| d.push(*i as i64, **v, **v * 4096.0))
            .map(|(i, _)| i)
    }

    #[test]
    fn deviation_within_the_limit_is_reached_at_the_first_full_window() {
        let mut d = Detector::new(plan("iops:10%", 4.0, 0.0), 1_000_000_000);
        // Ramping up, then flat within +-5%.
        let at = feed(
            &mut d,
            &[100.0, 500.0, 800.0, 1040.0, 960.0, 1000.0, 1020.0, 990.0],
        );
        assert_eq!(
            at,
            Some(6),
            "window 3..=6 is the first within 10% of its mean"
        );
        let r = d.result(Some(60.0));
        assert!(r.reached);
        assert_eq!(r.reached_after_seconds, Some(7.0));
        let mean = (1040.0 + 960.0 + 1000.0 + 1020.0) / 4.0;
        assert!((r.window_mean.unwrap() - mean).abs() < 1e-9);
        assert!((r.deviation.unwrap() - (mean - 960.0)).abs() < 1e-9);
        assert!(r.deviation_percent.unwrap() < 10.0);
        assert_eq!(r.unit, "ops/s");
    }

    #[test]
    fn a_series_that_keeps_moving_is_not_reached() {
        let mut d = Detector::new(plan("iops:10%", 3.0, 0.0), 1_000_000_000);
        let series: Vec<f64> = (0..30).map(|i| 100.0 * 1.2f64.powi(i)).collect();
        assert_eq!(feed(&mut d, &series), None);
        let r = d.result(Some(30.0));
        assert!(!r.reached);
        assert_eq!(r.reached_after_seconds, None);
        assert_eq!(r.windows_judged, 28);
        // The last window (x, 1.2x, 1.44x): the largest deviation is above 10% of its mean.
        assert!(r.deviation_percent.unwrap() > 10.0);
    }

    #[test]
    fn the_limit_is_strict_and_absolute_limits_work() {
        // Deviation exactly at the limit does not hold (fio: criterion < limit).
        let c = parse_steady_state("iops:50").unwrap();
        assert!(!judge(&[950.0, 1050.0], 1.0, &c).holds);
        assert!(judge(&[951.0, 1049.0], 1.0, &c).holds);
        // Nothing measured never holds with a percentage.
        let p = parse_steady_state("iops:10%").unwrap();
        assert!(!judge(&[0.0, 0.0, 0.0], 1.0, &p).holds);
    }

    #[test]
    fn data_before_the_ramp_is_ignored() {
        // The first 3 s are wild; without a ramp the window 0..=2 would not hold and the
        // first window would be 1..=3, with a ramp of 3 s the first judged window is 3..=5.
        let series = [5000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0];
        let mut with_ramp = Detector::new(plan("iops:1%", 3.0, 3.0), 1_000_000_000);
        assert_eq!(feed(&mut with_ramp, &series), Some(5));
        assert_eq!(with_ramp.result(None).windows_judged, 1);
        let mut without = Detector::new(plan("iops:1%", 3.0, 0.0), 1_000_000_000);
        assert_eq!(feed(&mut without, &series), Some(3));
        // Warm-up intervals (negative) are never samples.
        let mut d = Detector::new(plan("iops:1%", 2.0, 0.0), 1_000_000_000);
        assert!(!d.push(-2, 1000.0, 0.0));
        assert!(!d.push(-1, 1000.0, 0.0));
        assert!(!d.push(0, 1000.0, 0.0));
        assert!(d.push(1, 1000.0, 0.0));
    }

    #[test]
    fn slope_is_least_squares_per_second_of_the_mean() {
        // y = 1000 + 10 x: slope 10 per second, mean 1015 over x = 0..3.
        let j = judge(
            &[1000.0, 1010.0, 1020.0, 1030.0],
            1.0,
            &parse_steady_state("iops_slope:1%").unwrap(),
        );
        assert!((j.slope - 10.0).abs() < 1e-9);
        assert!((j.mean - 1015.0).abs() < 1e-9);
        assert!((j.criterion - 100.0 * 10.0 / 1015.0).abs() < 1e-9);
        assert!(j.holds, "0.985% < 1%");
        // Half-second intervals: the same samples rise twice as fast per second.
        let j = judge(
            &[1000.0, 1010.0, 1020.0, 1030.0],
            0.5,
            &parse_steady_state("iops_slope:1%").unwrap(),
        );
        assert!((j.slope - 20.0).abs() < 1e-9);
        assert!(!j.holds);
        // A noisy but flat series has a small slope although it deviates a lot.
        let flat = [900.0, 1100.0, 900.0, 1100.0, 1100.0, 900.0, 1100.0, 900.0];
        assert!(judge(&flat, 1.0, &parse_steady_state("iops_slope:1%").unwrap()).holds);
        assert!(!judge(&flat, 1.0, &parse_steady_state("iops:5%").unwrap()).holds);
        // A falling series: the slope's magnitude is judged.
        let falling = [1030.0, 1020.0, 1010.0, 1000.0];
        let j = judge(&falling, 1.0, &parse_steady_state("bw_slope:5").unwrap());
        assert!((j.slope + 10.0).abs() < 1e-9);
        assert!(!j.holds);
        let mut d = Detector::new(plan("bw_slope:2%", 4.0, 0.0), 1_000_000_000);
        assert_eq!(feed(&mut d, &[1000.0, 1010.0, 1020.0, 1030.0]), Some(3));
        let r = d.result(Some(10.0));
        assert_eq!(r.unit, "bytes/s");
        assert!((r.slope_per_second.unwrap() - 40960.0).abs() < 1e-6);
        assert!(r.deviation.is_none());
    }
}
