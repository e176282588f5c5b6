//! Network namespaces of clients (`[clients.NAME] netns`): a thread enters its client's
//! namespace before it opens that client's connections, so their sockets live there and their
//! traffic crosses the namespace's links. A socket keeps the namespace it was created in, and a
//! thread started by a thread inside a namespace starts inside it too (a target's own runtime
//! threads, started in `prepare`, follow). Entering needs CAP_SYS_ADMIN (root).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Why a namespace could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    #[error(
        "network namespace {path}: {source} (does it exist? `ip netns list` shows the named ones)"
    )]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("network namespace {path}: entering it failed: {source} (needs root)")]
    Enter {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("network namespace {path}: returning to storlab's own failed: {source}")]
    Return {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The calling thread inside a namespace; dropping it (or [`Entered::leave`]) returns the
/// thread to the namespace it had.
pub struct Entered {
    original: File,
    path: PathBuf,
    left: bool,
}

fn setns(fd: &File) -> std::io::Result<()> {
    // SAFETY: setns on an open namespace file descriptor affects only the calling thread.
    let rc = unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Enters the namespace at `path` on the calling thread (nothing when `path` is `None`).
pub fn enter(path: Option<&Path>) -> Result<Option<Entered>, NetnsError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let open = |p: &Path| {
        File::open(p).map_err(|source| NetnsError::Open {
            path: p.to_path_buf(),
            source,
        })
    };
    let original = open(Path::new("/proc/thread-self/ns/net"))?;
    let target = open(path)?;
    setns(&target).map_err(|source| NetnsError::Enter {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Some(Entered {
        original,
        path: path.to_path_buf(),
        left: false,
    }))
}

impl Entered {
    /// Returns the thread to the namespace it had, saying if that failed.
    pub fn leave(mut self) -> Result<(), NetnsError> {
        self.left = true;
        setns(&self.original).map_err(|source| NetnsError::Return {
            path: self.path.clone(),
            source,
        })
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        if !self.left {
            // A failure here leaves the thread where it is; `leave` is the checked way.
            let _ = setns(&self.original);
        }
    }
}

/// The inode of the calling thread's network namespace (tests compare them).
pub fn current_inode() -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/thread-self/ns/net")?.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_namespace_is_nothing_to_enter() {
        assert!(enter(None).unwrap().is_none());
    }

    #[test]
    fn a_missing_namespace_is_an_error_naming_it() {
        let e = enter(Some(Path::new("/run/netns/storlab-no-such-namespace")))
            .err()
            .unwrap();
        let text = e.to_string();
        assert!(
            text.contains("/run/netns/storlab-no-such-namespace"),
            "{text}"
        );
        assert!(text.contains("ip netns list"), "{text}");
    }

    #[test]
    fn entering_its_own_namespace_and_leaving_keeps_the_thread_where_it_was() {
        // Entering the namespace the thread is in needs CAP_SYS_ADMIN too; without it, the
        // error says so.
        let before = current_inode().unwrap();
        match enter(Some(Path::new("/proc/self/ns/net"))) {
            Ok(Some(e)) => {
                assert_eq!(current_inode().unwrap(), before);
                e.leave().unwrap();
                assert_eq!(current_inode().unwrap(), before);
            }
            Ok(None) => panic!("a path was given"),
            Err(NetnsError::Enter { .. }) if unsafe { libc::geteuid() } != 0 => {}
            Err(e) => panic!("{e}"),
        }
    }
}
