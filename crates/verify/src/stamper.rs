//! One worker's side of verified writes: stamps each write's block with its header and
//! generation, and records in the [`VerifyTable`] what completed. Its per-slot state is
//! allocated when the session opens; nothing here allocates, locks or reads the clock.

use std::sync::Arc;

use super::{VerifyParams, VerifyTable, header};

/// Per-slot state of one worker's verified writes and fsyncs.
pub struct Stamper {
    table: Arc<VerifyTable>,
    thread: u32,
    /// Writes this worker issued.
    counter: u64,
    /// Per slot: the block index and generation of the write in flight (generation 0: none).
    slot_block: Vec<usize>,
    slot_generation: Vec<u64>,
    /// Per slot: for an fsync in flight, the watermark it makes durable (0: none).
    slot_fsync: Vec<u64>,
    /// The target's writes are synchronous (opened O_SYNC or O_DSYNC, NFS FILE_SYNC): each
    /// acknowledged write is durable, with no fsync.
    durable_on_ack: bool,
}

/// What a session does with a write before it issues it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// The block is stamped; issue the write.
    Ready,
    /// An earlier write to the same block is still in flight: reap until
    /// [`Stamper::block_busy`] says otherwise, then call [`Stamper::prepare`] again.
    Busy(usize),
    /// The offset is not a block of the verified region (the session refuses it anyway).
    Outside,
}

impl Stamper {
    pub fn new(p: &VerifyParams, slots: usize) -> Stamper {
        Stamper {
            table: Arc::clone(&p.table),
            thread: p.thread,
            counter: 0,
            slot_block: vec![0; slots],
            slot_generation: vec![0; slots],
            slot_fsync: vec![0; slots],
            durable_on_ack: false,
        }
    }

    /// For a target whose writes are synchronous (O_SYNC, O_DSYNC, NFS FILE_SYNC): an
    /// acknowledged write is durable when acknowledged, so a crash may lose none of them (a
    /// lost one is `lost-durable`, not `lost-unsynced`). Each write's completion then moves
    /// the durable watermark up to just below the oldest write still in flight (a scan of the
    /// slots, as an fsync's submission does).
    pub fn durable_on_ack(mut self, yes: bool) -> Stamper {
        self.durable_on_ack = yes;
        self
    }

    pub fn table(&self) -> &VerifyTable {
        &self.table
    }

    /// Stamps `block` for a write at `offset` from `slot`, unless a write to the same block
    /// is in flight.
    #[inline]
    pub fn prepare(&mut self, slot: u32, block: &mut [u8], offset: u64) -> Prepared {
        let Some(index) = self.table.block_index(offset) else {
            return Prepared::Outside;
        };
        if self.table.in_flight(index) {
            self.table.count_serialized(self.thread);
            return Prepared::Busy(index);
        }
        self.counter += 1;
        let generation = self.table.generation(self.thread, self.counter);
        header::stamp(block, self.table.target_id, offset, generation);
        self.table.begin_write(index);
        self.slot_block[slot as usize] = index;
        self.slot_generation[slot as usize] = generation;
        Prepared::Ready
    }

    /// A write to block `index` is in flight.
    #[inline]
    pub fn block_busy(&self, index: usize) -> bool {
        self.table.in_flight(index)
    }

    /// The newest generation below which every write of this worker is acknowledged: just
    /// below the oldest write still in flight, or the last one issued.
    #[inline]
    fn acknowledged_watermark(&self) -> u64 {
        let oldest_in_flight = self
            .slot_generation
            .iter()
            .copied()
            .filter(|&g| g != 0)
            .min();
        match oldest_in_flight {
            Some(g) => g - 1,
            None => self.table.generation(self.thread, self.counter),
        }
    }

    /// An fsync leaves from `slot`: it will make durable every write acknowledged before now
    /// (those of this worker below the oldest one still in flight).
    #[inline]
    pub fn fsync_submitted(&mut self, slot: u32) {
        let watermark = self.acknowledged_watermark();
        self.slot_generation[slot as usize] = 0;
        self.slot_fsync[slot as usize] = watermark;
    }

