//! The data loader of each emulated accelerator, as DLIO's loaders run: `read-threads`
//! readers per accelerator, one read per sample (queue depth 1, as a reader thread reads),
//! and at most `prefetch` batches per reader read ahead of the accelerator. Two ways, as
//! the frameworks do:
//!
//! - [`Mode::Batches`] (PyTorch's DataLoader, npz): reader `r` reads batches `r`, `r + R`,
//!   `r + 2R` ... sample by sample; a batch is ready when its reader has read it.
//! - [`Mode::Files`] (TensorFlow's `TFRecordDataset` with `num_parallel_reads`, tfrecord):
//!   reader `r` reads the shard's files `r`, `r + R`, ... whole, record after record; the
//!   samples of all readers make the batches in the order they arrive, and what is left
//!   over at an epoch's end (the dropped remainder) is read and discarded, as TensorFlow
//!   reads it.
//!
//! The accelerator side (its compute, the utilization) is the engine's; the two meet in a
//! [`Gate`]: a reader marks a batch ready when its last sample has completed, and waits for
//! room before starting a batch the prefetch window does not hold yet; the accelerator takes
//! batches in order. The gate is touched once per batch, never per sample: a sample's
//! operation is drawn from arrays built before the run, without allocating or locking.
//!
//! Each epoch reads the files in an order shuffled from the seed (DLIO's `file_shuffle` and
//! `sample_shuffle = seed`); accelerator `a` of `A` takes the files `a`, `a + A`, ... of
//! that order (a rank's shard), and a file's records in their order.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::dataset::Dataset;
use super::format::Format;
use storlab_model::Op;

/// How an accelerator's readers share its data (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Batches,
    Files,
}

/// The shape of one training run: what every accelerator and reader share.
#[derive(Debug)]
pub struct LoaderShape {
    pub dataset: Arc<Dataset>,
    pub accelerators: u32,
    pub readers: u32,
    pub batch: u32,
    pub epochs: u32,
    /// Batches each accelerator computes per epoch.
    pub steps_per_epoch: u64,
    /// Batches an accelerator's readers may hold ready or in reading (prefetch x readers).
    pub window: u64,
    pub mode: Mode,
    /// Files of each accelerator's shard that are read (the shard's whole files).
    pub files_per_accelerator: u32,
    /// Each epoch's order of the files.
    order: Vec<Vec<u32>>,
}

impl LoaderShape {
    /// Steps each accelerator computes per epoch when `files` files of `spf` samples are
    /// sharded over `accelerators` and read in batches of `batch` (0: too few).
    pub fn steps_per_epoch(files: u32, spf: u32, accelerators: u32, batch: u32) -> u64 {
        let files_each = u64::from(files / accelerators.max(1));
        files_each * u64::from(spf) / u64::from(batch.max(1))
    }

    pub fn new(
        dataset: Arc<Dataset>,
        accelerators: u32,
        readers: u32,
        batch: u32,
        epochs: u32,
        prefetch: u32,
        seed: u64,
    ) -> LoaderShape {
        let files = dataset.files();
        let steps_per_epoch =
            Self::steps_per_epoch(files, dataset.spec.samples_per_file, accelerators, batch);
        let order = (0..epochs)
            .map(|e| {
                let mut o: Vec<u32> = (0..files).collect();
                let mut rng = SmallRng::seed_from_u64(storlab_model::seed::mix_seed(
                    seed,
                    &[0x5ff1e, u64::from(e)],
                ));
                o.shuffle(&mut rng);
                o
            })
            .collect();
        LoaderShape {
            accelerators,
            readers,
            batch,
            epochs,
            steps_per_epoch,
            window: u64::from(prefetch.max(1)) * u64::from(readers),
            mode: match dataset.spec.format {
                Format::Npz => Mode::Batches,
                Format::Tfrecord => Mode::Files,
            },
            files_per_accelerator: files / accelerators.max(1),
            order,
            dataset,
        }
    }

    /// Batches each accelerator computes over the run.
    pub fn batches(&self) -> u64 {
        self.steps_per_epoch * u64::from(self.epochs)
    }

    /// Batch slots a gate keeps: the window, and room for the samples each reader may have
    /// in flight past it when batches form from pooled samples.
    fn slots(&self) -> u64 {
        self.window + u64::from(self.readers) + 1
    }

    /// The global sample id of record `record` of the `slot`-th file of accelerator `a`'s
    /// shard in epoch `epoch`.
    #[inline]
    fn shard_sample(&self, a: u32, epoch: u32, slot: u32, record: u32) -> u64 {
        let spf = u64::from(self.dataset.spec.samples_per_file);
        let at = u64::from(a) + u64::from(self.accelerators) * u64::from(slot);
        u64::from(self.order[epoch as usize][at as usize]) * spf + u64::from(record)
    }

