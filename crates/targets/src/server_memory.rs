//! A database server's memory held to a share of its data, as a brief states it (the MongoDB
//! brief: a 460.04 GB database on a server allowed 150 GB): the memory-to-data ratio decides
//! how much of the data the server can cache, hence its latency and ops/s.
//!
//! The server runs in a memory cgroup the user names (`server-cgroup`); storlab never moves
//! or kills its processes. When a run starts, storlab sets that cgroup's limit (cgroup v2's
//! `memory.max`; on a host whose memory controller is on cgroup v1, `memory.limit_in_bytes`)
//! to the server's memory other than its page cache (the cgroup's usage less the page cache
//! of its `memory.stat`: heap, kernel memory, sockets) plus the share of the database's size
//! plus a headroom for the server's own growth during the run (connections, buffers: what it
//! allocates comes out of its cache, and past the limit it is OOM-killed), so that what it
//! can cache of the data is that share; the kernel reclaims the page cache down to it at once. The limit is said as an event of the run, and the cgroup's earlier
//! limit is put back when the run ends. An empty database (before a load) sets nothing, and
//! the event says so. Memory the server allocates past the limit makes the kernel's OOM
//! killer stop it: a fault of the system under test, counted as its errors.
//!
//! An engine whose own cache is heap memory (MongoDB's WiredTiger) counts that cache in the
//! memory kept at the start: give it a cache size of its own as well (`--wiredTigerCacheSizeGB`),
//! and the limit keeps it from growing past it.

use std::path::{Path, PathBuf};

use crate::TargetError;

/// The memory limit set on a server's cgroup for one run; put back when dropped.
#[derive(Debug)]
pub struct MemoryLimit {
    /// The cgroup's limit file and its value before the run, to put back; None when nothing
    /// was set.
    restore: Option<(PathBuf, String)>,
    /// The event the run records: (kind, detail).
    event: (String, String),
}

/// What the server may keep: `of_data` of its database, plus `headroom_bytes` for its own
/// growth.
#[derive(Debug, Clone, Copy)]
pub struct Share {
    pub of_data: f64,
    pub headroom_bytes: u64,
}

/// How a server's data size was measured, for the event: `dbStats storageSize + indexSize`.
pub struct DataSize<'a> {
    pub bytes: u64,
    pub measured_by: &'a str,
}

const PAGE_BYTES: u64 = 4096;

/// The files of a memory cgroup, as its version names them.
struct Files {
    limit: &'static str,
    usage: &'static str,
    /// The page cache's field in `memory.stat`.
    cached: &'static str,
}

const V2: Files = Files {
    limit: "memory.max",
    usage: "memory.current",
    cached: "file",
};

const V1: Files = Files {
    limit: "memory.limit_in_bytes",
    usage: "memory.usage_in_bytes",
    cached: "total_cache",
};

impl Files {
    fn of(cgroup: &Path) -> Result<&'static Files, TargetError> {
        [&V2, &V1]
            .into_iter()
            .find(|f| cgroup.join(f.limit).is_file())
            .ok_or_else(|| {
                TargetError::Invalid(format!(
                    "server-cgroup {}: no memory.max (cgroup v2) nor memory.limit_in_bytes (v1): not a memory cgroup",
                    cgroup.display()
                ))
            })
    }
}

impl MemoryLimit {
    /// Sets `cgroup`'s `memory.max` so that the server may cache `share` of `data`.
    pub fn set(cgroup: &Path, share: Share, data: DataSize) -> Result<MemoryLimit, TargetError> {
        let files = Files::of(cgroup)?;
        let file = |name: &str| cgroup.join(name);
        let fail = |what: String, e: std::io::Error| {
            TargetError::Invalid(format!("server-cgroup {}: {what}: {e}", cgroup.display()))
        };
        let read = |name: &str| {
            std::fs::read_to_string(file(name)).map_err(|e| fail(format!("reading {name}"), e))
        };
        let previous = read(files.limit)?.trim().to_string();
        if data.bytes == 0 {
            return Ok(MemoryLimit {
                restore: None,
                event: (
                    "server-memory-not-limited".into(),
                    format!(
                        "the database is empty ({}: 0 bytes), nothing to keep a share of; {} of {} stays {previous}",
                        data.measured_by,
                        files.limit,
                        cgroup.display()
                    ),
                ),
            });
        }
        let current: u64 = read(files.usage)?.trim().parse().map_err(|e| {
            TargetError::Invalid(format!(
                "server-cgroup {}: {}: {e}",
                cgroup.display(),
                files.usage
            ))
        })?;
        let cached = stat_field(&read("memory.stat")?, files.cached).unwrap_or(0);
        let kept = current.saturating_sub(cached);
        let of_data = (share.of_data * data.bytes as f64).ceil() as u64;
        let limit = (kept + of_data + share.headroom_bytes).div_ceil(PAGE_BYTES) * PAGE_BYTES;
        std::fs::write(file(files.limit), format!("{limit}\n"))
            .map_err(|e| fail(format!("writing {} = {limit}", files.limit), e))?;
        let set = read(files.limit)?.trim().to_string();
        let detail = format!(
            "{} of {} set to {set} bytes: the server's memory other than its page cache at the start ({kept} bytes) + {} x the database's {} bytes ({}) = {of_data} bytes it may cache + {} bytes of headroom for its own growth; it was {previous}, put back when the run ends",
            files.limit,
            cgroup.display(),
            share.of_data,
            data.bytes,
            data.measured_by,
            share.headroom_bytes
        );
        Ok(MemoryLimit {
            restore: Some((file(files.limit), previous)),
            event: ("server-memory-limited".into(), detail),
        })
    }

