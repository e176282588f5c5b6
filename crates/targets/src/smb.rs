//! The `smb` target: a file on an SMB 2/3 share, driven from user space by the pure-Rust
//! `smb` crate (tokio), many reads and writes in flight on one connection, bounded by the
//! server's SMB credits. One connection, session and tree connect per target, shared by its
//! workers (as the Windows redirector keeps one session per client): see `link`. Each worker
//! opens its own handle on the test file and keeps `queue-depth` operations in flight on it:
//! see `slots` for how the synchronous session drives the crate's futures, and what the crate
//! and tokio allocate per operation. TCP_NODELAY is set by storlab's own transport
//! (`transport`): the crate does not set it.
//!
//! The test file follows IOmeter's `iobw.tst`: created and filled with incompressible data
//! once, reused as it is when it already holds at least `size` bytes, extended when shorter;
//! what was done is in every worker's `used()`. The URL's password never leaves this module:
//! the URL is serialized and shown without it.

mod link;
mod reader;
mod slots;
mod transport;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use smb::Dialect;
use smb::connection::EncryptionMode;

use crate::{
    Capabilities, OptionError, PrepareOptions, Region, SessionParams, SessionUser,
    Target, TargetConfig, TargetError, TargetType, option_error, redact_url,
};
use storlab_model::units::{Bytes, Dur};
use link::{Endpoint, Layout, Link, LinkError, Negotiated, Protocol};
pub use reader::{PASSWORD_ENV, SmbReader, is_url};
pub use slots::SmbSession;

/// The `smb` crate storlab is built with (Cargo.toml pins it).
const SMB_CRATE_VERSION: &str = "0.12.1";

pub const TYPE: TargetType = TargetType {
    name: "smb",
    summary: "a file on an SMB 2/3 share, through the pure-Rust smb crate: operations in flight together on one connection per target",
    options: &[
        (
            "url",
            "smb://user:password@host[:port]/share/path/to/file (port 445 by default; the password is never stored or shown)",
        ),
        (
            "size",
            "bytes of the test file: created and filled once, reused when it holds at least that many, extended when shorter (IOmeter's iobw.tst); without it the file must exist",
        ),
        (
            "dialect",
            "\"2.0.2\", \"2.1\", \"3.0\", \"3.0.2\" or \"3.1.1\" to use only that one (default: the highest both sides speak)",
        ),
        (
            "encryption",
            "\"allowed\" (default: the server decides), \"required\" (refuse a server that cannot) or \"disabled\"",
        ),
        (
            "timeout",
            "connecting, and each request (default \"10s\"); a failed connection is retried for this long before an operation fails",
        ),
        (
            "io-threads",
            "threads of a runtime of their own that drive the connection; 0 (default): the workers drive it themselves while they wait for completions (no hand-off between threads per operation)",
        ),
    ],
    parse,
    file_server: Some(crate::url_server),
    ycsb: None,
};

/// Which dialect to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DialectChoice {
    #[default]
    #[serde(rename = "highest")]
    Highest,
    #[serde(rename = "2.0.2")]
    Smb202,
    #[serde(rename = "2.1")]
    Smb21,
    #[serde(rename = "3.0")]
    Smb30,
    #[serde(rename = "3.0.2")]
    Smb302,
    #[serde(rename = "3.1.1")]
    Smb311,
}

