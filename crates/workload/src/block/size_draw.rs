//! Each I/O's size as fio 3.33's `get_next_buflen` draws it (io_u.c), for the pattern source
//! ([`super::pattern`]) and for a target that places an I/O in a smaller file of its set
//! (fio's `nrfiles` with files below the largest): [`SizeDraw`].
//!
//! - a range (`block-size-range`, fio's `bsrange`): `min + max * U`, rounded down to a
//!   multiple of `min` (unless unaligned), at most `max`;
//! - a split (`block-size-split`, fio's `bssplit`): the entries in order of their percent,
//!   smallest first (fio sorts them so), a percent drawn in [0, 100) picks the first entry
//!   whose running sum of percents is above it, or the first one after it that fits before
//!   the end; rounded down to a multiple of the smallest entry (unless unaligned), at most the
//!   largest (fio's `bssplit` with sizes that are not multiples of the smallest: 6k of
//!   `4k/50:6k/50` is 4k, as in fio);
//! - the draw is repeated until the size fits in the room left before the end (fio's
//!   `io_u_fits`); none fits when the smallest does not.
//!
//! The draw does arithmetic on 64-bit random numbers only: no allocation.

use serde::{Deserialize, Serialize};

use super::{Access, BlockWorkload};
use storlab_model::units::Bytes;

/// `block-size-range = { min = "4KiB", max = "16KiB" }`: each I/O's size in the range, drawn
/// as fio draws it; writes in `write-min`..`write-max` when given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SizeRange {
    pub min: Bytes,
    pub max: Bytes,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_min: Option<Bytes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_max: Option<Bytes>,
    /// Sizes need not be multiples of the minimum (fio's `bs_unaligned`; buffered I/O only).
    #[serde(default)]
    pub unaligned: bool,
}

impl SizeRange {
    /// (min, max) of reads and of writes.
    pub fn directions(&self) -> [(u64, u64); 2] {
        let read = (self.min.0, self.max.0);
        let write = (
            self.write_min.map_or(read.0, |b| b.0),
            self.write_max.map_or(read.1, |b| b.0),
        );
        [read, write]
    }

    /// The largest size of either direction (the sessions' buffers).
    pub fn largest(&self) -> u64 {
        self.directions().iter().map(|d| d.1).max().unwrap_or(0)
    }

    /// The smallest size of either direction.
    pub fn smallest(&self) -> u64 {
        self.directions().iter().map(|d| d.0).min().unwrap_or(0)
    }
}

/// fio's draw of one I/O's size in `min..=max` from 64 random bits (`get_next_buflen`).
#[inline]
pub fn draw_size(min: u64, max: u64, unaligned: bool, bits: u64) -> u64 {
    if min == max {
        return min;
    }
    let u = (bits >> 11) as f64 / (1u64 << 53) as f64;
    let mut len = min + (max as f64 * u) as u64;
    if !unaligned {
        len -= len % min;
    }
    len.min(max)
}

/// The mean size fio's draw gives in `min..=max`, bytes (exact for aligned sizes).
pub fn mean_size(min: u64, max: u64, unaligned: bool) -> f64 {
    if min >= max {
        return min as f64;
    }
    let (minf, maxf) = (min as f64, max as f64);
    if unaligned {
        // Uniform on [min, max) with probability (max - min) / max, else max.
        let p = (maxf - minf) / maxf;
        return p * (minf + maxf) / 2.0 + (1.0 - p) * maxf;
    }
    // min + max * U rounded down to a multiple of min: k * min for U in
    // [(k - 1) min / max, k min / max), the rest clamped to max.
    let mut mean = 0.0;
    let mut k = 1u64;
    loop {
        let len = k * min;
        let lo = ((k - 1) as f64 * minf / maxf).min(1.0);
        let hi = (k as f64 * minf / maxf).min(1.0);
        mean += (hi - lo) * (len.min(max) as f64);
        if hi >= 1.0 {
            break;
        }
        k += 1;
    }
    mean
}

/// fio's most `bssplit` entries per direction (`BSSPLIT_MAX`).
pub const SPLIT_MAX: usize = 64;

/// Draws before a size that never fits gives up on the smallest (fio would loop for ever:
/// a split whose smallest entry has no percent).
const ATTEMPTS: u32 = 1 << 16;

/// One entry of `block-size-split = [{ size = "4KiB", percent = 40 }, ...]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SplitEntry {
    pub size: Bytes,
    pub percent: u32,
}

/// How one worker's I/O sizes are drawn, and what a target placing an I/O in a smaller file
/// of its set needs besides: the offsets' alignment and whether they are uniform.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeDraw {
    /// (min, max) of reads and of writes.
    sizes: [(u64, u64); 2],
    unaligned: bool,
    /// Per direction (reads, writes), a split's entries with a percent, as (bytes, running
    /// sum of percents), percent ascending; `split_len` of them (none: a range, or one size).
    split: [[(u64, u64); SPLIT_MAX]; 2],
    split_len: [usize; 2],
    /// Each direction's sum of percents.
    total: [u64; 2],
    /// Offsets are multiples of this.
    pub align: u64,
    /// Offsets are drawn uniformly (else from a skewed distribution, sequentially, or by
    /// IOmeter's model).
    pub uniform: bool,
}

