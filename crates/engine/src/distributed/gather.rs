//! What a rank keeps while it gathers its children's streams (see `tree`): per child, what it
//! sent and when it was last heard, its own workers' figures (kept so that a child that is
//! lost still has its row), and whether it is lost; and a rank's own measured figures, per
//! target and kind and per worker, sent once at its end.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::serialization::Deserializer;

use super::tree::{Part, part_of};
use super::wire::{self, KindTotalsWire, LostWire, WireError, WorkerTotalsWire};
use storlab_model::OpKind;
use storlab_record::Interval;
use storlab_record::totals::{KindTotals, WorkerKindTotals};

/// Measured figures per (target, kind), their histograms added.
#[derive(Default)]
pub struct OwnTotals(BTreeMap<(u32, usize), KindTotals>);

impl OwnTotals {
    /// Adds a measured interval (a warm-up one, or an ended stream's empty last, adds
    /// nothing).
    pub fn add(&mut self, iv: &Interval) {
        if iv.index < 0 || iv.index == i64::MAX {
            return;
        }
        for (k, s) in iv.kinds.iter().enumerate() {
            let Some(s) = s else { continue };
            self.0
                .entry((iv.target, k))
                .or_insert_with(|| KindTotals::new(s.intended.is_some()))
                .add(s);
        }
    }

    pub fn to_wire(&self) -> Vec<KindTotalsWire> {
        self.0
            .iter()
            .map(|((t, k), v)| KindTotalsWire::encode(*t, *k, v))
            .collect()
    }
}

/// A rank's workers' measured counts and CPU time, by global worker index.
#[derive(Default)]
pub struct WorkerTotals(BTreeMap<u32, WorkerTotalsEntry>);

#[derive(Default)]
struct WorkerTotalsEntry {
    cpu_ns: u64,
    wall_ns: u64,
    kinds: [Option<WorkerKindTotals>; OpKind::COUNT],
}

impl WorkerTotals {
    /// Adds one of a worker's intervals (measured ones only, as the collector does).
    pub fn add(&mut self, iv: &Interval) {
        let e = self.0.entry(iv.worker).or_default();
        if iv.index < 0 {
            return;
        }
        e.cpu_ns += iv.cpu_ns;
        e.wall_ns += iv.end_ns.saturating_sub(iv.start_ns);
        for (d, s) in e.kinds.iter_mut().zip(&iv.kinds) {
            if let Some(s) = s {
                d.get_or_insert_with(WorkerKindTotals::default).add(s);
            }
        }
    }

    pub fn to_wire(&self) -> Vec<WorkerTotalsWire> {
        self.0
            .iter()
            .map(|(w, e)| WorkerTotalsWire {
                worker: *w,
                cpu_ns: e.cpu_ns,
                wall_ns: e.wall_ns,
                kinds: e
                    .kinds
                    .iter()
                    .enumerate()
                    .filter_map(|(k, t)| {
                        let t = t.as_ref()?;
                        Some((
                            k as u8,
                            t.ops,
                            t.bytes,
                            t.errors,
                            t.service_sum_ns,
                            t.service_max_ns,
                        ))
                    })
                    .collect(),
            })
            .collect()
    }
}

/// A worker's totals as the collector keeps them, from the wire.
pub fn worker_kinds(w: &WorkerTotalsWire) -> [Option<WorkerKindTotals>; OpKind::COUNT] {
    let mut out = [None; OpKind::COUNT];
    for (k, ops, bytes, errors, sum, max) in &w.kinds {
        if let Some(slot) = out.get_mut(*k as usize) {
            *slot = Some(WorkerKindTotals {
                ops: *ops,
                bytes: *bytes,
                errors: *errors,
                service_sum_ns: *sum,
                service_max_ns: *max,
            });
        }
    }
    out
}

/// A child in the gather tree, as its parent sees it.
pub struct Child {
    pub rank: u32,
    /// Per stream it sends (id, target): the input it feeds on the parent.
    streams: Vec<(u32, usize)>,
    ended: usize,
    pub bytes: u64,
    pub messages: u64,
    last_heard: Option<Instant>,
    /// When it was last heard, on rank 0's run clock, ns.
    pub last_heard_ns: u64,
    pub lost: bool,
    /// Its own workers' measured figures as they arrived.
    pub own: OwnTotals,
}