    /// The global sample id of the `i`-th sample of batch `g` (counted over epochs) of
    /// accelerator `a`.
    #[inline]
    fn sample(&self, a: u32, g: u64, i: u32) -> u64 {
        let epoch = (g / self.steps_per_epoch) as usize;
        let j = (g % self.steps_per_epoch) * u64::from(self.batch) + u64::from(i);
        let spf = u64::from(self.dataset.spec.samples_per_file);
        let slot = u64::from(a) + u64::from(self.accelerators) * (j / spf);
        let file = self.order[epoch][slot as usize];
        u64::from(file) * spf + j % spf
    }
}

/// A batch the accelerator asked for: ready at this time (ns from the gate's origin), or
/// never (its reader is gone, or the run was stopped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Ready(u64),
    Gone,
}

/// Where one accelerator and its readers meet.
pub struct Gate {
    pub accelerator: u32,
    pub shape: Arc<LoaderShape>,
    origin: Instant,
    /// Batches the accelerator has taken.
    consumed: AtomicU64,
    /// Batch `g`'s ready time + 1 at `g % window` (0: not ready).
    ready: Box<[AtomicU64]>,
    /// Each reader still runs.
    live: Box<[AtomicBool]>,
    /// Files mode: samples read so far in each epoch.
    produced: Box<[AtomicU64]>,
    stopped: AtomicBool,
    room: Mutex<()>,
    room_freed: Condvar,
    accelerator_thread: OnceLock<Thread>,
}

impl Gate {
    pub fn new(accelerator: u32, shape: Arc<LoaderShape>) -> Gate {
        Gate {
            accelerator,
            origin: Instant::now(),
            consumed: AtomicU64::new(0),
            ready: (0..shape.slots()).map(|_| AtomicU64::new(0)).collect(),
            live: (0..shape.readers).map(|_| AtomicBool::new(true)).collect(),
            produced: (0..shape.epochs).map(|_| AtomicU64::new(0)).collect(),
            stopped: AtomicBool::new(false),
            room: Mutex::new(()),
            room_freed: Condvar::new(),
            accelerator_thread: OnceLock::new(),
            shape,
        }
    }

    /// Nanoseconds since the gate was made: the clock of ready times and steps.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// The gate's clock at `ns`, as an instant (for sleeping until it).
    pub fn instant(&self, ns: u64) -> Instant {
        self.origin + Duration::from_nanos(ns)
    }

    /// The accelerator's thread: woken when a batch is ready or a reader ends.
    pub fn attach_accelerator(&self) {
        let _ = self.accelerator_thread.set(std::thread::current());
    }

    fn wake_accelerator(&self) {
        if let Some(t) = self.accelerator_thread.get() {
            t.unpark();
        }
    }

    fn mark_ready(&self, g: u64) {
        let slot = (g % self.shape.slots()) as usize;
        self.ready[slot].store(self.now_ns() + 1, Ordering::Release);
        self.wake_accelerator();
    }

    /// Waits until batch `g` fits in the prefetch window. False: the run stopped.
    fn wait_room(&self, g: u64) -> bool {
        let fits = || self.consumed.load(Ordering::Acquire) + self.shape.window > g;
        if self.stopped.load(Ordering::Acquire) {
            return false;
        }
        if fits() {
            return true;
        }
        let mut guard = self.room.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.stopped.load(Ordering::Acquire) {
                return false;
            }
            if fits() {
                return true;
            }
            guard = self
                .room_freed
                .wait_timeout(guard, Duration::from_millis(10))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Files mode: one more sample of `epoch` was read; the batch it completes is ready
    /// (samples past the epoch's last batch are its dropped remainder).
    fn produced(&self, epoch: u32) {
        let b = u64::from(self.shape.batch);
        let n = self.produced[epoch as usize].fetch_add(1, Ordering::AcqRel) + 1;
        if n.is_multiple_of(b) && n / b <= self.shape.steps_per_epoch {
            self.mark_ready(u64::from(epoch) * self.shape.steps_per_epoch + n / b - 1);
        }
    }

    /// Files mode: the batch the next sample of `epoch` falls in (the epoch's last for its
    /// remainder).
    fn next_batch(&self, epoch: u32) -> u64 {
        let n = self.produced[epoch as usize].load(Ordering::Acquire);
        let k = (n / u64::from(self.shape.batch)).min(self.shape.steps_per_epoch - 1);
        u64::from(epoch) * self.shape.steps_per_epoch + k
    }

    fn reader_gone(&self, r: u32) {
        self.live[r as usize].store(false, Ordering::Release);
        self.wake_accelerator();
    }

    /// Waits for batch `g` (the accelerator's next): its ready time, or Gone when the reader
    /// that owns it has ended without it.
    pub fn take(&self, g: u64) -> Take {
        let slot = &self.ready[(g % self.shape.slots()) as usize];
        // Batches mode: one reader reads the batch; files mode: any may complete it.
        let owner = &self.live[(g % u64::from(self.shape.readers)) as usize];
        let gone = || match self.shape.mode {
            Mode::Batches => !owner.load(Ordering::Acquire),
            Mode::Files => self.live.iter().all(|l| !l.load(Ordering::Acquire)),
        };
        loop {
            let v = slot.load(Ordering::Acquire);
            if v != 0 {
                return Take::Ready(v - 1);
            }
            if gone() || self.stopped.load(Ordering::Acquire) {
                let v = slot.load(Ordering::Acquire);
                return if v != 0 {
                    Take::Ready(v - 1)
                } else {
                    Take::Gone
                };
            }
            std::thread::park_timeout(Duration::from_millis(5));
        }
    }

    /// The accelerator took batch `g`: its slot is free and a reader may start another.
    pub fn consumed(&self, g: u64) {
        self.ready[(g % self.shape.slots()) as usize].store(0, Ordering::Release);
        self.consumed.store(g + 1, Ordering::Release);
        let _guard = self.room.lock().unwrap_or_else(|p| p.into_inner());
        self.room_freed.notify_all();
    }

    /// No more batches will be taken: waiting readers end.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let _guard = self.room.lock().unwrap_or_else(|p| p.into_inner());
        self.room_freed.notify_all();
    }
}

