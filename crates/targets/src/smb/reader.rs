//! Reading an `smb` target's file back for the verify pass (after a run, and `storlab verify`
//! from a saved state), through the target's own connection code ([`Link`]: storlab's
//! transport with TCP_NODELAY, logon, tree connect, open). One request at a time, on a
//! runtime of its own: the pass reads large sequential chunks and is timed on its own.
//!
//! A saved state holds the URL without its password (see
//! [`redact_url`]); reading such a URL back takes the password
//! from [`PASSWORD_ENV`], and says so when it is not set.

use std::sync::Arc;
use std::time::Duration;

use super::link::{Link, LinkError, Protocol};
use crate::redact_url;

/// The environment variable `storlab verify` takes an smb state's password from.
pub const PASSWORD_ENV: &str = "STORLAB_SMB_PASSWORD";

/// Connecting, and each read.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a verify location is an `smb://` URL rather than a local path.
pub fn is_url(location: &std::path::Path) -> bool {
    location.to_str().is_some_and(|s| s.starts_with("smb://"))
}

/// An open file on a share, read at offsets.
pub struct SmbReader {
    runtime: tokio::runtime::Runtime,
    link: Arc<Link>,
    file: Option<smb::File>,
    /// The most one read request may ask for (the server's negotiated maximum).
    max_read_bytes: usize,
    shown: String,
}

impl SmbReader {
    /// Opens the file `url` names (read only). A URL whose password was redacted takes it
    /// from [`PASSWORD_ENV`]. Errors do not repeat the URL (the caller names it).
    pub fn open(url: &str) -> std::io::Result<SmbReader> {
        let shown = redact_url(url);
        let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
        let mut endpoint = super::parse_url(url).map_err(invalid)?;
        if storlab_model::units::is_mask(&endpoint.password) {
            endpoint.password = match std::env::var(PASSWORD_ENV) {
                Ok(p) if !p.is_empty() => p,
                _ => {
                    return Err(invalid(format!(
                        "the password is never stored: set {PASSWORD_ENV} to the password of `{}` to read the file back",
                        endpoint.user
                    )));
                }
            };
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("storlab-smb-verify")
            .enable_all()
            .build()?;
        let link = Arc::new(Link::new(
            endpoint,
            Protocol {
                dialect: None,
                encryption: smb::connection::EncryptionMode::Allowed,
                timeout: TIMEOUT,
            },
        ));
        let opened = runtime.block_on({
            let link = link.clone();
            async move {
                let c = link.connection(None).await?;
                let file = link.open_file(&c, false).await?;
                Ok::<_, LinkError>((file, c.negotiated.max_read_bytes))
            }
        });
        let mut reader = SmbReader {
            runtime,
            link,
            file: None,
            max_read_bytes: 0,
            shown,
        };
        match opened {
            Ok((Some(file), max)) => {
                reader.file = Some(file);
                reader.max_read_bytes = (max as usize).max(4096);
                Ok(reader)
            }
            Ok((None, _)) => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the file does not exist",
            )),
            Err(e) => Err(std::io::Error::other(e.to_string())),
        }
    }

    /// Reads up to `buf.len()` bytes at `offset` (fewer at the end of the file, or above the
    /// server's largest read).
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let Some(file) = self.file.as_ref() else {
            return Err(std::io::Error::other(format!("{}: not open", self.shown)));
        };
        let n = buf.len().min(self.max_read_bytes);
        self.runtime
            .block_on(file.read_block(&mut buf[..n], offset, None, false))
    }
}

impl Drop for SmbReader {
    /// Closes the file and the connection inside the runtime (the crate's handles close
    /// themselves from tasks there).
    fn drop(&mut self) {
        let file = self.file.take();
        let link = self.link.clone();
        self.runtime.block_on(async move {
            if let Some(f) = file {
                let _ = tokio::time::timeout(Duration::from_secs(2), f.close()).await;
            }
            let _ = tokio::time::timeout(Duration::from_secs(2), link.close()).await;
        });
    }
}
