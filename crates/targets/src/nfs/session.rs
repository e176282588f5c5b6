//! One worker's NFS session: its own libnfs context (one TCP connection to the server), the
//! test file open, and up to queue-depth reads, writes and commits in flight on it.
//!
//! `submit` queues the call with libnfs (`nfs_pread_async`, `nfs_pwrite_async`,
//! `nfs_fsync_async`); `complete` polls the connection's socket and lets libnfs send and
//! receive (`nfs_service`), whose callbacks record each finished call's slot and result in a
//! queue allocated when the session opens. Nothing here allocates per operation; libnfs itself
//! allocates each call's RPC record and encoding buffer (as every libnfs client does), and
//! copies a read's bytes into its own buffer, which storlab copies into the slot only when the
//! data is checked (never for a plain read).

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};

use super::ffi::{Mounted, OpenHow, RawContext};
use storlab_model::{ErrorKind, OpError};
use rand::{Rng, SeedableRng};

use crate::session::{NOT_BLOCK_OP, OUT_OF_BOUNDS, in_bounds};
use crate::{BlockParams, Completion, Completions, Session, SessionParams, Submitted};
use storlab_model::Op;
use storlab_verify::Stamper;
use storlab_verify::stamper::Prepared as Stamped;

/// How long one poll waits before libnfs checks its RPC timeouts again.
const POLL_SLICE_MS: c_int = 100;

/// The longest one reconnect attempt waits for a call (mount, open), ms.
const RECONNECT_ATTEMPT_MS: u32 = 1000;

/// Errors of a call that say the connection, not the file, failed (libnfs fails a timed-out
/// or cancelled call with EINTR): the session then opens a new connection.
const CONNECTION_ERRNOS: &[i32] = &[
    libc::EINTR,
    libc::ETIMEDOUT,
    libc::ECONNRESET,
    libc::ECONNREFUSED,
    libc::EPIPE,
    libc::ENOTCONN,
    libc::EHOSTUNREACH,
    libc::ENETUNREACH,
];

/// The callbacks' side: finished (slot, result) pairs, in completion order. Written only by
/// [`on_done`], which runs inside `nfs_service` on the session's own thread.
struct DoneQueue {
    items: UnsafeCell<Vec<(u32, c_int)>>,
}

/// What a callback needs to know about its operation.
struct SlotCall {
    done: *const DoneQueue,
    slot: u32,
}

/// libnfs's callback of every queued call: records the slot's result. Never allocates: the
/// queue holds one entry per slot and a slot has one call in flight.
unsafe extern "C" fn on_done(
    err: c_int,
    _nfs: *mut RawContext,
    _data: *mut c_void,
    private: *mut c_void,
) {
    // SAFETY: `private` is the slot's SlotCall, which lives as long as the session (the
    // context, dropped first, runs every pending callback before it goes).
    unsafe {
        let call = &*(private as *const SlotCall);
        let items = &mut *(*call.done).items.get();
        if items.len() < items.capacity() {
            items.push((call.slot, err));
        }
    }
}

