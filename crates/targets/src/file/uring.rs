//! The `file` target's io_uring session. With O_DIRECT each operation is handed to the kernel
//! as soon as its slot is refilled (one `io_uring_enter` per operation, as fio's default
//! `iodepth_batch_submit=1`); buffered operations, which mostly complete inside the call that
//! submits them, are submitted together at the next reap (one call for the batch). Completions
//! are reaped from the ring without a system call when they are already there, and the ring
//! defers its task work to those calls (`DEFER_TASKRUN`, as fio does).
//!
//! Why per operation with O_DIRECT: on a virtio disk, holding refilled slots until the next
//! reap and submitting them together fed the device in bursts; its latency per operation rose
//! (0.52 ms against 0.30-0.35 ms at queue depth 32, 4 KiB) and storlab reported the disk
//! 15-20% slower than fio did. From the page cache the batch is cheaper: 15-20% less CPU per
//! operation than one call each. Options: `sqthread-poll` (a kernel thread polls the submission queue) and `hipri`
//! (completions are polled; needs a device with poll queues, checked at open). What the
//! session actually used (task running mode, registered file and buffers, polling) is
//! reported by [`Session::used`].

use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

use io_uring::{IoUring, opcode, types};

use super::AlignedBuf;
use crate::session::{NOT_BLOCK_OP, OUT_OF_BOUNDS, in_bounds};
use storlab_model::{ErrorKind, OpError};
use crate::{Completion, Completions, Session, Submitted};
use storlab_model::Op;
use storlab_verify::Stamper;
use storlab_verify::stamper::Prepared as Stamped;

/// IORING_ENTER_GETEVENTS: reap completions (and run deferred task work) in this call.
const ENTER_GETEVENTS: u32 = 1;

/// How long the `hipri` probe waits for its read before refusing the option.
const IOPOLL_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a user asked of the ring.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct UringOptions {
    /// IORING_SETUP_SQPOLL with this idle time, ms.
    pub sqpoll_idle_ms: Option<u32>,
    /// IORING_SETUP_IOPOLL.
    pub iopoll: bool,
    /// Submit each operation as it is queued (else at the next reap, with the others).
    pub per_op_submit: bool,
}

/// How the ring runs completion task work, as it was set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskRunning {
    /// DEFER_TASKRUN + SINGLE_ISSUER + COOP_TASKRUN: completions are posted when the worker
    /// enters the kernel to submit or wait.
    Deferred,
    /// COOP_TASKRUN only (kernel without DEFER_TASKRUN).
    Cooperative,
    /// Neither: the kernel interrupts the worker to post completions.
    Plain,
    /// SQPOLL: the kernel's submission thread runs it.
    SqThread,
}

/// Why a ring could not be set up the way the user asked.
#[derive(Debug, thiserror::Error)]
pub(super) enum UringError {
    #[error("setting up io_uring: {0}")]
    Setup(std::io::Error),
    #[error(
        "sqthread-poll = true: the kernel refused IORING_SETUP_SQPOLL ({0}); remove the option"
    )]
    Sqpoll(std::io::Error),
    #[error(
        "hipri = true: the kernel refused IORING_SETUP_IOPOLL ({0}); remove the option or use a device with poll queues"
    )]
    IopollSetup(std::io::Error),
    #[error(
        "hipri = true: a polled read failed with {0}; the device does not support polled I/O: remove the option"
    )]
    IopollProbe(String),
    #[error(
        "hipri = true: a polled read did not complete within {} s; the device does not support polled I/O: remove the option",
        IOPOLL_PROBE_TIMEOUT.as_secs()
    )]
    IopollTimeout,
}