/// One reader's operations: the samples of its batches (or of its files), in order.
pub struct TrainingSource {
    gate: Arc<Gate>,
    reader: u32,
    /// Batches mode: the batch being read (counted over epochs) and samples of it issued.
    batch: u64,
    issued: u32,
    /// Files mode: the epoch, the file of the shard and the record in it to read next, and
    /// whether a sample was issued and not yet counted.
    epoch: u32,
    file_slot: u32,
    record: u32,
    pending: bool,
    done: bool,
}

impl TrainingSource {
    pub fn new(gate: Arc<Gate>, reader: u32) -> TrainingSource {
        TrainingSource {
            gate,
            reader,
            batch: u64::from(reader),
            issued: 0,
            epoch: 0,
            file_slot: reader,
            record: 0,
            pending: false,
            done: false,
        }
    }

    /// The next sample to read, or None when this reader's batches are all read (or the run
    /// stopped). Called after the previous read completed (queue depth 1): a batch whose
    /// last sample was issued is then ready.
    #[inline]
    pub fn next_op(&mut self) -> Option<Op> {
        if self.done {
            return None;
        }
        match self.gate.shape.mode {
            Mode::Batches => self.next_in_batches(),
            Mode::Files => self.next_in_files(),
        }
    }

    fn next_in_batches(&mut self) -> Option<Op> {
        let shape = &*self.gate.shape;
        if self.issued == shape.batch {
            self.gate.mark_ready(self.batch);
            self.batch += u64::from(shape.readers);
            self.issued = 0;
        }
        if self.batch >= shape.batches() || (self.issued == 0 && !self.gate.wait_room(self.batch)) {
            self.finish();
            return None;
        }
        let id = shape.sample(self.gate.accelerator, self.batch, self.issued);
        self.issued += 1;
        let (file, _) = shape.dataset.locate(id);
        Some(Op::Read {
            offset: id,
            len: shape.dataset.sample_bytes(file),
        })
    }

    fn next_in_files(&mut self) -> Option<Op> {
        let shape = &*self.gate.shape;
        if self.pending {
            self.pending = false;
            self.gate.produced(self.epoch);
        }
        if self.file_slot >= shape.files_per_accelerator {
            self.epoch += 1;
            self.file_slot = self.reader;
            self.record = 0;
        }
        if self.epoch >= shape.epochs
            || self.file_slot >= shape.files_per_accelerator
            || !self.gate.wait_room(self.gate.next_batch(self.epoch))
        {
            self.finish();
            return None;
        }
        let id = shape.shard_sample(
            self.gate.accelerator,
            self.epoch,
            self.file_slot,
            self.record,
        );
        self.record += 1;
        if self.record == shape.dataset.spec.samples_per_file {
            self.record = 0;
            self.file_slot += shape.readers;
        }
        self.pending = true;
        let (file, _) = shape.dataset.locate(id);
        Some(Op::Read {
            offset: id,
            len: shape.dataset.sample_bytes(file),
        })
    }

    fn finish(&mut self) {
        if !self.done {
            self.done = true;
            self.gate.reader_gone(self.reader);
        }
    }
}

impl Drop for TrainingSource {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::super::dataset::DatasetSpec;
    use super::super::format::Format;
    use super::*;

