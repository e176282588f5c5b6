//! db_bench's command line, brought over: `storlab dbbench --benchmarks=fillrandom,readrandom
//! --num=... --threads=...` turns the flags into a study (one step per benchmark, on one
//! `rocksdb` target), so a db_bench flag set runs through the same plan, engine and results
//! store as any study. Flags storlab does not support are rejected by name, never ignored.
//!
//! Counts follow db_bench (tools/db_bench_tool.cc): `--reads` and `--writes` are per thread
//! (default `--num`), so a run measures `threads x reads` operations; `--duration` (seconds)
//! takes precedence for the benchmarks where db_bench honours it (fillrandom, overwrite,
//! readrandom, readwhilewriting, updaterandom, deleterandom).

use std::fmt::Write as _;

use storlab_workload::kv::Benchmark;

/// A flag that cannot be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FlagError {
    #[error(
        "unsupported db_bench flag --{0}: storlab dbbench does not implement it and will not ignore it (supported: {supported})",
        supported = SUPPORTED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    )]
    Unsupported(String),
    #[error("--{flag}={value}: {message}")]
    BadValue {
        flag: String,
        value: String,
        message: String,
    },
    #[error(
        "benchmark `{0}` is not supported by storlab dbbench (supported: fillseq, fillrandom, overwrite, readrandom, readseq, readwhilewriting, updaterandom, deleterandom)"
    )]
    Benchmark(String),
    #[error("`{0}` is not a flag: db_bench flags look like --name=value")]
    NotAFlag(String),
}

/// The flags storlab takes, with what they mean.
pub const SUPPORTED: &[(&str, &str)] = &[
    (
        "benchmarks",
        "comma-separated list, run in order (default fillrandom,readrandom)",
    ),
    ("num", "keys in the database (default 1000000)"),
    ("reads", "reads per thread (default --num)"),
    ("writes", "writes per thread (default --num)"),
    (
        "threads",
        "threads (readwhilewriting adds one writer) (default 1)",
    ),
    (
        "duration",
        "seconds per benchmark; 0: bounded by counts (default 0)",
    ),
    ("key_size", "bytes per key (default 16)"),
    ("value_size", "bytes per value (default 100)"),
    (
        "compression_ratio",
        "values compress to this fraction (default 0.5)",
    ),
    (
        "db",
        "database directory (default /tmp/rocksdbtest-UID/dbbench)",
    ),
    (
        "use_existing_db",
        "1: the database must exist; never recreate it (default 0)",
    ),
    (
        "benchmark_write_rate_limit",
        "readwhilewriting writer: bytes/s, 0 = no limit (default 0)",
    ),
    ("cache_size", "block cache bytes (default 8388608)"),
    (
        "compression_type",
        "none, snappy, zlib, bz2, lz4, lz4hc, zstd (default snappy)",
    ),
    ("write_buffer_size", "memtable bytes (default 67108864)"),
    (
        "max_background_jobs",
        "flush and compaction threads (default 2)",
    ),
    (
        "bloom_bits",
        "bloom filter bits per key; <= 0: none (default -1)",
    ),
    ("sync", "sync the WAL on every write (default 0)"),
    ("disable_wal", "write without a WAL (default 0)"),
    ("use_direct_reads", "O_DIRECT reads (default 0)"),
    (
        "use_direct_io_for_flush_and_compaction",
        "O_DIRECT flush and compaction (default 0)",
    ),
    (
        "seed",
        "seed of the key generators; 0: fixed default (default 0)",
    ),
    (
        "histogram",
        "print latency percentiles per benchmark (storlab always records them)",
    ),
];

const BOOLS: &[&str] = &[
    "use_existing_db",
    "sync",
    "disable_wal",
    "use_direct_reads",
    "use_direct_io_for_flush_and_compaction",
    "histogram",
];

