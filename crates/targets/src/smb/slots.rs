//! The `smb` target's session: how storlab's synchronous worker drives the crate's tokio
//! futures without allocating, locking or sending a message of its own per operation.
//!
//! Each slot of the worker's queue has a task on the target's runtime, spawned when the
//! session opens, that loops: wait for its [`Notify`], run the slot's operation on the
//! session's file handle, store the result, set the slot's bit in the completion mask, wake
//! the worker. A slot's cells belong to the worker while the slot is idle and to its task
//! between the notification and the bit. Who runs the tasks ([`Driver`]):
//!
//! - `io-threads = 0` (the default): a current-thread runtime that the workers drive
//!   themselves. `submit` writes the operation into the slot and marks it pending; `complete`
//!   enters the runtime (`block_on`), notifies the pending slots from inside it and runs the
//!   tasks, the crate's send and receive loops and the socket's events until enough bits are
//!   set. Everything of an operation happens on the worker's thread, with no hand-off between
//!   threads (measured by bench/vs-smb: the hand-offs of the other mode cost about half the
//!   IOPS at 12 in flight on this project's 2-core test machine). With two workers on one
//!   target, the one inside `complete` runs the other's tasks too (tokio hands the runtime
//!   over when it leaves). Polling (`complete(0)`, open loop) runs what is ready and returns.
//! - `io-threads = N`: a runtime with N threads of its own. `submit` notifies the slot at
//!   once; `complete` takes the mask's bits and parks the worker thread until enough are set
//!   (each completion unparks it).
//!
//! Per operation, the costs outside storlab's control: tokio wakes the slot task (its
//! scheduler's queue and, with threads of its own, a futex if one sleeps), and the crate allocates a
//! request (message buffers, a reply channel, a timer) and each reply's bytes, and copies a
//! read's data from the reply into the slot's buffer. Writes pass the slot's buffer to the crate
//! without copying (`write_block_zc`, the buffer is shared, not copied); if the crate still holds
//! it when the slot is refilled, storlab copies it into a new buffer and counts that in `used()`.
//!
//! Verified writes (`verify = true`): the slot's buffer is stamped by the worker's
//! [`Stamper`] before the write leaves, and the completion is recorded when the worker takes it
//! (never in the slot's task). A write to a block whose earlier write is still in flight waits
//! for it, keeping what completes meanwhile for the next `complete`.
//!
//! Every request has storlab's own deadline (the target's `timeout`): one that gets no
//! response by then fails as a `timeout` error.
//! A failed connection: the operation that found it fails (a `connection` or `timeout` error),
//! and the slot's next operation first reopens the file, on a new connection if no other slot
//! made one already, retrying for up to the target's timeout.

use crate::session::{NOT_BLOCK_OP, OUT_OF_BOUNDS};
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use tokio::sync::Notify;

use super::link::{Link, LinkError};
use storlab_model::{ErrorKind, OpError};
use crate::{BlockParams, Completion, Completions, Session, SessionParams, Submitted};
use storlab_model::Op;
use storlab_verify::Stamper;
use storlab_verify::stamper::Prepared as Stamped;

/// An operation a slot runs.
#[derive(Debug, Clone, Copy)]
enum SlotOp {
    Read { offset: u64, len: u32 },
    Write { offset: u64, len: u32 },
    Flush,
}

struct Slot {
    go: Notify,
    op: UnsafeCell<SlotOp>,
    result: UnsafeCell<Result<u32, OpError>>,
    /// The data of the slot's writes, shared with the crate while a write is in flight.
    data: UnsafeCell<Arc<[u8]>>,
}

/// What the worker and its slot tasks share.
struct Ring {
    slots: Box<[Slot]>,
    /// Bit `i % 64` of word `i / 64`: slot `i` completed.
    done: Box<[AtomicU64]>,
    /// With threads of its own: the worker thread, unparked at each completion.
    worker: std::thread::Thread,
    /// Driven by the workers: notified at each completion.
    any_done: Notify,
    driven: bool,
    closed: AtomicBool,
    in_flight: AtomicU32,
    max_in_flight: AtomicU32,
}

// SAFETY: a slot's cells are accessed by one side at a time: the worker until it notifies the
// slot's task (Notify orders the writes before the task's reads), the task until it sets the
// slot's bit with release ordering, which the worker takes with acquire ordering.
unsafe impl Sync for Slot {}

impl Ring {
    #[inline]
    fn finish(&self, index: usize) {
        self.done[index / 64].fetch_or(1 << (index % 64), Ordering::Release);
        if self.driven {
            self.any_done.notify_one();
        } else {
            self.worker.unpark();
        }
    }

