//! The `nfs` target: a file on an NFS server, driven from user space through libnfs's
//! asynchronous API (no kernel mount, so any Linux client can run it, and the study sees the
//! server and the network rather than a kernel client's cache). Each worker opens its own
//! libnfs context, one TCP connection to the server, and keeps `queue-depth` reads, writes and
//! commits in flight on it (`session`).
//!
//! The test file is IOmeter's `iobw.tst`: created and filled with incompressible data once,
//! then reused (extended when a study asks for more). The URL is libnfs's:
//! `nfs://server/export/path/file?version=3&nfsport=N&mountport=M`.

mod ffi;
mod session;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::{
    Capabilities, OptionError, PrepareOptions, Region, SessionParams, SessionUser,
    Target, TargetConfig, TargetError, TargetType, option_error,
};
use storlab_model::units::{Bytes, Dur};
use ffi::{Mounted, OpenHow};
use session::NfsSession;

pub const TYPE: TargetType = TargetType {
    name: "nfs",
    summary: "a file on an NFS server (v3, or v4), through libnfs from user space, many operations in flight per connection",
    options: &[
        (
            "url",
            "nfs://server/export/path/file, with libnfs's options after `?` (version=3 or 4, nfsport=N, mountport=M, uid=N, gid=N)",
        ),
        (
            "size",
            "bytes to address; the file is created and filled with incompressible data up to this size once, then reused (default: the existing file's size)",
        ),
        (
            "timeout",
            "how long one call may wait for the server before it fails with an error (default \"10s\"; whole seconds)",
        ),
        (
            "open-sync",
            "\"sync\": open the file O_SYNC, so that every WRITE is sent FILE_SYNC and acknowledged only once on the server's stable storage (the verify pass then counts each acknowledged write durable); default: UNSTABLE writes, durable at the workload's fsync (a COMMIT)",
        ),
    ],
    parse,
    file_server: Some(crate::url_server),
    ycsb: None,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NfsConfig {
    pub url: String,
    pub size: Option<Bytes>,
    pub timeout: Option<Dur>,
    /// Only `sync`: NFS has no O_DSYNC of its own (libnfs sends FILE_SYNC for O_SYNC alone).
    pub open_sync: Option<crate::file::OpenSync>,
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: NfsConfig = table.try_into().map_err(option_error)?;
    let Some(rest) = c.url.strip_prefix("nfs://") else {
        return Err(OptionError {
            key: "url".into(),
            message: format!(
                "`{}` is not an NFS URL: write nfs://server/export/path/file",
                c.url
            ),
        });
    };
    let path = rest.split('?').next().unwrap_or("");
    let (server, path) = path.split_once('/').unwrap_or((path, ""));
    if server.is_empty() || !path.contains('/') || path.ends_with('/') {
        return Err(OptionError {
            key: "url".into(),
            message: format!(
                "`{}` needs a server, an export and a file: nfs://server/export/file",
                c.url
            ),
        });
    }
    if c.size == Some(Bytes(0)) {
        return Err(OptionError {
            key: "size".into(),
            message: "size must be above 0".into(),
        });
    }
    if c.open_sync == Some(crate::file::OpenSync::Dsync) {
        return Err(OptionError {
            key: "open-sync".into(),
            message: "\"dsync\" is not taken by the nfs target: libnfs sends FILE_SYNC writes for O_SYNC alone; write \"sync\"".into(),
        });
    }
    if c.timeout.is_some_and(|t| t.0.as_secs() == 0) {
        return Err(OptionError {
            key: "timeout".into(),
            message: "timeout must be at least 1s (libnfs counts whole seconds)".into(),
        });
    }
    Ok(TargetConfig::Nfs(c))
}

/// What the target's sessions share: what preparing the test file did.
pub struct NfsShared {
    test_file: String,
}

impl NfsConfig {
    fn timeout_ms(&self) -> u32 {
        self.timeout
            .map_or(10_000, |t| t.0.as_millis().min(u32::MAX as u128) as u32)
    }

    /// The NFS version the URL asks for (libnfs's default: 3).
    fn version(&self) -> &str {
        self.url
            .split_once('?')
            .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("version=")))
            .unwrap_or("3")
    }

    fn error(&self, e: ffi::NfsError) -> TargetError {
        TargetError::Invalid(format!("nfs target {}: {e}", self.url))
    }
}

