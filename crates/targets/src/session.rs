//! The session contract: the operations a worker hands a target's session ([`Op`]), how the
//! session answers (executed on the spot, or queued and reported by `complete`), and what a
//! target declares about overlapping operations ([`Overlap`], [`Capabilities`]).

use storlab_model::Op;
use storlab_model::WorkloadKind;
use storlab_model::{OpError, OpKind};

/// One finished operation: its slot and the bytes moved (or why it failed), and whether the
/// key it addressed was there (always true for block operations).
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub slot: u32,
    pub result: Result<u32, OpError>,
    pub found: bool,
}

/// A fixed-capacity list of completions, allocated once per worker.
pub struct Completions {
    items: Vec<Completion>,
}

impl Completions {
    pub fn with_capacity(n: usize) -> Completions {
        Completions {
            items: Vec::with_capacity(n),
        }
    }

    /// Adds a completion. Sessions never have more completions than slots, so this never
    /// grows the buffer.
    #[inline]
    pub fn push(&mut self, c: Completion) {
        debug_assert!(self.items.len() < self.items.capacity());
        self.items.push(c);
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The `i`th completion, in the order they were pushed.
    #[inline]
    pub fn get(&self, i: usize) -> Completion {
        self.items[i]
    }

    /// Removes all completions.
    #[inline]
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Removes all completions in order.
    #[inline]
    pub fn drain(&mut self) -> std::vec::Drain<'_, Completion> {
        self.items.drain(..)
    }
}

/// A key-value operation sent to a block target (the plan refuses such studies).
pub const NOT_BLOCK_OP: OpError = OpError {
    kind: storlab_model::ErrorKind::Invalid,
    code: libc::EINVAL,
};

/// A block operation outside the session's region (never issued).
pub const OUT_OF_BOUNDS: OpError = OpError {
    kind: storlab_model::ErrorKind::Invalid,
    code: libc::ERANGE,
};

/// Whether `len` bytes at `offset` lie inside `bounds` (first byte, end).
#[inline]
pub fn in_bounds(bounds: (u64, u64), offset: u64, len: u32) -> bool {
    offset >= bounds.0 && offset + len as u64 <= bounds.1
}

/// What `submit` did with an operation: fio's FIO_Q_COMPLETED and FIO_Q_QUEUED.
#[derive(Debug, Clone, Copy)]
pub enum Submitted {
    /// Queued: it completes later and `complete` reports it (a ring, a pipeline, a batch).
    Queued,
    /// Executed on the spot, before `submit` returned: the worker times it alone, from just
    /// before `submit` to just after, and frees its slot at once.
    Done {
        result: Result<u32, OpError>,
        found: bool,
    },
}

impl Submitted {
    /// A finished operation from a binding's (bytes, found) result.
    #[inline]
    pub fn done(outcome: Result<(u32, bool), OpError>) -> Submitted {
        match outcome {
            Ok((bytes, found)) => Submitted::Done {
                result: Ok(bytes),
                found,
            },
            Err(e) => Submitted::Done {
                result: Err(e),
                found: false,
            },
        }
    }
}

/// A worker's connection to a target.
///
/// The contract, as fio's engines: `submit` either executes the operation and says so
/// ([`Submitted::Done`]), or queues it ([`Submitted::Queued`]) for `complete` to report. A
/// session never reads the clock; the worker stamps each operation's start right before its
/// `submit` (or, for operations that all start in `complete`, before the first of them: see
/// [`Session::starts_in_complete`]) and its end when it learns of the completion. A target that cannot overlap
/// operations declares [`Overlap::None`] and always answers `Done`; the plan then refuses a
/// queue depth above 1 for it.
pub trait Session {
    /// Whether the operations `submit` queues reach the system only in the next `complete`
    /// (one system call for all of them, or none: io_uring's enter, a pipeline's send):
    /// none of them has started when `submit` returns. The worker then times every
    /// operation queued between two `complete` calls from one clock reading taken before the
    /// first of them, as they all start at that call. False (the default): a session whose
    /// `submit` may start the operation (a thread woken, a request written) gets a reading
    /// right before each `submit`. Asked once per worker, before its first operation.
    fn starts_in_complete(&self) -> bool {
        false
    }

    /// Executes or queues `op` in `slot` (0..queue depth). An error here means the operation
    /// was not started.
    fn submit(&mut self, slot: u32, op: Op) -> Result<Submitted, OpError>;

    /// Hands queued operations to the system and appends completions to `out`, waiting
    /// until at least `min` have completed (0: do not wait). A session whose operations wait
    /// on a network may return fewer after a bounded wait (a poll slice): the worker then
    /// closes its timeline intervals and checks its stop before it calls again, so a server
    /// that stops answering shows as an outage on the timeline.
    fn complete(&mut self, min: u32, out: &mut Completions) -> Result<(), OpError>;