impl SizeDraw {
    /// Every I/O of `block` bytes.
    pub fn fixed(block: u64) -> SizeDraw {
        SizeDraw {
            sizes: [(block, block); 2],
            unaligned: false,
            split: [[(0, 0); SPLIT_MAX]; 2],
            split_len: [0; 2],
            total: [0; 2],
            align: block.max(1),
            uniform: false,
        }
    }

    /// Sizes of a range.
    pub fn range(r: &SizeRange) -> SizeDraw {
        SizeDraw {
            sizes: r.directions(),
            unaligned: r.unaligned,
            ..SizeDraw::fixed(r.smallest())
        }
    }

    /// Sizes of a split of `(bytes, weight)` entries (at most [`SPLIT_MAX`] are kept).
    pub fn split(entries: &[(u64, u64)], unaligned: bool) -> SizeDraw {
        SizeDraw::split_by_direction([entries, entries], unaligned)
    }

    /// Reads' and writes' sizes from their own splits (fio's `bssplit=READS,WRITES`).
    pub fn split_by_direction(entries: [&[(u64, u64)]; 2], unaligned: bool) -> SizeDraw {
        let bounds = |e: &[(u64, u64)]| {
            let min = e.iter().map(|e| e.0).min().unwrap_or(512);
            (min, e.iter().map(|e| e.0).max().unwrap_or(min))
        };
        let sizes = [bounds(entries[0]), bounds(entries[1])];
        let mut d = SizeDraw {
            sizes,
            unaligned,
            ..SizeDraw::fixed(sizes[0].0.min(sizes[1].0))
        };
        for (dir, entries) in entries.iter().enumerate() {
            let mut sorted = [(0u64, 0u64); SPLIT_MAX];
            let mut n = 0;
            for e in entries.iter().filter(|e| e.1 > 0).take(SPLIT_MAX) {
                sorted[n] = *e;
                n += 1;
            }
            // A stable sort by weight, smallest first (fio's qsort of its bssplit).
            sorted[..n].sort_by_key(|e| e.1);
            for (i, (bytes, weight)) in sorted[..n].iter().enumerate() {
                d.total[dir] += weight;
                d.split[dir][i] = (*bytes, d.total[dir]);
            }
            d.split_len[dir] = n;
        }
        d
    }

    /// The draw of block workload `w`'s sizes and placement of its offsets.
    pub fn of(w: &BlockWorkload) -> SizeDraw {
        let mut d = if !w.block_size_split.is_empty() {
            let entries = |s: &[SplitEntry]| -> Vec<(u64, u64)> {
                s.iter().map(|e| (e.size.0, u64::from(e.percent))).collect()
            };
            let reads = entries(&w.block_size_split);
            let writes = if w.write_block_size_split.is_empty() {
                reads.clone()
            } else {
                entries(&w.write_block_size_split)
            };
            SizeDraw::split_by_direction([&reads, &writes], false)
        } else if let Some(r) = &w.block_size_range {
            SizeDraw::range(r)
        } else if w.iometer_model() {
            // IOmeter's lines by their share (per million), for the sizes only.
            let entries: Vec<(u64, u64)> = w
                .spec_lines()
                .iter()
                .map(|l| (l.block_size.0, (l.spec_share * 1e6).round() as u64))
                .collect();
            SizeDraw::split(&entries, true)
        } else {
            SizeDraw::fixed(w.block_size.0)
        };
        d.align = if w.uses_pattern() {
            w.alignment.map_or(d.smallest(), |a| a.0)
        } else {
            w.alignment_bytes()
        }
        .max(1);
        d.uniform = w.access == Access::Random
            && w.distribution.is_random()
            && !w.iometer_model()
            && w.random_run.is_none();
        d
    }

    /// The smallest size of direction `write`.
    #[inline]
    pub fn min(&self, write: bool) -> u64 {
        self.sizes[write as usize].0
    }

    /// The smallest size of either direction.
    pub fn smallest(&self) -> u64 {
        self.sizes[0].0.min(self.sizes[1].0).max(1)
    }

    /// The largest size of either direction.
    pub fn largest(&self) -> u64 {
        self.sizes[0].1.max(self.sizes[1].1)
    }

    /// One draw of fio's loop from 64 random bits, for `room` bytes before the end (it may
    /// not fit: the caller draws again).
    #[inline]
    fn once(&self, write: bool, bits: u64, room: u64) -> u64 {
        let dir = write as usize;
        let (min, max) = self.sizes[dir];
        if self.split_len[dir] == 0 {
            return draw_size(min, max, self.unaligned, bits);
        }
        let drawn = ((bits as u128 * self.total[dir] as u128) >> 64) as u64;
        let mut len = min;
        for &(bytes, sum) in &self.split[dir][..self.split_len[dir]] {
            len = bytes;
            if drawn < sum && bytes <= room {
                break;
            }
        }
        if !self.unaligned {
            len -= len % min;
        }
        len.min(max)
    }

