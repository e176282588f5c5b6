//! A `checkpoint` workload on the dataset target: each model's checkpoints live in the
//! folder's `checkpoints/MODEL`, one subfolder per checkpoint (DLIO's
//! `global_epoch1_stepN`), each holding every rank's files.
//!
//! `prepare` claims the folder when it is empty or missing (it leaves
//! `storlab-checkpoints.json` there, naming the layout), uses it when that manifest names the
//! same layout, and refuses anything else: storlab writes over its own checkpoints only. A
//! run that reads checkpoints it does not write first (MLPerf Storage's read phase, after
//! the page cache is dropped) finds every file of them at its size, or stops before it
//! starts.
//!
//! A session writes a rank's pieces from one buffer, filled once with pseudo-random bytes,
//! whose first bytes are stamped with the piece's place (checkpoint, file, piece, seed);
//! reading a piece back checks that stamp, so a piece of another checkpoint or run, or a
//! piece never written, is an integrity error. An fsync syncs the file being written. Files
//! open at a piece of another file and close at the next file, or when the session ends.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use super::io_error;
use crate::{Region, Session, Submitted, TargetError};
use storlab_model::{Op, OpError};
use storlab_workload::training::checkpoint::{
    Layout, STAMP_BYTES, checkpoint_folder, stamp, unpack,
};

/// The manifest that marks a checkpoint folder as storlab's.
pub const MANIFEST: &str = "storlab-checkpoints.json";

/// What a dataset target needs of a checkpoint workload to prepare.
#[derive(Debug, Clone)]
pub struct CheckpointPrep {
    pub layout: Arc<Layout>,
    pub model: String,
    pub writes: u32,
    pub reads: u32,
    pub io_bytes: u64,
    pub seed: u64,
}

/// What a prepared checkpoint folder's sessions share.
pub struct CheckpointShared {
    pub layout: Arc<Layout>,
    /// The path of file `f` of checkpoint `k` at `k * files + f`.
    paths: Arc<[CString]>,
    io_bytes: u64,
    seed: u64,
}

/// The layout as the manifest states it: the model, each file's name and bytes.
fn manifest(prep: &CheckpointPrep) -> String {
    let files: Vec<serde_json::Value> = prep
        .layout
        .files
        .iter()
        .map(|f| serde_json::json!({"rank": f.rank, "name": f.name, "bytes": f.bytes}))
        .collect();
    let v = serde_json::json!({
        "storlab-checkpoints": 1,
        "model": prep.model,
        "seed": prep.seed,
        "files": files,
    });
    format!("{v:#}\n")
}

/// Claims or finds `folder` for `prep`'s checkpoints and lists every file's path.
pub fn prepare(
    folder: &Path,
    prep: &CheckpointPrep,
) -> Result<(Region, CheckpointShared), TargetError> {
    let wanted = manifest(prep);
    let path = folder.join(MANIFEST);
    match std::fs::read_to_string(&path) {
        Ok(text) if text == wanted => {}
        Ok(_) => return Err(refused(folder, "checkpoints of another model, layout or seed")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let empty = std::fs::read_dir(folder).map_or(true, |mut e| e.next().is_none());
            if !empty {
                return Err(refused(folder, "other files"));
            }
            std::fs::create_dir_all(folder)
                .map_err(io_error(folder, "creating the checkpoint folder"))?;
            std::fs::write(&path, &wanted)
                .map_err(io_error(&path, "writing the checkpoint manifest"))?;
        }
        Err(e) => return Err(io_error(&path, "reading the checkpoint manifest")(e)),
    }
    let count = prep.writes.max(prep.reads);
    let mut paths = Vec::with_capacity(count as usize * prep.layout.files.len());
    for k in 0..count {
        let dir = folder.join(checkpoint_folder(k));
        std::fs::create_dir_all(&dir).map_err(io_error(&dir, "creating a checkpoint's folder"))?;
        for f in &prep.layout.files {
            let p = dir.join(&f.name);
            // Checkpoints read before this run writes them: each file whole, or no run.
            if k >= prep.writes && k < prep.reads {
                check_size(&p, f.bytes, k)?;
            }
            paths.push(CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                TargetError::Invalid(format!("{}: a NUL byte in the path", p.display()))
            })?);
        }
    }
    let region = Region {
        offset_bytes: 0,
        size_bytes: prep.layout.bytes(),
    };
    Ok((
        region,
        CheckpointShared {
            layout: Arc::clone(&prep.layout),
            paths: paths.into(),
            io_bytes: prep.io_bytes,
            seed: prep.seed,
        },
    ))
}