impl DialectChoice {
    fn dialect(self) -> Option<Dialect> {
        match self {
            DialectChoice::Highest => None,
            DialectChoice::Smb202 => Some(Dialect::Smb0202),
            DialectChoice::Smb21 => Some(Dialect::Smb021),
            DialectChoice::Smb30 => Some(Dialect::Smb030),
            DialectChoice::Smb302 => Some(Dialect::Smb0302),
            DialectChoice::Smb311 => Some(Dialect::Smb0311),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encryption {
    #[default]
    Allowed,
    Required,
    Disabled,
}

impl Encryption {
    fn mode(self) -> EncryptionMode {
        match self {
            Encryption::Allowed => EncryptionMode::Allowed,
            Encryption::Required => EncryptionMode::Required,
            Encryption::Disabled => EncryptionMode::Disabled,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SmbConfig {
    #[serde(serialize_with = "crate::serialize_redacted_url")]
    pub url: String,
    pub size: Option<Bytes>,
    #[serde(default)]
    pub dialect: DialectChoice,
    #[serde(default)]
    pub encryption: Encryption,
    #[serde(default = "default_timeout")]
    pub timeout: Dur,
    #[serde(default = "default_io_threads")]
    pub io_threads: u32,
}

fn default_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}

fn default_io_threads() -> u32 {
    0
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: SmbConfig = table.try_into().map_err(option_error)?;
    parse_url(&c.url).map_err(|message| OptionError {
        key: "url".into(),
        message,
    })?;
    if c.size == Some(Bytes(0)) {
        return Err(OptionError {
            key: "size".into(),
            message: "size must be above 0".into(),
        });
    }
    if c.timeout.0.is_zero() {
        return Err(OptionError {
            key: "timeout".into(),
            message: "timeout must be above 0".into(),
        });
    }
    if c.io_threads > 64 {
        return Err(OptionError {
            key: "io-threads".into(),
            message: format!("io-threads must be 0 to 64 (got {})", c.io_threads),
        });
    }
    Ok(TargetConfig::Smb(c))
}

/// Decodes `%XX` escapes (a password may hold `@`, `:` or `/`).
fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("`%` must start an escape like %40 (at byte {i})"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "an escape decodes to invalid UTF-8".to_string())
}

/// `smb://user:password@host[:port]/share/path/to/file`.
fn parse_url(url: &str) -> Result<Endpoint, String> {
    let shown = redact_url(url);
    let rest = url
        .strip_prefix("smb://")
        .ok_or_else(|| format!("`{shown}` does not start with smb://"))?;
    let (authority, path) = rest
        .split_once('/')
        .ok_or_else(|| format!("`{shown}` names no share: smb://user:password@host/share/file"))?;
    let (userinfo, hostport) = authority
        .rsplit_once('@')
        .ok_or_else(|| format!("`{shown}` names no user: smb://user:password@host/share/file"))?;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let user = percent_decode(user)?;
    if user.is_empty() {
        return Err(format!("`{shown}` names no user"));
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || hostport.starts_with('[') => {
            let port = p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("`{p}` in `{shown}` is not a port number (1 to 65535)"))?;
            (h, port)
        }
        _ => (hostport, 445),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("`{shown}` names no host"));
    }
    let mut parts = path.split('/').filter(|p| !p.is_empty());
    let share = parts
        .next()
        .ok_or_else(|| format!("`{shown}` names no share"))?;
    let file: Vec<String> = parts.map(percent_decode).collect::<Result<_, _>>()?;
    if file.is_empty() {
        return Err(format!(
            "`{shown}` names a share but no file in it: smb://user:password@host/share/path/to/file"
        ));
    }
    if file.iter().any(|p| p == "." || p == "..") {
        return Err(format!("`{shown}`: the file's path may not hold `.` or `..`"));
    }
    Ok(Endpoint {
        host: host.to_string(),
        port,
        user,
        password: percent_decode(password)?,
        share: percent_decode(share)?,
        file: file.join("\\"),
    })
}

/// What a prepared target's sessions share: the runtime that drives the connection, the
/// connection, and what preparing found.
pub struct SmbShared {
    /// With `io-threads = 0` a current-thread runtime, driven by whichever worker waits.
    runtime: Option<Arc<tokio::runtime::Runtime>>,
    link: Arc<Link>,
    layout: Layout,
    negotiated: Negotiated,
    io_threads: u32,
}

impl Drop for SmbShared {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            let link = self.link.clone();
            rt.block_on(async move {
                let _ = tokio::time::timeout(Duration::from_secs(2), link.close()).await;
            });
            if let Ok(rt) = Arc::try_unwrap(rt) {
                rt.shutdown_timeout(Duration::from_secs(2));
            }
        }
    }
}

