//! The gather tree of a distributed run: where each rank sends its intervals, and how a rank
//! merges what it receives before sending it on.
//!
//! The ranks form a complete [`FAN_OUT`]-ary tree in rank order (rank r's parent is
//! (r - 1) / FAN_OUT). Per target, a rank sends its parent two streams of intervals, one per
//! interval index: its own workers' intervals merged (`Part::Own`), and every rank's below
//! it merged (`Part::Rest`, what its children sent it). Merging adds histogram counts, as
//! rank 0's collector does: the result is exact, never an averaged percentile. Rank 0 then
//! receives at most 2 x FAN_OUT streams per target whatever the number of ranks.
//!
//! Why point-to-point messages rather than MPI_Reduce with a histogram-merging operator: a
//! reduce is a collective, so every rank would have to join each interval's call in step,
//! and one rank that died would hang every other (a run with a lost rank must still be stored
//! as partial); the ranks' intervals do not end together (a worker that finishes its
//! operations sends its last early); and a reduce needs buffers of one size on every rank,
//! that is dense histograms (hundreds of kB per kind) instead of V2-serialized ones (a few kB).

use std::collections::{BTreeMap, BTreeSet};

use storlab_record::{Interval, KindStats};
use storlab_study::plan::RunPlan;

/// Children per rank. 4: rank 0 receives from at most 4 ranks from 5 ranks on, and 10,000
/// ranks take 7 levels (2 would take 14, each adding a hop of a shipper's poll, ~5 ms); a
/// rank merges at most 4 children's streams per interval, a few histogram additions.
pub const FAN_OUT: u32 = 4;

/// Rank `rank`'s parent in the tree; rank 0 has none.
pub fn parent(rank: u32) -> Option<u32> {
    (rank > 0).then(|| (rank - 1) / FAN_OUT)
}

/// Rank `rank`'s children in a job of `size` ranks.
pub fn children(rank: u32, size: u32) -> std::ops::Range<u32> {
    let first = (rank as u64 * FAN_OUT as u64 + 1).min(size as u64) as u32;
    let end = (first as u64 + FAN_OUT as u64).min(size as u64) as u32;
    first..end
}

/// Rank `rank`'s depth in the tree (rank 0: 0).
pub fn level(rank: u32) -> u32 {
    let (mut l, mut r) = (0, rank);
    while let Some(p) = parent(r) {
        l += 1;
        r = p;
    }
    l
}

/// The ranks below `rank` (not itself).
pub fn below(rank: u32, size: u32) -> Vec<u32> {
    let mut out: Vec<u32> = children(rank, size).collect();
    let mut i = 0;
    while i < out.len() {
        out.extend(children(out[i], size));
        i += 1;
    }
    out
}

/// How many levels of the tree are below `rank` (a leaf: 0).
pub fn height(rank: u32, size: u32) -> u32 {
    below(rank, size)
        .last()
        .map_or(0, |deepest| level(*deepest) - level(rank))
}

/// Which half of a rank's figures a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The rank's own workers.
    Own = 0,
    /// The ranks below it.
    Rest = 1,
}

/// A stream's id on the wire (an interval's `worker` field): its target and part.
pub fn stream_id(target: u32, part: Part) -> u32 {
    target * 2 + part as u32
}

/// The part a stream id carries.
pub fn part_of(id: u32) -> Part {
    if id.is_multiple_of(2) {
        Part::Own
    } else {
        Part::Rest
    }
}

/// Per worker of the run's targets (in `assign_workers`'s order): its target's index.
pub fn worker_targets(run: &RunPlan) -> Vec<u32> {
    let mut out = Vec::new();
    for (t, target) in run.targets.iter().enumerate() {
        out.extend(std::iter::repeat_n(
            t as u32,
            target.workload.threads() as usize,
        ));
    }
    out
}

/// The streams rank `rank` sends its parent (ids, ascending): per target, its own if it runs
/// workers on it, the rest if a rank below it does.
pub fn streams_of(rank: u32, size: u32, assignment: &[u32], worker_target: &[u32]) -> Vec<u32> {
    let below: BTreeSet<u32> = below(rank, size).into_iter().collect();
    let mut ids = BTreeSet::new();
    for (a, t) in assignment.iter().zip(worker_target) {
        if *a == rank {
            ids.insert(stream_id(*t, Part::Own));
        } else if below.contains(a) {
            ids.insert(stream_id(*t, Part::Rest));
        }
    }
    ids.into_iter().collect()
}

