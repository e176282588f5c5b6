//! IOmeter's access specifications in block workloads (IOmeter's IOAccess.cpp and
//! IOGrunt.cpp): a list of lines, each with its share of the specification, transfer size,
//! read share, random share, alignment, burst length and delay before each burst
//! ([`AccessSpecLine`]), and the per-worker generator that turns them into [`Op`]s the way
//! IOmeter's worker (its "grunt") does ([`AccessSpecSource`]):
//!
//! - a line is chosen per burst, by its `spec-share`; then `burst-ios` I/Os follow from it;
//! - each I/O is a read or a write, and random or sequential, drawn with the line's shares;
//! - a random I/O goes to a uniformly drawn position that is a multiple of the line's
//!   alignment and holds the whole transfer inside the region (IOmeter draws a byte offset,
//!   rounds it up to the alignment and wraps to the start past the end, which gives the first
//!   position a little more weight: the transfer size over the region's size);
//! - a sequential I/O continues where this worker's previous I/O on the target ended (random
//!   or not), rounded up to the line's alignment, and wraps to the start of the region when
//!   the transfer would pass its end. Every worker starts at the region's start and keeps its
//!   own position, as each IOmeter worker keeps its own offset per target;
//! - before each burst whose line has a `burst-delay`, the worker issues nothing for that long
//!   while the I/Os in flight complete and are recorded (IOmeter's `Asynchronous_Delay`).
//!   The source only says how long ([`AccessSpecSource::take_delay_ns`]); the worker loop
//!   holds the next operation.
//!
//! A plain block workload that gives `random-share` uses the same generator with one line.
//! IOmeter's default alignment is the sector: [`SECTOR_BYTES`]. Its reply size (network
//! targets) has no equivalent here. Nothing here allocates per operation.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::err;
use storlab_model::units::{Bytes, Dur};
use storlab_model::{Op, OptionError, Region};

/// IOmeter's default alignment ("sector boundaries"), on disks of 512-byte sectors. A 4Kn
/// device opened with O_DIRECT needs `alignment = "4KiB"`.
pub const SECTOR_BYTES: u64 = 512;

/// IOmeter's limit on lines in one access specification.
pub const MAX_LINES: usize = 100;

/// One line of an access specification, as `[[workloads.NAME.access-spec]]` gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AccessSpecLine {
    /// IOmeter's "% of access specification", as a fraction; the lines' shares add up to 1.
    #[serde(default = "one")]
    pub spec_share: f64,
    /// Transfer size.
    pub block_size: Bytes,
    /// Fraction of I/Os that are reads ("% read").
    #[serde(default = "one")]
    pub read_share: f64,
    /// Fraction of I/Os at random offsets ("% random"); the others are sequential.
    #[serde(default = "one")]
    pub random_share: f64,
    /// Offsets are multiples of this (default: [`SECTOR_BYTES`], IOmeter's sector boundaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment: Option<Bytes>,
    /// I/Os per burst ("burst length").
    #[serde(default = "one_u32")]
    pub burst_ios: u32,
    /// Time the worker issues nothing before each burst ("delay", IOmeter: ms).
    #[serde(default = "no_delay")]
    pub burst_delay: Dur,
}

fn one() -> f64 {
    1.0
}
fn one_u32() -> u32 {
    1
}
/// No delay between bursts.
pub fn no_delay() -> Dur {
    Dur(std::time::Duration::ZERO)
}

impl AccessSpecLine {
    pub fn alignment_bytes(&self) -> u64 {
        self.alignment.map_or(SECTOR_BYTES, |a| a.0)
    }
}