fn refused(folder: &Path, what: &str) -> TargetError {
    TargetError::Invalid(format!(
        "{} holds {what} (no {MANIFEST} for these checkpoints): storlab writes checkpoints only into an empty or new folder, or over its own of the same layout; give the target another path, or remove that folder yourself",
        folder.display()
    ))
}

fn check_size(path: &Path, bytes: u64, k: u32) -> Result<(), TargetError> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() == bytes => Ok(()),
        Ok(m) => Err(TargetError::Invalid(format!(
            "{}: {} bytes where checkpoint {} holds {bytes}: write the checkpoints first (checkpoints-write at least checkpoints-read)",
            path.display(),
            m.len(),
            k + 1
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(TargetError::Invalid(format!(
            "{}: missing, and the run reads checkpoint {} without writing it: write the checkpoints first (checkpoints-write at least checkpoints-read)",
            path.display(),
            k + 1
        ))),
        Err(e) => Err(io_error(path, "checking a checkpoint file")(e)),
    }
}

/// One rank's session.
pub struct CheckpointSession {
    shared_paths: Arc<[CString]>,
    files: u32,
    seed: u64,
    io_bytes: u64,
    /// The open file's index in `paths` (u32::MAX: none), its descriptor and mode.
    open: u32,
    fd: libc::c_int,
    writing: bool,
    buf: Vec<u8>,
}

impl CheckpointSession {
    pub fn new(shared: &CheckpointShared) -> CheckpointSession {
        let mut buf = vec![0u8; shared.io_bytes as usize];
        let mut x = shared.seed | 1;
        for c in buf.chunks_mut(8) {
            // xorshift64: bytes a compressing or deduplicating store cannot shrink.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
        }
        CheckpointSession {
            shared_paths: Arc::clone(&shared.paths),
            files: shared.layout.files.len() as u32,
            seed: shared.seed,
            io_bytes: shared.io_bytes,
            open: u32::MAX,
            fd: -1,
            writing: false,
            buf,
        }
    }

    fn close(&mut self) {
        if self.fd >= 0 {
            // SAFETY: fd is a descriptor this session opened and still owns.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
            self.open = u32::MAX;
        }
    }

    /// Opens file `index` of the paths for writing (created, emptied) or reading, unless it
    /// is the open one.
    fn ensure_open(&mut self, index: u32, writing: bool) -> Result<(), OpError> {
        if self.open == index && self.writing == writing && self.fd >= 0 {
            return Ok(());
        }
        self.close();
        let path = self
            .shared_paths
            .get(index as usize)
            .ok_or(crate::session::NOT_BLOCK_OP)?;
        let flags = if writing {
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC
        } else {
            libc::O_RDONLY | libc::O_CLOEXEC
        };
        // SAFETY: path is a NUL-terminated C string that outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint) };
        if fd < 0 {
            return Err(super::last_error());
        }
        self.fd = fd;
        self.open = index;
        self.writing = writing;
        Ok(())
    }

    fn write_piece(&mut self, offset: u64, len: u64) -> Result<u32, OpError> {
        let (k, file, pos) = unpack(offset);
        self.ensure_open(k * self.files + file, true)?;
        let s = stamp(k, file, pos / self.io_bytes, self.seed);
        let n = (len as usize).min(STAMP_BYTES);
        self.buf[..n].copy_from_slice(&s[..n]);
        let mut done = 0usize;
        while done < len as usize {
            // SAFETY: the pointer and length stay within `buf` (len <= io-bytes).
            let w = unsafe {
                libc::pwrite(
                    self.fd,
                    self.buf[done..].as_ptr().cast(),
                    len as usize - done,
                    (pos + done as u64) as libc::off_t,
                )
            };
            if w < 0 {
                let e = super::last_error();
                if e.code == libc::EINTR {
                    continue;
                }
                return Err(e);
            }
            done += w as usize;
        }
        Ok(len as u32)
    }

    fn read_piece(&mut self, offset: u64, len: u64) -> Result<u32, OpError> {
        let (k, file, pos) = unpack(offset);
        self.ensure_open(k * self.files + file, false)?;
        super::pread_exact(self.fd, &mut self.buf[..len as usize], pos)?;
        let s = stamp(k, file, pos / self.io_bytes, self.seed);
        let n = (len as usize).min(STAMP_BYTES);
        if self.buf[..n] != s[..n] {
            return Err(OpError::INTEGRITY);
        }
        Ok(len as u32)
    }

    fn fsync(&mut self) -> Result<u32, OpError> {
        if self.fd < 0 || !self.writing {
            return Err(crate::session::NOT_BLOCK_OP);
        }
        // SAFETY: fd is open.
        if unsafe { libc::fsync(self.fd) } != 0 {
            return Err(super::last_error());
        }
        Ok(0)
    }
}

impl Drop for CheckpointSession {
    fn drop(&mut self) {
        self.close();
    }
}

impl Session for CheckpointSession {
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let r = match op {
            Op::Write { offset, len } => self.write_piece(offset, len),
            Op::Read { offset, len } => self.read_piece(offset, len),
            Op::Fsync => self.fsync(),
            _ => return Err(crate::session::NOT_BLOCK_OP),
        };
        Ok(Submitted::Done {
            result: r,
            found: true,
        })
    }

    fn complete(&mut self, _min: u32, _out: &mut crate::Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        vec![("checkpoint.io-bytes", self.io_bytes.to_string())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_workload::training::checkpoint::{CheckpointWorkload, pack};

    fn prep(dir: &Path, writes: u32, reads: u32) -> CheckpointPrep {
        let mut w = CheckpointWorkload::from_table(
            toml::from_str("preset = \"llama3-8b\"\nranks = 2").unwrap(),
        )
        .unwrap();
        w.make_quick();
        let _ = dir;
        CheckpointPrep {
            layout: Arc::new(w.layout()),
            model: w.model.clone(),
            writes,
            reads,
            io_bytes: 64 << 10,
            seed: 7,
        }
    }

    /// A piece written reads back; a piece of another checkpoint, or never written, does
    /// not: an integrity error.
    #[test]
    fn pieces_read_back_only_where_they_were_written() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("llama3-8b");
        let p = prep(&folder, 2, 2);
        let (_, shared) = prepare(&folder, &p).unwrap();
        let mut s = CheckpointSession::new(&shared);
        let submit = |s: &mut CheckpointSession, op| match s.submit(0, op).unwrap() {
            Submitted::Done { result, .. } => result,
            _ => panic!(),
        };
        assert_eq!(submit(&mut s, Op::Write { offset: pack(0, 0, 0), len: 65536 }), Ok(65536));
        assert_eq!(submit(&mut s, Op::Fsync), Ok(0));
        assert_eq!(submit(&mut s, Op::Read { offset: pack(0, 0, 0), len: 65536 }), Ok(65536));
        // Checkpoint 2's file 0 holds checkpoint 1's bytes, copied by hand.
        std::fs::copy(
            folder.join("global_epoch1_step1").join(&p.layout.files[0].name),
            folder.join("global_epoch1_step2").join(&p.layout.files[0].name),
        )
        .unwrap();
        assert_eq!(
            submit(&mut s, Op::Read { offset: pack(1, 0, 0), len: 65536 }),
            Err(OpError::INTEGRITY)
        );
    }

    /// A folder of someone else's files is refused and left as it is; a read of checkpoints
    /// never written stops before the run.
    #[test]
    fn foreign_folders_and_missing_checkpoints_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("llama3-8b");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("mine.txt"), "keep").unwrap();
        let e = prepare(&folder, &prep(&folder, 1, 0)).err().unwrap().to_string();
        assert!(e.contains("other files"), "{e}");
        assert_eq!(std::fs::read_to_string(folder.join("mine.txt")).unwrap(), "keep");
        let fresh = dir.path().join("other");
        let e = prepare(&fresh, &prep(&fresh, 0, 1)).err().unwrap().to_string();
        assert!(e.contains("write the checkpoints first"), "{e}");
    }
}
