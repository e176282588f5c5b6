//! What written blocks hold when a block workload gives `write-buffers`: fio 3.33's buffer
//! contents, by fio's own algorithms, so that arrays that compress or deduplicate see the data
//! fio would write (`buffer_compress_percentage`, `buffer_compress_chunk`, `buffer_pattern`,
//! `zero_buffers`, `refill_buffers`, `scramble_buffers`, `dedupe_percentage`).
//!
//! fio's `fill_io_buffer` (io_u.c) and `__fill_random_buf_percentage` (lib/rand.c): with a
//! compress or dedupe percentage, a block is filled chunk by chunk (`compress-chunk` bytes,
//! fio's default 512; 0: the whole write), each chunk from its own seed: its first
//! (100 - P)% random bytes, the rest zero (or the pattern repeated). The random bytes are
//! fio's: 4 seed buckets (`seed * prime`), each a chain of multiplications by the 64-bit
//! golden ratio (`__fill_random_buf`), from seeds made as fio makes them (the product of two draws of its default
//! 32-bit tausworthe generator). With `dedupe-percentage` D, each block reuses the previous block's seed stream
//! with probability D% (fio's `get_buf_state`, "repeat" mode): the block repeats another.
//! With a `dedupe-working-set`, a repeated block is a page of it instead ([`crate::working_set`]).
//! Without either, a block is the pattern repeated, zeros, or random bytes from one seed.
//! `refill`: every write is filled afresh; else the buffers are filled once and, with
//! `scramble`, each write has its offset and the time written into every 512-byte sector
//! (fio's `small_content_scramble`). Filling never allocates: [`BufferFiller`] writes into the
//! session's own buffers.

use serde::{Deserialize, Serialize};

use crate::stream::Stream;
use storlab_model::OptionError;
use storlab_model::units::Bytes;

/// The contents of written blocks, as fio's buffer options make them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WriteBuffers {
    /// Percent of each chunk that is zero or the pattern (fio's
    /// `buffer_compress_percentage`), 0 to 99.
    #[serde(default)]
    pub compress_percentage: u32,
    /// Bytes per chunk (fio's `buffer_compress_chunk`, default 512); 0: the whole write.
    #[serde(default = "default_chunk")]
    pub compress_chunk: Bytes,
    /// Percent of blocks that repeat an earlier one (fio's `dedupe_percentage`), 0 to 100.
    #[serde(default)]
    pub dedupe_percentage: u32,
    /// Bytes repeated instead of zeros (fio's `buffer_pattern`), at most 512.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pattern: Vec<u8>,
    /// Without a percentage or pattern: blocks of zeros (fio's `zero_buffers`).
    #[serde(default)]
    pub zero: bool,
    /// Every write filled afresh (fio's `refill_buffers`).
    #[serde(default)]
    pub refill: bool,
    /// Without `refill`: each write's offset and time in each 512-byte sector (fio's
    /// `scramble_buffers` when fio would scramble).
    #[serde(default)]
    pub scramble: bool,
    /// With `dedupe-percentage`: a repeated block is a page of this working set, not the
    /// previous block (fio's `dedupe_mode=working_set`; see [`crate::working_set`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_working_set: Option<crate::working_set::WorkingSet>,
}

fn default_chunk() -> Bytes {
    Bytes(512)
}

impl WriteBuffers {
    pub fn validate(&self) -> Result<(), OptionError> {
        let err = |key: &str, m: &str| OptionError {
            key: format!("write-buffers.{key}"),
            message: m.into(),
        };
        if self.compress_percentage > 99 {
            return Err(err(
                "compress-percentage",
                "from 0 to 99 (100 is zero = true)",
            ));
        }
        if self.dedupe_percentage > 100 {
            return Err(err("dedupe-percentage", "from 0 to 100"));
        }
        if self.pattern.len() > 512 {
            return Err(err("pattern", "at most 512 bytes (fio's limit)"));
        }
        if self.compress_chunk.0 > u32::MAX as u64 {
            return Err(err("compress-chunk", "at most 4 GiB"));
        }
        if let Some(ws) = self.dedupe_working_set {
            if !(1..=100).contains(&ws.percent) {
                return Err(err("dedupe-working-set", "percent from 1 to 100"));
            }
            if self.dedupe_percentage == 0 {
                return Err(err(
                    "dedupe-working-set",
                    "needs a dedupe-percentage (the share of blocks drawn from it)",
                ));
            }
        }
        Ok(())
    }