    fn shape(files: u32, spf: u32, accelerators: u32, readers: u32, batch: u32) -> LoaderShape {
        // npz holds one sample per file: the batch-wise (PyTorch) loader.
        let format = if spf == 1 {
            Format::Npz
        } else {
            Format::Tfrecord
        };
        let d = Dataset::new(DatasetSpec {
            format,
            files,
            samples_per_file: spf,
            record_bytes: 100,
            record_bytes_stdev: 0,
            seed: 1,
        });
        LoaderShape::new(Arc::new(d), accelerators, readers, batch, 2, 2, 9)
    }

    #[test]
    fn each_accelerator_reads_its_shard_of_every_epoch_once_and_epochs_differ() {
        let s = shape(12, 3, 2, 2, 3);
        assert_eq!(s.steps_per_epoch, 6);
        for epoch in 0..2u64 {
            let mut seen = std::collections::BTreeSet::new();
            for a in 0..2 {
                for b in 0..6 {
                    for i in 0..3 {
                        assert!(seen.insert(s.sample(a, epoch * 6 + b, i)));
                    }
                }
            }
            assert_eq!(seen.len(), 36, "every sample once per epoch");
        }
        let first: Vec<u64> = (0..3).map(|i| s.sample(0, 0, i)).collect();
        let second: Vec<u64> = (0..3).map(|i| s.sample(0, 6, i)).collect();
        assert_ne!(first, second, "each epoch has its own order");
        // A file's records in order.
        assert_eq!(first[1], first[0] + 1);
    }

    #[test]
    fn readers_fill_the_window_then_wait_for_the_accelerator() {
        let s = Arc::new(shape(8, 1, 1, 2, 1));
        let gate = Arc::new(Gate::new(0, s.clone()));
        let mut r0 = TrainingSource::new(gate.clone(), 0);
        let mut r1 = TrainingSource::new(gate.clone(), 1);
        // Window: prefetch 2 x 2 readers = 4 batches of one sample.
        for _ in 0..2 {
            assert!(r0.next_op().is_some());
            assert!(r1.next_op().is_some());
        }
        assert_eq!(gate.take(0), Take::Ready(gate_ready(&gate, 0)));
        gate.consumed(0);
        // Batch 4 fits now (consumed 1 + window 4 > 4).
        assert!(r0.next_op().is_some());
        drop(r1);
        // Batch 3 was reader 1's: it marked batch 1 ready, then read batch 3 and left
        // before saying it was done.
        assert!(matches!(gate.take(1), Take::Ready(_)));
        gate.consumed(1);
        assert!(matches!(gate.take(2), Take::Ready(_)));
        gate.consumed(2);
        assert_eq!(gate.take(3), Take::Gone);
        gate.stop();
        assert!(r0.next_op().is_none(), "a stopped gate starts no batch");
    }

    /// TensorFlow's way: each reader reads whole files of the shard, every record of them
    /// (the dropped remainder too), and batches form from the samples in arrival order.
    #[test]
    fn in_files_mode_readers_read_whole_files_and_batches_pool_their_samples() {
        // 5 files of 3 records, one accelerator, batch 4: 3 steps per epoch, 3 samples left.
        let s = Arc::new(shape(5, 3, 1, 2, 4));
        assert_eq!(s.mode, Mode::Files);
        assert_eq!(s.steps_per_epoch, 3);
        let gate = Arc::new(Gate::new(0, s.clone()));
        let mut readers: Vec<TrainingSource> = (0..2)
            .map(|r| TrainingSource::new(gate.clone(), r))
            .collect();
        let mut read: Vec<Vec<u64>> = vec![Vec::new(), Vec::new()];
        // Round robin, one sample each, until both are done; the accelerator takes what is
        // ready as it goes.
        let mut taken = 0u64;
        loop {
            let mut any = false;
            for (r, src) in readers.iter_mut().enumerate() {
                if let Some(Op::Read { offset, .. }) = src.next_op() {
                    read[r].push(offset);
                    any = true;
                }
            }
            while taken < s.batches()
                && gate.ready[(taken % s.slots()) as usize].load(Ordering::Acquire) != 0
            {
                gate.consumed(taken);
                taken += 1;
            }
            if !any {
                break;
            }
        }
        assert_eq!(taken, 6, "every batch of both epochs became ready");
        // Every record of every file in each epoch, the dropped remainder too.
        let mut all: Vec<u64> = read.iter().flat_map(|r| r.iter().copied()).collect();
        assert_eq!(all.len(), 30);
        all.sort();
        for pair in all.chunks(2) {
            assert_eq!(pair[0], pair[1], "each record once per epoch");
        }
        // A reader reads its files' records one after another.
        let first: Vec<u64> = read[0][..3].to_vec();
        assert_eq!(first[1], first[0] + 1);
        assert_eq!(first[2], first[0] + 2);
    }

    fn gate_ready(g: &Gate, b: u64) -> u64 {
        g.ready[(b % g.shape.slots()) as usize].load(Ordering::Acquire) - 1
    }
}