/// Checks the lines of an access specification; an error names `access-spec[N].KEY`
/// (N from 1, in the order written).
pub fn validate(lines: &[AccessSpecLine]) -> Result<(), OptionError> {
    if lines.is_empty() {
        return Err(err("access-spec", "an access-spec needs at least one line"));
    }
    if lines.len() > MAX_LINES {
        return Err(err(
            "access-spec",
            format!(
                "an access-spec has at most {MAX_LINES} lines (IOmeter's limit); this one has {}",
                lines.len()
            ),
        ));
    }
    for (i, l) in lines.iter().enumerate() {
        let key = |k: &str| format!("access-spec[{}].{k}", i + 1);
        for (name, share) in [
            ("spec-share", l.spec_share),
            ("read-share", l.read_share),
            ("random-share", l.random_share),
        ] {
            if !(0.0..=1.0).contains(&share) {
                return Err(err(
                    &key(name),
                    format!("{name} is a fraction from 0.0 to 1.0 (got {share})"),
                ));
            }
        }
        if l.block_size.0 < 512 || l.block_size.0 > 64 << 20 {
            return Err(err(
                &key("block-size"),
                "block-size must be from 512 bytes to 64MiB",
            ));
        }
        if l.alignment_bytes() == 0 {
            return Err(err(&key("alignment"), "alignment must be above 0"));
        }
        if l.burst_ios == 0 {
            return Err(err(&key("burst-ios"), "burst-ios must be at least 1"));
        }
        if l.burst_delay.0 > std::time::Duration::from_secs(3600) {
            return Err(err(&key("burst-delay"), "burst-delay must be at most 1h"));
        }
    }
    let sum: f64 = lines.iter().map(|l| l.spec_share).sum();
    if (sum - 1.0).abs() > 1e-9 {
        let shares: Vec<String> = lines.iter().map(|l| l.spec_share.to_string()).collect();
        return Err(err(
            "access-spec",
            format!(
                "the lines' spec-share must add up to 1.0; they add up to {} ({})",
                (sum * 1e9).round() / 1e9,
                shares.join(" + ")
            ),
        ));
    }
    Ok(())
}

/// The threshold a uniform u64 must stay below to fall within `share` (1.0: always).
fn threshold(share: f64) -> u64 {
    if share >= 1.0 {
        u64::MAX
    } else {
        (share * u64::MAX as f64) as u64
    }
}

#[inline]
fn hit(draw: u64, threshold: u64) -> bool {
    threshold == u64::MAX || draw < threshold
}

/// `x` rounded up to a multiple of `align`.
#[inline]
fn align_up(x: u64, align: u64) -> u64 {
    if align.is_power_of_two() {
        (x + align - 1) & !(align - 1)
    } else {
        x.div_ceil(align) * align
    }
}

/// One line, ready for drawing.
#[derive(Debug, Clone, Copy)]
struct Line {
    /// A burst draw below this (and not below the previous line's) picks the line.
    upto: u64,
    len: u32,
    align: u64,
    /// The first aligned offset in the region.
    first: u64,
    /// Aligned positions that hold the whole transfer inside the region.
    positions: u64,
    read_below: u64,
    random_below: u64,
    burst: u32,
    delay_ns: u64,
}

/// Generates one worker's operations from an access specification (see the module doc).
pub struct AccessSpecSource {
    rng: SmallRng,
    lines: Box<[Line]>,
    region_end: u64,
    /// Where this worker's previous I/O ended: a sequential I/O starts here.
    next_sequential: u64,
    line: usize,
    burst_left: u32,
    /// The delay before the burst the last operation began, not yet taken by the worker.
    pending_delay_ns: u64,
    fsync_every: u64,
    writes_since_fsync: u64,
}