    /// Chunk by chunk from seeds: a compress or dedupe percentage is given.
    fn chunked(&self) -> bool {
        self.compress_percentage > 0 || self.dedupe_percentage > 0
    }
}

/// fio's 64-bit golden ratio (hash.h `__hash_u64`).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's default `CONFIG_SEED_BUCKETS`.
const SEED_BUCKETS: usize = 4;
const PRIMES: [u64; SEED_BUCKETS] = [1, 2, 3, 5];

/// fio's `__fill_random_buf`: buckets of 8-byte words, each bucket a multiplication chain.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut s = PRIMES.map(|p| seed.wrapping_mul(p));
    let whole = buf.len() / 8 / SEED_BUCKETS * SEED_BUCKETS * 8;
    let (body, rest) = buf.split_at_mut(whole);
    for group in body.chunks_exact_mut(8 * SEED_BUCKETS) {
        for (word, si) in group.chunks_exact_mut(8).zip(s.iter_mut()) {
            word.copy_from_slice(&si.to_ne_bytes());
            *si = si.wrapping_mul(GOLDEN_RATIO_64);
        }
    }
    // fio's `__fill_random_buf_small` from the first bucket's seed.
    let mut seed = s[0];
    let mut words = rest.chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&seed.to_ne_bytes());
        seed = seed.wrapping_mul(GOLDEN_RATIO_64);
    }
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&seed.to_ne_bytes()[..n]);
}

/// fio's `cpy_pattern`: `pattern` repeated from the start of `buf` (zeros without one).
pub fn fill_pattern(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        buf.fill(0);
        return;
    }
    for piece in buf.chunks_mut(pattern.len()) {
        piece.copy_from_slice(&pattern[..piece.len()]);
    }
}

/// fio's `__fill_random_buf_percentage` of one segment as long as `buf`: (100 - P)% random
/// from `seed`, the rest the pattern (or zeros).
pub fn fill_percentage(buf: &mut [u8], seed: u64, percentage: u32, pattern: &[u8]) {
    if percentage >= 100 {
        fill_pattern(buf, pattern);
        return;
    }
    let random = (buf.len() as u64 * u64::from(100 - percentage) / 100) as usize;
    let (r, p) = buf.split_at_mut(random);
    fill_random(r, seed);
    fill_pattern(p, pattern);
}

/// One session's filler of written blocks.
#[derive(Debug, Clone)]
pub struct BufferFiller {
    spec: WriteBuffers,
    /// fio's `buf_state`, `buf_state_prev` and `dedupe_state`.
    state: Stream,
    prev: Stream,
    dedupe: Stream,
    /// The pages a repeated block is drawn from (`dedupe-working-set`).
    working_set: Option<crate::working_set::Pages>,
}

impl BufferFiller {
    pub fn new(spec: WriteBuffers, seed: u64) -> BufferFiller {
        let state = Stream(storlab_model::seed::mix_seed(seed, &[0xb0f]));
        BufferFiller {
            spec,
            state,
            prev: state,
            dedupe: Stream(storlab_model::seed::mix_seed(seed, &[0xded0])),
            working_set: None,
        }
    }

    /// The filler of a session over `region_bytes` whose smallest write is `page_bytes`:
    /// with the spec's `dedupe-working-set`, its pages; a global one's from the worker's
    /// `place` among the run's participants (its unique stream then starts there too).
    pub fn with_working_set(
        mut self,
        region_bytes: u64,
        page_bytes: u64,
        place: Option<crate::working_set::Participant>,
        seed: u64,
    ) -> BufferFiller {
        let Some(ws) = self.spec.dedupe_working_set else {
            return self;
        };
        let place = place.filter(|_| ws.global);
        if let Some(p) = place {
            self.state = Stream(crate::working_set::Participant::start(p.seed, p.index));
            self.prev = self.state;
        }
        let chunk = self.spec.compress_chunk.0;
        self.working_set = Some(crate::working_set::Pages::new(
            ws,
            self.state.0,
            region_bytes,
            (page_bytes, chunk),
            place,
            seed,
        ));
        self
    }

