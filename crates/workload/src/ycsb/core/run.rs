//! A core workload's run: the generators built once per load or run phase ([`CoreRun`]),
//! the key chooser, and the per-worker operation sources of the run phase ([`CoreSource`])
//! and the load phase ([`LoadSource`]).

use super::*;

impl CoreWorkload {
    pub(super) fn generators(&self) -> Result<Templates, GeneratorError> {
        Ok(Templates {
            ops: self.op_chooser()?,
            keys: self.key_chooser()?,
            fields: Uniform::new(0, self.field_count.max(1) as u64 - 1)?,
            field_length: self.field_length()?,
            scan_length: self.scan_length()?,
        })
    }

    /// Starts a run: builds the generators once (zeta included) and the counters the workers
    /// share. One per load or run phase.
    pub fn start(&self, seed: u64) -> Result<CoreRun, GeneratorError> {
        Ok(CoreRun {
            workload: Arc::new(self.clone()),
            templates: self.generators()?,
            load_keys: Arc::new(Counter::new(self.insert_start)),
            insert_keys: Arc::new(AcknowledgedCounter::new(self.record_count)),
            seed,
        })
    }
}

/// Generators built once per run and cloned into every worker.
#[derive(Debug, Clone)]
pub(super) struct Templates {
    ops: Discrete<OpKind>,
    keys: KeyChooser,
    fields: Uniform,
    field_length: LengthGenerator,
    scan_length: LengthGenerator,
}

/// How a run chooses the key of a read, update, scan or read-modify-write
/// (`requestdistribution`), as YCSB's `CoreWorkload.init` builds its `keychooser`.
#[derive(Debug, Clone)]
pub enum KeyChooser {
    Uniform(Uniform),
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Sequential(Sequential),
    Exponential(Exponential),
}

impl KeyChooser {
    /// A key number below `acknowledged_end` (every key below it is inserted), YCSB's
    /// `nextKeynum`: keys past the latest acknowledged insert are drawn again; exponential
    /// counts back from it and draws again when that goes below 0. (YCSB takes the draw's
    /// `intValue()`; counts here stay 64-bit, which is the same below 2^31.)
    #[inline]
    pub fn next_keynum<R: Rng + ?Sized>(&mut self, rng: &mut R, acknowledged_end: u64) -> u64 {
        let end = acknowledged_end;
        loop {
            let keynum = match self {
                KeyChooser::Exponential(e) => {
                    let back = e.next(rng) as u64;
                    match (end - 1).checked_sub(back) {
                        Some(k) => return k,
                        None => continue,
                    }
                }
                KeyChooser::Latest(l) => l.next(rng, end - 1),
                KeyChooser::Uniform(u) => u.next(rng),
                KeyChooser::Zipfian(z) => z.next(rng),
                KeyChooser::Hotspot(h) => h.next(rng),
                KeyChooser::Sequential(s) => s.next(),
            };
            if keynum < end {
                return keynum;
            }
        }
    }
}

/// One load or run phase of a core workload: what its workers share.
#[derive(Debug)]
pub struct CoreRun {
    workload: Arc<CoreWorkload>,
    templates: Templates,
    load_keys: Arc<Counter>,
    insert_keys: Arc<AcknowledgedCounter>,
    seed: u64,
}

/// Operations thread `thread` of `threads` does out of `total`, as YCSB's Client splits them:
/// total / threads each, the first total % threads threads one more.
pub fn thread_op_count(total: u64, threads: u32, thread: u32) -> u64 {
    let threads = threads.max(1) as u64;
    let thread = thread as u64;
    total / threads + u64::from(thread < total % threads)
}

impl CoreRun {
    pub fn workload(&self) -> &CoreWorkload {
        &self.workload
    }

    /// The run phase's insert counter (shared by every source of this run).
    pub fn insert_keys(&self) -> &Arc<AcknowledgedCounter> {
        &self.insert_keys
    }

    /// Run-phase operations for thread `thread` of `threads` (from `operationcount`).
    pub fn thread_operation_count(&self, threads: u32, thread: u32) -> u64 {
        thread_op_count(self.workload.operation_count, threads, thread)
    }