    /// Completed slots not yet taken.
    #[inline]
    fn ready(&self) -> usize {
        self.done
            .iter()
            .map(|w| w.load(Ordering::Acquire).count_ones() as usize)
            .sum()
    }

    /// Notifies the slots marked in `pending` (from inside the runtime: no wake-up of another
    /// thread) and clears them.
    #[inline]
    fn kick(&self, pending: &mut [u64]) {
        for (w, word) in pending.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.slots[w * 64 + bit].go.notify_one();
            }
        }
    }
}

/// The session's handle on the test file, reopened after a connection failed.
pub(super) struct Files {
    link: Arc<Link>,
    writes: bool,
    state: tokio::sync::Mutex<FileState>,
}

struct FileState {
    /// Bumped at each reopen.
    generation: u64,
    connection: u64,
    file: Arc<smb::File>,
}

impl Files {
    pub(super) async fn open(link: Arc<Link>, writes: bool) -> Result<Files, LinkError> {
        let c = link.connection(None).await?;
        let file = link.open_file(&c, writes).await?.ok_or_else(|| LinkError::Missing {
            file: link.endpoint.file.clone(),
            share: link.endpoint.share.clone(),
        })?;
        Ok(Files {
            link,
            writes,
            state: tokio::sync::Mutex::new(FileState {
                generation: 0,
                connection: c.generation,
                file: Arc::new(file),
            }),
        })
    }

    async fn current(&self) -> (u64, Arc<smb::File>) {
        let s = self.state.lock().await;
        (s.generation, s.file.clone())
    }

    /// A handle newer than `stale`: another slot's, or a new one on a new connection.
    async fn reopen(&self, stale: u64) -> Result<(u64, Arc<smb::File>), LinkError> {
        let mut s = self.state.lock().await;
        if s.generation != stale {
            return Ok((s.generation, s.file.clone()));
        }
        let c = self.link.connection(Some(s.connection)).await?;
        let file = self
            .link
            .open_file(&c, self.writes)
            .await?
            .ok_or_else(|| LinkError::Missing {
                file: self.link.endpoint.file.clone(),
                share: self.link.endpoint.share.clone(),
            })?;
        s.generation += 1;
        s.connection = c.generation;
        s.file = Arc::new(file);
        Ok((s.generation, s.file.clone()))
    }
}

const CONNECTION: OpError = OpError {
    kind: ErrorKind::Connection,
    code: 0,
};

const TIMED_OUT: OpError = OpError {
    kind: ErrorKind::Timeout,
    code: 0,
};

/// What an error of the crate says: the server answered with a status (the connection is
/// fine), a request timed out, or the connection is gone. The crate hands read and write
/// errors over as text only.
fn classify(e: &std::io::Error) -> OpError {
    let text = e.to_string();
    let kind = if text.contains("timed out") {
        ErrorKind::Timeout
    } else if text.contains("status") {
        match e.kind() {
            std::io::ErrorKind::PermissionDenied => ErrorKind::Invalid,
            _ => ErrorKind::Io,
        }
    } else {
        ErrorKind::Connection
    };
    OpError { kind, code: 0 }
}

/// Whether the slot's next operation should reopen the file first.
fn broke_connection(e: &OpError) -> bool {
    matches!(e.kind, ErrorKind::Connection | ErrorKind::Timeout)
}

