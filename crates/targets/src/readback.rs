//! Reading a target's written blocks back, for the verify pass after a run and for
//! `storlab verify STATE` later: a local file or device, or a file on a server read through
//! the target's own client (an `smb://` or `nfs://` location). The passes ask this module;
//! only the targets know which locations are theirs.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::TargetError;
use super::{nfs, smb};

/// An open location, read at offsets.
pub enum BlockReader {
    File(File),
    Nfs(nfs::NfsReader),
    Smb(smb::SmbReader),
}

impl BlockReader {
    /// Opens `location` (what a target's `verify_file` gave) for reading, with O_DIRECT when
    /// the target wrote with it. Errors show a server's URL without its password.
    pub fn open(location: &Path, direct: bool) -> Result<BlockReader, TargetError> {
        const WHAT: &str = "opening to verify";
        if smb::is_url(location) {
            let url = location.to_string_lossy();
            return smb::SmbReader::open(&url)
                .map(BlockReader::Smb)
                .map_err(|e| TargetError::io(super::redact_url(&url), WHAT, e));
        }
        if nfs::is_url(location) {
            return nfs::NfsReader::open(&location.to_string_lossy())
                .map(BlockReader::Nfs)
                .map_err(|e| TargetError::io(location, WHAT, e));
        }
        let mut o = OpenOptions::new();
        o.read(true);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(location)
            .map(BlockReader::File)
            .map_err(|e| TargetError::io(location, WHAT, e))
    }

    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        match self {
            BlockReader::File(f) => f.read_at(buf, offset),
            BlockReader::Nfs(r) => r.read_at(buf, offset),
            BlockReader::Smb(r) => r.read_at(buf, offset),
        }
    }
}

/// How a location is kept in a saved state: a server's URL as it is but without its
/// password (`storlab verify` of an smb state takes it from the environment), a local path
/// made absolute.
pub fn stored_location(location: &Path) -> PathBuf {
    if nfs::is_url(location) || smb::is_url(location) {
        super::redact_url(&location.to_string_lossy()).into()
    } else {
        std::path::absolute(location).unwrap_or_else(|_| location.to_path_buf())
    }
}