/// db_bench's flags, with db_bench's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct DbBenchFlags {
    pub benchmarks: Vec<Benchmark>,
    pub num: u64,
    pub reads: Option<u64>,
    pub writes: Option<u64>,
    pub threads: u32,
    pub duration_seconds: u64,
    pub key_size: u32,
    pub value_size: u64,
    pub compression_ratio: f64,
    pub db: String,
    pub use_existing_db: bool,
    pub write_rate_limit_bytes: u64,
    pub cache_size: u64,
    pub compression_type: String,
    pub write_buffer_size: u64,
    pub max_background_jobs: u32,
    pub bloom_bits: i64,
    pub sync: bool,
    pub disable_wal: bool,
    pub use_direct_reads: bool,
    pub use_direct_io_for_flush_and_compaction: bool,
    pub seed: u64,
    pub histogram: bool,
}

impl Default for DbBenchFlags {
    fn default() -> Self {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        DbBenchFlags {
            benchmarks: vec![Benchmark::Fillrandom, Benchmark::Readrandom],
            num: 1_000_000,
            reads: None,
            writes: None,
            threads: 1,
            duration_seconds: 0,
            key_size: 16,
            value_size: 100,
            compression_ratio: 0.5,
            db: format!("/tmp/rocksdbtest-{uid}/dbbench"),
            use_existing_db: false,
            write_rate_limit_bytes: 0,
            cache_size: 8 << 20,
            compression_type: "snappy".into(),
            write_buffer_size: 64 << 20,
            max_background_jobs: 2,
            bloom_bits: -1,
            sync: false,
            disable_wal: false,
            use_direct_reads: false,
            use_direct_io_for_flush_and_compaction: false,
            seed: 0,
            histogram: false,
        }
    }
}

fn bad(flag: &str, value: &str, message: &str) -> FlagError {
    FlagError::BadValue {
        flag: flag.into(),
        value: value.into(),
        message: message.into(),
    }
}

fn int<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, FlagError> {
    value
        .parse()
        .map_err(|_| bad(flag, value, "expected a whole number"))
}

fn boolean(flag: &str, value: &str) -> Result<bool, FlagError> {
    match value {
        "1" | "true" | "yes" | "t" | "y" => Ok(true),
        "0" | "false" | "no" | "f" | "n" => Ok(false),
        _ => Err(bad(flag, value, "expected 1 or 0 (true or false)")),
    }
}

/// Parses db_bench's flags (`--name=value`, `-name=value`, `--name value`, `--flag` and
/// `--noflag` for booleans), as gflags does.
pub fn parse_flags(args: &[String]) -> Result<DbBenchFlags, FlagError> {
    let mut f = DbBenchFlags::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let body = arg
            .strip_prefix("--")
            .or_else(|| arg.strip_prefix('-'))
            .ok_or_else(|| FlagError::NotAFlag(arg.clone()))?;
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None if BOOLS.contains(&body) => (body.to_string(), "1".to_string()),
            None if body.strip_prefix("no").is_some_and(|b| BOOLS.contains(&b)) => {
                (body[2..].to_string(), "0".to_string())
            }
            None => {
                if !SUPPORTED.iter().any(|(n, _)| *n == body) {
                    return Err(FlagError::Unsupported(body.to_string()));
                }
                let v = args
                    .get(i)
                    .ok_or_else(|| bad(body, "", "the flag needs a value"))?;
                i += 1;
                (body.to_string(), v.clone())
            }
        };
        let v = value.as_str();
        let n = name.as_str();
        match n {
            "benchmarks" => {
                f.benchmarks = v
                    .split(',')
                    .filter(|b| !b.is_empty())
                    .map(|b| Benchmark::from_name(b).ok_or_else(|| FlagError::Benchmark(b.into())))
                    .collect::<Result<_, _>>()?;
                if f.benchmarks.is_empty() {
                    return Err(bad(n, v, "name at least one benchmark"));
                }
            }
            "num" => f.num = int(n, v)?,
            "reads" => {
                let r: i64 = int(n, v)?;
                f.reads = (r >= 0).then_some(r as u64);
            }
            "writes" => {
                let w: i64 = int(n, v)?;
                f.writes = (w >= 0).then_some(w as u64);
            }
            "threads" => f.threads = int(n, v)?,
            "duration" => f.duration_seconds = int(n, v)?,
            "key_size" => f.key_size = int(n, v)?,
            "value_size" => f.value_size = int(n, v)?,
            "compression_ratio" => {
                f.compression_ratio = v.parse().map_err(|_| bad(n, v, "expected a number"))?
            }
            "db" => f.db = v.to_string(),
            "use_existing_db" => f.use_existing_db = boolean(n, v)?,
            "benchmark_write_rate_limit" => f.write_rate_limit_bytes = int(n, v)?,
            "cache_size" => {
                let c: i64 = int(n, v)?;
                f.cache_size = c.max(0) as u64;
            }
            "compression_type" => {
                if !storlab_targets::rocksdb::Compression::NAMES.contains(&v) {
                    return Err(bad(
                        n,
                        v,
                        "expected none, snappy, zlib, bz2, lz4, lz4hc or zstd",
                    ));
                }
                f.compression_type = v.to_string();
            }
            "write_buffer_size" => f.write_buffer_size = int(n, v)?,
            "max_background_jobs" => f.max_background_jobs = int(n, v)?,
            "bloom_bits" => f.bloom_bits = int(n, v)?,
            "sync" => f.sync = boolean(n, v)?,
            "disable_wal" => f.disable_wal = boolean(n, v)?,
            "use_direct_reads" => f.use_direct_reads = boolean(n, v)?,
            "use_direct_io_for_flush_and_compaction" => {
                f.use_direct_io_for_flush_and_compaction = boolean(n, v)?
            }
            "seed" => f.seed = int(n, v)?,
            "histogram" => f.histogram = boolean(n, v)?,
            other => return Err(FlagError::Unsupported(other.to_string())),
        }
    }
    if f.threads == 0 {
        return Err(bad("threads", "0", "threads must be at least 1"));
    }
    if f.num == 0 {
        return Err(bad("num", "0", "num must be at least 1"));
    }
    Ok(f)
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