/// Adds `src`'s figures to `dst`'s (same interval index): histogram counts and counters
/// added, span the union of both. Returns the histograms added.
pub fn add_interval(dst: &mut Interval, src: &Interval) -> u64 {
    let mut merges = 0;
    dst.start_ns = dst.start_ns.min(src.start_ns);
    dst.end_ns = dst.end_ns.max(src.end_ns);
    dst.cpu_ns += src.cpu_ns;
    for (d, s) in dst.kinds.iter_mut().zip(&src.kinds) {
        let Some(s) = s else { continue };
        d.get_or_insert_with(|| KindStats::new(s.intended.is_some()))
            .add(s);
        merges += 1 + s.intended.is_some() as u64;
    }
    let mut free = dst.error_samples.iter_mut().filter(|e| e.is_none());
    for e in src.error_samples.iter().flatten() {
        match free.next() {
            Some(slot) => *slot = Some(*e),
            None => break,
        }
    }
    merges
}

/// Merges input streams of intervals (a rank's workers, its children's streams) into output
/// streams by interval index: an output's index i is complete once every one of its inputs
/// has sent i or later, or ended; the output's last interval has `last` set.
#[derive(Default)]
pub struct StreamMerge {
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    /// Histograms added so far.
    pub merges: u64,
}

struct Input {
    output: usize,
    /// The last index it sent (i64::MAX once it ended).
    progress: i64,
}

struct Output {
    id: u32,
    target: u32,
    inputs: Vec<usize>,
    pending: BTreeMap<i64, Box<Interval>>,
    ended: bool,
}

impl StreamMerge {
    /// Adds an input feeding output stream `id` (on target `target`); returns its index.
    pub fn add_input(&mut self, id: u32, target: u32) -> usize {
        let o = match self.outputs.iter().position(|o| o.id == id) {
            Some(o) => o,
            None => {
                self.outputs.push(Output {
                    id,
                    target,
                    inputs: Vec::new(),
                    pending: BTreeMap::new(),
                    ended: false,
                });
                self.outputs.len() - 1
            }
        };
        let i = self.inputs.len();
        self.inputs.push(Input {
            output: o,
            progress: i64::MIN,
        });
        self.outputs[o].inputs.push(i);
        i
    }

    /// One interval of input `input` (in index order).
    pub fn add(&mut self, input: usize, iv: &Interval) {
        let inp = &mut self.inputs[input];
        inp.progress = if iv.last {
            i64::MAX
        } else {
            inp.progress.max(iv.index)
        };
        if iv.index == i64::MAX {
            // An ended stream's empty last: nothing to add.
            return;
        }
        let out = &mut self.outputs[inp.output];
        let dst = out.pending.entry(iv.index).or_insert_with(|| {
            let mut m = Interval::new(out.id, out.target, &[], false);
            m.index = iv.index;
            m.start_ns = u64::MAX;
            m
        });
        self.merges += add_interval(dst, iv);
    }

    /// Input `input` ends without sending more (its rank was lost).
    pub fn end_input(&mut self, input: usize) {
        self.inputs[input].progress = i64::MAX;
    }

    /// Moves the outputs' complete intervals to `out`, in index order per output. An output
    /// whose inputs have all ended sends its last (an empty one of index i64::MAX when
    /// nothing is left to send).
    pub fn ready(&mut self, out: &mut Vec<Box<Interval>>) {
        for o in self.outputs.iter_mut().filter(|o| !o.ended) {
            let upto = o
                .inputs
                .iter()
                .map(|i| self.inputs[*i].progress)
                .min()
                .unwrap_or(i64::MAX);
            while let Some(e) = o.pending.first_entry() {
                if *e.key() > upto {
                    break;
                }
                let mut iv = e.remove();
                if upto == i64::MAX && o.pending.is_empty() {
                    iv.last = true;
                    o.ended = true;
                }
                out.push(iv);
            }
            if upto == i64::MAX && !o.ended {
                let mut iv = Interval::new(o.id, o.target, &[], false);
                iv.index = i64::MAX;
                iv.last = true;
                o.ended = true;
                out.push(iv);
            }
        }
    }

