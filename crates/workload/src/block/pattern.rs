//! fio's I/O pattern options on a block workload, generated as fio 3.33 generates them
//! (io_u.c, backend.c), by a source of its own ([`PatternSource`]) so that plain block
//! workloads keep their generator untouched:
//!
//! - `block-size-range`: each I/O's size drawn as fio's `get_next_buflen` draws it:
//!   `min + max * U` (U uniform in [0, 1)), rounded down to a multiple of `min` (unless
//!   `unaligned`), at most `max`, drawn again until the I/O fits in the region; reads and
//!   writes may have their own range (`write-min`, `write-max`);
//! - `block-size-split`: each I/O's size drawn from weighted sizes, as fio's `bssplit`
//!   ([`super::size_draw`]);
//! - random offsets: multiples of the alignment (the smallest size by default, fio's `ba`),
//!   uniform or from the workload's `distribution` ([`super::distribution`]), drawn before
//!   the size, as fio draws them;
//! - `offset-skip`: sequential I/O with holes (fio's `rw=read:8k`): each I/O starts that many
//!   bytes after the previous one ended;
//! - `random-run`: random I/O with a new random offset only every `ios` I/Os (fio's
//!   `rw=randread:N`), the first I/O random; the ones between continue sequentially from where
//!   the previous ended (`offsets = "sequential"`) or repeat its offset (`"identical"`), as
//!   fio's `rw_sequencer`;
//! - `think-time`: after every `every-ios` reads and writes, the worker lets what is in flight
//!   complete (fio's `io_u_quiesce`), then waits `time` (spinning the first `spin`) before the
//!   next I/O (fio's `thinktime`, `thinktime_blocks`, `thinktime_spin`); with a rate,
//!   `ignore-for-rate` drops the starts that fell in the pause instead of catching up
//!   (`rate_ignore_thinktime`);
//! - `start-delay`: the worker starts that long after its step starts (fio's `startdelay`):
//!   its warm-up and measured window come after the delay, so a time-bounded worker runs
//!   its whole duration (the worker loop holds its start, see `storlab_engine::worker`; this
//!   source gives no delay for it).
//!
//! The source only says how long to wait ([`PatternSource::take_delay_ns`]) and how
//! ([`PatternSource::delay_rule`]); the worker loop holds the next operation. Nothing here
//! allocates per operation.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::distribution::Skewed;
use super::size_draw::{SPLIT_MAX, SizeDraw};
use super::{Access, BlockWorkload, err};
use crate::thread_seed;
use storlab_model::units::{Bytes, Dur};
use storlab_model::{Op, OptionError, Region};

/// What the I/Os between two random offsets do (fio's `rw_sequencer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunOffsets {
    /// Continue from where the previous I/O ended.
    #[default]
    Sequential,
    /// Repeat the previous I/O's offset.
    Identical,
}

/// `random-run = { ios = 8, offsets = "identical" }`: a new random offset every `ios` I/Os.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RandomRun {
    pub ios: u32,
    #[serde(default)]
    pub offsets: RunOffsets,
}

/// `zones = { size = "256MiB", skip = "2GiB" }`: sequential I/O in strided zones (fio's
/// `zonemode=strided`, `zonesize`, `zonerange`, `zoneskip`): `size` bytes are done in a zone
/// of `range` bytes (default `size`; a smaller range is gone over again until `size`), then
/// the next zone starts `range + skip` bytes further, from the start again past the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Zones {
    pub size: Bytes,
    #[serde(default)]
    pub range: Option<Bytes>,
    #[serde(default)]
    pub skip: Option<Bytes>,
}

/// `flow = { id = 0, weight = 8, sleep = "1ms" }`: fio's flow control (`flow_id`, `flow`,
/// `flow_sleep`): the threads of the workloads of a run that share an id keep their
/// operation counts in proportion to their weights; a thread ahead of its share waits
/// `sleep` (default 0: it checks again at once), what it has in flight completing first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Flow {
    #[serde(default)]
    pub id: u32,
    pub weight: u32,
    #[serde(default)]
    pub sleep: Option<Dur>,
}