pub struct NfsSession {
    /// Dropped first: destroying the context cancels calls in flight, whose callbacks still
    /// reach the queue and slot records below.
    mounted: Mounted,
    done: Box<DoneQueue>,
    calls: Box<[SlotCall]>,
    /// Bytes each slot's operation must move (0: a commit).
    want: Box<[u32]>,
    /// Slot buffers for writes (block bytes each).
    buf: Box<[u8]>,
    block_bytes: usize,
    bounds: (u64, u64),
    in_flight: u32,
    /// Finished operations not yet handed to the worker (capacity: one per slot).
    held: Vec<Completion>,
    generation: u64,
    /// How long `complete` waits without any completion before it fails the session.
    stall: std::time::Duration,
    /// Since when `complete` has seen nothing finish with calls in flight.
    stalled_since: Option<std::time::Instant>,
    /// Times `nfs_service` reported a failed connection.
    connection_failures: u64,
    /// Per slot: a call is in flight on the current connection.
    busy: Box<[bool]>,
    /// A call failed as a broken connection does: reconnect at the next `complete`.
    suspect: bool,
    /// New connections the session opened after one broke.
    reconnects: u64,
    url: String,
    /// How each connection opens the file (`timeout_ms`: the calls' timeout).
    how: OpenHow,
    stamp: bool,
    verify: Option<Stamper>,
    used: Vec<(&'static str, String)>,
}

// SAFETY: the raw pointers point into the session's own boxes; the session moves between
// threads only as a whole, with no call running.
unsafe impl Send for NfsSession {}

impl NfsSession {
    /// A session on `mounted` for the worker `p` describes (`b`: its block workload's part);
    /// `how`: how `mounted` was opened, and a new connection is.
    pub fn new(
        mounted: Mounted,
        url: &str,
        p: &SessionParams,
        b: &BlockParams,
        how: OpenHow,
        used: Vec<(&'static str, String)>,
    ) -> NfsSession {
        let timeout_ms = how.timeout_ms;
        let (queue_depth, block_bytes) = (p.queue_depth, b.block_bytes as usize);
        let slots = queue_depth.max(1) as usize;
        let done = Box::new(DoneQueue {
            items: UnsafeCell::new(Vec::with_capacity(slots)),
        });
        let done_ptr: *const DoneQueue = &*done;
        let calls = (0..slots as u32)
            .map(|slot| SlotCall {
                done: done_ptr,
                slot,
            })
            .collect();
        let mut buf = vec![0u8; slots * block_bytes].into_boxed_slice();
        if b.random_data {
            rand::rngs::SmallRng::seed_from_u64(p.seed ^ ((p.worker as u64) << 32))
                .fill_bytes(&mut buf);
        } else {
            buf.fill(b.pattern);
        }
        NfsSession {
            mounted,
            done,
            calls,
            want: vec![0; slots].into_boxed_slice(),
            buf,
            block_bytes,
            bounds: (
                p.region.offset_bytes,
                p.region.offset_bytes + p.region.size_bytes,
            ),
            in_flight: 0,
            held: Vec::with_capacity(slots),
            generation: 0,
            stall: std::time::Duration::from_millis((timeout_ms as u64 * 2).max(60_000)),
            stalled_since: None,
            connection_failures: 0,
            busy: vec![false; slots].into_boxed_slice(),
            suspect: false,
            reconnects: 0,
            url: url.to_string(),
            how,
            stamp: b.random_data,
            // FILE_SYNC writes: each acknowledged write is on stable storage.
            verify: b
                .verify
                .as_ref()
                .map(|v| Stamper::new(v, slots).durable_on_ack(how.sync)),
            used,
        }
    }

    #[inline]
    fn private(&self, slot: u32) -> *mut c_void {
        &self.calls[slot as usize] as *const SlotCall as *mut c_void
    }

    #[inline]
    fn slot_buf(&mut self, slot: u32, len: u32) -> &mut [u8] {
        let start = slot as usize * self.block_bytes;
        &mut self.buf[start..start + (len as usize).min(self.block_bytes)]
    }

    /// Moves finished calls from the callbacks' queue to `held`, settling verified writes.
    #[inline]
    fn settle_done(&mut self) {
        // SAFETY: callbacks run only inside `service`, never while this borrow lives.
        let items = unsafe { &mut *self.done.items.get() };
        self.in_flight -= items.len() as u32;
        for (slot, err) in items.drain(..) {
            let want = self.want[slot as usize];
            let result = if err < 0 {
                Err(OpError::errno(-err))
            } else if want != 0 && err as u32 != want {
                Err(OpError {
                    kind: ErrorKind::ShortTransfer,
                    code: err,
                })
            } else {
                Ok(want)
            };
            if let Err(e) = result
                && CONNECTION_ERRNOS.contains(&e.code)
            {
                self.suspect = true;
            }
            self.busy[slot as usize] = false;
            if let Some(v) = &mut self.verify {
                v.completed(slot, result.is_ok());
            }
            self.held.push(Completion {
                slot,
                result,
                found: true,
            });
        }
    }

    /// Polls the socket for up to `timeout_ms` and lets libnfs work.
    #[inline]
    fn poll_once(&mut self, timeout_ms: c_int) -> Result<(), OpError> {
        let (fd, events) = self.mounted.poll_fd();
        let mut pfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if rc < 0 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            if errno == libc::EINTR {
                return Ok(());
            }
            return Err(OpError::errno(errno));
        }
        // With no event, a call with revents 0 lets libnfs time out overdue calls.
        if self.mounted.service(pfd.revents).is_err() {
            // The connection failed: libnfs reconnects and sends the calls in flight again, or
            // fails them at their timeout. Wait a slice rather than spin on a dead socket.
            self.connection_failures += 1;
            std::thread::sleep(std::time::Duration::from_millis(POLL_SLICE_MS as u64));
        }
        Ok(())
    }