    /// The event the run records: (kind, detail).
    pub fn event(&self) -> (String, String) {
        self.event.clone()
    }
}

impl Drop for MemoryLimit {
    fn drop(&mut self) {
        if let Some((limit, previous)) = self.restore.take()
            && let Err(e) = std::fs::write(&limit, format!("{previous}\n"))
        {
            // Nothing to return to at the end of a run: said where the user sees it.
            eprintln!(
                "warning: could not put {} back to {previous}: {e}",
                limit.display()
            );
        }
    }
}

/// A field of a cgroup's `memory.stat` (`file 1234`).
fn stat_field(stat: &str, name: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder standing in for a cgroup: the files the kernel would have.
    fn cgroup(current: u64, file: u64) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("memory.max"), "max\n").unwrap();
        std::fs::write(d.path().join("memory.current"), format!("{current}\n")).unwrap();
        let stat = format!("anon 1000\nfile {file}\nkernel 20\n");
        std::fs::write(d.path().join("memory.stat"), stat).unwrap();
        d
    }

    #[test]
    fn the_limit_keeps_the_servers_own_memory_and_a_share_of_its_data_then_goes_back() {
        let d = cgroup(50 * PAGE_BYTES + 7, 30 * PAGE_BYTES);
        let data = DataSize {
            bytes: 100 * PAGE_BYTES,
            measured_by: "dbStats",
        };
        let share = Share {
            of_data: 0.326,
            headroom_bytes: 2 * PAGE_BYTES,
        };
        let limit = MemoryLimit::set(d.path(), share, data).unwrap();
        let max = std::fs::read_to_string(d.path().join("memory.max")).unwrap();
        // 20 pages and 7 bytes kept, 32.6 pages of data, 2 of headroom: 55 pages, rounded up.
        assert_eq!(max.trim(), (55 * PAGE_BYTES).to_string());
        let (kind, detail) = limit.event();
        assert_eq!(kind, "server-memory-limited");
        assert!(
            detail.contains("0.326 x the database's 409600 bytes (dbStats)"),
            "{detail}"
        );
        drop(limit);
        let max = std::fs::read_to_string(d.path().join("memory.max")).unwrap();
        assert_eq!(max.trim(), "max");
    }

    #[test]
    fn an_empty_database_sets_nothing_and_says_so_and_a_missing_cgroup_is_named() {
        let d = cgroup(100, 0);
        let empty = DataSize {
            bytes: 0,
            measured_by: "dbStats",
        };
        let half = Share {
            of_data: 0.5,
            headroom_bytes: 0,
        };
        let limit = MemoryLimit::set(d.path(), half, empty).unwrap();
        assert_eq!(limit.event().0, "server-memory-not-limited");
        drop(limit);
        let max = std::fs::read_to_string(d.path().join("memory.max")).unwrap();
        assert_eq!(max.trim(), "max");
        let gone = d.path().join("no-such-cgroup");
        let data = DataSize {
            bytes: 1,
            measured_by: "dbStats",
        };
        let e = MemoryLimit::set(&gone, half, data).unwrap_err().to_string();
        assert!(
            e.contains("no-such-cgroup") && e.contains("memory.max"),
            "{e}"
        );
    }

    /// A host whose memory controller is on cgroup v1 (this development machine's): the same
    /// limit in v1's files.
    #[test]
    fn a_v1_memory_cgroup_takes_the_same_limit() {
        let d = tempfile::tempdir().unwrap();
        let unlimited = "9223372036854771712";
        std::fs::write(d.path().join("memory.limit_in_bytes"), unlimited).unwrap();
        std::fs::write(d.path().join("memory.usage_in_bytes"), "40960").unwrap();
        let stat = "cache 99999\nrss 100\ntotal_cache 8192\n";
        std::fs::write(d.path().join("memory.stat"), stat).unwrap();
        let data = DataSize {
            bytes: 10 * PAGE_BYTES,
            measured_by: "dbStats",
        };
        let half = Share {
            of_data: 0.5,
            headroom_bytes: 0,
        };
        let limit = MemoryLimit::set(d.path(), half, data).unwrap();
        let set = std::fs::read_to_string(d.path().join("memory.limit_in_bytes")).unwrap();
        // 8 pages kept (10 used, 2 cached), 5 of data.
        assert_eq!(set.trim(), (13 * PAGE_BYTES).to_string());
        assert!(limit.event().1.starts_with("memory.limit_in_bytes of "));
        drop(limit);
        let back = std::fs::read_to_string(d.path().join("memory.limit_in_bytes")).unwrap();
        assert_eq!(back.trim(), unlimited);
    }
}