/// `think-time = { time = "1ms", every-ios = 4, spin = "100us" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ThinkTime {
    pub time: Dur,
    #[serde(default = "one")]
    pub every_ios: u64,
    #[serde(default = "no_time")]
    pub spin: Dur,
    /// With a rate: the starts that fall in the pause are dropped, not caught up.
    #[serde(default)]
    pub ignore_for_rate: bool,
}

fn one() -> u64 {
    1
}
fn no_time() -> Dur {
    Dur(std::time::Duration::ZERO)
}

fn ns(d: Dur) -> u64 {
    d.0.as_nanos().min(u64::MAX as u128) as u64
}

/// Checks the keys of this module on `w`; an error names its key.
pub fn validate(w: &BlockWorkload) -> Result<(), OptionError> {
    if w.flow.is_some_and(|f| f.weight == 0) {
        return Err(err("flow", "flow: weight at least 1"));
    }
    if !w.uses_pattern() {
        return Ok(());
    }
    if w.iometer_model() {
        return Err(err(
            "block-size-range",
            "block-size-range, block-size-split, offset-skip, random-run, think-time and start-delay need storlab's own access model: remove random-share and access-spec",
        ));
    }
    if w.verify {
        return Err(err(
            "verify",
            "verify writes whole blocks of block-size: remove block-size-range, block-size-split, offset-skip, random-run, think-time and start-delay",
        ));
    }
    validate_split(w)?;
    if let Some(r) = &w.block_size_range {
        for (min, max) in r.directions() {
            if min < 512 || max > 64 << 20 || min > max {
                return Err(err(
                    "block-size-range",
                    "block-size-range: min (and write-min) from 512 bytes, at most max (and write-max), max at most 64MiB",
                ));
            }
        }
    }
    if w.offset_skip.is_some() && w.access != Access::Sequential {
        return Err(err(
            "offset-skip",
            "offset-skip makes holes in sequential I/O: set access = \"sequential\"",
        ));
    }
    if let Some(z) = w.zones {
        if w.access != Access::Sequential || w.offset_skip.is_some() || w.offset_back.is_some() {
            return Err(err(
                "zones",
                "zones stride sequential I/O: set access = \"sequential\", without offset-skip or offset-back",
            ));
        }
        if z.size.0 == 0 || z.range.is_some_and(|r| r.0 == 0) {
            return Err(err("zones", "zones: size and range at least 1 byte"));
        }
    }
    if let Some(back) = w.offset_back {
        if w.access != Access::Sequential || w.offset_skip.is_some() {
            return Err(err(
                "offset-back",
                "offset-back steps sequential I/O backwards: set access = \"sequential\" and no offset-skip",
            ));
        }
        if back.0 == 0 {
            return Err(err("offset-back", "offset-back: at least 1 byte"));
        }
    }
    if let Some(r) = w.random_run {
        if w.access != Access::Random {
            return Err(err(
                "random-run",
                "random-run groups random I/Os: set access = \"random\"",
            ));
        }
        if r.ios == 0 {
            return Err(err("random-run.ios", "random-run.ios must be at least 1"));
        }
    }
    if let Some(t) = w.think_time {
        if t.every_ios == 0 {
            return Err(err(
                "think-time.every-ios",
                "think-time.every-ios must be at least 1",
            ));
        }
        if t.spin.0 > t.time.0 {
            return Err(err(
                "think-time.spin",
                "think-time.spin is the part of think-time.time spent spinning: at most time",
            ));
        }
        if t.time.0 > std::time::Duration::from_secs(3600) {
            return Err(err("think-time.time", "think-time.time must be at most 1h"));
        }
    }
    if w.start_delay
        .is_some_and(|d| d.0 > std::time::Duration::from_secs(86400))
    {
        return Err(err("start-delay", "start-delay must be at most 1d"));
    }
    Ok(())
}

