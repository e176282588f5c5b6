//! `filesystem-share`: a regular file sized at a share of the filesystem that holds it, so
//! that a study's full scale follows the storage under test.

use std::path::Path;

use super::FileConfig;
use crate::{OptionError, TargetError};
use storlab_model::units::Bytes;

/// `share` of the size of the filesystem that holds `path` (its directory when the file does
/// not exist yet), less `offset`, in whole MiB; refused when more than is free for it (the
/// file's own bytes count as free).
pub(super) fn share_of_filesystem(path: &Path, share: f64, offset: Bytes) -> Result<Bytes, TargetError> {
    let dir = match path.parent() {
        Some(d) if !path.exists() && !d.as_os_str().is_empty() => d,
        Some(_) if !path.exists() => Path::new("."),
        _ => path,
    };
    let (total, free) = filesystem_bytes(dir).map_err(|e| TargetError::Invalid(format!(
        "filesystem-share: the filesystem of {}: {e}",
        dir.display()
    )))?;
    let own = std::fs::metadata(path).map_or(0, |m| m.len());
    let want = ((total as f64 * share) as u64).saturating_sub(offset.0) & !((1 << 20) - 1);
    if want == 0 || offset.0 + want > free + own {
        return Err(TargetError::Invalid(format!(
            "filesystem-share {share}: {want} bytes of {} ({total} bytes) for {}, but {} bytes are free for it",
            dir.display(),
            path.display(),
            free + own
        )));
    }
    Ok(Bytes(want))
}

/// The size and the bytes free to an unprivileged writer of the filesystem holding `path`.
pub(super) fn filesystem_bytes(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: statvfs is plain old data; an all-zero value is valid.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated and s is a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = s.f_frsize as u64;
    Ok((s.f_blocks as u64 * frsize, s.f_bavail as u64 * frsize))
}

/// `filesystem-share` is a share in (0, 1] and stands instead of `size`, for one regular file.
pub(super) fn check_share(c: &FileConfig) -> Result<(), OptionError> {
    let Some(share) = c.filesystem_share else {
        return Ok(());
    };
    let conflict = if c.size.is_some() {
        Some("give either `size` or `filesystem-share`")
    } else if !c.files.is_empty() {
        Some("a set of `files` gives each file its size")
    } else if c.path.starts_with("/dev/") {
        Some("a device is addressed whole (or by `size`), not by a share of a filesystem")
    } else {
        None
    };
    let message = match conflict {
        Some(m) => m.to_string(),
        None if !(share > 0.0 && share <= 1.0) => {
            format!("filesystem-share must be above 0 and at most 1 (got {share})")
        }
        None => return Ok(()),
    };
    Err(OptionError {
        key: "filesystem-share".into(),
        message,
    })
}