    /// A size of direction `write` that fits in `room` bytes, drawn as fio draws it from the
    /// 64-bit numbers `bits` gives; None when the smallest does not fit.
    #[inline]
    pub fn fitting(&self, write: bool, room: u64, mut bits: impl FnMut() -> u64) -> Option<u64> {
        let (min, max) = self.sizes[write as usize];
        if min > room {
            return None;
        }
        if min == max {
            return Some(min);
        }
        for _ in 0..ATTEMPTS {
            let len = self.once(write, bits(), room);
            if len <= room {
                return Some(len);
            }
        }
        Some(min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn shares(d: &SizeDraw, room: u64, draws: u32) -> std::collections::BTreeMap<u64, f64> {
        let mut rng = SmallRng::seed_from_u64(5);
        let mut m = std::collections::BTreeMap::new();
        for _ in 0..draws {
            let len = d.fitting(false, room, || rng.next_u64()).unwrap();
            *m.entry(len).or_insert(0.0) += 1.0 / f64::from(draws);
        }
        m
    }

    #[test]
    fn a_split_draws_each_size_by_its_percent() {
        let d = SizeDraw::split(&[(4096, 40), (16384, 30), (65536, 30)], false);
        let s = shares(&d, u64::MAX, 100_000);
        // 5 standard errors of a share of 100,000 draws: 0.008.
        for (bytes, want) in [(4096, 0.4), (16384, 0.3), (65536, 0.3)] {
            assert!((s[&bytes] - want).abs() < 0.008, "{s:?}");
        }
        assert_eq!((d.smallest(), d.largest()), (4096, 65536));
    }

    #[test]
    fn a_split_that_does_not_fit_takes_the_next_entry_that_does_as_fio() {
        // Sorted by percent: 64k (10), 16k (30), 4k (60). With 20k of room, 64k drawn (10%)
        // goes on to 16k: 16k 40%, 4k 60%.
        let d = SizeDraw::split(&[(4096, 60), (16384, 30), (65536, 10)], false);
        let s = shares(&d, 20 << 10, 100_000);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!((s[&16384] - 0.4).abs() < 0.008, "{s:?}");
        // Under the smallest: none.
        assert_eq!(d.fitting(false, 2048, || 7), None);
        // Not a multiple of the smallest: rounded down, as fio.
        let d = SizeDraw::split(&[(4096, 50), (6144, 50)], false);
        assert_eq!(
            shares(&d, u64::MAX, 1000)
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            [4096]
        );
    }

    #[test]
    fn reads_and_writes_draw_from_their_own_splits() {
        // fio's bssplit=64k/40:1024k/60,1024k/100.
        let d =
            SizeDraw::split_by_direction([&[(65536, 40), (1 << 20, 60)], &[(1 << 20, 100)]], false);
        let s = shares(&d, u64::MAX, 100_000);
        assert!((s[&65536] - 0.4).abs() < 0.008, "{s:?}");
        let mut rng = SmallRng::seed_from_u64(9);
        for _ in 0..1000 {
            assert_eq!(d.fitting(true, u64::MAX, || rng.next_u64()), Some(1 << 20));
        }
        assert_eq!((d.min(false), d.min(true)), (65536, 1 << 20));
        assert_eq!((d.smallest(), d.largest()), (65536, 1 << 20));
    }

    #[test]
    fn a_range_draws_again_until_the_size_fits() {
        // 4k-16k with 8k of room: 4k and 8k, half each (fio draws again).
        let d = SizeDraw::range(&SizeRange {
            min: Bytes(4096),
            max: Bytes(16384),
            write_min: None,
            write_max: None,
            unaligned: false,
        });
        let s = shares(&d, 8192, 100_000);
        assert_eq!(s.keys().copied().collect::<Vec<_>>(), [4096, 8192]);
        assert!((s[&4096] - 0.5).abs() < 0.008, "{s:?}");
    }

    #[test]
    fn sizes_are_drawn_as_fio_draws_them() {
        // 4k-16k: min + max * U rounded down to 4k: 4k, 8k, 12k, 16k a quarter each.
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..40_000 {
            *counts
                .entry(draw_size(4096, 16384, false, rng.next_u64()))
                .or_insert(0u32) += 1;
        }
        assert_eq!(
            counts.keys().copied().collect::<Vec<_>>(),
            [4096, 8192, 12288, 16384]
        );
        assert!(
            counts.values().all(|c| (9_500..10_500).contains(c)),
            "{counts:?}"
        );
        assert!((mean_size(4096, 16384, false) - 10240.0).abs() < 1e-6);
        // 4k-10k: 4k (0.4), 8k (0.4), clamped 10k (0.2).
        assert!(
            (mean_size(4096, 10240, false) - (0.4 * 4096.0 + 0.4 * 8192.0 + 0.2 * 10240.0)).abs()
                < 1e-6
        );
        // Unaligned: any size from min, max taking min / max of the draws.
        let mut odd = 0;
        for _ in 0..1000 {
            let l = draw_size(1024, 4096, true, rng.next_u64());
            assert!((1024..=4096).contains(&l));
            odd += u32::from(!l.is_multiple_of(512));
        }
        assert!(odd > 500, "{odd}");
    }
}