/// `block-size-split`'s entries (and `write-block-size-split`'s): 1 to 64 (fio's most),
/// sizes from 512 bytes to 64MiB, percents adding up to 100; not with `block-size-range`.
fn validate_split(w: &BlockWorkload) -> Result<(), OptionError> {
    if w.block_size_split.is_empty() {
        if !w.write_block_size_split.is_empty() {
            return Err(err(
                "write-block-size-split",
                "write-block-size-split needs block-size-split (the reads' sizes)",
            ));
        }
        return Ok(());
    }
    if w.block_size_range.is_some() {
        return Err(err(
            "block-size-split",
            "give either block-size-range or block-size-split, not both",
        ));
    }
    for (key, split) in [
        ("block-size-split", &w.block_size_split),
        ("write-block-size-split", &w.write_block_size_split),
    ] {
        let sizes_ok = split.iter().all(|e| (512..=64 << 20).contains(&e.size.0));
        let total: u64 = split.iter().map(|e| u64::from(e.percent)).sum();
        if split.len() > SPLIT_MAX || !sizes_ok || (total != 100 && !split.is_empty()) {
            return Err(err(
                key,
                format!(
                    "{key}: at most 64 entries, each size from 512 bytes to 64MiB, the percents adding up to 100"
                ),
            ));
        }
    }
    Ok(())
}

/// How the worker waits out a delay the source asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelayRule {
    /// Let what is in flight complete before the wait starts (fio's quiesce).
    pub drain: bool,
    /// Spin, not sleep, the first this many ns of the wait.
    pub spin_ns: u64,
    /// Open loop: drop the intended starts that fall in the wait.
    pub skip_rate: bool,
}

/// Generates one worker's operations with the pattern options.
pub struct PatternSource {
    rng: SmallRng,
    random: bool,
    all_reads: bool,
    read_threshold: u64,
    /// How sizes are drawn.
    draw: SizeDraw,
    align: u64,
    /// Random offsets from a skewed distribution (else uniform).
    skewed: Option<Box<Skewed>>,
    /// The thread's span: `base..end`.
    base: u64,
    end: u64,
    /// Random offsets: `base + p * align`, p below this.
    positions: u64,
    /// Where the next sequential I/O starts, and the previous I/O's offset.
    cursor: u64,
    last_offset: u64,
    skip: u64,
    /// `offset-back`: bytes before the previous I/O's end (0: forwards).
    back: u64,
    /// `zones`: bytes per zone (0: none), the zone's range, range + skip, where the current
    /// zone starts and the bytes done in it.
    zone_size: u64,
    zone_range: u64,
    zone_stride: u64,
    zone_start: u64,
    zone_bytes: u64,
    run_ios: u32,
    run_left: u32,
    identical: bool,
    fsync_every: u64,
    writes_since_fsync: u64,
    think_every: u64,
    think_ns: u64,
    since_think: u64,
    pending_delay_ns: u64,
    think_rule: DelayRule,
}

impl PatternSource {
    /// The source of thread `thread` of a run seeded `run_seed`.
    pub fn new(w: &BlockWorkload, region: Region, thread: u32, run_seed: u64) -> PatternSource {
        let draw = SizeDraw::of(w);
        let smallest = draw.smallest();
        let align = draw.align;
        let random = w.access == Access::Random;
        let (base, span) = if random {
            (region.offset_bytes, region.size_bytes)
        } else {
            // Each thread streams through its own slice, as the plain block source.
            let slice = (region.size_bytes / w.threads.max(1) as u64).max(smallest);
            let start = region.offset_bytes + (thread as u64 * slice) % region.size_bytes.max(1);
            (
                start,
                slice.min(region.offset_bytes + region.size_bytes - start),
            )
        };
        let positions = if span >= smallest {
            (span - smallest) / align + 1
        } else {
            1
        };
        let think = w.think_time;
        let mut rng = SmallRng::seed_from_u64(thread_seed(run_seed, thread));
        let skewed = if random {
            Skewed::new(&w.distribution, positions, align, &mut rng).map(Box::new)
        } else {
            None
        };
        PatternSource {
            rng,
            random,
            all_reads: w.read_share >= 1.0,
            read_threshold: (w.read_share * u64::MAX as f64) as u64,
            draw,
            align,
            skewed,
            base,
            end: base + span.max(smallest),
            positions,
            cursor: base,
            last_offset: base,
            skip: w.offset_skip.map_or(0, |s| s.0),
            back: w.offset_back.map_or(0, |s| s.0),
            zone_size: w.zones.map_or(0, |z| z.size.0),
            zone_range: w.zones.map_or(0, |z| z.range.unwrap_or(z.size).0),
            zone_stride: w.zones.map_or(0, |z| {
                z.range.unwrap_or(z.size).0 + z.skip.map_or(0, |s| s.0)
            }),
            zone_start: base,
            zone_bytes: 0,
            run_ios: w.random_run.map_or(1, |r| r.ios),
            // fio starts its countdown at 1: the first I/O is random.
            run_left: 1,
            identical: w
                .random_run
                .is_some_and(|r| r.offsets == RunOffsets::Identical),
            fsync_every: if w.writes() { w.fsync_every } else { 0 },
            writes_since_fsync: 0,
            think_every: think.map_or(0, |t| t.every_ios),
            think_ns: think.map_or(0, |t| ns(t.time)),
            since_think: 0,
            pending_delay_ns: 0,
            think_rule: think.map_or(DelayRule::default(), |t| DelayRule {
                drain: true,
                spin_ns: ns(t.spin),
                skip_rate: t.ignore_for_rate,
            }),
        }
    }