    /// What the session actually uses, where it can differ from what was asked (registered
    /// buffers, a kernel feature it fell back from), for the summary and the disclosure.
    fn used(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The key-value verify pass: reads the whole YCSB record `keynum` and says what its
    /// fields hold (see [`storlab_verify::kv`]). None: this session cannot read records back.
    fn read_back(&mut self, _keynum: u64) -> Option<storlab_verify::kv::ReadBack> {
        None
    }
}

/// Something that runs with a concrete session type: the worker loop.
pub trait SessionUser {
    type Output;
    fn run<S: Session>(self, session: S) -> Self::Output;
}

/// How a target's sessions treat several operations in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// One at a time: every operation executes in `submit` (pread, a SQL statement, an
    /// embedded engine's call). Queue depth 1 only.
    None,
    /// Operations in flight together, each completing on its own (io_uring).
    Concurrent { max_queue_depth: u32 },
    /// Queued operations of these kinds go to the server together as one request (a Redis
    /// pipeline, a MongoDB insertMany) and complete together; each is timed from its own
    /// submission to its batch's completion. Other kinds execute one at a time.
    Batched {
        kinds: &'static [OpKind],
        max_queue_depth: u32,
    },
}

impl Overlap {
    pub fn max_queue_depth(self) -> u32 {
        match self {
            Overlap::None => 1,
            Overlap::Concurrent { max_queue_depth }
            | Overlap::Batched {
                max_queue_depth, ..
            } => max_queue_depth,
        }
    }

    /// Whether an operation of `kind` may stay queued after `submit` returns.
    pub fn queues(self, kind: OpKind) -> bool {
        match self {
            Overlap::None => false,
            Overlap::Concurrent { .. } => true,
            Overlap::Batched { kinds, .. } => kinds.contains(&kind),
        }
    }

    /// How operations of `kinds` run at `queue_depth`, in words, for results.
    pub fn describe(self, kinds: &[OpKind], queue_depth: u32) -> String {
        let names = |ks: &[&OpKind]| ks.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
        match self {
            _ if queue_depth <= 1 => "one operation at a time per worker".to_string(),
            Overlap::None => "one operation at a time per worker".to_string(),
            Overlap::Concurrent { .. } => {
                format!(
                    "up to {queue_depth} operations in flight per worker, each completing on its own"
                )
            }
            Overlap::Batched { kinds: batched, .. } => {
                let (b, one): (Vec<&OpKind>, Vec<&OpKind>) =
                    kinds.iter().partition(|k| batched.contains(k));
                let mut parts = Vec::new();
                if !b.is_empty() {
                    parts.push(format!(
                        "{} sent in batches of up to {queue_depth}, each timed from its submission to its batch's completion",
                        names(&b)
                    ));
                }
                if !one.is_empty() {
                    parts.push(format!("{} one at a time", names(&one)));
                }
                parts.join("; ")
            }
        }
    }
}

/// What a target can do, checked when a study is planned.
#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// Workload types it takes.
    pub workloads: &'static [WorkloadKind],
    pub ops: &'static [OpKind],
    pub overlap: Overlap,
    /// The target runs inside storlab's process, on the worker threads (an embedded engine):
    /// their CPU time is the target's work too.
    pub in_process: bool,
    /// It writes a block workload's buffers as the workload fills them (fio's
    /// `write-buffers`), not data of its own.
    pub writes_given_buffers: bool,
    /// Its sessions read whole YCSB records back for the key-value verify pass
    /// ([`Session::read_back`]).
    pub reads_records_back: bool,
    /// It keeps pgbench's lost-transaction ledger (`verify = true` on a pgbench workload):
    /// history rows tagged per transaction, read back after the run
    /// ([`Target::ledger`](crate::Target::ledger), a [`LedgerKeeper`](crate::LedgerKeeper)).
    pub keeps_ledger: bool,
}

impl Capabilities {
    /// A file on a file server (SMB, NFS): block reads, writes and flushes, many in flight per
    /// connection, the server out of storlab's process.
    pub const FILE_ON_SERVER: Capabilities = Capabilities {
        workloads: &[WorkloadKind::Block],
        ops: &[OpKind::Read, OpKind::Write, OpKind::Fsync],
        overlap: Overlap::Concurrent {
            max_queue_depth: 1024,
        },
        in_process: false,
        writes_given_buffers: false,
        reads_records_back: false,
        keeps_ledger: false,
    };
}