/// One slot's loop on the runtime.
async fn slot_task(ring: Arc<Ring>, index: usize, files: Arc<Files>, block_bytes: usize, timeout: Duration) {
    let (mut generation, mut file) = files.current().await;
    let mut buf = vec![0u8; block_bytes];
    let mut broken = false;
    let slot = &ring.slots[index];
    loop {
        slot.go.notified().await;
        if ring.closed.load(Ordering::Acquire) {
            break;
        }
        // SAFETY: the worker wrote the operation before notifying and waits for the bit.
        let op = unsafe { *slot.op.get() };
        let now = ring.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        ring.max_in_flight.fetch_max(now, Ordering::Relaxed);
        let mut result = Err(CONNECTION);
        if broken {
            let deadline = Instant::now() + timeout;
            loop {
                match files.reopen(generation).await {
                    Ok((g, f)) => {
                        (generation, file) = (g, f);
                        broken = false;
                        break;
                    }
                    Err(_) if Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(_) => break,
                }
            }
        }
        if !broken {
            let request = async {
                match op {
                    SlotOp::Read { offset, len } => {
                        match file.read_block(&mut buf[..len as usize], offset, None, false).await
                        {
                            Ok(n) => transferred(n, len),
                            Err(e) => Err(classify(&e)),
                        }
                    }
                    SlotOp::Write { offset, len } => {
                        // SAFETY: as the operation above; the worker replaces the buffer only
                        // while the slot is idle.
                        let data = unsafe { (*slot.data.get()).clone() };
                        match file.write_block_zc(data, offset, None).await {
                            Ok(n) => transferred(n, len),
                            Err(e) => Err(classify(&e)),
                        }
                    }
                    SlotOp::Flush => file.flush().await.map(|()| 0).map_err(|e| classify(&e)),
                }
            };
            // storlab's own deadline on every request: a response that never comes (a server
            // or the crate losing it) fails the operation as a timeout and the slot moves to
            // a new connection, instead of holding the worker forever.
            result = match tokio::time::timeout(timeout, request).await {
                Ok(r) => r,
                Err(_) => Err(TIMED_OUT),
            };
            if let Err(e) = &result {
                broken = broke_connection(e);
            }
        }
        ring.in_flight.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: the worker reads the result only after the bit below.
        unsafe { *slot.result.get() = result };
        ring.finish(index);
    }
}

#[inline]
fn transferred(n: usize, want: u32) -> Result<u32, OpError> {
    if n == want as usize {
        Ok(want)
    } else {
        Err(OpError {
            kind: ErrorKind::ShortTransfer,
            code: n as i32,
        })
    }
}

/// An idle slot's write buffer, `len` bytes (at most the template's), ready to be stamped:
/// made anew for a new length, copied if the crate still holds it (`counts`: copies, resized).
#[inline]
#[allow(clippy::mut_from_ref)]
fn slot_buffer<'a>(
    slot: &'a Slot,
    template: &[u8],
    counts: (&mut u64, &mut u64),
    len: u32,
) -> &'a mut [u8] {
    // SAFETY: the slot is idle (the worker submits only to free slots), so its buffer is the
    // worker's alone until the slot is notified.
    let data = unsafe { &mut *slot.data.get() };
    let len = (len as usize).min(template.len());
    if data.len() != len {
        *counts.1 += 1;
        *data = Arc::from(&template[..len]);
    } else if Arc::get_mut(data).is_none() {
        *counts.0 += 1;
        *data = Arc::from(&data[..]);
    }
    Arc::get_mut(data).map_or(&mut [][..], |d| &mut d[..])
}

/// Who runs the slots' tasks and the connection (see the module's documentation).
pub enum Driver {
    /// A runtime with threads of its own.
    Threads(tokio::runtime::Handle),
    /// A current-thread runtime, driven by the workers inside `complete`.
    Workers(Arc<tokio::runtime::Runtime>),
}

impl Driver {
    fn handle(&self) -> &tokio::runtime::Handle {
        match self {
            Driver::Threads(h) => h,
            Driver::Workers(rt) => rt.handle(),
        }
    }
}