    /// A size of direction `write` that fits from `offset` (fio's `io_u_fits`), or None.
    #[inline]
    fn fitting_len(&mut self, offset: u64, write: bool) -> Option<u64> {
        let room = self.end.saturating_sub(offset);
        let rng = &mut self.rng;
        self.draw.fitting(write, room, || rng.next_u64())
    }

    #[inline]
    fn random_offset(&mut self) -> u64 {
        let p = match self.skewed.as_deref_mut() {
            Some(s) => s.position(&mut self.rng),
            None => ((self.rng.next_u64() as u128 * self.positions as u128) >> 64) as u64,
        };
        self.base + p * self.align
    }

    /// The next operation.
    #[inline]
    pub fn next_op(&mut self) -> Op {
        if self.fsync_every > 0 && self.writes_since_fsync >= self.fsync_every {
            self.writes_since_fsync = 0;
            return Op::Fsync;
        }
        if self.think_every > 0 && self.since_think >= self.think_every {
            self.since_think = 0;
            self.pending_delay_ns = self.think_ns;
        }
        self.since_think += 1;
        let write = !(self.all_reads || self.rng.next_u64() < self.read_threshold);
        let (offset, len) = self.place(write);
        self.zone_bytes += len;
        self.last_offset = offset;
        self.cursor = offset + len;
        if write {
            self.writes_since_fsync += 1;
            Op::Write { offset, len }
        } else {
            Op::Read { offset, len }
        }
    }

    /// Offset and size of the next I/O of direction `write`.
    #[inline]
    fn place(&mut self, write: bool) -> (u64, u64) {
        if self.random {
            self.run_left -= 1;
            if self.run_left > 0 {
                let at = if self.identical {
                    self.last_offset
                } else {
                    self.cursor
                };
                if let Some(len) = self.fitting_len(at, write) {
                    return (at, len);
                }
                // fio falls back to a random offset when the run cannot continue, and keeps
                // counting down its run.
            } else {
                self.run_left = self.run_ios;
            }
            loop {
                let at = self.random_offset();
                if let Some(len) = self.fitting_len(at, write) {
                    return (at, len);
                }
            }
        }
        if self.zone_size > 0 {
            self.enter_zone();
        }
        // Sequential: from where the previous I/O ended, plus the hole after the first;
        // backwards, that many bytes before it, and below the start from before the end
        // (fio's get_next_seq_offset: 0, then end - back, end - back - (back - bs), ...).
        let at = if self.cursor == self.base {
            self.base
        } else if self.back > 0 {
            match self.cursor.checked_sub(self.back) {
                Some(at) if at >= self.base => at,
                _ => self.end.saturating_sub(self.back).max(self.base),
            }
        } else {
            self.cursor + self.skip
        };
        if let Some(len) = self.fitting_len(at, write) {
            return (at, len);
        }
        // Past the end: the slice starts again (a new pass).
        let len = self
            .fitting_len(self.base, write)
            .unwrap_or(self.draw.min(write));
        (self.base, len)
    }