/// io_uring, one submission per operation, with a registered file and registered buffers
/// where the kernel accepts them (and the plain descriptor or buffers where it does not,
/// recorded in [`Session::used`]).
pub struct UringSession {
    ring: IoUring,
    buf: AlignedBuf,
    bounds: (u64, u64),
    /// Bytes expected by the operation in each slot (0 for fsync).
    want: Vec<u32>,
    /// Registered buffers in use; else the errno of the failed registration.
    fixed_buffers: Result<(), i32>,
    /// Registered file in use; else the errno of the failed registration.
    fixed_file: Result<(), i32>,
    raw_fds: Vec<RawFd>,
    picker: super::Picker,
    /// The file of the last write (fio's fsync goes to the file written).
    last: usize,
    fdatasync: bool,
    task_running: TaskRunning,
    /// Why a faster task running mode was not available (errno of the refused setup).
    task_running_fallback: Option<i32>,
    options: UringOptions,
    generation: u64,
    stamp: bool,
    /// Verified writes (`verify = true`).
    verify: Option<Stamper>,
    /// Completions reaped while a verified write waited for an earlier write to its block,
    /// handed out by the next `complete` (capacity: the queue depth).
    held: Vec<Completion>,
    files: super::set::Files,
    /// Operations drawn to carry the command priority (`command-priority`).
    command: Option<super::priority::CommandDraw>,
}

/// Builds one submission entry with the registered file or the plain descriptor.
macro_rules! with_fd {
    ($s:expr, $index:expr, $fd:ident => $e:expr) => {
        if $s.fixed_file.is_ok() {
            let $fd = types::Fixed($index as u32);
            $e
        } else {
            let $fd = types::Fd($s.raw_fds[$index]);
            $e
        }
    };
}

/// What an io_uring session is opened with: its files and the picker of the one each
/// operation goes to, whether writes are followed by fdatasync, its registered buffers and the
/// byte range it works in, its queue depth, whether writes carry fresh random data, the
/// stamper of verified writes, and the ring's options.
pub(super) struct UringSetup {
    pub files: super::set::Files,
    pub picker: super::Picker,
    pub fdatasync: bool,
    pub buf: AlignedBuf,
    pub bounds: (u64, u64),
    pub qd: u32,
    pub stamp: bool,
    pub verify: Option<Stamper>,
    pub options: UringOptions,
    /// The draw of operations that carry the command priority.
    pub command: Option<super::priority::CommandDraw>,
}

impl UringSession {
    pub(super) fn new(setup: UringSetup) -> Result<UringSession, UringError> {
        let UringSetup {
            files,
            picker,
            fdatasync,
            buf,
            bounds,
            qd,
            stamp,
            verify,
            options,
            command,
        } = setup;
        let entries = qd.next_power_of_two().max(8);
        let (ring, task_running, task_running_fallback) = build_ring(entries, options)?;
        let raw_fds = files.raw_fds();
        let fixed_file = ring
            .submitter()
            .register_files(&raw_fds)
            .map_err(|e| e.raw_os_error().unwrap_or(0));
        let iovecs: Vec<libc::iovec> = (0..qd)
            .map(|s| libc::iovec {
                iov_base: buf.slot_ptr(s) as *mut libc::c_void,
                iov_len: buf.block,
            })
            .collect();
        // SAFETY: the buffers live as long as the ring (both owned by this session, and the
        // ring is dropped first: field order).
        let fixed_buffers = unsafe { ring.submitter().register_buffers(&iovecs) }
            .map_err(|e| e.raw_os_error().unwrap_or(0));
        let mut s = UringSession {
            ring,
            buf,
            bounds,
            want: vec![0; qd as usize],
            fixed_buffers,
            fixed_file,
            raw_fds,
            picker,
            last: 0,
            fdatasync,
            task_running,
            task_running_fallback,
            options,
            generation: 0,
            stamp,
            verify,
            held: Vec::with_capacity(qd as usize),
            files,
            command,
        };
        if options.iopoll
            && let Err(e) = s.probe_iopoll()
        {
            if matches!(e, UringError::IopollTimeout) {
                // The probe's read may still land in its buffer after the ring is closed:
                // keep the buffer's memory from being reused (a one-off leak on refusal).
                let UringSession { ring, buf, .. } = s;
                drop(ring);
                std::mem::forget(buf);
            }
            return Err(e);
        }
        Ok(s)
    }

