//! Key-value workloads with db_bench's semantics and names (fillseq, fillrandom, overwrite,
//! readrandom, readseq, readwhilewriting, updaterandom, deleterandom), and the key and value
//! bytes they address.
//!
//! As in RocksDB's db_bench (tools/db_bench_tool.cc): a key is the key number as 8 bytes
//! big-endian, padded with `'0'` to `key-size`; random benchmarks draw key numbers uniformly
//! from `[0, num)`; values come from a 1 MiB buffer of text compressible to
//! `compression-ratio`, read at a rotating position; readwhilewriting adds one writer thread
//! doing random puts, limited in bytes per second, whose figures are kept apart from the
//! readers'. Sessions build keys and values into buffers they own: nothing here allocates per
//! operation.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use storlab_model::OpKind;
use storlab_model::units::Bytes;
use storlab_model::{Op, OptionError};

/// The db_bench benchmarks storlab runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Benchmark {
    /// Puts keys 0, 1, 2, ... in order (each thread from 0), into a fresh database.
    Fillseq,
    /// Puts random keys into a fresh database.
    Fillrandom,
    /// Puts random keys into the existing database.
    Overwrite,
    /// Gets random keys; reports how many were found.
    Readrandom,
    /// Reads the database in key order with an iterator, one key per operation.
    Readseq,
    /// Gets random keys while one extra thread puts random keys at a limited rate.
    Readwhilewriting,
    /// Gets a random key, then puts a new value for it.
    Updaterandom,
    /// Deletes random keys.
    Deleterandom,
}

impl Benchmark {
    pub const ALL: [Benchmark; 8] = [
        Benchmark::Fillseq,
        Benchmark::Fillrandom,
        Benchmark::Overwrite,
        Benchmark::Readrandom,
        Benchmark::Readseq,
        Benchmark::Readwhilewriting,
        Benchmark::Updaterandom,
        Benchmark::Deleterandom,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Fillseq => "fillseq",
            Benchmark::Fillrandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::Readrandom => "readrandom",
            Benchmark::Readseq => "readseq",
            Benchmark::Readwhilewriting => "readwhilewriting",
            Benchmark::Updaterandom => "updaterandom",
            Benchmark::Deleterandom => "deleterandom",
        }
    }

    pub fn from_name(name: &str) -> Option<Benchmark> {
        Benchmark::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The benchmark starts from an empty database (db_bench's `fresh_db`).
    pub fn fresh(self) -> bool {
        matches!(self, Benchmark::Fillseq | Benchmark::Fillrandom)
    }

    /// The operation kind the benchmark's (foreground) threads issue.
    pub fn kind(self) -> OpKind {
        match self {
            Benchmark::Fillseq | Benchmark::Fillrandom | Benchmark::Overwrite => OpKind::Write,
            Benchmark::Readrandom | Benchmark::Readseq | Benchmark::Readwhilewriting => {
                OpKind::Read
            }
            Benchmark::Updaterandom => OpKind::ReadModifyWrite,
            Benchmark::Deleterandom => OpKind::Delete,
        }
    }

    /// The foreground threads change the database.
    pub fn writes(self) -> bool {
        !matches!(
            self,
            Benchmark::Readrandom | Benchmark::Readseq | Benchmark::Readwhilewriting
        )
    }
}

/// Key and value sizes of a key-value workload: what a session needs to build its buffers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct KvShape {
    pub key_bytes: u32,
    pub value_bytes: u32,
    /// Values compress to about this fraction of their size.
    pub compression_ratio: f64,
}

/// A db_bench workload, as written in a study's `[workloads.NAME]` table with
/// `type = "db-bench"`. Every key here can be swept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct KvWorkload {
    pub benchmark: Benchmark,
    /// Keys in the key space: random benchmarks address `[0, num)`.
    #[serde(default = "default_num")]
    pub num: u64,
    #[serde(default = "default_key_size")]
    pub key_size: u32,
    #[serde(default = "default_value_size")]
    pub value_size: Bytes,
    /// Generated values compress to about this fraction of their size.
    #[serde(default = "default_ratio")]
    pub compression_ratio: f64,
    /// Worker threads (readwhilewriting adds one writer thread to these).
    #[serde(default = "default_one")]
    pub threads: u32,
    /// readwhilewriting: the writer's limit in bytes (key + value) per second; 0 = no limit.
    #[serde(default)]
    pub writer_rate_bytes: Bytes,
    /// Open loop: operations per second for the whole target, spread over its threads.
    pub rate_ops: Option<f64>,
    /// Open loop: operations per second for each thread.
    pub rate_per_thread_ops: Option<f64>,
    /// Base seed of the key generators (default: the study's `seed`). Each run draws from a
    /// seed derived from it, its place in the study and the benchmark, each thread from one
    /// derived from that ([`crate::Workload::run_seed`]): a read never replays the
    /// fill's keys.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_num() -> u64 {
    1_000_000
}
fn default_key_size() -> u32 {
    16
}
fn default_value_size() -> Bytes {
    Bytes(100)
}
fn default_ratio() -> f64 {
    0.5
}
fn default_one() -> u32 {
    1
}
fn default_seed() -> u64 {
    super::DEFAULT_SEED
}

