//! fio 3.33's dedupe working set (`dedupe_mode=working_set`, `dedupe_working_set_percentage`,
//! `dedupe_global`; fio's dedupe.c and `get_buf_state`): a block that repeats another
//! regenerates one page of a working set, drawn uniformly, instead of the previous block.
//!
//! The working set holds `percent` percent of the target's region in pages of the smallest
//! write. Page `i` is the `i`-th block of a unique stream: the worker's own (so a repeated
//! block duplicates one of its first unique blocks, written or to come), or, with `global`,
//! the pages are spread evenly over the run's participating workers in rotation from the
//! worker's own (fio's `init_dedupe_working_set_seeds` with `dedupe_global`), so that one
//! worker's repeats duplicate the others' unique blocks too. A global participant's unique
//! stream starts from the run's shared seed and its place among the participants, so that
//! every worker can regenerate every other's pages.
//!
//! A unique stream is a counter ([`Stream`]): its `k`-th page starts `k` pages of draws after
//! its start, computed, never stored, so the working set costs one start per participant.

use serde::{Deserialize, Serialize};

use crate::stream::{STREAM_STEP, Stream};

/// `dedupe-working-set = { percent = 50, global = true }` in `write-buffers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkingSet {
    /// The working set's share of the target's region, 1 to 100 (fio's
    /// `dedupe_working_set_percentage`, default 5).
    #[serde(default = "default_percent")]
    pub percent: u32,
    /// Shared by every worker of the run whose workload says so (fio's `dedupe_global`).
    #[serde(default)]
    pub global: bool,
}

fn default_percent() -> u32 {
    5
}

/// A worker's place among the run's global participants, given by the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Participant {
    pub index: u32,
    pub count: u32,
    /// The run's shared seed of the participants' unique streams.
    pub seed: u64,
}

impl Participant {
    /// Participant `index`'s unique stream's start.
    pub fn start(seed: u64, index: u32) -> u64 {
        storlab_model::seed::mix_seed(seed, &[0xde5e7, u64::from(index)])
    }
}

/// One worker's working set: its pages' streams, computed from the participants' starts.
#[derive(Debug, Clone)]
pub struct Pages {
    pages: u64,
    per_participant: u64,
    /// The participants' unique streams' starts, the worker's own first.
    starts: Vec<u64>,
    /// A page's draws: its chunks' seeds, two draws each.
    page_step: u64,
    /// fio's `dedupe_working_set_index_state`.
    index: Stream,
}

impl Pages {
    /// The working set of a worker whose unique stream starts at `own`, over `region_bytes`
    /// in pages of `page_bytes` filled in chunks of `chunk_bytes` (0: one per page), with
    /// its place among the global participants (None: its own set).
    pub fn new(
        ws: WorkingSet,
        own: u64,
        region_bytes: u64,
        (page_bytes, chunk_bytes): (u64, u64),
        place: Option<Participant>,
        seed: u64,
    ) -> Pages {
        let page_bytes = page_bytes.max(1);
        let pages = (region_bytes.saturating_mul(u64::from(ws.percent)) / 100 / page_bytes).max(1);
        let chunks = match chunk_bytes {
            0 => 1,
            c => page_bytes.div_ceil(c).max(1),
        };
        let starts = match place {
            Some(p) if p.count > 1 => (0..p.count)
                .map(|k| Participant::start(p.seed, (p.index + k) % p.count))
                .collect(),
            _ => vec![own],
        };
        Pages {
            pages,
            per_participant: (pages / starts.len() as u64).max(1),
            starts,
            page_step: (2 * chunks).wrapping_mul(STREAM_STEP),
            index: Stream(storlab_model::seed::mix_seed(seed, &[0x5e7])),
        }
    }

    /// How many pages (at least one).
    #[cfg(test)]
    fn len(&self) -> u64 {
        self.pages
    }

    /// Page `i`'s stream: the `i % per`-th page of the participant `i / per` places after the
    /// worker's own, in rotation.
    pub fn page(&self, i: u64) -> Stream {
        let p = ((i / self.per_participant) % self.starts.len() as u64) as usize;
        let k = i % self.per_participant;
        Stream(self.starts[p].wrapping_add(k.wrapping_mul(self.page_step)))
    }

    /// A page drawn uniformly (fio's `rand_between(0, num_unique_pages - 1)`).
    #[inline]
    pub fn draw(&mut self) -> Stream {
        let i = ((u128::from(self.index.next()) * u128::from(self.pages)) >> 64) as u64;
        self.page(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(global: bool) -> WorkingSet {
        WorkingSet {
            percent: 50,
            global,
        }
    }

    #[test]
    fn a_page_is_the_unique_streams_block_of_its_number() {
        // 4 pages of 4 KiB in 512-byte chunks: page 2 is the stream after 2 pages of 8
        // chunks, two draws each.
        let mut own = Stream(77);
        let p = Pages::new(ws(false), 77, 32 << 10, (4096, 512), None, 1);
        assert_eq!(p.len(), 4);
        for _ in 0..32 {
            own.next();
        }
        assert_eq!(p.page(2).0, own.0);
    }

    #[test]
    fn global_pages_rotate_over_the_participants_from_the_workers_own() {
        let place = |index| Participant {
            index,
            count: 2,
            seed: 9,
        };
        let a = Pages::new(ws(true), 0, 64 << 10, (4096, 0), Some(place(0)), 1);
        let b = Pages::new(ws(true), 0, 64 << 10, (4096, 0), Some(place(1)), 2);
        // 8 pages, 4 per participant: a's first 4 are its own, b's first 4 are b's own.
        assert_eq!(a.len(), 8);
        assert_eq!(a.page(0).0, Participant::start(9, 0));
        assert_eq!(a.page(4).0, Participant::start(9, 1));
        assert_eq!(b.page(0).0, Participant::start(9, 1));
        assert_eq!(a.page(5).0, b.page(1).0);
        // Draws cover the set.
        let mut a = a;
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..1000 {
            seen.insert(a.draw().0);
        }
        assert_eq!(seen.len(), 8);
    }
}
