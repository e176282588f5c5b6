//! Open-loop pacing: the intended start of each operation of one worker, at a rate that may
//! change at given times (a step's `schedule`: a tenant group's share of the total per phase).
//! The rate is piecewise constant; an operation's gap that spans a change is split there: the
//! part before it at the old rate, the rest at the new one, so that each phase carries its own
//! rate exactly. A rate of 0 pauses the worker until the next change. Taking a start does not
//! allocate, lock or read the clock: the changes are laid out before the run.
//!
//! A closed-loop schedule (a group's active workers change per phase) has no intended starts:
//! [`Activity`] says whether a worker is running back to back or paused at a given time, from
//! the same [`RateChange`]s, whose rate is then only infinite (running) or 0 (paused).

use storlab_model::rate::RateChange;

/// The intended starts of one worker.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// The next intended start, ns (infinite while paused with no change left).
    next_ns: f64,
    /// Time between two starts at the current rate, ns (infinite: paused).
    gap_ns: f64,
    changes: Box<[RateChange]>,
    /// The first change not applied yet.
    pending: usize,
    /// A Poisson process (fio's `rate_process=poisson`): the state of the stream whose draws
    /// make each gap exponential with the current gap as its mean; None: even gaps.
    poisson: Option<u64>,
}

fn gap_of(rate_ops: f64) -> f64 {
    if rate_ops > 0.0 {
        1e9 / rate_ops
    } else {
        f64::INFINITY
    }
}

impl Pacer {
    /// Starts at `start_ns` at `rate_ops`, then follows `changes` (sorted by time), whose
    /// times count from `base_ns` (the start of measurement on the run clock).
    pub fn new(
        start_ns: u64,
        rate_ops: f64,
        mut changes: Box<[RateChange]>,
        base_ns: u64,
    ) -> Pacer {
        for c in changes.iter_mut() {
            c.at_ns = c.at_ns.saturating_add(base_ns);
        }
        let mut p = Pacer {
            next_ns: start_ns as f64,
            gap_ns: gap_of(rate_ops),
            changes,
            pending: 0,
            poisson: None,
        };
        // Changes at or before the start apply from the start.
        while let Some(c) = p.changes.get(p.pending).copied() {
            if c.at_ns as f64 > p.next_ns {
                break;
            }
            p.gap_ns = gap_of(c.rate_ops);
            p.pending += 1;
        }
        if p.gap_ns.is_infinite() {
            p.next_ns = p.resume_at();
        }
        p
    }

    /// Exponential gaps of the same mean (a Poisson process of the same rate), drawn from
    /// a stream seeded with `seed`: fio's `rate_process=poisson`.
    pub fn poisson(mut self, seed: u64) -> Pacer {
        self.poisson = Some(seed);
        self
    }

    /// A gap's share of the mean: 1, or an exponential draw of mean 1 (-ln U, U in (0, 1]).
    #[inline]
    fn draw(&mut self) -> f64 {
        match &mut self.poisson {
            None => 1.0,
            Some(state) => {
                *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let bits = storlab_model::seed::splitmix64(*state) >> 11;
                // (bits + 1) / 2^53: in (0, 1], so the logarithm is finite.
                let u = (bits + 1) as f64 / (1u64 << 53) as f64;
                -u.ln()
            }
        }
    }

    /// When a paused worker starts again: at the next change with a rate (applying those
    /// before it), or never.
    fn resume_at(&mut self) -> f64 {
        while let Some(c) = self.changes.get(self.pending).copied() {
            self.pending += 1;
            self.gap_ns = gap_of(c.rate_ops);
            if self.gap_ns.is_finite() {
                return c.at_ns as f64;
            }
        }
        f64::INFINITY
    }

    /// The next intended start, ns (infinite: none).
    #[inline]
    pub fn next_ns(&self) -> f64 {
        self.next_ns
    }

    /// Takes the next intended start and lays out the one after it.
    #[inline]
    pub fn take(&mut self) -> u64 {
        let at = self.next_ns;
        let mut next = at + self.gap_ns * self.draw();
        while let Some(c) = self.changes.get(self.pending).copied() {
            let change = c.at_ns as f64;
            if next < change {
                break;
            }
            self.pending += 1;
            // The share of the gap left after the change runs at the new rate.
            let left = (next - change) / self.gap_ns;
            self.gap_ns = gap_of(c.rate_ops);
            if self.gap_ns.is_infinite() {
                next = self.resume_at();
                break;
            }
            next = change + left * self.gap_ns;
        }
        self.next_ns = next;
        at as u64
    }
}