/// Keys a study's sweep may vary in a db-bench workload.
pub const SWEEPABLE: &[&str] = &[
    "benchmark",
    "num",
    "key-size",
    "value-size",
    "compression-ratio",
    "threads",
    "writer-rate-bytes",
    "rate-ops",
    "rate-per-thread-ops",
    "seed",
];

fn err(key: &str, message: impl Into<String>) -> OptionError {
    OptionError {
        key: key.into(),
        message: message.into(),
    }
}

/// The most bytes a value may have (the value buffer is at least 1 MiB and holds one value).
pub const MAX_VALUE_BYTES: u64 = 64 << 20;

impl KvWorkload {
    pub fn from_table(table: toml::Table) -> Result<KvWorkload, OptionError> {
        let w: KvWorkload = table.try_into().map_err(storlab_model::option_error)?;
        w.validate()?;
        Ok(w)
    }

    fn validate(&self) -> Result<(), OptionError> {
        if self.num == 0 {
            return Err(err("num", "num (keys in the key space) must be above 0"));
        }
        if self.key_size < 8 || self.key_size > 1024 {
            return Err(err(
                "key-size",
                "key-size must be from 8 to 1024 bytes (the key number takes 8)",
            ));
        }
        if self.value_size.0 == 0 || self.value_size.0 > MAX_VALUE_BYTES {
            return Err(err("value-size", "value-size must be from 1 byte to 64MiB"));
        }
        if !(self.compression_ratio > 0.0 && self.compression_ratio <= 1.0) {
            return Err(err(
                "compression-ratio",
                "compression-ratio is the fraction values compress to: above 0.0, at most 1.0",
            ));
        }
        if self.threads == 0 || self.threads > 4096 {
            return Err(err("threads", "threads must be from 1 to 4096"));
        }
        if self.writer_rate_bytes.0 > 0 && self.benchmark != Benchmark::Readwhilewriting {
            return Err(err(
                "writer-rate-bytes",
                "writer-rate-bytes limits the writer thread of readwhilewriting only",
            ));
        }
        if self.rate_ops.is_some() && self.rate_per_thread_ops.is_some() {
            return Err(err(
                "rate-per-thread-ops",
                "give either rate-ops (per target) or rate-per-thread-ops, not both",
            ));
        }
        for (key, rate) in [
            ("rate-ops", self.rate_ops),
            ("rate-per-thread-ops", self.rate_per_thread_ops),
        ] {
            if let Some(r) = rate
                && !(r > 0.0 && r.is_finite())
            {
                return Err(err(
                    key,
                    "a rate is a number of operations per second above 0",
                ));
            }
        }
        Ok(())
    }

    pub fn shape(&self) -> KvShape {
        KvShape {
            key_bytes: self.key_size,
            value_bytes: self.value_size.0 as u32,
            compression_ratio: self.compression_ratio,
        }
    }

    pub fn rate_per_thread(&self) -> Option<f64> {
        self.rate_per_thread_ops
            .or(self.rate_ops.map(|r| r / self.threads as f64))
    }

    /// The source of foreground thread `thread` of a run seeded `run_seed`.
    pub fn source(&self, thread: u32, run_seed: u64) -> KvSource {
        KvSource::new(
            self.benchmark,
            self.num,
            super::thread_seed(run_seed, thread),
        )
    }

    /// The benchmark has a background writer (readwhilewriting).
    pub fn has_writer(&self) -> bool {
        self.benchmark == Benchmark::Readwhilewriting
    }

    /// readwhilewriting's writer in a run seeded `run_seed`: its source and its pace in puts
    /// per second (None: as fast as it can).
    pub fn writer(&self, run_seed: u64) -> Option<(KvSource, Option<f64>)> {
        if !self.has_writer() {
            return None;
        }
        let put_bytes = (self.key_size as u64 + self.value_size.0) as f64;
        let rate =
            (self.writer_rate_bytes.0 > 0).then(|| self.writer_rate_bytes.0 as f64 / put_bytes);
        Some((
            KvSource::new(Benchmark::Overwrite, self.num, super::writer_seed(run_seed)),
            rate,
        ))
    }
}

/// Generates one worker's key-value operations.
pub struct KvSource {
    benchmark: Benchmark,
    rng: SmallRng,
    num: u64,
    next_key: u64,
}