/// One worker's session: its slots' tasks on the target's runtime.
pub struct SmbSession {
    ring: Arc<Ring>,
    driver: Driver,
    /// Driven by the workers: slots submitted but not yet notified (bit per slot).
    pending: Box<[u64]>,
    /// Taken on drop, inside the runtime (the crate closes handles from there).
    files: Option<Arc<Files>>,
    bounds: (u64, u64),
    /// Written blocks carry their offset and a generation (with random data).
    stamp: bool,
    generation: u64,
    /// The bytes every write starts from (random or the pattern).
    template: Box<[u8]>,
    /// Write buffers copied because the crate still held one (should stay 0).
    copies: u64,
    /// Write buffers made for a new transfer size.
    resized: u64,
    /// Verified writes (`verify = true`).
    verify: Option<Stamper>,
    /// Completions taken while a verified write waited for its block, for the next `complete`.
    held: Vec<Completion>,
    facts: Vec<(&'static str, String)>,
    link: Arc<Link>,
}

impl SmbSession {
    pub(super) fn open(
        driver: Driver,
        link: Arc<Link>,
        files: Files,
        (p, b): (&SessionParams, &BlockParams),
        timeout: Duration,
        facts: Vec<(&'static str, String)>,
    ) -> SmbSession {
        let qd = p.queue_depth.max(1) as usize;
        let block = b.block_bytes as usize;
        let mut template = vec![b.pattern; block].into_boxed_slice();
        if b.random_data {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(p.seed ^ ((p.worker as u64) << 32));
            rng.fill_bytes(&mut template);
        }
        let slots = (0..qd)
            .map(|_| Slot {
                go: Notify::new(),
                op: UnsafeCell::new(SlotOp::Flush),
                result: UnsafeCell::new(Ok(0)),
                data: UnsafeCell::new(Arc::from(&template[..])),
            })
            .collect();
        let ring = Arc::new(Ring {
            slots,
            done: (0..qd.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            worker: std::thread::current(),
            any_done: Notify::new(),
            driven: matches!(driver, Driver::Workers(_)),
            closed: AtomicBool::new(false),
            in_flight: AtomicU32::new(0),
            max_in_flight: AtomicU32::new(0),
        });
        let files = Arc::new(files);
        for i in 0..qd {
            driver
                .handle()
                .spawn(slot_task(ring.clone(), i, files.clone(), block, timeout));
        }
        SmbSession {
            ring,
            driver,
            pending: vec![0; qd.div_ceil(64)].into_boxed_slice(),
            files: Some(files),
            bounds: (
                p.region.offset_bytes,
                p.region.offset_bytes + p.region.size_bytes,
            ),
            stamp: b.random_data,
            generation: 0,
            template,
            copies: 0,
            resized: 0,
            verify: b.verify.as_ref().map(|v| Stamper::new(v, qd)),
            held: Vec::with_capacity(qd),
            facts,
            link,
        }
    }

    /// The slot's write buffer, `len` bytes, ready to be stamped.
    #[inline]
    fn write_buffer(&mut self, slot: usize, len: u32) -> &mut [u8] {
        slot_buffer(
            &self.ring.slots[slot],
            &self.template,
            (&mut self.copies, &mut self.resized),
            len,
        )
    }

    /// Moves the completed slots' results to `held`, recording verified writes and fsyncs.
    #[inline]
    fn take_done(&mut self) {
        for (w, word) in self.ring.done.iter().enumerate() {
            let mut bits = word.swap(0, Ordering::Acquire);
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let index = w * 64 + bit;
                // SAFETY: the task stored the result before setting the bit.
                let result = unsafe { *self.ring.slots[index].result.get() };
                if let Some(v) = &mut self.verify {
                    v.completed(index as u32, result.is_ok());
                }
                self.held.push(Completion {
                    slot: index as u32,
                    result,
                    found: true,
                });
            }
        }
    }

    /// Takes completions until the verified write in flight to block `index` has completed.
    #[cold]
    fn wait_for_block(&mut self, index: usize) {
        loop {
            self.take_done();
            if !self.verify.as_ref().is_some_and(|v| v.block_busy(index)) {
                return;
            }
            self.wait_ready(1);
        }
    }

    /// Waits for `want` completions not yet taken (0: runs what is ready, or polls once);
    /// may return early (the caller checks again).
    #[inline]
    fn wait_ready(&mut self, want: usize) {
        match &self.driver {
            Driver::Threads(_) => {
                if self.ring.ready() < want.max(1) {
                    // Woken by the next completion; the timeout only guards against a lost
                    // wake.
                    std::thread::park_timeout(Duration::from_millis(100));
                }
            }
            Driver::Workers(rt) => {
                let ring = &*self.ring;
                let pending = &mut self.pending[..];
                rt.block_on(async move {
                    ring.kick(pending);
                    if want == 0 {
                        // Let the tasks and the socket's events run twice, then return.
                        tokio::task::yield_now().await;
                        tokio::task::yield_now().await;
                        return;
                    }
                    while ring.ready() < want {
                        // A permit left by an earlier completion only costs one more check.
                        ring.any_done.notified().await;
                    }
                });
            }
        }
    }
}

impl Session for SmbSession {
    #[inline]
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError> {
        let index = slot as usize;
        let slot_op = match op {
            Op::Read { offset, len } | Op::Write { offset, len }
                if offset < self.bounds.0 || offset + len > self.bounds.1 =>
            {
                return Err(OUT_OF_BOUNDS);
            }
            Op::Read { offset, len } => SlotOp::Read {
                offset,
                len: len as u32,
            },
            Op::Write { offset, len } if self.verify.is_some() => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                loop {
                    let buf = slot_buffer(
                        &self.ring.slots[index],
                        &self.template,
                        (&mut self.copies, &mut self.resized),
                        len,
                    );
                    let prepared = match &mut self.verify {
                        Some(v) => v.prepare(slot, buf, offset),
                        None => Stamped::Ready,
                    };
                    match prepared {
                        Stamped::Ready => break,
                        Stamped::Busy(block) => self.wait_for_block(block),
                        Stamped::Outside => return Err(OUT_OF_BOUNDS),
                    }
                }
                SlotOp::Write { offset, len }
            }
            Op::Write { offset, len } => {
                let len = len as u32; // a transfer fits 32 bits (block-size <= 64 MiB)
                let stamp = self.stamp;
                self.generation += 1;
                let generation = self.generation;
                let buf = self.write_buffer(index, len);
                if stamp && buf.len() >= 16 {
                    buf[..8].copy_from_slice(&offset.to_le_bytes());
                    buf[8..16].copy_from_slice(&generation.to_le_bytes());
                }
                SlotOp::Write { offset, len }
            }
            Op::Fsync => {
                if let Some(v) = &mut self.verify {
                    v.fsync_submitted(slot);
                }
                SlotOp::Flush
            }
            _ => return Err(NOT_BLOCK_OP),
        };
        let s = &self.ring.slots[index];
        // SAFETY: the slot is idle until notified.
        unsafe { *s.op.get() = slot_op };
        match self.driver {
            Driver::Threads(_) => s.go.notify_one(),
            // Notified from inside the runtime by the next `complete`.
            Driver::Workers(_) => self.pending[index / 64] |= 1 << (index % 64),
        }
        Ok(Submitted::Queued)
    }