    /// fio's strided zones (`setup_strided_zone_mode`): once a zone's bytes are done, the next
    /// zone `range + skip` further (from the start when that is past the end); within a zone,
    /// back to its start past its range.
    #[inline]
    fn enter_zone(&mut self) {
        if self.zone_bytes >= self.zone_size {
            self.zone_bytes = 0;
            self.zone_start += self.zone_stride;
            if self.zone_start >= self.end {
                self.zone_start = self.base;
            }
            self.cursor = self.zone_start;
        }
        if self.cursor >= self.zone_start + self.zone_range {
            self.cursor = self.zone_start;
        }
    }

    /// How long the worker issues nothing before the operation just returned, ns; taking it
    /// clears it.
    #[inline]
    pub fn take_delay_ns(&mut self) -> u64 {
        std::mem::take(&mut self.pending_delay_ns)
    }

    /// How to wait out the delay [`PatternSource::take_delay_ns`] just gave.
    pub fn delay_rule(&self) -> DelayRule {
        self.think_rule
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Result<BlockWorkload, OptionError> {
        BlockWorkload::from_table(toml::from_str(text).unwrap())
    }

    const REGION: Region = Region {
        offset_bytes: 0,
        size_bytes: 64 << 10,
    };

    fn parts(op: Op) -> (u64, u32, bool) {
        match op {
            Op::Read { offset, len } => (offset, len as u32, true),
            Op::Write { offset, len } => (offset, len as u32, false),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn strided_zones_are_fios() {
        let offsets = |text: &str, n: usize| -> Vec<u64> {
            let w = workload(&format!(
                "access = \"sequential\"\nblock-size = \"4KiB\"\n{text}"
            ))
            .unwrap();
            let region = Region {
                offset_bytes: 0,
                size_bytes: 128 << 10,
            };
            let mut s = PatternSource::new(&w, region, 0, 1);
            (0..n).map(|_| parts(s.next_op()).0 >> 10).collect()
        };
        // fio 3.33 write_iolog, size=128k, zonemode=strided, zonesize=16k, zoneskip=32k.
        assert_eq!(
            offsets("zones = { size = \"16KiB\", skip = \"32KiB\" }", 16),
            [0, 4, 8, 12, 48, 52, 56, 60, 96, 100, 104, 108, 0, 4, 8, 12]
        );
        // zonerange=8k below zonesize: each zone gone over twice.
        assert_eq!(
            offsets(
                "zones = { size = \"16KiB\", range = \"8KiB\", skip = \"32KiB\" }",
                16
            ),
            [
                0, 4, 0, 4, 40, 44, 40, 44, 80, 84, 80, 84, 120, 124, 120, 124
            ]
        );
        let bad = workload("access = \"random\"\nzones = { size = \"16KiB\" }").unwrap_err();
        assert_eq!(bad.key, "zones");
    }

    #[test]
    fn backwards_sequential_steps_back_and_wraps_to_the_end() {
        let w = workload("access = \"sequential\"\noffset-back = \"8KiB\"\nblock-size = \"4KiB\"")
            .unwrap();
        let mut s = PatternSource::new(&w, REGION, 0, 1);
        let offs: Vec<u64> = (0..17).map(|_| parts(s.next_op()).0 >> 12).collect();
        // fio 3.33 write_iolog of rw=read:-8k, bs=4k, size=64k: 0, 56k, 52k, ..., 4k, 0,
        // then from 56k again.
        assert_eq!(
            offs,
            [0, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 14]
        );
        let bad = workload("access = \"random\"\noffset-back = \"8KiB\"").unwrap_err();
        assert_eq!(bad.key, "offset-back");
    }

    #[test]
    fn sequential_holes_and_ranges_follow_the_previous_io() {
        let w = workload("access = \"sequential\"\noffset-skip = \"8KiB\"\nblock-size = \"4KiB\"")
            .unwrap();
        let mut s = PatternSource::new(&w, REGION, 0, 1);
        let offs: Vec<u64> = (0..7).map(|_| parts(s.next_op()).0).collect();
        // fio 3.33 write_iolog of rw=read:8k, size=64k: 0 12k 24k 36k 48k 60k, then again.
        assert_eq!(offs, [0, 12288, 24576, 36864, 49152, 61440, 0]);
        let w = workload(
            "access = \"sequential\"\nblock-size-range = { min = \"4KiB\", max = \"16KiB\" }",
        )
        .unwrap();
        assert_eq!(w.block_size.0, 16384, "buffers for the largest");
        let mut s = PatternSource::new(&w, REGION, 0, 1);
        let mut next = 0;
        for _ in 0..100 {
            let (o, l, _) = parts(s.next_op());
            if o != 0 {
                assert_eq!(o, next);
            }
            assert!(o + l as u64 <= 64 << 10 && l % 4096 == 0);
            next = o + l as u64;
        }
    }

    #[test]
    fn random_runs_repeat_or_continue_as_fios_sequencer() {
        let w = workload("random-run = { ios = 3, offsets = \"identical\" }").unwrap();
        let mut s = PatternSource::new(&w, REGION, 0, 1);
        let o: Vec<u64> = (0..9).map(|_| parts(s.next_op()).0).collect();
        for run in o.chunks(3) {
            assert!(run.iter().all(|x| *x == run[0]), "{o:?}");
        }
        let w = workload("random-run = { ios = 3 }").unwrap();
        let mut s = PatternSource::new(&w, REGION, 0, 1);
        let o: Vec<u64> = (0..9).map(|_| parts(s.next_op()).0).collect();
        for run in o.chunks(3) {
            for k in 1..3 {
                // Continues from the previous end, or falls back to random at the end.
                assert!(
                    run[k] == run[k - 1] + 4096 || run[k - 1] + 4096 > 60 << 10,
                    "{o:?}"
                );
            }
        }
    }

    #[test]
    fn think_time_comes_after_every_n_ios_and_the_start_delay_is_not_the_sources() {
        let w = workload(
            "read-share = 0.0\nfsync-every = 2\nstart-delay = \"2ms\"\nthink-time = { time = \"1ms\", every-ios = 2, spin = \"10us\" }",
        )
        .unwrap();
        let mut s = PatternSource::new(&w, REGION, 0, 1);
        let mut seen = Vec::new();
        for _ in 0..8 {
            let op = s.next_op();
            let d = s.take_delay_ns();
            seen.push((op.kind().name().to_string(), d, s.delay_rule()));
        }
        let delays: Vec<u64> = seen.iter().map(|x| x.1).collect();
        // w w f w w f w w: a think before the 3rd and 5th write; the start delay is the
        // worker loop's (its window starts after it), not a delay before the first I/O.
        assert_eq!(delays, [0, 0, 0, 1_000_000, 0, 0, 1_000_000, 0]);
        assert_eq!(
            seen[3].2,
            DelayRule {
                drain: true,
                spin_ns: 10_000,
                skip_rate: false
            }
        );
        assert_eq!(seen[2].0, "fsync");
    }

    #[test]
    fn bad_values_name_their_key() {
        let key = |t: &str| workload(t).unwrap_err().key;
        assert_eq!(
            key("block-size-range = { min = \"8KiB\", max = \"4KiB\" }"),
            "block-size-range"
        );
        assert_eq!(key("offset-skip = \"4KiB\""), "offset-skip");
        assert_eq!(
            key("access = \"sequential\"\nrandom-run = { ios = 2 }"),
            "random-run"
        );
        assert_eq!(key("random-run = { ios = 0 }"), "random-run.ios");
        assert_eq!(
            key("think-time = { time = \"1ms\", spin = \"2ms\" }"),
            "think-time.spin"
        );
        assert_eq!(
            key("think-time = { time = \"1ms\", every-ios = 0 }"),
            "think-time.every-ios"
        );
        assert_eq!(
            key("read-share = 0.5\nverify = true\nstart-delay = \"1s\""),
            "verify"
        );
    }
}