impl AccessSpecSource {
    /// The source of one worker on `region`, drawing from `seed`. Lines are laid out here, once.
    pub fn new(lines: &[AccessSpecLine], region: Region, seed: u64, fsync_every: u64) -> Self {
        let start = region.offset_bytes;
        let end = region.offset_bytes + region.size_bytes;
        let mut cumulative = 0.0;
        let last = lines.len().saturating_sub(1);
        let laid_out: Vec<Line> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                cumulative += l.spec_share;
                let len = l.block_size.0;
                let align = l.alignment_bytes().max(1);
                let first = align_up(start, align);
                let positions = if first + len <= end {
                    (end - len - first) / align + 1
                } else {
                    1
                };
                Line {
                    upto: if i == last {
                        u64::MAX
                    } else {
                        threshold(cumulative)
                    },
                    len: len as u32,
                    align,
                    first,
                    positions,
                    read_below: threshold(l.read_share),
                    random_below: threshold(l.random_share),
                    burst: l.burst_ios.max(1),
                    delay_ns: l.burst_delay.0.as_nanos().min(u64::MAX as u128) as u64,
                }
            })
            .collect();
        let writes = lines.iter().any(|l| l.read_share < 1.0);
        AccessSpecSource {
            rng: SmallRng::seed_from_u64(seed),
            lines: laid_out.into_boxed_slice(),
            region_end: end,
            next_sequential: start,
            line: 0,
            burst_left: 0,
            pending_delay_ns: 0,
            fsync_every: if writes { fsync_every } else { 0 },
            writes_since_fsync: 0,
        }
    }

    /// The next operation.
    #[inline]
    pub fn next_op(&mut self) -> Op {
        if self.fsync_every > 0 && self.writes_since_fsync >= self.fsync_every {
            self.writes_since_fsync = 0;
            return Op::Fsync;
        }
        if self.burst_left == 0 {
            let draw = self.rng.next_u64();
            // The last line's bound is u64::MAX: the search always ends on a line.
            self.line = self
                .lines
                .iter()
                .position(|l| draw < l.upto || l.upto == u64::MAX)
                .unwrap_or(0);
            let l = &self.lines[self.line];
            self.burst_left = l.burst;
            self.pending_delay_ns = l.delay_ns;
        }
        self.burst_left -= 1;
        let l = self.lines[self.line];
        let random = hit(self.rng.next_u64(), l.random_below);
        let offset = if random {
            // Multiply-shift maps 64 random bits onto [0, positions) without a division.
            let p = ((self.rng.next_u64() as u128 * l.positions as u128) >> 64) as u64;
            l.first + p * l.align
        } else {
            let o = align_up(self.next_sequential, l.align);
            if o + l.len as u64 > self.region_end {
                l.first
            } else {
                o
            }
        };
        self.next_sequential = offset + l.len as u64;
        if hit(self.rng.next_u64(), l.read_below) {
            Op::Read {
                offset,
                len: u64::from(l.len),
            }
        } else {
            self.writes_since_fsync += 1;
            Op::Write {
                offset,
                len: u64::from(l.len),
            }
        }
    }

    /// How long the worker must issue nothing before the operation `next_op` just returned
    /// (the first of a burst whose line has a delay), ns; 0 otherwise. Taking it clears it.
    #[inline]
    pub fn take_delay_ns(&mut self) -> u64 {
        std::mem::take(&mut self.pending_delay_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<AccessSpecLine> {
        #[derive(Deserialize)]
        #[serde(rename_all = "kebab-case")]
        struct T {
            access_spec: Vec<AccessSpecLine>,
        }
        toml::from_str::<T>(text).expect("lines").access_spec
    }

    const REGION: Region = Region {
        offset_bytes: 0,
        size_bytes: 64 << 20,
    };

    fn op_parts(op: Op) -> (u64, u32, bool) {
        match op {
            Op::Read { offset, len } => (offset, len as u32, true),
            Op::Write { offset, len } => (offset, len as u32, false),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn lines_are_chosen_by_their_share_and_shares_drawn_per_io() {
        let l = lines(
            "[[access-spec]]\nspec-share = 0.25\nblock-size = \"4KiB\"\nread-share = 1.0\n\
             [[access-spec]]\nspec-share = 0.75\nblock-size = \"64KiB\"\nread-share = 0.5\n",
        );
        validate(&l).unwrap();
        let mut s = AccessSpecSource::new(&l, REGION, 7, 0);
        let (mut small, mut big, mut big_reads) = (0u32, 0u32, 0u32);
        for _ in 0..100_000 {
            let (offset, len, read) = op_parts(s.next_op());
            assert!(offset + len as u64 <= 64 << 20);
            assert_eq!(offset % 512, 0, "sector aligned by default");
            match len {
                4096 => {
                    small += 1;
                    assert!(read, "the 4 KiB line reads only");
                }
                65536 => {
                    big += 1;
                    big_reads += read as u32;
                }
                other => panic!("transfer of {other} bytes"),
            }
            assert_eq!(s.take_delay_ns(), 0);
        }
        let small_share = small as f64 / 100_000.0;
        assert!(
            (small_share - 0.25).abs() < 0.01,
            "4 KiB share {small_share}"
        );
        let read_share = big_reads as f64 / big as f64;
        assert!(
            (read_share - 0.5).abs() < 0.01,
            "64 KiB read share {read_share}"
        );
    }

    #[test]
    fn sequential_io_continues_from_this_workers_last_position() {
        let l = lines(
            "[[access-spec]]\nblock-size = \"8KiB\"\nrandom-share = 0.0\nalignment = \"4KiB\"\n",
        );
        let region = Region {
            offset_bytes: 4096,
            size_bytes: 40 << 10,
        };
        // Two workers sharing the target keep their own positions: both start at the
        // region's start and go on from where each one's previous I/O ended.
        let mut a = AccessSpecSource::new(&l, region, 1, 0);
        let mut b = AccessSpecSource::new(&l, region, 2, 0);
        let offs = |s: &mut AccessSpecSource, n: usize| -> Vec<u64> {
            (0..n).map(|_| op_parts(s.next_op()).0).collect()
        };
        let first = offs(&mut a, 3);
        assert_eq!(first, vec![4096, 12288, 20480]);
        assert_eq!(offs(&mut b, 1), vec![4096]);
        // 28672 + 8192 = 36864 fits; the next would pass the region's end (45056): wrap.
        assert_eq!(offs(&mut a, 3), vec![28672, 36864, 4096]);
        assert_eq!(offs(&mut b, 1), vec![12288]);
    }

    #[test]
    fn a_sequential_io_follows_a_random_one() {
        let l = lines("[[access-spec]]\nblock-size = \"4KiB\"\nrandom-share = 0.5\n");
        let mut s = AccessSpecSource::new(&l, REGION, 3, 0);
        let mut last_end = 0u64;
        let (mut continued, mut jumped) = (0, 0);
        for _ in 0..10_000 {
            let (offset, len, _) = op_parts(s.next_op());
            if offset == last_end {
                continued += 1;
            } else {
                jumped += 1;
            }
            last_end = offset + len as u64;
        }
        // Half sequential (each continuing the previous I/O, random or not), half random.
        assert!(
            (4_500..5_600).contains(&continued),
            "{continued} / {jumped}"
        );
    }

    #[test]
    fn bursts_keep_their_line_and_ask_for_the_delay_before_each() {
        let l = lines(
            "[[access-spec]]\nspec-share = 0.5\nblock-size = \"4KiB\"\nburst-ios = 4\nburst-delay = \"3ms\"\n\
             [[access-spec]]\nspec-share = 0.5\nblock-size = \"8KiB\"\nburst-ios = 2\n",
        );
        validate(&l).unwrap();
        let mut s = AccessSpecSource::new(&l, REGION, 11, 0);
        let mut i = 0;
        let mut bursts = [0u32; 2];
        while i < 2_000 {
            let (_, len, _) = op_parts(s.next_op());
            let delay = s.take_delay_ns();
            i += 1;
            // The first I/O of a burst carries its line's delay; the rest of the burst
            // comes from the same line without one.
            let (n, want_delay) = if len == 4096 { (4, 3_000_000) } else { (2, 0) };
            assert_eq!(delay, want_delay, "first of a {len}-byte burst");
            bursts[(len == 8192) as usize] += 1;
            for _ in 1..n {
                let (_, l2, _) = op_parts(s.next_op());
                assert_eq!(l2, len, "a burst stays on its line");
                assert_eq!(s.take_delay_ns(), 0);
                i += 1;
            }
        }
        let share = bursts[0] as f64 / (bursts[0] + bursts[1]) as f64;
        assert!((share - 0.5).abs() < 0.06, "bursts of line 1: {share}");
    }

    #[test]
    fn fsync_follows_every_n_writes() {
        let l = lines("[[access-spec]]\nblock-size = \"4KiB\"\nread-share = 0.0\n");
        let mut s = AccessSpecSource::new(&l, REGION, 1, 2);
        let kinds: Vec<bool> = (0..6).map(|_| s.next_op() == Op::Fsync).collect();
        assert_eq!(kinds, vec![false, false, true, false, false, true]);
    }

    #[test]
    fn bad_lines_name_their_key() {
        let e = validate(&lines(
            "[[access-spec]]\nspec-share = 0.5\nblock-size = \"4KiB\"\n\
             [[access-spec]]\nspec-share = 0.4\nblock-size = \"4KiB\"\n",
        ))
        .unwrap_err();
        assert_eq!(e.key, "access-spec");
        assert!(e.message.contains("0.5 + 0.4"), "{}", e.message);
        let e = validate(&lines(
            "[[access-spec]]\nspec-share = 0.5\nblock-size = \"4KiB\"\n\
             [[access-spec]]\nspec-share = 0.5\nblock-size = \"4KiB\"\nread-share = 67\n",
        ))
        .unwrap_err();
        assert_eq!(e.key, "access-spec[2].read-share");
        let e = validate(&lines(
            "[[access-spec]]\nblock-size = \"4KiB\"\nburst-ios = 0\n",
        ))
        .unwrap_err();
        assert_eq!(e.key, "access-spec[1].burst-ios");
    }
}