    /// The run-phase source of worker `thread`, with its own random stream.
    pub fn source(&self, thread: u32) -> CoreSource {
        let t = &self.templates;
        let w = &self.workload;
        CoreSource {
            rng: SmallRng::seed_from_u64(
                self.seed ^ (thread as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ),
            ops: t.ops.clone(),
            keys: t.keys.clone(),
            fields: t.fields.clone(),
            field_length: t.field_length.clone(),
            scan_length: t.scan_length.clone(),
            insert_keys: Arc::clone(&self.insert_keys),
            read_all_fields: w.read_all_fields,
            write_all_fields: w.write_all_fields,
            data_integrity: w.data_integrity,
            zero_padding: w.zero_padding,
            insert_order: w.insert_order,
            workload: Arc::clone(&self.workload),
        }
    }

    /// The load-phase source of thread `thread` of `threads`: its share of `insertcount`
    /// inserts (split as YCSB's Client does), keys from the counter every load thread shares,
    /// starting at `insertstart`. Together the threads insert each key of
    /// [insertstart, insertstart + insertcount) exactly once. (YCSB's Client counts the load
    /// from `insertcount` if given, else from `recordcount` even when `insertstart` is above
    /// 0; here always from the workload's `insertcount`, which defaults to
    /// recordcount - insertstart.)
    pub fn load_source(&self, threads: u32, thread: u32) -> LoadSource {
        LoadSource {
            keys: Arc::clone(&self.load_keys),
            remaining: thread_op_count(self.workload.insert_count, threads, thread),
        }
    }
}

/// One worker's run-phase operations. Not `Clone`: a copy would repeat the same random stream.
#[derive(Debug)]
pub struct CoreSource {
    rng: SmallRng,
    ops: Discrete<OpKind>,
    keys: KeyChooser,
    fields: Uniform,
    field_length: LengthGenerator,
    scan_length: LengthGenerator,
    insert_keys: Arc<AcknowledgedCounter>,
    read_all_fields: bool,
    write_all_fields: bool,
    data_integrity: bool,
    zero_padding: u32,
    insert_order: InsertOrder,
    workload: Arc<CoreWorkload>,
}

impl CoreSource {
    /// The next operation (YCSB's `doTransaction`).
    #[inline]
    pub fn next_op(&mut self) -> YcsbOp {
        match self.ops.next(&mut self.rng) {
            OpKind::Read => YcsbOp::Read {
                keynum: self.next_keynum(),
                field: self.read_field(),
            },
            OpKind::Update => YcsbOp::Update {
                keynum: self.next_keynum(),
                field: self.write_field(),
            },
            OpKind::Insert => YcsbOp::Insert {
                keynum: self.insert_keys.next(),
            },
            OpKind::Scan => YcsbOp::Scan {
                keynum: self.next_keynum(),
                count: self.scan_length.next(&mut self.rng),
                field: self.read_field(),
            },
            OpKind::ReadModifyWrite => YcsbOp::ReadModifyWrite {
                keynum: self.next_keynum(),
                read_field: self.read_field(),
                write_field: self.write_field(),
            },
        }
    }

    #[inline]
    fn read_field(&mut self) -> Option<u32> {
        (!self.read_all_fields).then(|| self.fields.next(&mut self.rng) as u32)
    }

    #[inline]
    fn write_field(&mut self) -> Option<u32> {
        (!self.write_all_fields).then(|| self.fields.next(&mut self.rng) as u32)
    }

    /// A key number for a read, update, scan or read-modify-write (YCSB's `nextKeynum`, see
    /// [`KeyChooser::next_keynum`]).
    #[inline]
    pub fn next_keynum(&mut self) -> u64 {
        let end = self.insert_keys.acknowledged_end();
        self.keys.next_keynum(&mut self.rng, end)
    }

    /// Marks a run-phase insert as done, so that readers may choose its key.
    pub fn acknowledge_insert(&self, keynum: u64) -> Result<(), AckError> {
        self.insert_keys.acknowledge(keynum)
    }

    /// Writes the key of `keynum` into `buf` (cleared first).
    #[inline]
    pub fn write_key(&self, keynum: u64, buf: &mut Vec<u8>) {
        keys::write_key(keynum, self.zero_padding, self.insert_order, buf);
    }

    /// Writes the name of field `index` into `buf` (cleared first).
    #[inline]
    pub fn write_field_name(&self, index: u32, buf: &mut Vec<u8>) {
        keys::write_field_name(&self.workload.field_name_prefix, index, buf);
    }

    /// Writes a value for (key, field) into `value` (cleared first): deterministic with
    /// `dataintegrity`, else random printable bytes of a length from `fieldlengthdistribution`.
    #[inline]
    pub fn fill_value(&mut self, key: &[u8], field_name: &[u8], value: &mut Vec<u8>) {
        let len = self.field_length.next(&mut self.rng) as usize;
        if self.data_integrity {
            keys::write_deterministic_value(key, field_name, len, value);
        } else {
            keys::fill_random_value(&mut self.rng, len, value);
        }
    }

    /// With `dataintegrity`, whether a value read back is the one written; YCSB's `verifyRow`
    /// for one field.
    pub fn verify_value(&self, key: &[u8], field_name: &[u8], value: &[u8]) -> bool {
        keys::verify_deterministic_value(
            key,
            field_name,
            self.workload.field_length_bytes as usize,
            value,
        )
    }

    pub fn workload(&self) -> &CoreWorkload {
        &self.workload
    }
}

/// One load thread's inserts.
#[derive(Debug)]
pub struct LoadSource {
    keys: Arc<Counter>,
    remaining: u64,
}

impl LoadSource {
    /// The next insert, or `None` when this thread's share is done.
    #[inline]
    pub fn next_op(&mut self) -> Option<YcsbOp> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(YcsbOp::Insert {
            keynum: self.keys.next(),
        })
    }

    /// Inserts left for this thread.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}