impl Target for NfsConfig {
    const TYPE: TargetType = TYPE;
    type Shared = NfsShared;

    fn capabilities(&self) -> Capabilities {
        Capabilities::FILE_ON_SERVER
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, NfsShared), TargetError> {
        // Filled and committed here; the sessions open it as `open-sync` says.
        let how = OpenHow {
            create: true,
            sync: false,
            timeout_ms: self.timeout_ms(),
        };
        let (m, created) = Mounted::open(&self.url, how).map_err(|e| self.error(e))?;
        let existing = m.size_bytes().map_err(|e| self.error(e))?;
        let size = match self.size {
            Some(s) => s.0,
            None if existing > 0 => existing,
            None => {
                return Err(TargetError::Invalid(format!(
                    "nfs target {}: the file is empty: give `size` so that storlab can fill it",
                    self.url
                )));
            }
        };
        let test_file = if existing < size {
            if opts.verbose && size - existing >= 256 << 20 {
                eprintln!(
                    "filling {} on {} ({} MiB)...",
                    m.file,
                    m.server,
                    (size - existing) >> 20
                );
            }
            fill(&m, existing, size).map_err(|e| self.error(e))?;
            if created {
                format!("created and filled ({size} bytes)")
            } else {
                format!("extended from {existing} to {size} bytes")
            }
        } else {
            format!("reused ({existing} bytes)")
        };
        if size < opts.min_size_bytes {
            return Err(TargetError::Invalid(format!(
                "nfs target {}: the region ({size} bytes) is smaller than one block ({} bytes)",
                self.url, opts.min_size_bytes
            )));
        }
        Ok((
            Region {
                offset_bytes: 0,
                size_bytes: size,
            },
            NfsShared { test_file },
        ))
    }

    fn open<U: SessionUser>(
        &self,
        shared: &NfsShared,
        p: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let how = OpenHow {
            create: false,
            sync: self.open_sync.is_some(),
            timeout_ms: self.timeout_ms(),
        };
        let (m, _) = Mounted::open(&self.url, how).map_err(|e| self.error(e))?;
        let (read_max, write_max) = m.max_transfer_bytes();
        let b = p.block_only("nfs")?;
        if b.block_bytes as u64 > read_max.min(write_max) {
            return Err(TargetError::Invalid(format!(
                "nfs target {}: blocks of {} bytes are above what the server takes in one call ({} bytes read, {} write)",
                self.url, b.block_bytes, read_max, write_max
            )));
        }
        let used = vec![
            ("nfs.version", self.version().to_string()),
            ("nfs.server", m.server.clone()),
            ("nfs.export", m.export.clone()),
            ("nfs.connection", "one libnfs context (TCP connection) per worker".into()),
            ("nfs.max-read-bytes", read_max.to_string()),
            ("nfs.max-write-bytes", write_max.to_string()),
            ("nfs.test-file", shared.test_file.clone()),
            (
                "nfs.write-stability",
                if how.sync {
                    "FILE_SYNC (open-sync: each write on stable storage when acknowledged)"
                } else {
                    "UNSTABLE (durable once a COMMIT, the workload's fsync, completes)"
                }
                .into(),
            ),
        ];
        let session = NfsSession::new(m, &self.url, p, b, how, used);
        Ok(user.run(session))
    }

    fn software(&self, _shared: &NfsShared) -> Vec<(String, String)> {
        vec![("libnfs".into(), "4.0 (libnfs.so.13, asynchronous API)".into())]
    }

    /// The verify pass reads the file back through libnfs, from its URL.
    fn verify_file(&self) -> Option<crate::ReadBackFile> {
        Some(crate::ReadBackFile {
            path: self.url.clone().into(),
            direct: false,
        })
    }

