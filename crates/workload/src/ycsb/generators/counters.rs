//! YCSB's counters, shared by every worker of a run: [`Counter`] (`CounterGenerator`, the load
//! phase's key sequence) and [`AcknowledgedCounter`] (`AcknowledgedCounterGenerator`, the run
//! phase's insert keys and "latest acknowledged insert"). Atomics behind an `Arc`, never a lock.
//!
//! As in YCSB, the acknowledgement window holds 2^20 keys: an insert acknowledged 2^20 or more
//! keys past the oldest insert still in flight is an error ([`AckError::WindowFull`], YCSB's
//! "Too many unacknowledged insertion keys."), never a silent drop.

use std::sync::atomic::{AtomicU64, Ordering};

/// An acknowledgement the [`AcknowledgedCounter`] cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    #[error(
        "too many unacknowledged insert keys: {value} is {window} or more past the oldest \
         unacknowledged key {oldest}"
    )]
    WindowFull {
        value: u64,
        oldest: u64,
        window: u64,
    },
    #[error("insert key {value} was acknowledged already or never handed out")]
    NotPending { value: u64 },
}

/// YCSB's `CounterGenerator`: hands out start, start+1, ... to every thread that shares it.
#[derive(Debug)]
pub struct Counter {
    next: AtomicU64,
}

impl Counter {
    pub fn new(start: u64) -> Self {
        Counter {
            next: AtomicU64::new(start),
        }
    }

    #[inline]
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The value the next call to [`Counter::next`] returns.
    pub fn peek(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
}

/// Slots in the acknowledgement window (YCSB: 2^20).
pub const ACK_WINDOW: u64 = 1 << 20;

/// YCSB's `AcknowledgedCounterGenerator`, lock-free: inserts take keys from a shared counter and
/// acknowledge them when done (in any order); [`AcknowledgedCounter::acknowledged_end`] only
/// moves past a key once it and every key before it are acknowledged, so readers never choose a
/// key whose insert may not have finished.
///
/// YCSB marks acknowledged keys in a window of 2^20 booleans and advances its limit under a
/// try-lock. Here each window slot holds the acknowledged key itself (plus one), and the limit
/// advances by compare-and-swap, one key at a time, by whichever acknowledging thread sees the
/// next key present. Tagging slots with the key makes a stale thread's look harmless, and
/// sequentially consistent ordering makes sure that of two racing acknowledgers at least one
/// sees the other's key, so the limit never stalls behind an acknowledged key.
///
/// YCSB throws "Too many unacknowledged insertion keys." when the slot of a key is still taken
/// by the key 2^20 before it; when that older key is still in flight instead, YCSB marks the
/// slot anyway and later takes the older key for acknowledged. Here any key 2^20 or more past
/// the oldest one in flight is refused with [`AckError::WindowFull`]: the overflow YCSB throws
/// for, including the case it misses.
pub struct AcknowledgedCounter {
    next: AtomicU64,
    /// One past the last key of the contiguous acknowledged prefix (YCSB's `limit + 1`).
    acked_end: AtomicU64,
    /// `slots[k % window] == k + 1` once key k is acknowledged.
    slots: Box<[AtomicU64]>,
    mask: u64,
}

impl std::fmt::Debug for AcknowledgedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcknowledgedCounter")
            .field("next", &self.next)
            .field("acked_end", &self.acked_end)
            .field("window", &self.slots.len())
            .finish()
    }
}

impl AcknowledgedCounter {
    /// Keys from `start`; every key below `start` counts as acknowledged (the loaded records).
    pub fn new(start: u64) -> Self {
        Self::with_window(start, ACK_WINDOW)
    }

    /// `window` (rounded up to a power of two) bounds how far the newest handed-out key may run
    /// ahead of the oldest unacknowledged one.
    pub fn with_window(start: u64, window: u64) -> Self {
        let window = window.max(2).next_power_of_two();
        AcknowledgedCounter {
            next: AtomicU64::new(start),
            acked_end: AtomicU64::new(start),
            slots: (0..window).map(|_| AtomicU64::new(0)).collect(),
            mask: window - 1,
        }
    }