    /// Whether every write is filled afresh (else the buffers are filled once, at the start).
    pub fn refills(&self) -> bool {
        self.spec.refill
    }

    /// fio's `fill_io_buffer` of one block (`buf` the write's bytes).
    pub fn fill(&mut self, buf: &mut [u8]) {
        let s = &self.spec;
        if s.chunked() {
            // fio's get_buf_state: the block's stream, or (dedupe) a copy of the previous.
            let d = s.dedupe_percentage;
            let repeat = d > 0 && d < 100 && (self.dedupe.next() % 100) < u64::from(d);
            if d == 100 {
                self.prev = self.state;
            }
            // fio's working set: a page drawn uniformly; else the previous block's stream.
            let mut copy = match self.working_set.as_mut() {
                Some(ws) if repeat => ws.draw(),
                _ => self.prev,
            };
            let chunk = match s.compress_chunk.0 as usize {
                0 => buf.len().max(1),
                c => c,
            };
            for piece in buf.chunks_mut(chunk) {
                let seed = if repeat {
                    copy.seed32()
                } else {
                    let seed = self.state.seed32();
                    // fio's save_buf_state.
                    if d == 100 {
                        self.state = self.prev;
                    } else {
                        self.prev = self.state;
                    }
                    seed
                };
                fill_percentage(piece, seed, s.compress_percentage, &s.pattern);
            }
        } else if !s.pattern.is_empty() {
            fill_pattern(buf, &s.pattern);
        } else if s.zero {
            buf.fill(0);
        } else {
            fill_random(buf, self.state.seed32());
        }
    }

    /// What a write does to its block before it goes: a refill, fio's scramble, or nothing.
    #[inline]
    pub fn before_write(&mut self, buf: &mut [u8], offset: u64) {
        if self.spec.refill {
            self.fill(buf);
        } else if self.spec.scramble {
            scramble(buf, offset, now());
        }
    }
}

/// The monotonic clock, (s, ns): what fio writes into a scrambled sector.
fn now() -> (u64, u64) {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `t`, which we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64, t.tv_nsec as u64)
}