    /// One `io_uring_enter`, retried when a signal interrupts it. EAGAIN and EBUSY (the
    /// kernel is short of resources or the completion queue is full) leave the entries queued
    /// for the next call.
    #[inline]
    fn enter(&self, to_submit: u32, min_complete: u32, flags: u32) -> Result<(), OpError> {
        loop {
            // SAFETY: no extra argument is passed; the ring's memory is ours.
            let r = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(to_submit, min_complete, flags, None)
            };
            match r {
                Ok(_) => return Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) | Some(libc::EBUSY) => return Ok(()),
                    code => return Err(OpError::errno(code.unwrap_or(0))),
                },
            }
        }
    }

    /// Hands what is queued to the kernel now.
    #[inline]
    fn flush(&mut self) -> Result<(), OpError> {
        if self.task_running == TaskRunning::SqThread {
            // The kernel thread picks the entry up; a system call only if it fell asleep.
            return match self.ring.submit() {
                Ok(_) => Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY) => Ok(()),
                    code => Err(OpError::errno(code.unwrap_or(0))),
                },
            };
        }
        let queued = self.ring.submission().len() as u32;
        // With deferred task running, GETEVENTS also posts the completions that arrived since
        // the last call, so that `complete` finds them without a system call.
        let flags = if matches!(self.task_running, TaskRunning::Deferred) || self.options.iopoll {
            ENTER_GETEVENTS
        } else {
            0
        };
        self.enter(queued, 0, flags)
    }

    /// Submits what is queued and waits for at least `min` completions (the SQPOLL thread
    /// submits by itself: the call only waits).
    #[inline]
    fn submit_and_wait(&mut self, min: u32) -> Result<(), OpError> {
        let queued = self.ring.submission().len() as u32;
        let to_submit = if self.task_running == TaskRunning::SqThread {
            if queued > 0 {
                self.flush()?;
            }
            0
        } else {
            queued
        };
        self.enter(to_submit, min, ENTER_GETEVENTS)
    }

    /// A verified write goes to a block whose previous write is still in flight: reaps until
    /// that write completed, keeping what completes for the next `complete` (as fio's
    /// `serialize_overlap`: two writes in flight to one block could land in either order).
    #[cold]
    fn wait_for_block(&mut self, index: usize) -> Result<(), OpError> {
        while self.verify.as_ref().is_some_and(|v| v.block_busy(index)) {
            self.submit_and_wait(1)?;
            while let Some(cqe) = self.ring.completion().next() {
                let c = settle(&self.want, &mut self.verify, cqe.user_data() as u32, cqe.result());
                self.held.push(c);
            }
        }
        Ok(())
    }

    /// Submits one polled read of the first block and waits for it for a bounded time: the
    /// kernel accepts IORING_SETUP_IOPOLL on devices without poll queues, where polled reads
    /// then fail or never complete.
    fn probe_iopoll(&mut self) -> Result<(), UringError> {
        let len = self.buf.block as u32;
        let entry = with_fd!(self, 0, fd => opcode::Read::new(fd, self.buf.slot_ptr(0), len)
            .offset(self.bounds.0)
            .build());
        // SAFETY: the buffer of slot 0 stays valid until the completion is reaped, or is
        // never freed if the read does not complete (see `new`).
        unsafe { self.ring.submission().push(&entry.user_data(0)) }
            .map_err(|_| UringError::IopollProbe("a full submission queue".into()))?;
        let deadline = Instant::now() + IOPOLL_PROBE_TIMEOUT;
        let mut queued = 1;
        loop {
            // min_complete 0: one pass of polling, never a wait without bound.
            self.enter(queued, 0, ENTER_GETEVENTS)
                .map_err(|e| UringError::IopollProbe(errno_name(e.code)))?;
            queued = self.ring.submission().len() as u32;
            if let Some(cqe) = self.ring.completion().next() {
                let r = cqe.result();
                return if r < 0 {
                    Err(UringError::IopollProbe(errno_name(-r)))
                } else {
                    Ok(())
                };
            }
            if Instant::now() >= deadline {
                return Err(UringError::IopollTimeout);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Sets up the ring: SQPOLL or IOPOLL where asked (refused with a clear error if the kernel
/// says no), with deferred task running where the kernel has it, else cooperative, else plain.
fn build_ring(
    entries: u32,
    options: UringOptions,
) -> Result<(IoUring, TaskRunning, Option<i32>), UringError> {
    if let Some(idle_ms) = options.sqpoll_idle_ms {
        let mut b = IoUring::builder();
        b.setup_sqpoll(idle_ms);
        if options.iopoll {
            b.setup_iopoll();
        }
        return b
            .build(entries)
            .map(|r| (r, TaskRunning::SqThread, None))
            .map_err(UringError::Sqpoll);
    }
    let modes = [
        TaskRunning::Deferred,
        TaskRunning::Cooperative,
        TaskRunning::Plain,
    ];
    let mut refused = None;
    for mode in modes {
        let mut b = IoUring::builder();
        match mode {
            TaskRunning::Deferred => {
                b.setup_coop_taskrun()
                    .setup_single_issuer()
                    .setup_defer_taskrun();
            }
            TaskRunning::Cooperative => {
                b.setup_coop_taskrun();
            }
            TaskRunning::Plain | TaskRunning::SqThread => {}
        }
        if options.iopoll {
            b.setup_iopoll();
        }
        match b.build(entries) {
            Ok(r) => return Ok((r, mode, refused)),
            // EINVAL: a flag this kernel does not know; try the next mode.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && mode != TaskRunning::Plain => {
                refused.get_or_insert(libc::EINVAL);
            }
            Err(e) if options.iopoll => return Err(UringError::IopollSetup(e)),
            Err(e) => return Err(UringError::Setup(e)),
        }
    }
    Err(UringError::Setup(std::io::Error::from_raw_os_error(
        libc::EINVAL,
    )))
}

/// `ENOMEM` for an errno (`errno 1234` for one without a name here).
pub(super) fn errno_name(code: i32) -> String {
    let name = match code {
        libc::ENOMEM => "ENOMEM",
        libc::EINVAL => "EINVAL",
        libc::EPERM => "EPERM",
        libc::EFAULT => "EFAULT",
        libc::EBADF => "EBADF",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAGAIN => "EAGAIN",
        libc::EBUSY => "EBUSY",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        _ => return format!("errno {code}"),
    };
    name.to_string()
}

fn yes_or_errno(r: Result<(), i32>) -> String {
    match r {
        Ok(()) => "yes".into(),
        Err(code) => format!("no ({})", errno_name(code)),
    }
}

/// The completion of the operation in `slot` with result `r`; a verified write or fsync is
/// recorded in the table.
#[inline]
fn settle(want: &[u32], verify: &mut Option<Stamper>, slot: u32, r: i32) -> Completion {
    let want = want[slot as usize];
    let result = if r < 0 {
        Err(OpError::errno(-r))
    } else if r as u32 != want {
        Err(OpError {
            kind: ErrorKind::ShortTransfer,
            code: r,
        })
    } else {
        Ok(want)
    };
    if let Some(v) = verify {
        v.completed(slot, result.is_ok());
    }
    Completion {
        slot,
        result,
        found: true,
    }
}

impl Session for UringSession {
    /// Queued entries enter the kernel in `complete` (`io_uring_enter`; with an SQ thread,
    /// once it sees them, after the reading all the same). Not with verify: a write whose
    /// block's earlier write is in flight enters the ring in `submit` to wait for it, and
    /// what was queued before it starts there.
    fn starts_in_complete(&self) -> bool {
        self.verify.is_none()
    }

    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let ptr = self.buf.slot_ptr(slot);
        let fixed_buffers = self.fixed_buffers.is_ok();
        // 0: the thread's own priority.
        let ioprio = match (self.command.as_mut(), op) {
            (Some(c), Op::Read { len, .. }) => c.next_priority(false, len),
            (Some(c), Op::Write { len, .. }) => c.next_priority(true, len),
            _ => 0,
        };
        let entry = match op {
            Op::Read { offset, len } => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                let (index, offset, len) = self.picker.pick(offset, u64::from(len), false);
                let len = len as u32; // at most the workload's largest size
                self.want[slot as usize] = len;
                if fixed_buffers {
                    with_fd!(self, index, fd => opcode::ReadFixed::new(fd, ptr, len, slot as u16)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build())
                } else {
                    with_fd!(self, index, fd => opcode::Read::new(fd, ptr, len).offset(offset).ioprio(ioprio).build())
                }
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
                while let Some(v) = self.verify.as_mut() {
                    match v.prepare(slot, self.buf.slot_mut(slot, len), offset) {
                        Stamped::Ready => break,
                        Stamped::Busy(index) => self.wait_for_block(index)?,
                        Stamped::Outside => return Err(OUT_OF_BOUNDS),
                    }
                }
                if self.buf.fill_for_write(slot, len, at) {
                    // fio's contents.
                } else if self.stamp && self.verify.is_none() {
                    self.generation += 1;
                    self.buf.stamp(slot, at, self.generation);
                }
                self.want[slot as usize] = len;
                let offset = at;
                self.last = index;
                if fixed_buffers {
                    with_fd!(self, index, fd => opcode::WriteFixed::new(fd, ptr, len, slot as u16)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build())
                } else {
                    with_fd!(self, index, fd => opcode::Write::new(fd, ptr, len).offset(offset).ioprio(ioprio).build())
                }
            }
            Op::Fsync => {
                if let Some(v) = &mut self.verify {
                    v.fsync_submitted(slot);
                }
                self.want[slot as usize] = 0;
                let flags = if self.fdatasync {
                    types::FsyncFlags::DATASYNC
                } else {
                    types::FsyncFlags::empty()
                };
                with_fd!(self, self.last, fd => opcode::Fsync::new(fd).flags(flags).build())
            }
            _ => return Err(NOT_BLOCK_OP),
        };
        // SAFETY: the buffer behind `ptr` stays valid until the completion is reaped.
        if unsafe { self.ring.submission().push(&entry.user_data(slot as u64)) }.is_err() {
            // Never issued: a verified write's block is no longer known.
            if let Some(v) = &mut self.verify {
                v.completed(slot, false);
            }
            return Err(OpError {
                kind: ErrorKind::Other,
                code: libc::EBUSY,
            });
        }
        // The entry is in the ring from here on, so the operation counts as started: if the
        // kernel does not take it now, `complete` submits it again and reports a lasting
        // failure as the session's error.
        if self.options.per_op_submit || self.task_running == TaskRunning::SqThread {
            let _ = self.flush();
        }
        Ok(Submitted::Queued)
    }

    #[inline]
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError> {
        let queued = self.ring.submission().len() as u32;
        let ready = (self.ring.completion().len() + self.held.len()) as u32;
        // Enter the kernel only when entries are still queued, or fewer completions are
        // posted than asked for (at least one: a call with min 0 still runs deferred task
        // work, or polls once with hipri).
        if queued > 0 || ready < min.max(1) {
            self.submit_and_wait(min.saturating_sub(ready))?;
        }
        for c in self.held.drain(..) {
            out.push(c);
        }
        for cqe in self.ring.completion() {
            out.push(settle(
                &self.want,
                &mut self.verify,
                cqe.user_data() as u32,
                cqe.result(),
            ));
        }
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        let task_running = match (self.task_running, self.task_running_fallback) {
            (TaskRunning::Deferred, _) => "deferred".to_string(),
            (TaskRunning::SqThread, _) => "sq-thread".to_string(),
            (TaskRunning::Cooperative, e) => format!(
                "cooperative (deferred refused: {})",
                errno_name(e.unwrap_or(0))
            ),
            (TaskRunning::Plain, e) => format!(
                "plain (deferred and cooperative refused: {})",
                errno_name(e.unwrap_or(0))
            ),
        };
        vec![
            ("file.engine", "io-uring".into()),
            ("file.buffer-pages", self.buf.pages.clone()),
            (
                "io-uring.submission",
                if self.options.sqpoll_idle_ms.is_some() {
                    "sq-thread".into()
                } else if self.options.per_op_submit {
                    "per-operation".into()
                } else {
                    "batched".into()
                },
            ),
            ("io-uring.task-running", task_running),
            (
                "io-uring.registered-buffers",
                yes_or_errno(self.fixed_buffers),
            ),
            ("io-uring.registered-file", yes_or_errno(self.fixed_file)),
            (
                "io-uring.sqpoll",
                match self.options.sqpoll_idle_ms {
                    Some(ms) => format!("yes (idle {ms} ms)"),
                    None => "no".into(),
                },
            ),
            (
                "io-uring.iopoll",
                if self.options.iopoll { "yes" } else { "no" }.into(),
            ),
        ]
        .into_iter()
        .chain(self.files.used(&self.picker, self.fdatasync))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(dir: &std::path::Path, options: UringOptions) -> UringSession {
        let path = dir.join("f.dat");
        std::fs::write(&path, vec![7u8; 1 << 16]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let block = crate::BlockParams::zeros(4096);
        let buf = AlignedBuf::new(4, &block, 1, crate::file::BufferPages::Huge, 0).unwrap();
        UringSession::new(UringSetup {
            files: super::super::set::Files {
                files: vec![file],
                end_fsync: false,
            },
            picker: super::super::Picker::new(vec![1 << 16], Default::default(), false, 1, None),
            fdatasync: false,
            buf,
            bounds: (0, 1 << 16),
            qd: 4,
            stamp: false,
            verify: None,
            options,
            command: None,
        }
        )
        .unwrap()
    }

    fn per_op() -> UringOptions {
        UringOptions {
            per_op_submit: true,
            ..UringOptions::default()
        }
    }

    /// Submits slots 0 and 1 and returns how many entries waited in the submission queue
    /// after each; then reaps both.
    fn queued_after_submits(s: &mut UringSession) -> [usize; 2] {
        let mut queued = [0; 2];
        for (slot, offset) in [(0, 0), (1, 8192)] {
            s.submit(slot, Op::Read { offset, len: 4096 }).unwrap();
            queued[slot as usize] = s.ring.submission().len();
        }
        let mut out = Completions::with_capacity(4);
        while out.len() < 2 {
            s.complete(1, &mut out).unwrap();
        }
        let mut slots: Vec<u32> = out
            .drain()
            .map(|c| {
                assert_eq!(c.result.unwrap(), 4096);
                c.slot
            })
            .collect();
        slots.sort();
        assert_eq!(slots, [0, 1]);
        queued
    }

    #[test]
    fn each_operation_reaches_the_kernel_when_submitted() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), per_op());
        // Nothing waits in the submission queue for the next reap.
        assert_eq!(queued_after_submits(&mut s), [0, 0]);
    }

    #[test]
    fn batched_operations_wait_for_the_reap() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(dir.path(), UringOptions::default());
        assert_eq!(queued_after_submits(&mut s), [1, 2]);
        let used: std::collections::HashMap<_, _> = s.used().into_iter().collect();
        assert_eq!(used["io-uring.submission"], "batched");
    }

    #[test]
    fn used_names_what_the_ring_runs_with() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path(), per_op());
        let used: std::collections::HashMap<_, _> = s.used().into_iter().collect();
        for key in [
            "io-uring.task-running",
            "io-uring.registered-buffers",
            "io-uring.registered-file",
            "io-uring.sqpoll",
            "io-uring.iopoll",
        ] {
            assert!(used.contains_key(key), "{key} missing from {used:?}");
        }
        let buffers = &used["io-uring.registered-buffers"];
        assert!(buffers == "yes" || buffers.starts_with("no ("), "{buffers}");
        assert_eq!(used["io-uring.sqpoll"], "no");
        assert_eq!(used["io-uring.iopoll"], "no");
        assert_eq!(used["io-uring.submission"], "per-operation");
    }

    #[test]
    fn errno_names_carry_the_number() {
        assert_eq!(errno_name(libc::ENOMEM), "ENOMEM");
        assert_eq!(errno_name(4095), "errno 4095");
        assert_eq!(yes_or_errno(Err(libc::ENOMEM)), "no (ENOMEM)");
        assert_eq!(yes_or_errno(Ok(())), "yes");
    }
}