    /// A call libnfs refused to queue (it never started): the slot is free again.
    #[cold]
    fn not_queued(&mut self, slot: u32, rc: c_int) -> OpError {
        if let Some(v) = &mut self.verify {
            v.completed(slot, false);
        }
        OpError::errno(if rc < 0 { -rc } else { libc::EIO })
    }

    /// Opens a new connection (mount and open again) and drops the old one: its calls still
    /// in flight fail (counted as errors; the worker issues new ones). When the server does
    /// not answer yet, the old connection stays and the next `complete` tries again. An
    /// attempt waits at most [`RECONNECT_ATTEMPT_MS`] per call (mount, open), as a kernel
    /// client retries: one attempt at an address that nobody answers yet (a node lost, the
    /// other not yet serving) must not hold the session for the calls' whole timeout.
    #[cold]
    fn reconnect(&mut self) {
        let attempt = OpenHow {
            timeout_ms: self.how.timeout_ms.min(RECONNECT_ATTEMPT_MS),
            ..self.how
        };
        let Ok((fresh, _)) = Mounted::open(&self.url, attempt) else {
            std::thread::sleep(std::time::Duration::from_millis(POLL_SLICE_MS as u64));
            self.suspect = true;
            return;
        };
        if self.how.timeout_ms > 0 {
            fresh.set_timeout(self.how.timeout_ms);
        }
        std::mem::replace(&mut self.mounted, fresh).abandon();
        self.reconnects += 1;
        // Calls whose callbacks ran as the old context went, then those it never reported.
        self.settle_done();
        self.suspect = false;
        // SAFETY: no callback runs outside `service`; the old context is gone.
        let items = unsafe { &mut *self.done.items.get() };
        for slot in 0..self.busy.len() as u32 {
            if self.busy[slot as usize] && items.len() < items.capacity() {
                items.push((slot, -libc::ECONNRESET));
            }
        }
        self.settle_done();
        self.suspect = false;
    }