    /// Every output has sent its last.
    pub fn done(&self) -> bool {
        self.outputs.iter().all(|o| o.ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::OpKind;

    #[test]
    fn the_tree_has_four_children_per_rank() {
        assert_eq!(parent(0), None);
        assert_eq!(children(0, 10), 1..5);
        assert_eq!(children(1, 10), 5..9);
        assert_eq!(children(2, 10), 9..10);
        assert_eq!(children(3, 10), 10..10);
        assert_eq!(
            (parent(9), level(9), level(4), level(0)),
            (Some(2), 2, 1, 0)
        );
        assert_eq!(
            below(1, 30),
            vec![5, 6, 7, 8, 21, 22, 23, 24, 25, 26, 27, 28, 29]
        );
        // 10,000 ranks: 7 levels below rank 0.
        assert_eq!(level(9_999), 7);
        assert_eq!(height(0, 10_000), 7);
        assert_eq!((height(0, 30), height(1, 30), height(4, 30)), (3, 2, 1));
        assert_eq!((height(0, 4), height(0, 1), height(10, 30)), (1, 0, 0));
    }

    #[test]
    fn streams_are_own_and_rest_per_target() {
        // 6 ranks, workers 0..6 on target 0 one per rank, 6..8 on target 1 on ranks 1 and 5.
        let assignment = [0, 1, 2, 3, 4, 5, 1, 5];
        let targets = [0, 0, 0, 0, 0, 0, 1, 1];
        assert_eq!(streams_of(1, 6, &assignment, &targets), vec![0, 1, 2, 3]);
        assert_eq!(streams_of(2, 6, &assignment, &targets), vec![0]);
        assert_eq!(part_of(3), Part::Rest);
    }

    fn interval(worker: u32, index: i64, values: &[u64], last: bool) -> Box<Interval> {
        let mut iv = Interval::new(worker, 0, &[OpKind::Read], false);
        iv.index = index;
        iv.start_ns = 10 + index.max(0) as u64;
        iv.end_ns = 20 + index.max(0) as u64;
        iv.cpu_ns = 1;
        iv.last = last;
        let k = iv.kinds[OpKind::Read as usize].as_mut().unwrap();
        for v in values {
            k.service.record(*v).unwrap();
            k.ops += 1;
        }
        iv
    }

    /// Index by index, the output holds both inputs' counts added, sent once both have moved
    /// past it; an input that ends (a lost rank) no longer holds the output back.
    #[test]
    fn merged_streams_add_counts_exactly_and_in_order() {
        let mut m = StreamMerge::default();
        let a = m.add_input(0, 0);
        let b = m.add_input(0, 0);
        let mut out = Vec::new();
        m.add(a, &interval(7, 0, &[100, 200], false));
        m.add(a, &interval(7, 1, &[300], false));
        m.ready(&mut out);
        assert!(out.is_empty(), "b has sent nothing yet");
        m.add(b, &interval(8, 0, &[100, 5_000_000], false));
        m.ready(&mut out);
        assert_eq!(out.len(), 1);
        let k = out[0].kinds[OpKind::Read as usize].as_ref().unwrap();
        assert_eq!((out[0].index, k.ops, out[0].cpu_ns), (0, 4, 2));
        assert_eq!(k.service.count_at(100), 2);
        assert_eq!(k.service.max(), k.service.highest_equivalent(5_000_000));
        assert!(!out[0].last);
        out.clear();
        m.add(b, &interval(8, 1, &[1], true));
        m.end_input(a);
        m.ready(&mut out);
        assert_eq!(out.len(), 1);
        assert!(out[0].last && m.done());
        let k = out[0].kinds[OpKind::Read as usize].as_ref().unwrap();
        assert_eq!((out[0].index, k.ops), (1, 2));
        assert_eq!(m.merges, 4);
    }

    #[test]
    fn an_output_whose_inputs_ended_empty_sends_an_empty_last() {
        let mut m = StreamMerge::default();
        let a = m.add_input(3, 1);
        let mut out = Vec::new();
        m.add(a, &interval(0, i64::MAX, &[], true));
        m.ready(&mut out);
        assert_eq!((out.len(), out[0].index, out[0].worker), (1, i64::MAX, 3));
        assert!(out[0].last && m.done());
    }
}