    #[inline]
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError> {
        let min = min as usize;
        if min == 0 && matches!(self.driver, Driver::Workers(_)) {
            // Nobody else runs the operations in flight: poll them once.
            self.wait_ready(0);
        }
        loop {
            self.take_done();
            if self.held.len() >= min {
                for c in self.held.drain(..) {
                    out.push(c);
                }
                return Ok(());
            }
            self.wait_ready(min - self.held.len());
        }
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        let mut v = self.facts.clone();
        v.push((
            "smb.max-in-flight-per-session",
            self.ring.max_in_flight.load(Ordering::Relaxed).to_string(),
        ));
        v.push((
            "smb.max-in-flight-on-connection",
            self.link
                .counters
                .max_in_flight
                .load(Ordering::Relaxed)
                .to_string(),
        ));
        let counters = &self.link.counters;
        v.push((
            "smb.interim-responses",
            format!(
                "{} (credits granted in them: {})",
                counters.interim.load(Ordering::Relaxed),
                counters.interim_credits.load(Ordering::Relaxed)
            ),
        ));
        v.push((
            "smb.credits",
            format!(
                "{} granted, {} charged, at most {} held, at most {} asked for by one request",
                counters.credits_granted.load(Ordering::Relaxed),
                counters.credits_charged.load(Ordering::Relaxed),
                counters.max_credits_held.load(Ordering::Relaxed),
                counters.max_credits_requested.load(Ordering::Relaxed)
            ),
        ));
        v.push((
            "smb.reconnects",
            self.link.reconnects.load(Ordering::Relaxed).to_string(),
        ));
        v.push((
            "smb.write-buffers-copied",
            format!(
                "{} (the crate still held the buffer), {} made for a new transfer size",
                self.copies, self.resized
            ),
        ));
        v
    }
}

impl Drop for SmbSession {
    fn drop(&mut self) {
        self.ring.closed.store(true, Ordering::Release);
        for s in self.ring.slots.iter() {
            s.go.notify_one();
        }
        let _inside = self.driver.handle().enter();
        self.files.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_classified_from_the_crates_words() {
        let e = |t: &str| std::io::Error::other(t.to_string());
        assert_eq!(
            classify(&e("Client connection is stopped")).kind,
            ErrorKind::Connection
        );
        assert_eq!(
            classify(&e("Transport error: Not connected")).kind,
            ErrorKind::Connection
        );
        assert_eq!(
            classify(&e("Operation timed out: ReceiveNextMessage, took >10s")).kind,
            ErrorKind::Timeout
        );
        assert_eq!(
            classify(&e(
                "Server returned an error message with status: Disk Full (0xc000007f)."
            ))
            .kind,
            ErrorKind::Io
        );
        assert!(broke_connection(&CONNECTION));
        assert!(!broke_connection(&OpError {
            kind: ErrorKind::Io,
            code: 0
        }));
    }

    #[test]
    fn a_short_transfer_is_an_error() {
        assert_eq!(transferred(4096, 4096), Ok(4096));
        assert_eq!(transferred(100, 4096).unwrap_err().kind, ErrorKind::ShortTransfer);
    }
}
