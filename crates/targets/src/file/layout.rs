//! Laying out the `file` target's files (data, allocation or a sparse size) and reading what
//! a device says of itself (its size, its poll queues).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};

use super::Layout;
use crate::TargetError;

pub(super) fn block_device_size(path: &Path) -> Result<u64, TargetError> {
    let f = File::open(path).map_err(|e| TargetError::io(path, "opening", e))?;
    let mut size: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the ioctl writes one u64 into `size`, which we own.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r != 0 {
        return Err(TargetError::io(
            path,
            "reading the device size",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(size)
}

/// Refuses `hipri` unless the device under `path` has poll queues: on others polled I/O
/// fails (EOPNOTSUPP) or never completes.
pub(super) fn check_poll_queues(path: &Path) -> Result<(), TargetError> {
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::metadata(path).map_err(|e| TargetError::io(path, "reading its metadata", e))?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    // A partition's queue is its disk's.
    let state = [sys.join("queue/io_poll"), sys.join("../queue/io_poll")]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok());
    match state.as_deref().map(str::trim) {
        Some("1") => Ok(()),
        Some(v) => Err(TargetError::Invalid(format!(
            "{}: hipri = true needs a device with poll queues, and device {major}:{minor} has none (queue/io_poll = {v}); remove hipri",
            path.display()
        ))),
        None => Err(TargetError::Invalid(format!(
            "{}: hipri = true needs a device with poll queues, and device {major}:{minor} has no block queue to poll (not a disk, or a stacked device); remove hipri",
            path.display()
        ))),
    }
}

/// Lays a file out from `from` to `to`: incompressible data written (so that later reads see
/// real blocks), or blocks allocated, or a sparse extension.
pub(crate) fn lay_out(
    path: &Path,
    from: u64,
    to: u64,
    layout: Layout,
    verbose: bool,
) -> Result<(), TargetError> {
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(path)
        .map_err(|e| TargetError::io(path, "creating", e))?;
    match layout {
        Layout::Write => {}
        Layout::Truncate => {
            return f
                .set_len(to)
                .map_err(|e| TargetError::io(path, "extending", e));
        }
        Layout::None => return Ok(()),
        Layout::Keep => {
            // SAFETY: fallocate on a descriptor we own.
            let r = unsafe {
                libc::fallocate(
                    f.as_raw_fd(),
                    libc::FALLOC_FL_KEEP_SIZE,
                    from as libc::off_t,
                    (to - from) as libc::off_t,
                )
            };
            if r != 0 {
                return Err(TargetError::io(
                    path,
                    "allocating (fallocate, keep size)",
                    std::io::Error::last_os_error(),
                ));
            }
            return Ok(());
        }
        Layout::Fallocate => {
            // SAFETY: posix_fallocate on a descriptor we own.
            let r = unsafe {
                libc::posix_fallocate(f.as_raw_fd(), from as libc::off_t, (to - from) as libc::off_t)
            };
            if r != 0 {
                return Err(TargetError::io(
                    path,
                    "allocating (posix_fallocate)",
                    std::io::Error::from_raw_os_error(r),
                ));
            }
            return Ok(());
        }
    }
    let chunk = 1usize << 20;
    let mut buf = vec![0u8; chunk];
    let mut rng = rand::rngs::SmallRng::seed_from_u64(from ^ 0x5107_1ab0);
    rng.fill_bytes(&mut buf);
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(from))
        .map_err(|e| TargetError::io(path, "seeking", e))?;
    let total = to - from;
    if verbose && total >= 256 << 20 {
        eprintln!("laying out {} ({} MiB)...", path.display(), total >> 20);
    }
    let mut pos = from;
    while pos < to {
        let n = ((to - pos) as usize).min(chunk);
        buf[..8].copy_from_slice(&pos.to_le_bytes());
        f.write_all(&buf[..n])
            .map_err(|e| TargetError::io(path, "laying out", e))?;
        pos += n as u64;
    }
    f.sync_all()
        .map_err(|e| TargetError::io(path, "syncing the layout", e))?;
    Ok(())
}

