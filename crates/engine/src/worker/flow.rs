//! fio's flow control (`flow`, `flow_id`, `flow_sleep`; fio's flow.c): the workers of a step
//! that share a flow id keep their operation counts in proportion to their weights. Each
//! counts its own operations and adds each to the flow's shared count; one that is ahead of
//! its share (own / shared above weight / total weight) issues nothing and waits
//! `flow_sleep`, letting what it has in flight complete first, as fio's `io_u_quiesce`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the workers of one flow id share: the operations they issued and their weights'
/// sum (one weight per worker thread).
#[derive(Debug)]
pub struct FlowShared {
    issued: AtomicU64,
    total_weight: u64,
}

impl FlowShared {
    pub fn new(total_weight: u64) -> Arc<FlowShared> {
        Arc::new(FlowShared {
            issued: AtomicU64::new(0),
            total_weight,
        })
    }
}

/// One worker's place in its flow.
#[derive(Debug, Clone)]
pub struct FlowGate {
    shared: Arc<FlowShared>,
    weight: u64,
    own: u64,
    /// How long to wait once ahead, ns (fio's `flow_sleep`; 0: check again at once).
    pub sleep_ns: u64,
}

impl FlowGate {
    pub fn new(shared: Arc<FlowShared>, weight: u64, sleep_ns: u64) -> FlowGate {
        FlowGate {
            shared,
            weight,
            own: 0,
            sleep_ns,
        }
    }

    /// Whether the worker may issue its next operation (then counted), as fio's
    /// `flow_threshold_exceeded`: not while its share of the flow's operations is above its
    /// weight's share. One relaxed load and, when admitted, one relaxed add.
    #[inline]
    pub fn admit(&mut self) -> bool {
        let issued = self.shared.issued.load(Ordering::Relaxed);
        // own / issued > weight / total, in integers (0 issued: admitted, as fio's NaN).
        if u128::from(self.own) * u128::from(self.shared.total_weight)
            > u128::from(self.weight) * u128::from(issued)
        {
            return false;
        }
        self.shared.issued.fetch_add(1, Ordering::Relaxed);
        self.own += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_keep_their_weights_proportion() {
        let shared = FlowShared::new(1 + 8);
        let mut light = FlowGate::new(shared.clone(), 1, 0);
        let mut heavy = FlowGate::new(shared, 8, 0);
        // The light worker tries twice as often as the heavy one: it is held to 1 in 9.
        let (mut l, mut h) = (0, 0);
        for _ in 0..90_000 {
            l += u64::from(light.admit());
            l += u64::from(light.admit());
            h += u64::from(heavy.admit());
        }
        assert_eq!(h, 90_000);
        let ratio = h as f64 / l as f64;
        assert!((7.9..8.1).contains(&ratio), "{h} / {l} = {ratio}");
    }
}
