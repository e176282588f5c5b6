//! The `rocksdb` target: an embedded RocksDB database in a directory, through the `rocksdb`
//! crate linked to the system's librocksdb (Debian's 7.8.3, the library of Debian's db_bench),
//! tuned with the options db_bench users set: block cache size, direct reads, direct I/O for
//! flush and compaction, compression, write buffer size, background jobs, bloom filter bits,
//! sync writes and the WAL.
//!
//! The database is opened once per run in `prepare` and shared by all sessions (RocksDB is
//! thread-safe). A session executes each operation in `submit` (queue depth 1), with key and
//! value buffers it owns; gets are pinned reads, so values are never copied. The C API that the
//! crate wraps allocates a small holder for each pinned read inside librocksdb; storlab itself
//! allocates nothing per operation.
//!
//! A fill benchmark (fillseq, fillrandom) starts from an empty database. storlab only removes
//! a database it created itself (marked by a `STORLAB-DB` file); any other database at the
//! path is refused, so a user's data is never destroyed by accident.

use std::path::{Path, PathBuf};

use rocksdb::{
    BlockBasedOptions, Cache, DB, DBCompressionType, DBPinnableSlice, DBRawIterator, Options,
    ReadOptions, WriteOptions,
};
use serde::{Deserialize, Serialize};

use storlab_model::{ErrorKind, OpError, OpKind};
use crate::{Capabilities, Completions, OptionError, Overlap, PrepareOptions, Region, Session, SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType, YcsbBinding, option_error};
use storlab_model::Op;
use storlab_model::units::Bytes;
use storlab_workload::kv::{KvShape, ValueGen, write_key};
use crate::write_outcome;
use storlab_workload::ycsb::record::encode_record;
use storlab_model::YcsbOp;
use storlab_workload::{ycsb::Properties, ycsb::RecordBuf};

mod session;
pub use session::RocksSession;

/// YCSB's rocksdb binding: `rocksdb.dir` is the database directory.
fn ycsb_options(props: &mut Properties) -> Result<toml::Table, crate::YcsbBindingError> {
    let mut t = toml::Table::new();
    match crate::claim_value(props, "rocksdb.dir") {
        Some((dir, _)) => {
            t.insert("path".into(), toml::Value::String(dir));
        }
        None => {
            return Err(crate::YcsbBindingError {
                property: storlab_workload::ycsb::Property {
                    name: "rocksdb.dir".into(),
                    value: String::new(),
                    origin: storlab_workload::ycsb::Origin::Override { index: 0 },
                },
                reason: "the rocksdb binding needs -p rocksdb.dir=DIR".into(),
            });
        }
    }
    Ok(t)
}

pub const TYPE: TargetType = TargetType {
    name: "rocksdb",
    summary: "an embedded RocksDB database in a directory (the system's librocksdb)",
    options: &[
        ("path", "the database directory (created if missing)"),
        (
            "block-cache-size",
            "LRU block cache for uncompressed blocks (default 8MiB, as db_bench)",
        ),
        (
            "direct-reads",
            "O_DIRECT for reads of SST files (default false)",
        ),
        (
            "direct-io-for-flush-and-compaction",
            "O_DIRECT for flush and compaction I/O (default false)",
        ),
        (
            "compression",
            "none, snappy (default, as db_bench), zlib, bz2, lz4, lz4hc or zstd",
        ),
        ("write-buffer-size", "memtable size (default 64MiB)"),
        (
            "max-background-jobs",
            "flush and compaction threads (default 2)",
        ),
        (
            "bloom-bits",
            "bloom filter bits per key (default 0: no filter)",
        ),
        ("sync-writes", "sync the WAL on every write (default false)"),
        ("disable-wal", "write without a WAL (default false)"),
        (
            "use-existing-db",
            "the database must exist; never create or recreate it (default false)",
        ),
        (
            "remove-after",
            "delete the database after the study if storlab created it (default false)",
        ),
    ],
    parse,
    file_server: None,
    ycsb: Some(YcsbBinding {
        names: &[],
        classes: &["site.ycsb.db.rocksdb.RocksDBClient"],
        batch: None,
        options: ycsb_options,
    }),
};

/// Compression of SST blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    #[default]
    Snappy,
    Zlib,
    Bz2,
    Lz4,
    Lz4hc,
    Zstd,
}

