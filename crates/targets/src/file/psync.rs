//! The `file` target's psync engine: pread/pwrite, one I/O at a time per worker.

use super::buf::AlignedBuf;
use super::set::{Files, Picker};
use storlab_model::{ErrorKind, OpError, OpKind};
use crate::session::{NOT_BLOCK_OP, OUT_OF_BOUNDS, in_bounds};
use crate::{Completions, Session, Submitted};
use storlab_model::Op;
use storlab_verify::Stamper;
use storlab_verify::stamper::Prepared as Stamped;

/// pread/pwrite, executed in `submit`.
pub struct PsyncSession {
    pub(super) files: Files,
    pub(super) picker: Picker,
    /// The file of the last write (fio's fsync goes to the file written).
    pub(super) last: usize,
    pub(super) fdatasync: bool,
    pub(super) buf: AlignedBuf,
    pub(super) bounds: (u64, u64),
    pub(super) generation: u64,
    pub(super) stamp: bool,
    pub(super) direct: bool,
    /// Verified writes (`verify = true`).
    pub(super) verify: Option<Stamper>,
}

impl Session for PsyncSession {
    fn used(&self) -> Vec<(&'static str, String)> {
        vec![
            ("file.engine", "psync".into()),
            (
                "file.o-direct",
                if self.direct { "yes" } else { "no" }.into(),
            ),
            ("file.buffer-pages", self.buf.pages.clone()),
        ]
        .into_iter()
        .chain(self.files.used(&self.picker, self.fdatasync))
        .collect()
    }

    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let (r, want) = match op {
            Op::Read { offset, len } => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                let (index, offset, len) = self.picker.pick(offset, u64::from(len), false);
                let len = len as u32; // at most the workload's largest size
                let fd = self.files.fd(index);
                // SAFETY: the buffer holds at least `len` bytes (len <= block size).
                let r = unsafe {
                    libc::pread(
                        fd,
                        self.buf.ptr as *mut libc::c_void,
                        len as usize,
                        offset as i64,
                    )
                };
                (r, len)
            }
            Op::Write { offset, len } => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                // The file, and the offset and size in it (a verified target has one file:
                // the workload's own).
                let (index, at, size) = self.picker.pick(offset, u64::from(len), true);
                let len = size as u32; // at most the workload's largest size
                if let Some(v) = &mut self.verify {
                    // One write at a time: its block is never busy. An offset outside the
                    // table cannot pass the bounds check above.
                    if v.prepare(0, self.buf.slot_mut(0, len), offset) != Stamped::Ready {
                        return Err(OUT_OF_BOUNDS);
                    }
                } else if self.buf.fill_for_write(0, len, at) {
                    // fio's contents.
                } else if self.stamp {
                    self.generation += 1;
                    self.buf.stamp(0, at, self.generation);
                }
                let offset = at;
                self.last = index;
                let fd = self.files.fd(index);
                // SAFETY: as above.
                let r = unsafe {
                    libc::pwrite(
                        fd,
                        self.buf.ptr as *const libc::c_void,
                        len as usize,
                        offset as i64,
                    )
                };
                (r, len)
            }
            Op::Fsync => {
                if let Some(v) = &mut self.verify {
                    v.fsync_submitted(0);
                }
                let fd = self.files.fd(self.last);
                // SAFETY: fsync or fdatasync on a descriptor we own.
                let r = unsafe {
                    if self.fdatasync {
                        libc::fdatasync(fd)
                    } else {
                        libc::fsync(fd)
                    }
                };
                (r as isize, 0)
            }
            // Key-value operations are refused at plan time (capabilities).
            _ => return Err(NOT_BLOCK_OP),
        };
        let result = if r < 0 {
            Err(OpError::errno(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ))
        } else if op.kind() != OpKind::Fsync && r as u32 != want {
            Err(OpError {
                kind: ErrorKind::ShortTransfer,
                code: r as i32,
            })
        } else {
            Ok(want)
        };
        if let Some(v) = &mut self.verify {
            v.completed(0, result.is_ok());
        }
        Ok(Submitted::Done {
            result,
            found: true,
        })
    }

    #[inline]
    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }
}