    /// The operation in `slot` completed (`ok`: with its full length). A write's generation
    /// becomes the block's acknowledged one; an fsync's watermark becomes durable.
    #[inline]
    pub fn completed(&mut self, slot: u32, ok: bool) {
        let s = slot as usize;
        let generation = std::mem::take(&mut self.slot_generation[s]);
        if generation != 0 {
            self.table.end_write(self.slot_block[s], generation, ok);
            if ok && self.durable_on_ack {
                let watermark = self.acknowledged_watermark();
                self.table.make_durable(self.thread, watermark);
            }
        }
        let watermark = std::mem::take(&mut self.slot_fsync[s]);
        if watermark != 0 && ok {
            self.table.make_durable(self.thread, watermark);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::Region;

    fn stamper() -> Stamper {
        let table = VerifyTable::with_base(
            "t",
            Region {
                offset_bytes: 0,
                size_bytes: 8 * 4096,
            },
            4096,
            1,
            100,
        )
        .unwrap();
        Stamper::new(
            &VerifyParams {
                table: Arc::new(table),
                thread: 0,
            },
            4,
        )
    }

    #[test]
    fn a_second_write_to_a_block_in_flight_waits_and_acks_keep_the_newest() {
        let mut s = stamper();
        let mut buf = vec![0u8; 4096];
        assert_eq!(s.prepare(0, &mut buf, 4096), Prepared::Ready);
        assert_eq!(header::parse(&buf).unwrap().generation, 101);
        assert_eq!(s.prepare(1, &mut buf, 4096), Prepared::Busy(1));
        assert_eq!(s.table().serialized(), 1);
        assert_eq!(s.prepare(1, &mut buf, 100), Prepared::Outside);
        s.completed(0, true);
        assert!(!s.block_busy(1));
        assert_eq!(s.table().entry(1), 101);
        assert_eq!(s.prepare(1, &mut buf, 4096), Prepared::Ready);
        s.completed(1, false);
        assert_eq!(s.table().entry(1), 101 | super::super::table::FAILED);
    }

    #[test]
    fn an_fsync_makes_durable_only_what_was_acknowledged_before_it_left() {
        let mut s = stamper();
        let mut buf = vec![0u8; 4096];
        s.prepare(0, &mut buf, 0); // generation 101
        s.completed(0, true);
        s.prepare(1, &mut buf, 4096); // 102, still in flight
        s.fsync_submitted(2);
        s.completed(1, true);
        assert_eq!(s.table().durable(0), 0);
        s.completed(2, true);
        assert_eq!(s.table().durable(0), 101);
        // A failed fsync makes nothing durable.
        s.fsync_submitted(3);
        s.completed(3, false);
        assert_eq!(s.table().durable(0), 101);
        s.fsync_submitted(3);
        s.completed(3, true);
        assert_eq!(s.table().durable(0), 102);
    }

    #[test]
    fn with_synchronous_writes_each_acknowledgement_is_durable_below_the_oldest_in_flight() {
        let mut s = stamper().durable_on_ack(true);
        let mut buf = vec![0u8; 4096];
        s.prepare(0, &mut buf, 0); // 101
        s.prepare(1, &mut buf, 4096); // 102
        // 102 acknowledged first: 101 still in flight, nothing durable yet.
        s.completed(1, true);
        assert_eq!(s.table().durable(0), 100);
        s.completed(0, true);
        assert_eq!(s.table().durable(0), 102);
        // A failed write makes nothing durable.
        s.prepare(0, &mut buf, 8192); // 103
        s.completed(0, false);
        assert_eq!(s.table().durable(0), 102);
        // Without the flag an acknowledgement makes nothing durable.
        let mut plain = stamper();
        plain.prepare(0, &mut buf, 0);
        plain.completed(0, true);
        assert_eq!(plain.table().durable(0), 0);
    }
}