impl SmbConfig {
    fn endpoint(&self) -> Result<Endpoint, TargetError> {
        parse_url(&self.url).map_err(TargetError::Invalid)
    }

    fn failed(&self, e: LinkError) -> TargetError {
        TargetError::Invalid(format!("{}: {e}", redact_url(&self.url)))
    }

    fn facts(shared: &SmbShared) -> Vec<(&'static str, String)> {
        let n = &shared.negotiated;
        vec![
            ("smb.test-file", shared.layout.describe()),
            ("smb.dialect", n.dialect.clone()),
            ("smb.signing", format!("always for an authenticated session (the crate has no option), algorithm {}", n.signing)),
            ("smb.encryption", n.encryption.clone()),
            (
                "smb.tcp-nodelay",
                match &n.nodelay {
                    Ok(true) => "yes (set by storlab's transport; the crate's leaves it off)".into(),
                    Ok(false) => "no (the socket refused it)".into(),
                    Err(e) => format!("no ({e})"),
                },
            ),
            (
                "smb.max-read-write-bytes",
                format!("{} / {}", n.max_read_bytes, n.max_write_bytes),
            ),
            (
                "smb.connection",
                "one per target, shared by its workers; each worker opens its own file handle".into(),
            ),
            (
                "smb.io-threads",
                match shared.io_threads {
                    0 => "0 (the workers drive the connection while they wait)".into(),
                    n => format!("{n} (a runtime of their own drives the connection)"),
                },
            ),
        ]
    }
}

impl Target for SmbConfig {
    const TYPE: TargetType = TYPE;
    type Shared = SmbShared;