    /// `--quick`: at most 64 MiB.
    fn make_quick(&mut self) {
        let cap = 64u64 << 20;
        if self.size.is_none_or(|s| s.0 > cap) {
            self.size = Some(Bytes(cap));
        }
    }
}

/// A file on an NFS server opened to read written blocks back (the verify pass), named by
/// its URL.
pub struct NfsReader(Mounted);

impl NfsReader {
    pub fn open(url: &str) -> std::io::Result<NfsReader> {
        let how = OpenHow {
            create: false,
            sync: false,
            timeout_ms: 10_000,
        };
        Mounted::open(url, how)
            .map(|(m, _)| NfsReader(m))
            .map_err(|e| std::io::Error::other(format!("{url}: {e}")))
    }

    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.0.read_at(buf, offset).map_err(|e| {
            if e.errno != 0 {
                std::io::Error::from_raw_os_error(e.errno)
            } else {
                std::io::Error::other(e.to_string())
            }
        })
    }
}

/// Whether a verify location is an NFS URL rather than a local path.
pub fn is_url(location: &std::path::Path) -> bool {
    location.to_str().is_some_and(|s| s.starts_with("nfs://"))
}

/// Writes incompressible data from `from` to `to` (the first bytes of each MiB say where it
/// is), then commits it.
fn fill(m: &Mounted, from: u64, to: u64) -> Result<(), ffi::NfsError> {
    let (_, write_max) = m.max_transfer_bytes();
    let chunk = (1usize << 20).min(write_max.max(4096) as usize);
    let mut buf = vec![0u8; chunk];
    rand::rngs::SmallRng::seed_from_u64(from ^ 0x5107_1ab0).fill_bytes(&mut buf);
    let mut pos = from;
    while pos < to {
        let n = ((to - pos) as usize).min(chunk);
        buf[..8].copy_from_slice(&pos.to_le_bytes());
        m.write_all_at(&buf[..n], pos)?;
        pos += n as u64;
    }
    m.fsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<NfsConfig, OptionError> {
        let table: toml::Table = toml::from_str(text).unwrap();
        match parse(table)? {
            TargetConfig::Nfs(c) => Ok(c),
            _ => unreachable!("parse returns nfs targets"),
        }
    }

    #[test]
    fn a_url_needs_a_server_an_export_and_a_file() {
        for bad in [
            "http://h/e/f",
            "nfs:///export/file",
            "nfs://host/file",
            "nfs://host/export/",
        ] {
            let e = parse_text(&format!("url = \"{bad}\"")).unwrap_err();
            assert_eq!(e.key, "url", "{bad}: {}", e.message);
        }
        let c = parse_text("url = \"nfs://10.0.0.2/export1/iobw.tst?version=4\"").unwrap();
        assert_eq!(c.version(), "4");
        let c = parse_text("url = \"nfs://10.0.0.2/export1/sub/iobw.tst\"").unwrap();
        assert_eq!(c.version(), "3");
        assert_eq!(c.timeout_ms(), 10_000);
    }

    #[test]
    fn options_are_checked() {
        let e = parse_text("url = \"nfs://h/e/f\"\nsize = 0").unwrap_err();
        assert_eq!(e.key, "size");
        let e = parse_text("url = \"nfs://h/e/f\"\ntimeout = \"200ms\"").unwrap_err();
        assert_eq!(e.key, "timeout");
        let e = parse_text("url = \"nfs://h/e/f\"\nthreads = 2").unwrap_err();
        assert_eq!(e.key, "threads", "{}", e.message);
        let c = parse_text("url = \"nfs://h/e/f\"\nopen-sync = \"sync\"").unwrap();
        assert_eq!(c.open_sync, Some(crate::file::OpenSync::Sync));
        let e = parse_text("url = \"nfs://h/e/f\"\nopen-sync = \"dsync\"").unwrap_err();
        assert_eq!(e.key, "open-sync");
        assert!(e.message.contains("write \"sync\""), "{}", e.message);
    }
}