/// Whether a closed-loop worker runs (issues its operations back to back) or is paused, over
/// time: its group's active workers change per phase. Checking it costs one comparison while
/// no change is due.
#[derive(Debug, Clone)]
pub struct Activity {
    active: bool,
    /// When the next change applies, run clock, ns (u64::MAX: none).
    next_at_ns: u64,
    changes: Box<[RateChange]>,
    pending: usize,
}

impl Activity {
    /// Running from the start, with no change: a plain closed loop.
    pub fn always() -> Activity {
        Activity {
            active: true,
            next_at_ns: u64::MAX,
            changes: Box::new([]),
            pending: 0,
        }
    }

    /// Running (`active`) or paused from the start, then following `changes` (a rate above 0:
    /// running; 0: paused), whose times count from `base_ns` (the start of measurement).
    pub fn new(active: bool, mut changes: Box<[RateChange]>, base_ns: u64) -> Activity {
        for c in changes.iter_mut() {
            c.at_ns = c.at_ns.saturating_add(base_ns);
        }
        let next_at_ns = changes.first().map_or(u64::MAX, |c| c.at_ns);
        Activity {
            active,
            next_at_ns,
            changes,
            pending: 0,
        }
    }

    /// None while the worker runs at `now_ns`; while it is paused, when it runs again
    /// (u64::MAX: not in this run).
    #[inline]
    pub fn paused_until(&mut self, now_ns: u64) -> Option<u64> {
        while now_ns >= self.next_at_ns {
            self.active = self.changes[self.pending].rate_ops > 0.0;
            self.pending += 1;
            self.next_at_ns = self.changes.get(self.pending).map_or(u64::MAX, |c| c.at_ns);
        }
        if self.active {
            return None;
        }
        Some(
            self.changes[self.pending..]
                .iter()
                .find(|c| c.rate_ops > 0.0)
                .map_or(u64::MAX, |c| c.at_ns),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_loop_worker_runs_and_pauses_at_its_changes() {
        let change = |at_ns, rate_ops| RateChange { at_ns, rate_ops };
        let changes = vec![
            change(10, f64::INFINITY),
            change(20, 0.0),
            change(30, 0.0),
            change(40, f64::INFINITY),
        ];
        // Paused from the start (which includes the warm-up before the base, 100).
        let mut a = Activity::new(false, changes.into_boxed_slice(), 100);
        assert_eq!(a.paused_until(0), Some(110));
        assert_eq!(a.paused_until(109), Some(110));
        assert_eq!(a.paused_until(110), None);
        assert_eq!(a.paused_until(119), None);
        assert_eq!(a.paused_until(120), Some(140));
        assert_eq!(a.paused_until(135), Some(140));
        assert_eq!(a.paused_until(140), None);
        assert_eq!(a.paused_until(u64::MAX - 1), None);
        let mut off = Activity::new(false, Box::new([]), 0);
        assert_eq!(off.paused_until(5), Some(u64::MAX));
        assert_eq!(Activity::always().paused_until(u64::MAX - 1), None);
    }

    fn starts(p: &mut Pacer, until_ns: u64) -> Vec<u64> {
        let mut v = Vec::new();
        while p.next_ns() < until_ns as f64 {
            v.push(p.take());
        }
        v
    }

    #[test]
    fn a_poisson_process_has_exponential_gaps_of_the_rates_mean() {
        // 1000 ops/s: gaps of mean 1 ms and, being exponential, a coefficient of variation of 1.
        let mut p = Pacer::new(0, 1000.0, Box::new([]), 0).poisson(42);
        let n = 200_000;
        let mut last = p.take();
        let gaps: Vec<f64> = (0..n)
            .map(|_| {
                let t = p.take();
                let g = (t - last) as f64;
                last = t;
                g
            })
            .collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64;
        let cv = var.sqrt() / mean;
        assert!((mean / 1e6 - 1.0).abs() < 0.01, "mean gap {mean} ns");
        assert!((cv - 1.0).abs() < 0.02, "coefficient of variation {cv}");
        // P(gap > mean) = 1/e for an exponential.
        let above = gaps.iter().filter(|&&g| g > 1e6).count() as f64 / n as f64;
        assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");
        // Seeded: the same seed draws the same starts, another seed others.
        let starts = |seed| {
            let mut p = Pacer::new(0, 1000.0, Box::new([]), 0).poisson(seed);
            (0..5).map(|_| p.take()).collect::<Vec<u64>>()
        };
        assert_eq!(starts(7), starts(7));
        assert_ne!(starts(7), starts(8));
        // The linear process is untouched: even gaps.
        let mut even = Pacer::new(0, 1000.0, Box::new([]), 0);
        assert_eq!((even.take(), even.take()), (0, 1_000_000));
    }

    #[test]
    fn a_constant_rate_is_evenly_spaced() {
        let mut p = Pacer::new(1_000, 1000.0, Box::new([]), 0);
        assert_eq!(
            starts(&mut p, 5_000_000),
            vec![1_000, 1_001_000, 2_001_000, 3_001_000, 4_001_000]
        );
    }

    #[test]
    fn each_phase_carries_its_own_rate() {
        // 10 ops/s for 1 s, then 100 ops/s for 1 s, then 0, then 10 again.
        let changes = vec![
            RateChange {
                at_ns: 1_000_000_000,
                rate_ops: 100.0,
            },
            RateChange {
                at_ns: 2_000_000_000,
                rate_ops: 0.0,
            },
            RateChange {
                at_ns: 3_000_000_000,
                rate_ops: 10.0,
            },
        ];
        let mut p = Pacer::new(0, 10.0, changes.into_boxed_slice(), 0);
        let all = starts(&mut p, 4_000_000_000);
        let in_range = |a: u64, b: u64| all.iter().filter(|&&t| t >= a && t < b).count();
        assert_eq!(in_range(0, 1_000_000_000), 10);
        assert_eq!(in_range(1_000_000_000, 2_000_000_000), 100);
        assert_eq!(in_range(2_000_000_000, 3_000_000_000), 0);
        assert_eq!(in_range(3_000_000_000, 4_000_000_000), 10);
        assert_eq!(all[0], 0);
        // The pause ends exactly at the change.
        assert_eq!(all[110], 3_000_000_000);
    }

    #[test]
    fn a_gap_across_a_change_is_split_there() {
        // 1 op/s: the start at 0.5 s is followed, after a change to 2 op/s at 1 s, half a
        // gap at the old rate (0.5 s) and the rest at the new one.
        let changes = vec![RateChange {
            at_ns: 1_000_000_000,
            rate_ops: 2.0,
        }];
        let mut p = Pacer::new(500_000_000, 1.0, changes.into_boxed_slice(), 0);
        assert_eq!(p.take(), 500_000_000);
        assert_eq!(p.take(), 1_250_000_000);
        assert_eq!(p.take(), 1_750_000_000);
    }

    #[test]
    fn changes_count_from_the_start_of_measurement() {
        // Warm-up from 0 to 1 s at 2 op/s; measurement from 1 s, the change 1 s into it.
        let changes = vec![RateChange {
            at_ns: 1_000_000_000,
            rate_ops: 4.0,
        }];
        let mut p = Pacer::new(0, 2.0, changes.into_boxed_slice(), 1_000_000_000);
        let all = starts(&mut p, 3_000_000_000);
        assert_eq!(all.iter().filter(|&&t| t < 2_000_000_000).count(), 4);
        assert_eq!(all.iter().filter(|&&t| t >= 2_000_000_000).count(), 4);
    }

    #[test]
    fn paused_from_the_start_waits_for_the_first_rate() {
        let changes = vec![
            RateChange {
                at_ns: 5,
                rate_ops: 0.0,
            },
            RateChange {
                at_ns: 7,
                rate_ops: 1e9,
            },
        ];
        let mut p = Pacer::new(0, 0.0, changes.into_boxed_slice(), 0);
        assert_eq!(p.take(), 7);
        assert_eq!(p.take(), 8);
        let never = Pacer::new(0, 0.0, Box::new([]), 0);
        assert!(never.next_ns().is_infinite());
    }
}