    fn capabilities(&self) -> Capabilities {
        Capabilities::FILE_ON_SERVER
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, SmbShared), TargetError> {
        let endpoint = self.endpoint()?;
        let runtime = match self.io_threads {
            0 => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            n => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n as usize)
                .thread_name("storlab-smb")
                .enable_all()
                .build(),
        }
        .map(Arc::new)
        .map_err(|e| self.failed(LinkError::Runtime(e.to_string())))?;
        let link = Arc::new(Link::new(
            endpoint,
            Protocol {
                dialect: self.dialect.dialect(),
                encryption: self.encryption.mode(),
                timeout: self.timeout.0,
            },
        ));
        let prepared = runtime.block_on({
            let link = link.clone();
            let size = self.size.map(|s| s.0);
            async move {
                let (bytes, layout) = link.prepare_file(size).await?;
                let c = link.connection(None).await?;
                Ok::<_, LinkError>((bytes, layout, c.negotiated.clone()))
            }
        });
        let shared_of = |layout, negotiated| SmbShared {
            runtime: None,
            link: link.clone(),
            layout,
            negotiated,
            io_threads: self.io_threads,
        };
        let (bytes, layout, negotiated) = match prepared {
            Ok(p) => p,
            Err(e) => {
                // Close what was opened inside the runtime before it goes.
                let mut s = shared_of(
                    Layout::Reused { file_bytes: 0 },
                    Negotiated {
                        dialect: String::new(),
                        signing: String::new(),
                        encryption: String::new(),
                        max_read_bytes: 0,
                        max_write_bytes: 0,
                        nodelay: Ok(false),
                    },
                );
                s.runtime = Some(runtime);
                drop(s);
                return Err(self.failed(e));
            }
        };
        let mut shared = shared_of(layout, negotiated);
        shared.runtime = Some(runtime);
        if bytes < opts.min_size_bytes {
            return Err(TargetError::Invalid(format!(
                "{}: the file ({bytes} bytes) is smaller than one block ({} bytes)",
                redact_url(&self.url),
                opts.min_size_bytes
            )));
        }
        Ok((
            Region {
                offset_bytes: 0,
                size_bytes: bytes,
            },
            shared,
        ))
    }

    fn open<U: SessionUser>(
        &self,
        shared: &SmbShared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        let block = params.block_only("smb")?;
        let Some(rt) = shared.runtime.as_ref() else {
            return Err(TargetError::Invalid(
                "the smb target's runtime is gone".into(),
            ));
        };
        let files = rt
            .block_on(slots::Files::open(shared.link.clone(), params.writes))
            .map_err(|e| self.failed(e))?;
        let driver = if self.io_threads == 0 {
            slots::Driver::Workers(rt.clone())
        } else {
            slots::Driver::Threads(rt.handle().clone())
        };
        let session = SmbSession::open(
            driver,
            shared.link.clone(),
            files,
            (params, block),
            self.timeout.0,
            Self::facts(shared),
        );
        Ok(user.run(session))
    }

    fn software(&self, shared: &SmbShared) -> Vec<(String, String)> {
        vec![
            ("smb-crate".into(), SMB_CRATE_VERSION.into()),
            ("smb-dialect".into(), shared.negotiated.dialect.clone()),
        ]
    }

    /// The verify pass reads the file back through the same connection code, from its URL
    /// (the password stays in memory; a saved state holds the URL without it).
    fn verify_file(&self) -> Option<crate::ReadBackFile> {
        Some(crate::ReadBackFile {
            path: self.url.clone().into(),
            direct: false,
        })
    }

    /// `--quick`: at most 64 MiB.
    fn make_quick(&mut self) {
        let cap = 64u64 << 20;
        if self.size.is_some_and(|s| s.0 > cap) {
            self.size = Some(Bytes(cap));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<SmbConfig, OptionError> {
        let table: toml::Table = toml::from_str(text).unwrap();
        match parse(table)? {
            TargetConfig::Smb(c) => Ok(c),
            _ => unreachable!("parse returns smb targets"),
        }
    }

    #[test]
    fn urls_name_user_host_share_and_file() {
        let e = parse_url("smb://root:se%40cret@127.0.0.1:54445/share1/dir/f.dat").unwrap();
        assert_eq!(
            (e.user.as_str(), e.password.as_str(), e.host.as_str(), e.port),
            ("root", "se@cret", "127.0.0.1", 54445)
        );
        assert_eq!((e.share.as_str(), e.file.as_str()), ("share1", "dir\\f.dat"));
        let e = parse_url("smb://u:p@server/s/f").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("server", 445));
    }

    #[test]
    fn bad_urls_are_refused_without_showing_the_password() {
        for url in [
            "cifs://u:pw1@h/s/f",
            "smb://u:pw1@h",
            "smb://u:pw1@h/share",
            "smb://u:pw1@h:0/s/f",
            "smb://u:pw1@h:x/s/f",
            "smb://h/s/f",
            "smb://u:pw1@h/s/../f",
        ] {
            let Err(e) = parse_url(url) else {
                panic!("{url} was accepted")
            };
            assert!(!e.contains("pw1"), "{url}: {e}");
        }
    }

    #[test]
    fn options_are_checked_and_the_password_is_not_serialized() {
        let c = parse_text(
            "url = \"smb://u:hunter2@h/s/f\"\nsize = \"1MiB\"\ndialect = \"3.0.2\"\nencryption = \"required\"",
        )
        .unwrap();
        assert_eq!(c.dialect.dialect(), Some(Dialect::Smb0302));
        assert_eq!(c.encryption.mode(), EncryptionMode::Required);
        let json = serde_json::to_string(&TargetConfig::Smb(c)).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        assert!(json.contains(storlab_model::units::MASK), "{json}");
        for (text, key) in [
            ("url = \"smb://u:p@h/s\"", "url"),
            ("url = \"smb://u:p@h/s/f\"\nsize = 0", "size"),
            ("url = \"smb://u:p@h/s/f\"\ndialect = \"3.2\"", "dialect"),
            ("url = \"smb://u:p@h/s/f\"\nio-threads = 65", "io-threads"),
            ("url = \"smb://u:p@h/s/f\"\nsigning = true", "signing"),
        ] {
            let e = parse_text(text).expect_err(text);
            assert_eq!(e.key, key, "{text}: {}", e.message);
        }
    }
}