    /// The next key to insert.
    #[inline]
    pub fn next(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Every key below this is acknowledged; YCSB's `lastValue()` is this minus one.
    #[inline]
    pub fn acknowledged_end(&self) -> u64 {
        self.acked_end.load(Ordering::Acquire)
    }

    /// Marks `value` (from [`AcknowledgedCounter::next`]) as inserted.
    pub fn acknowledge(&self, value: u64) -> Result<(), AckError> {
        let window = self.mask + 1;
        let oldest = self.acked_end.load(Ordering::SeqCst);
        if value < oldest || value >= self.next.load(Ordering::Relaxed) {
            return Err(AckError::NotPending { value });
        }
        if value - oldest >= window {
            return Err(AckError::WindowFull {
                value,
                oldest,
                window,
            });
        }
        let slot = &self.slots[(value & self.mask) as usize];
        if slot.swap(value + 1, Ordering::SeqCst) == value + 1 {
            return Err(AckError::NotPending { value });
        }
        loop {
            let end = self.acked_end.load(Ordering::SeqCst);
            if self.slots[(end & self.mask) as usize].load(Ordering::SeqCst) != end + 1 {
                return Ok(());
            }
            // Whoever wins moves the limit past `end`; losers look again from the new limit.
            let _ =
                self.acked_end
                    .compare_exchange(end, end + 1, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn acknowledged_counter_advances_over_contiguous_acks_only() {
        let c = AcknowledgedCounter::with_window(100, 8);
        assert_eq!(c.acknowledged_end(), 100);
        let keys: Vec<u64> = (0..5).map(|_| c.next()).collect();
        assert_eq!(keys, [100, 101, 102, 103, 104]);
        c.acknowledge(102).unwrap();
        c.acknowledge(101).unwrap();
        assert_eq!(c.acknowledged_end(), 100);
        assert_eq!(c.acknowledge(101), Err(AckError::NotPending { value: 101 }));
        c.acknowledge(100).unwrap();
        assert_eq!(c.acknowledged_end(), 103);
        c.acknowledge(104).unwrap();
        assert_eq!(c.acknowledged_end(), 103);
        c.acknowledge(103).unwrap();
        assert_eq!(c.acknowledged_end(), 105);
        assert_eq!(c.acknowledge(105), Err(AckError::NotPending { value: 105 }));
        // Window of 8: key 105 pending, key 113 may not be acknowledged yet.
        for _ in 0..9 {
            c.next();
        }
        assert!(matches!(
            c.acknowledge(113),
            Err(AckError::WindowFull { .. })
        ));
        c.acknowledge(112).unwrap();
    }

    /// YCSB's window: 2^20 keys. With key 0 still in flight, keys up to 2^20 - 1 may be
    /// acknowledged and key 2^20 may not; once key 0 is in, it may.
    #[test]
    fn acknowledgement_window_is_ycsbs_and_overflow_is_an_error() {
        let c = AcknowledgedCounter::new(0);
        for _ in 0..=ACK_WINDOW {
            c.next();
        }
        c.acknowledge(ACK_WINDOW - 1).unwrap();
        let err = c.acknowledge(ACK_WINDOW).unwrap_err();
        assert_eq!(
            err,
            AckError::WindowFull {
                value: ACK_WINDOW,
                oldest: 0,
                window: ACK_WINDOW
            }
        );
        assert!(
            err.to_string()
                .starts_with("too many unacknowledged insert keys"),
            "{err}"
        );
        assert_eq!(c.acknowledged_end(), 0);
        c.acknowledge(0).unwrap();
        assert_eq!(c.acknowledged_end(), 1);
        c.acknowledge(ACK_WINDOW).unwrap();
    }

    #[test]
    fn acknowledged_counter_across_threads() {
        let c = Arc::new(AcknowledgedCounter::new(0));
        let threads = 4;
        let per_thread = 100_000u64;
        std::thread::scope(|s| {
            for t in 0..threads {
                let c = &c;
                s.spawn(move || {
                    let mut held = Vec::new();
                    for i in 0..per_thread {
                        held.push(c.next());
                        // Acknowledge out of order: hold a few keys back.
                        if held.len() > 3 || i + 1 == per_thread {
                            let k = if t % 2 == 0 {
                                held.remove(0)
                            } else {
                                held.pop().unwrap()
                            };
                            c.acknowledge(k).unwrap();
                        }
                        assert!(c.acknowledged_end() <= c.next.load(Ordering::Relaxed));
                    }
                    for k in held {
                        c.acknowledge(k).unwrap();
                    }
                });
            }
        });
        assert_eq!(c.acknowledged_end(), threads * per_thread);
    }
}