impl Child {
    /// `streams`: per stream it sends (id), the input it feeds.
    pub fn new(rank: u32, streams: Vec<(u32, usize)>) -> Child {
        Child {
            rank,
            streams,
            ended: 0,
            bytes: 0,
            messages: 0,
            last_heard: None,
            last_heard_ns: 0,
            lost: false,
            own: OwnTotals::default(),
        }
    }

    /// Lost, or every stream it sends has sent its last.
    pub fn done(&self) -> bool {
        self.lost || self.ended >= self.streams.len()
    }

    /// The inputs its streams feed.
    pub fn inputs(&self) -> impl Iterator<Item = usize> + '_ {
        self.streams.iter().map(|(_, i)| *i)
    }

    /// One message from it (`now_ns`: rank 0's run clock): the interval and the input it
    /// feeds, or None for a message that only says it is alive (or that came after it was
    /// lost).
    pub fn take(
        &mut self,
        bytes: &[u8],
        de: &mut Deserializer,
        now_ns: u64,
    ) -> Result<Option<(usize, Box<Interval>)>, WireError> {
        self.bytes += bytes.len() as u64;
        self.messages += 1;
        self.last_heard = Some(Instant::now());
        self.last_heard_ns = now_ns;
        if self.lost || bytes.is_empty() {
            return Ok(None);
        }
        let iv = wire::decode_interval(bytes, self.rank, de)?;
        let Some((_, input)) = self.streams.iter().find(|(id, _)| *id == iv.worker) else {
            return Err(WireError {
                rank: self.rank,
                what: format!("an interval of unknown stream {}", iv.worker),
            });
        };
        if part_of(iv.worker) == Part::Own {
            self.own.add(&iv);
        }
        if iv.last {
            self.ended += 1;
        }
        Ok(Some((*input, iv)))
    }

    /// Declares it lost if it is not done and has been silent for `stale` (counted from the
    /// first call when it was never heard), or at once when `grace_over`; true if it now is.
    pub fn lose_if_silent(&mut self, stale: Duration, grace_over: bool) -> bool {
        if self.done() {
            return false;
        }
        let heard = *self.last_heard.get_or_insert_with(Instant::now);
        if grace_over || heard.elapsed() > stale {
            self.lost = true;
            self.last_heard_ns = self.last_heard_ns.max(1);
            return true;
        }
        false
    }

    pub fn to_lost(&self) -> LostWire {
        LostWire {
            rank: self.rank,
            last_heard_ns: self.last_heard_ns,
            bytes: self.bytes,
            messages: self.messages,
            totals: self.own.to_wire(),
        }
    }
}

/// How long a child may be silent before it is lost: three intervals and two seconds (every
/// rank says it is alive at least every half interval while it waits).
pub fn stale_after(interval_ns: u64) -> Duration {
    Duration::from_nanos(3 * interval_ns) + Duration::from_secs(2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::V2Serializer;

    #[test]
    fn a_child_keeps_its_own_figures_and_counts_its_ends() {
        let mut c = Child::new(5, vec![(0, 10), (1, 11)]);
        let mut iv = Interval::new(0, 0, &[OpKind::Read], false);
        iv.index = 2;
        iv.kinds[0].as_mut().unwrap().service.record(1234).unwrap();
        iv.kinds[0].as_mut().unwrap().ops = 1;
        let mut bytes = Vec::new();
        wire::encode_interval(&iv, &mut V2Serializer::new(), &mut bytes);
        let mut de = Deserializer::new();
        let (input, _) = c.take(&bytes, &mut de, 7).unwrap().unwrap();
        assert_eq!(input, 10);
        assert!(c.take(&[], &mut de, 9).unwrap().is_none(), "alive");
        assert_eq!((c.messages, c.last_heard_ns), (2, 9));
        iv.worker = 1;
        iv.last = true;
        bytes.clear();
        wire::encode_interval(&iv, &mut V2Serializer::new(), &mut bytes);
        assert_eq!(c.take(&bytes, &mut de, 10).unwrap().unwrap().0, 11);
        assert!(!c.done());
        let lost = c.to_lost();
        assert_eq!(lost.totals.len(), 1);
        assert_eq!(lost.totals[0].decode().unwrap().service.len(), 1);
        iv.worker = 9;
        bytes.clear();
        wire::encode_interval(&iv, &mut V2Serializer::new(), &mut bytes);
        assert!(c.take(&bytes, &mut de, 11).is_err());
        assert!(c.lose_if_silent(Duration::from_secs(60), true) && c.done());
    }
}