impl Compression {
    pub const NAMES: &'static [&'static str] =
        &["none", "snappy", "zlib", "bz2", "lz4", "lz4hc", "zstd"];

    fn to_rocksdb(self) -> DBCompressionType {
        match self {
            Compression::None => DBCompressionType::None,
            Compression::Snappy => DBCompressionType::Snappy,
            Compression::Zlib => DBCompressionType::Zlib,
            Compression::Bz2 => DBCompressionType::Bz2,
            Compression::Lz4 => DBCompressionType::Lz4,
            Compression::Lz4hc => DBCompressionType::Lz4hc,
            Compression::Zstd => DBCompressionType::Zstd,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RocksConfig {
    pub path: PathBuf,
    #[serde(default = "default_cache")]
    pub block_cache_size: Bytes,
    #[serde(default)]
    pub direct_reads: bool,
    #[serde(default)]
    pub direct_io_for_flush_and_compaction: bool,
    #[serde(default)]
    pub compression: Compression,
    #[serde(default = "default_write_buffer")]
    pub write_buffer_size: Bytes,
    #[serde(default = "default_jobs")]
    pub max_background_jobs: u32,
    #[serde(default)]
    pub bloom_bits: f64,
    #[serde(default)]
    pub sync_writes: bool,
    #[serde(default)]
    pub disable_wal: bool,
    #[serde(default)]
    pub use_existing_db: bool,
    #[serde(default)]
    pub remove_after: bool,
}

fn default_cache() -> Bytes {
    Bytes(8 << 20)
}
fn default_write_buffer() -> Bytes {
    Bytes(64 << 20)
}
fn default_jobs() -> u32 {
    2
}

/// The file that marks a database storlab created (and so may remove).
pub const MARKER: &str = "STORLAB-DB";

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: RocksConfig = table.try_into().map_err(option_error)?;
    if c.max_background_jobs == 0 || c.max_background_jobs > 1024 {
        return Err(OptionError {
            key: "max-background-jobs".into(),
            message: "max-background-jobs must be from 1 to 1024".into(),
        });
    }
    if !(0.0..=64.0).contains(&c.bloom_bits) {
        return Err(OptionError {
            key: "bloom-bits".into(),
            message: "bloom-bits must be from 0 (no filter) to 64".into(),
        });
    }
    if c.write_buffer_size.0 < 64 << 10 {
        return Err(OptionError {
            key: "write-buffer-size".into(),
            message: "write-buffer-size must be at least 64KiB".into(),
        });
    }
    if c.sync_writes && c.disable_wal {
        return Err(OptionError {
            key: "sync-writes".into(),
            message: "sync-writes syncs the WAL: it cannot go with disable-wal".into(),
        });
    }
    Ok(TargetConfig::Rocksdb(c))
}

/// The open database its sessions share during a run.
pub struct Shared {
    pub db: DB,
    config: RocksConfig,
}

impl Shared {
    /// The library version as RocksDB wrote it into the database's OPTIONS file.
    pub fn software(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(v) = library_version(&self.config.path) {
            out.push(("rocksdb".to_string(), v));
        }
        out
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Without a WAL, what is still in the memtable would be lost when the database closes.
        if self.config.disable_wal {
            let _ = self.db.flush();
        }
    }
}

/// Reads `rocksdb_version` from the newest OPTIONS file RocksDB wrote in `dir`.
pub fn library_version(dir: &Path) -> Option<String> {
    let mut newest: Option<(u64, PathBuf)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let name = e.file_name();
        let name = name.to_str()?;
        if let Some(n) = name
            .strip_prefix("OPTIONS-")
            .and_then(|n| n.parse::<u64>().ok())
            && newest.as_ref().is_none_or(|(m, _)| n > *m) {
                newest = Some((n, e.path()));
            }
    }
    let text = std::fs::read_to_string(newest?.1).ok()?;
    text.lines()
        .find_map(|l| l.trim().strip_prefix("rocksdb_version="))
        .map(|v| v.trim().to_string())
}

fn rocks_error(path: &Path, what: &'static str, e: rocksdb::Error) -> TargetError {
    TargetError::io(path, what, std::io::Error::other(e.into_string()))
}

impl Target for RocksConfig {
    const TYPE: TargetType = TYPE;
    type Shared = Shared;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[storlab_model::WorkloadKind::DbBench, storlab_model::WorkloadKind::Ycsb],
            ops: &[
                OpKind::Read,
                OpKind::Write,
                OpKind::Update,
                OpKind::Insert,
                OpKind::ReadModifyWrite,
                OpKind::Delete,
                OpKind::Scan,
            ],
            overlap: Overlap::None,
            in_process: true,
            writes_given_buffers: false,
            reads_records_back: true,
            keeps_ledger: false,
        }
    }

    fn paths(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, Shared), TargetError> {
        Ok((Region::default(), self.open_db(opts)?))
    }

    fn open<U: SessionUser>(
        &self,
        shared: &Shared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        self.open_session(shared, params, user)
    }

    fn software(&self, shared: &Shared) -> Vec<(String, String)> {
        shared.software()
    }

    fn finish(&self) {
        self.remove_if_created();
    }

}