impl KvSource {
    pub fn new(benchmark: Benchmark, num: u64, seed: u64) -> KvSource {
        KvSource {
            benchmark,
            rng: SmallRng::seed_from_u64(seed),
            num,
            next_key: 0,
        }
    }

    /// A key number drawn uniformly from `[0, num)`.
    #[inline]
    fn random_key(&mut self) -> u64 {
        // Multiply-shift maps 64 random bits onto [0, num) without a division.
        ((self.rng.next_u64() as u128 * self.num as u128) >> 64) as u64
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        match self.benchmark {
            Benchmark::Fillseq => {
                let key = self.next_key;
                self.next_key += 1;
                if self.next_key >= self.num {
                    self.next_key = 0;
                }
                Op::Put { key }
            }
            Benchmark::Fillrandom | Benchmark::Overwrite => Op::Put {
                key: self.random_key(),
            },
            Benchmark::Readrandom | Benchmark::Readwhilewriting => Op::Get {
                key: self.random_key(),
            },
            Benchmark::Readseq => Op::Next,
            Benchmark::Updaterandom => Op::ReadModifyWrite {
                key: self.random_key(),
            },
            Benchmark::Deleterandom => Op::Delete {
                key: self.random_key(),
            },
        }
    }
}

/// Writes db_bench's key for `keynum` into `out` (whose length is the key size): the key
/// number's low bytes big-endian (all 8 when the key has room), then `'0'` padding.
#[inline]
pub fn write_key(keynum: u64, out: &mut [u8]) {
    let n = out.len().min(8);
    for (i, b) in out[..n].iter_mut().enumerate() {
        *b = (keynum >> ((n - i - 1) * 8)) as u8;
    }
    for b in &mut out[n..] {
        *b = b'0';
    }
}

/// Reads the key number back from a db_bench key.
pub fn read_key(key: &[u8]) -> u64 {
    key.iter()
        .take(8)
        .fold(0u64, |acc, &b| (acc << 8) | b as u64)
}

/// db_bench's value generator: a buffer of at least 1 MiB of printable text in which every
/// 100-byte piece repeats a random prefix of `ratio * 100` bytes (so it compresses to about
/// `ratio`), handed out as consecutive slices.
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
    len: usize,
}

impl ValueGen {
    pub fn new(shape: &KvShape, seed: u64) -> ValueGen {
        let len = shape.value_bytes as usize;
        let size = len.max(1 << 20);
        let mut rng = SmallRng::seed_from_u64(seed ^ 301);
        let mut data = Vec::with_capacity(size + 100);
        let raw_len = ((100.0 * shape.compression_ratio) as usize).clamp(1, 100);
        let mut raw = [0u8; 100];
        while data.len() < size {
            for b in &mut raw[..raw_len] {
                *b = b' ' + (rng.next_u32() % 95) as u8;
            }
            let mut piece = 0;
            while piece < 100 {
                let take = raw_len.min(100 - piece);
                data.extend_from_slice(&raw[..take]);
                piece += take;
            }
        }
        ValueGen { data, pos: 0, len }
    }

    /// The next value (its slice of the buffer). Not an `Iterator`: the value borrows the
    /// generator's buffer (a lending iterator), so that no value is ever allocated.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> &[u8] {
        if self.pos + self.len > self.data.len() {
            self.pos = 0;
        }
        let v = &self.data[self.pos..self.pos + self.len];
        self.pos += self.len;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(text: &str) -> Result<KvWorkload, OptionError> {
        KvWorkload::from_table(toml::from_str(text).unwrap())
    }