/// fio 3.33's `small_content_scramble`: in every 512-byte sector, the sector's offset at one
/// of its first 8 cache lines (chosen by the time and offset) and the time at bytes 48..64.
pub fn scramble(buf: &mut [u8], offset: u64, (sec, nsec): (u64, u64)) {
    let line = (((nsec ^ offset) & 7) << 6) as usize;
    let mut at = offset;
    for sector in buf.chunks_exact_mut(512) {
        sector[line..line + 8].copy_from_slice(&at.to_ne_bytes());
        sector[48..56].copy_from_slice(&sec.to_ne_bytes());
        sector[56..64].copy_from_slice(&nsec.to_ne_bytes());
        at = at.wrapping_add(512);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> WriteBuffers {
        WriteBuffers {
            compress_percentage: 0,
            compress_chunk: Bytes(512),
            dedupe_percentage: 0,
            pattern: Vec::new(),
            zero: false,
            refill: true,
            scramble: false,
            dedupe_working_set: None,
        }
    }

    #[test]
    fn random_bytes_are_fios_multiplication_chains() {
        let mut b = [0u8; 72];
        fill_random(&mut b, 3);
        let word = |i: usize| u64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        // Buckets seed*1, seed*2, seed*3, seed*5, then each times the golden ratio.
        assert_eq!(word(0), 3);
        assert_eq!(word(1), 6);
        assert_eq!(word(3), 15);
        assert_eq!(word(4), 3u64.wrapping_mul(GOLDEN_RATIO_64));
        // 9 words: the last from the first bucket's seed after two groups.
        assert_eq!(
            word(8),
            3u64.wrapping_mul(GOLDEN_RATIO_64.wrapping_mul(GOLDEN_RATIO_64))
        );
    }

    #[test]
    fn a_compress_percentage_leaves_that_share_of_each_chunk_zero() {
        let mut f = BufferFiller::new(
            WriteBuffers {
                compress_percentage: 75,
                ..spec()
            },
            1,
        );
        let mut b = vec![0xffu8; 4096];
        f.fill(&mut b);
        for chunk in b.chunks(512) {
            assert!(chunk[128..].iter().all(|&x| x == 0));
            assert!(chunk[..128].iter().filter(|&&x| x != 0).count() > 100);
        }
        assert_ne!(b[..128], b[512..640], "each chunk from its own seed");
        let mut p = BufferFiller::new(
            WriteBuffers {
                compress_percentage: 50,
                compress_chunk: Bytes(0),
                pattern: b"ab".to_vec(),
                ..spec()
            },
            1,
        );
        p.fill(&mut b);
        assert_eq!(&b[2048..2052], b"abab");
        assert!(b[..2048].iter().filter(|&&x| x == 0).count() < 100);
    }

    #[test]
    fn a_dedupe_percentage_repeats_that_share_of_blocks() {
        let mut f = BufferFiller::new(
            WriteBuffers {
                dedupe_percentage: 40,
                ..spec()
            },
            9,
        );
        let mut seen = std::collections::HashSet::new();
        let mut b = vec![0u8; 4096];
        let n = 5000;
        for _ in 0..n {
            f.fill(&mut b);
            seen.insert(b.clone());
        }
        let unique = seen.len() as f64 / n as f64;
        assert!((unique - 0.6).abs() < 0.03, "{unique}");
        let mut all = BufferFiller::new(
            WriteBuffers {
                dedupe_percentage: 100,
                ..spec()
            },
            9,
        );
        let (mut a, mut c) = (vec![0u8; 4096], vec![1u8; 4096]);
        all.fill(&mut a);
        all.fill(&mut c);
        assert_eq!(a, c);
    }

    #[test]
    fn a_working_set_repeat_is_one_of_the_first_unique_blocks() {
        // 1 MiB region, a quarter of it the working set: 64 pages of 4 KiB.
        let spec = WriteBuffers {
            dedupe_percentage: 50,
            dedupe_working_set: Some(crate::working_set::WorkingSet {
                percent: 25,
                global: false,
            }),
            ..spec()
        };
        let mut f = BufferFiller::new(spec, 3).with_working_set(1 << 20, 4096, None, 3);
        let mut b = vec![0u8; 4096];
        let mut blocks = Vec::new();
        for _ in 0..2000 {
            f.fill(&mut b);
            blocks.push(b.clone());
        }
        // The unique blocks in order; every repeat is one of the first 64 of them.
        let mut unique: Vec<&Vec<u8>> = Vec::new();
        for b in &blocks {
            if !unique.contains(&b) {
                unique.push(b);
            }
        }
        let first: std::collections::HashSet<&Vec<u8>> = unique.iter().take(64).copied().collect();
        let repeats = blocks.len() - unique.len();
        assert!((900..1100).contains(&repeats), "{repeats}");
        assert!(unique.len() > 900, "{}", unique.len());
        let in_set = blocks.iter().filter(|b| first.contains(b)).count();
        // The first 64 unique blocks, plus the repeats of them.
        assert!(in_set >= repeats, "{in_set} {repeats}");
    }

    #[test]
    fn scrambling_marks_every_sector_and_plain_options_fill_whole_blocks() {
        let mut b = vec![0u8; 1024];
        scramble(&mut b, 4096, (7, 64));
        // (64 ^ 4096) & 7 = 0: the offset at the first cache line.
        assert_eq!(u64::from_ne_bytes(b[..8].try_into().unwrap()), 4096);
        assert_eq!(u64::from_ne_bytes(b[512..520].try_into().unwrap()), 4608);
        assert_eq!(u64::from_ne_bytes(b[48..56].try_into().unwrap()), 7);
        let mut z = BufferFiller::new(
            WriteBuffers {
                zero: true,
                refill: false,
                scramble: true,
                ..spec()
            },
            1,
        );
        let mut b = vec![1u8; 1024];
        z.fill(&mut b);
        assert!(b.iter().all(|&x| x == 0));
        z.before_write(&mut b, 0);
        assert!(b.iter().any(|&x| x != 0));
        let mut p = BufferFiller::new(
            WriteBuffers {
                pattern: vec![0xde, 0xad],
                ..spec()
            },
            1,
        );
        p.fill(&mut b);
        assert_eq!(&b[1020..], [0xde, 0xad, 0xde, 0xad]);
        assert!(spec().validate().is_ok());
        assert!(
            WriteBuffers {
                compress_percentage: 100,
                ..spec()
            }
            .validate()
            .is_err()
        );
    }
}
