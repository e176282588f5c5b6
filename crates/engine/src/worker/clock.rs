//! The run's clock, read by every worker: the CPU's time-stamp counter through `quanta`.

/// Changes of the clock's reading whose median is its step ([`Clock::step_ns`]).
const STEP_SAMPLES: usize = 255;

/// The run's monotonic clock: nanoseconds since a base instant shared by all workers.
///
/// Read through `quanta` (the CPU's invariant time-stamp counter, calibrated against the
/// OS's monotonic clock, with that clock as the fallback where the counter is not reliable):
/// about 11 ns a reading here against 32 ns for `Instant::now().duration_since`, and the
/// worker reads it once per operation and once per batch of completions.
#[derive(Debug, Clone)]
pub struct Clock {
    clock: quanta::Clock,
    base_raw: u64,
}

impl Clock {
    pub fn new() -> Clock {
        let clock = quanta::Clock::new();
        let base_raw = clock.raw();
        Clock { clock, base_raw }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.base_raw, self.clock.raw())
    }

    /// The clock's step, ns: the median of 255 changes of back-to-back readings.
    /// A counter that moves more coarsely than a reading takes gives its own step (AMD's
    /// time-stamp counter here: 26 ticks every 10 ns); a finer one, the time a reading takes,
    /// which no operation's time can be told apart below either. Every latency is the
    /// difference of two readings, so its error spans up to a step each way: a percentile of
    /// latencies a few steps long moves by whole steps (`results::comparison::uncertainty`).
    /// Read after the run, off its measured path; 0 when the clock did not move in a million
    /// readings.
    pub fn step_ns(&self) -> u64 {
        let mut steps = [0u64; STEP_SAMPLES];
        let mut found = 0;
        let mut last = self.clock.raw();
        for _ in 0..1_000_000 {
            let raw = self.clock.raw();
            if raw != last {
                steps[found] = self.clock.delta_as_nanos(last, raw);
                found += 1;
                if found == STEP_SAMPLES {
                    break;
                }
            }
            last = raw;
        }
        let steps = &mut steps[..found];
        steps.sort_unstable();
        steps.get(found / 2).copied().unwrap_or(0)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The step is what back-to-back readings move by: never above the time between two
    /// readings that a spin of a microsecond apart sees, and not 0 on a working clock.
    #[test]
    fn the_step_is_a_readings_change() {
        let clock = Clock::new();
        let step = clock.step_ns();
        assert!(step > 0);
        let t0 = clock.now_ns();
        while clock.now_ns() < t0 + 1_000 {}
        assert!(step <= clock.now_ns() - t0, "{step}");
    }
}