    #[test]
    fn keys_are_big_endian_numbers_padded_with_zero_characters() {
        let mut k = [0u8; 16];
        write_key(0x0102_0304_0506_0708, &mut k);
        assert_eq!(&k[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&k[8..], b"00000000");
        assert_eq!(read_key(&k), 0x0102_0304_0506_0708);
        // Keys sort like their numbers.
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        write_key(255, &mut a);
        write_key(256, &mut b);
        assert!(a < b);
    }

    #[test]
    fn values_compress_to_about_the_ratio() {
        let shape = KvShape {
            key_bytes: 16,
            value_bytes: 4096,
            compression_ratio: 0.5,
        };
        let mut g = ValueGen::new(&shape, 1);
        let v = g.next().to_vec();
        assert_eq!(v.len(), 4096);
        // Each 100-byte piece is its first 50 bytes twice.
        assert_eq!(&v[0..50], &v[50..100]);
        assert_ne!(&v[0..50], &v[100..150]);
        assert!(v.iter().all(|b| (b' '..=b'~').contains(b)));
        let w = g.next().to_vec();
        assert_ne!(v, w);
    }

    #[test]
    fn random_keys_cover_the_key_space_uniformly() {
        let w = workload("benchmark = \"readrandom\"\nnum = 100").unwrap();
        let mut s = w.source(0, 1);
        let mut counts = [0u32; 100];
        for _ in 0..100_000 {
            match s.next_op() {
                Op::Get { key } => counts[key as usize] += 1,
                other => panic!("{other:?}"),
            }
        }
        // 1000 expected per key; 5 standard deviations is about 160.
        assert!(
            counts.iter().all(|&c| (840..1160).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn fillseq_puts_keys_in_order_and_the_writer_is_separate() {
        let w = workload("benchmark = \"fillseq\"\nnum = 3").unwrap();
        let mut s = w.source(0, 1);
        let keys: Vec<Op> = (0..4).map(|_| s.next_op()).collect();
        assert_eq!(
            keys,
            vec![
                Op::Put { key: 0 },
                Op::Put { key: 1 },
                Op::Put { key: 2 },
                Op::Put { key: 0 }
            ]
        );
        assert!(w.writer(1).is_none());
        let rw = workload(
            "benchmark = \"readwhilewriting\"\nvalue-size = 4080\nkey-size = 16\nwriter-rate-bytes = \"4MiB\"",
        )
        .unwrap();
        let (mut writer, rate) = rw.writer(1).unwrap();
        assert!(matches!(writer.next_op(), Op::Put { .. }));
        assert_eq!(rate, Some(1024.0));
    }

    #[test]
    fn bad_values_name_their_key() {
        assert_eq!(
            workload("benchmark = \"fillrandom\"\nnum = 0")
                .unwrap_err()
                .key,
            "num"
        );
        assert_eq!(
            workload("benchmark = \"readrandom\"\nkey-size = 4")
                .unwrap_err()
                .key,
            "key-size"
        );
        assert_eq!(
            workload("benchmark = \"readrandom\"\nwriter-rate-bytes = 100")
                .unwrap_err()
                .key,
            "writer-rate-bytes"
        );
        assert_eq!(
            workload("benchmark = \"readrandomx\"").unwrap_err().key,
            "benchmark"
        );
        assert_eq!(workload("num = 5").unwrap_err().key, "benchmark");
    }

    fn keys(s: &mut KvSource, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| match s.next_op() {
                Op::Put { key } | Op::Get { key } => key,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_read_after_a_fill_draws_its_own_keys_and_finds_one_minus_one_over_e() {
        let num = 100_000u64;
        let fill = crate::Workload::DbBench(
            workload(&format!("benchmark = \"fillrandom\"\nnum = {num}")).unwrap(),
        );
        let read = crate::Workload::DbBench(
            workload(&format!("benchmark = \"readrandom\"\nnum = {num}")).unwrap(),
        );
        let (crate::Workload::DbBench(f), crate::Workload::DbBench(r)) = (&fill, &read) else {
            unreachable!()
        };
        // Both the next step of one study and the first step of another study.
        for (fill_place, read_place) in [((1, 1, 1), (2, 1, 1)), ((1, 1, 1), (1, 1, 1))] {
            let fill_seed = fill.run_seed(fill_place.0, fill_place.1, fill_place.2);
            let read_seed = read.run_seed(read_place.0, read_place.1, read_place.2);
            let mut present = vec![false; num as usize];
            for k in keys(&mut f.source(0, fill_seed), num as usize) {
                present[k as usize] = true;
            }
            let found = keys(&mut r.source(0, read_seed), num as usize)
                .into_iter()
                .filter(|&k| present[k as usize])
                .count() as f64
                / num as f64;
            let expected = 1.0 - (-1.0f64).exp();
            assert!((found - expected).abs() < 0.005, "found {found}");
        }
    }

    #[test]
    fn seeds_are_reproducible_and_differ_by_thread_run_and_benchmark() {
        let w =
            crate::Workload::DbBench(workload("benchmark = \"readrandom\"\nthreads = 2").unwrap());
        let crate::Workload::DbBench(kv) = &w else {
            unreachable!()
        };
        let seed = w.run_seed(1, 1, 1);
        assert_eq!(seed, w.run_seed(1, 1, 1));
        let first = keys(&mut kv.source(0, seed), 8);
        assert_eq!(first, keys(&mut kv.source(0, seed), 8));
        assert_ne!(first, keys(&mut kv.source(1, seed), 8));
        for other in [
            w.run_seed(2, 1, 1),
            w.run_seed(1, 2, 1),
            w.run_seed(1, 1, 2),
        ] {
            assert_ne!(first, keys(&mut kv.source(0, other), 8));
        }
        let rw = workload("benchmark = \"readwhilewriting\"").unwrap();
        let (mut writer, _) = rw.writer(seed).unwrap();
        assert_ne!(first, keys(&mut writer, 8));
    }
}