impl RocksConfig {
    /// The RocksDB options this target sets.
    pub fn options(&self) -> Options {
        let mut o = Options::default();
        o.create_if_missing(!self.use_existing_db);
        o.set_compression_type(self.compression.to_rocksdb());
        o.set_write_buffer_size(self.write_buffer_size.0 as usize);
        o.set_max_background_jobs(self.max_background_jobs as i32);
        o.set_use_direct_reads(self.direct_reads);
        o.set_use_direct_io_for_flush_and_compaction(self.direct_io_for_flush_and_compaction);
        let mut t = BlockBasedOptions::default();
        if self.block_cache_size.0 > 0 {
            if let Ok(cache) = Cache::new_lru_cache(self.block_cache_size.0 as usize) {
                t.set_block_cache(&cache);
            }
        } else {
            t.disable_cache();
        }
        if self.bloom_bits > 0.0 {
            t.set_bloom_filter(self.bloom_bits, false);
        }
        o.set_block_based_table_factory(&t);
        o
    }

    /// Opens the database for a run (recreating it first for a fill benchmark).
    pub fn open_db(&self, opts: &PrepareOptions) -> Result<Shared, TargetError> {
        let path = &self.path;
        let exists = path.join("CURRENT").exists();
        if opts.fresh {
            if self.use_existing_db {
                return Err(TargetError::Invalid(format!(
                    "{}: use-existing-db = true cannot run a fill benchmark, which starts from an empty database",
                    path.display()
                )));
            }
            if exists {
                if !path.join(MARKER).exists() {
                    return Err(TargetError::Invalid(format!(
                        "{}: holds a RocksDB database that storlab did not create; a fill benchmark would destroy it. Remove it yourself, or point `path` at another directory",
                        path.display()
                    )));
                }
                DB::destroy(&Options::default(), path)
                    .map_err(|e| rocks_error(path, "removing the previous database", e))?;
            }
        } else if self.use_existing_db && !exists {
            return Err(TargetError::Invalid(format!(
                "{}: no RocksDB database there (use-existing-db = true)",
                path.display()
            )));
        }
        let created = !path.join("CURRENT").exists();
        if created {
            std::fs::create_dir_all(path)
                .map_err(|e| TargetError::io(path, "creating the database directory", e))?;
        }
        let db = DB::open(&self.options(), path).map_err(|e| rocks_error(path, "opening", e))?;
        if created {
            std::fs::write(
                path.join(MARKER),
                "This RocksDB database was created by storlab, which may remove it.\n",
            )
            .map_err(|e| TargetError::io(path, "marking the database", e))?;
        }
        Ok(Shared {
            db,
            config: self.clone(),
        })
    }

    fn open_session<U: SessionUser>(
        &self,
        shared: &Shared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let shape = params.kv_shape().unwrap_or(KvShape {
            key_bytes: 16,
            value_bytes: 100,
            compression_ratio: 0.5,
        });
        let mut write = WriteOptions::default();
        write.set_sync(self.sync_writes);
        write.disable_wal(self.disable_wal);
        let session = RocksSession {
            db: &shared.db,
            read: ReadOptions::default(),
            write,
            key: vec![0u8; shape.key_bytes as usize],
            values: ValueGen::new(&shape, params.seed.wrapping_add(params.worker as u64)),
            iter: None,
            record: params
                .ycsb()
                .map(|w| {
                    RecordBuf::new(w, params.seed ^ (params.worker as u64 + 1) << 32)
                        .with_verify(params.kv_verify(), params.queue_depth)
                }),
            encoded: Vec::new(),
        };
        Ok(user.run(session))
    }

    /// Removes the database after the study if asked to and storlab created it.
    fn remove_if_created(&self) {
        if self.remove_after && self.path.join(MARKER).exists() {
            let _ = DB::destroy(&Options::default(), &self.path);
            // What RocksDB leaves behind (its info logs and lock file) and the marker; the
            // directory goes only if nothing else is in it.
            if let Ok(entries) = std::fs::read_dir(&self.path) {
                for e in entries.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    if name == "LOG"
                        || name.starts_with("LOG.old.")
                        || name == "LOCK"
                        || name == MARKER
                    {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
            let _ = std::fs::remove_dir(&self.path);
        }
    }
}