    /// Reaps until the verified write in flight to block `index` has completed, keeping what
    /// completes for the next `complete` (two writes in flight to one block could land in
    /// either order).
    #[cold]
    fn wait_for_block(&mut self, index: usize) -> Result<(), OpError> {
        while self.verify.as_ref().is_some_and(|v| v.block_busy(index)) {
            self.poll_once(POLL_SLICE_MS)?;
            self.settle_done();
        }
        Ok(())
    }
}

impl Session for NfsSession {
    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let private = self.private(slot);
        let rc = match op {
            Op::Read { offset, len } => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                self.want[slot as usize] = len;
                // SAFETY: the slot's call record lives as long as the session.
                unsafe { self.mounted.pread_async(offset, len, on_done, private) }
            }
            Op::Write { offset, len } => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                if !in_bounds(self.bounds, offset, len) {
                    return Err(OUT_OF_BOUNDS);
                }
                while self.verify.is_some() {
                    let block = slot as usize * self.block_bytes;
                    let n = (len as usize).min(self.block_bytes);
                    let prepared = match &mut self.verify {
                        Some(v) => v.prepare(slot, &mut self.buf[block..block + n], offset),
                        None => Stamped::Ready,
                    };
                    match prepared {
                        Stamped::Ready => break,
                        Stamped::Busy(index) => self.wait_for_block(index)?,
                        Stamped::Outside => return Err(OUT_OF_BOUNDS),
                    }
                }
                if self.stamp && self.verify.is_none() {
                    self.generation += 1;
                    let g = self.generation;
                    let b = self.slot_buf(slot, len);
                    if b.len() >= 16 {
                        b[..8].copy_from_slice(&offset.to_le_bytes());
                        b[8..16].copy_from_slice(&g.to_le_bytes());
                    }
                }
                self.want[slot as usize] = len;
                let ptr = self.slot_buf(slot, len).as_ptr();
                // SAFETY: the slot's buffer is not touched again until its completion.
                unsafe { self.mounted.pwrite_async(offset, len, ptr, on_done, private) }
            }
            Op::Fsync => {
                if let Some(v) = &mut self.verify {
                    v.fsync_submitted(slot);
                }
                self.want[slot as usize] = 0;
                // SAFETY: as for reads.
                unsafe { self.mounted.fsync_async(on_done, private) }
            }
            _ => return Err(NOT_BLOCK_OP),
        };
        if rc != 0 {
            return Err(self.not_queued(slot, rc));
        }
        self.busy[slot as usize] = true;
        self.in_flight += 1;
        Ok(Submitted::Queued)
    }

    #[inline]
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError> {
        // Send what is queued without a poll first (the socket is writable unless the server
        // is behind; libnfs keeps what it could not write). With nothing to wait for, take
        // what has arrived without waiting.
        let (_, events) = self.mounted.poll_fd();
        if events & libc::POLLOUT != 0 && self.mounted.service(libc::POLLOUT).is_err() {
            self.connection_failures += 1;
        }
        if min == 0 {
            self.poll_once(0)?;
        }
        self.settle_done();
        let min = min.min(self.in_flight + self.held.len() as u32);
        // Wait one poll slice at a time; after a slice with nothing new, return what there
        // is (maybe nothing), so that the worker closes its timeline intervals on time and a
        // stalled server shows as an outage rather than one long interval.
        while (self.held.len() as u32) < min {
            self.poll_once(POLL_SLICE_MS)?;
            let before = self.held.len();
            self.settle_done();
            if self.held.len() == before {
                break;
            }
        }
        // A broken connection: libnfs 4.0 does not always recover one (after a server's
        // node went away, calls can stay queued on a dead context, failing one timeout after
        // another), so the session opens a new one, as a kernel client would.
        let dead = self.in_flight > 0 && self.mounted.poll_fd().0 < 0;
        if self.suspect || dead {
            self.suspect = false;
            self.reconnect();
        }
        // A watchdog, not a measurement: when nothing completes for `stall` (libnfs neither
        // answered nor timed the calls out), the session fails rather than hang the run.
        if !self.held.is_empty() || self.in_flight == 0 {
            self.stalled_since = None;
        } else if self
            .stalled_since
            .get_or_insert_with(std::time::Instant::now)
            .elapsed()
            > self.stall
        {
            return Err(OpError::errno(libc::ETIMEDOUT));
        }
        for c in self.held.drain(..) {
            out.push(c);
        }
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        let mut used = self.used.clone();
        if self.reconnects > 0 {
            used.push(("nfs.reconnects", self.reconnects.to_string()));
        }
        if self.connection_failures > 0 {
            used.push((
                "nfs.connection-failures",
                self.connection_failures.to_string(),
            ));
        }
        used
    }
}
