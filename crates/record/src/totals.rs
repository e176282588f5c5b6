//! Totals over many intervals: one operation kind's histograms and counts, merged by adding
//! counts (never by averaging percentiles), for a run, a target or several of either.

use hdrhistogram::{Counter, Histogram};

use crate::{ErrorKind, new_histogram};

/// Totals of one operation kind on one target.
pub struct KindTotals {
    pub service: Histogram<u64>,
    pub intended: Option<Histogram<u64>>,
    pub ops: u64,
    pub bytes: u64,
    pub misses: u64,
    pub errors: [u64; ErrorKind::COUNT],
}

impl KindTotals {
    pub fn new(open_loop: bool) -> KindTotals {
        KindTotals {
            service: new_histogram(),
            intended: open_loop.then(new_histogram),
            ops: 0,
            bytes: 0,
            misses: 0,
            errors: [0; ErrorKind::COUNT],
        }
    }

    /// Adds one worker's interval figures of this kind.
    pub fn add(&mut self, k: &crate::KindStats) {
        merge(&mut self.service, &k.service);
        if let (Some(dst), Some(src)) = (&mut self.intended, &k.intended) {
            merge(dst, src);
        }
        self.ops += k.ops;
        self.bytes += k.bytes;
        self.misses += k.misses;
        for (d, s) in self.errors.iter_mut().zip(k.errors.iter()) {
            *d += s;
        }
    }

    /// Adds another target's totals of the same kind.
    pub fn add_totals(&mut self, k: &KindTotals) {
        merge(&mut self.service, &k.service);
        if let Some(h) = &k.intended {
            merge(self.intended.get_or_insert_with(new_histogram), h);
        }
        self.ops += k.ops;
        self.bytes += k.bytes;
        self.misses += k.misses;
        for (d, s) in self.errors.iter_mut().zip(k.errors.iter()) {
            *d += s;
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }
}

/// One worker's totals of one operation kind: counts, and its exact latency sum and maximum,
/// without a histogram (a run may have hundreds of workers): IOmeter's per-worker rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerKindTotals {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub service_sum_ns: u64,
    pub service_max_ns: u64,
}

impl WorkerKindTotals {
    /// Adds one of the worker's intervals.
    pub fn add(&mut self, k: &crate::KindStats) {
        self.ops += k.ops;
        self.bytes += k.bytes;
        self.errors += k.errors.iter().sum::<u64>();
        self.service_sum_ns = self.service_sum_ns.saturating_add(k.service_sum_ns);
        if k.ops > 0 {
            self.service_max_ns = self.service_max_ns.max(k.service.max());
        }
    }
}

/// Adds the counts of `src` into `dst` (same bounds and precision, any counter type).
pub fn merge<A: Counter, B: Counter>(dst: &mut Histogram<A>, src: &Histogram<B>) {
    for v in src.iter_recorded() {
        dst.saturating_record_n(
            v.value_iterated_to(),
            A::from_u64(v.count_at_value().as_u64())
                .unwrap_or_else(|| A::from_u64(u32::MAX as u64).unwrap_or(A::one())),
        );
    }
}