impl DbBenchFlags {
    /// Operations per thread of a benchmark, as db_bench counts them.
    pub fn ops_per_thread(&self, b: Benchmark) -> u64 {
        match b {
            Benchmark::Fillseq | Benchmark::Fillrandom | Benchmark::Overwrite => {
                self.writes.unwrap_or(self.num)
            }
            Benchmark::Readrandom | Benchmark::Readseq | Benchmark::Readwhilewriting => {
                self.reads.unwrap_or(self.num)
            }
            Benchmark::Updaterandom => match (self.reads, self.writes) {
                (None, None) => self.num,
                (r, w) => r.unwrap_or(0).max(w.unwrap_or(0)),
            },
            Benchmark::Deleterandom => self.num,
        }
    }

    /// db_bench honours --duration for this benchmark.
    pub fn timed(&self, b: Benchmark) -> bool {
        self.duration_seconds > 0 && !matches!(b, Benchmark::Fillseq | Benchmark::Readseq)
    }

    /// The study these flags describe: one rocksdb target, one step per benchmark.
    pub fn study_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Generated by `storlab dbbench` from db_bench flags.");
        let _ = writeln!(s, "name = \"dbbench\"");
        // Each benchmark's runs and threads draw from seeds derived from this one, the run's
        // place and the benchmark (storlab_workload::Workload::run_seed).
        let seed = if self.seed == 0 {
            storlab_workload::DEFAULT_SEED
        } else {
            self.seed
        };
        let _ = writeln!(s, "seed = {seed}\n");
        let _ = writeln!(s, "[targets.db]\ntype = \"rocksdb\"");
        let _ = writeln!(s, "path = {}", toml_str(&self.db));
        let _ = writeln!(s, "block-cache-size = {}", self.cache_size);
        let _ = writeln!(s, "compression = {}", toml_str(&self.compression_type));
        let _ = writeln!(s, "write-buffer-size = {}", self.write_buffer_size);
        let _ = writeln!(s, "max-background-jobs = {}", self.max_background_jobs);
        let _ = writeln!(s, "bloom-bits = {}", self.bloom_bits.max(0));
        let _ = writeln!(s, "sync-writes = {}", self.sync);
        let _ = writeln!(s, "disable-wal = {}", self.disable_wal);
        let _ = writeln!(s, "direct-reads = {}", self.use_direct_reads);
        let _ = writeln!(
            s,
            "direct-io-for-flush-and-compaction = {}",
            self.use_direct_io_for_flush_and_compaction
        );
        let _ = writeln!(s, "use-existing-db = {}", self.use_existing_db);
        for (i, b) in self.benchmarks.iter().enumerate() {
            let name = format!("{}-{}", i + 1, b.name());
            let _ = writeln!(s, "\n[workloads.{name}]\ntype = \"db-bench\"");
            let _ = writeln!(s, "benchmark = \"{}\"", b.name());
            let _ = writeln!(s, "num = {}", self.num);
            let _ = writeln!(s, "key-size = {}", self.key_size);
            let _ = writeln!(s, "value-size = {}", self.value_size);
            let _ = writeln!(s, "compression-ratio = {}", self.compression_ratio);
            let _ = writeln!(s, "threads = {}", self.threads);
            if *b == Benchmark::Readwhilewriting && self.write_rate_limit_bytes > 0 {
                let _ = writeln!(s, "writer-rate-bytes = {}", self.write_rate_limit_bytes);
            }
        }
        for (i, b) in self.benchmarks.iter().enumerate() {
            let name = format!("{}-{}", i + 1, b.name());
            let _ = writeln!(
                s,
                "\n[[steps]]\nname = \"{name}\"\nworkload = \"{name}\"\ntargets = [\"db\"]"
            );
            if self.timed(*b) {
                let _ = writeln!(s, "duration = \"{}s\"", self.duration_seconds);
            } else {
                // Saturates: a count past u64 is refused by the study's own bound check.
                let ops = self.ops_per_thread(*b).saturating_mul(self.threads as u64);
                let _ = writeln!(s, "ops = {ops}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn db_bench_flag_forms_parse() {
        let f = parse_flags(&args(
            "--benchmarks=fillrandom,readrandom --num=1000 -threads=4 --value_size 4096 --use_existing_db --nosync --histogram=1 --bloom_bits=10",
        ))
        .unwrap();
        assert_eq!(
            f.benchmarks,
            vec![Benchmark::Fillrandom, Benchmark::Readrandom]
        );
        assert_eq!((f.num, f.threads, f.value_size), (1000, 4, 4096));
        assert!(f.use_existing_db && !f.sync && f.histogram);
        assert_eq!(f.bloom_bits, 10);
        assert_eq!(f.ops_per_thread(Benchmark::Readrandom), 1000);
    }

    #[test]
    fn unknown_flags_are_rejected_by_name() {
        let e = parse_flags(&args("--num=10 --max_bytes_for_level_base=1000")).unwrap_err();
        assert_eq!(e, FlagError::Unsupported("max_bytes_for_level_base".into()));
        assert!(e.to_string().contains("--max_bytes_for_level_base"), "{e}");
        let e = parse_flags(&args("--statistics")).unwrap_err();
        assert_eq!(e, FlagError::Unsupported("statistics".into()));
        let e = parse_flags(&args("--benchmarks=fillrandom,seekrandom")).unwrap_err();
        assert_eq!(e, FlagError::Benchmark("seekrandom".into()));
        let e = parse_flags(&args("--num=ten")).unwrap_err();
        assert!(matches!(e, FlagError::BadValue { .. }), "{e:?}");
        assert!(matches!(
            parse_flags(&args("num=10")).unwrap_err(),
            FlagError::NotAFlag(_)
        ));
    }

    #[test]
    fn flags_become_a_valid_study_with_db_bench_counts() {
        let f = parse_flags(&args(
            "--benchmarks=fillseq,readrandom,readwhilewriting --num=500 --reads=100 --threads=3 --db=/tmp/x --benchmark_write_rate_limit=1048576 --duration=0",
        ))
        .unwrap();
        let plan = crate::parse("dbbench", &f.study_text()).unwrap();
        assert_eq!(plan.runs.len(), 3);
        assert_eq!(plan.runs[0].ops, Some(1500)); // fillseq: num writes per thread
        assert_eq!(plan.runs[1].ops, Some(300)); // readrandom: reads per thread
        let timed = parse_flags(&args("--benchmarks=readrandom,fillseq --duration=5")).unwrap();
        let plan = crate::parse("dbbench", &timed.study_text()).unwrap();
        assert_eq!(plan.runs[0].duration.map(|d| d.0.as_secs()), Some(5));
        assert_eq!(plan.runs[0].ops, None);
        // fillseq ignores --duration, as in db_bench.
        assert_eq!(plan.runs[1].ops, Some(1_000_000));
    }
}
