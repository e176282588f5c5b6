//! The verify pass: reads back every block whose generation the table knows, in large
//! sequential reads (1 MiB), and classifies each. It runs after the workers stopped and is
//! timed on its own (seconds, MB/s); it is never part of a run's latency figures.

use std::path::Path;

use storlab_targets::TargetError;
use storlab_targets::readback::BlockReader;

use storlab_verify::VerifyError;
use storlab_verify::header;
use storlab_verify::report::{InFlightHeld, VerifyClass, VerifyReport};
use storlab_verify::table::{FAILED, GENERATION, IN_FLIGHT, VerifyTable};

/// Bytes read at a time (rounded down to whole blocks, at least one).
const CHUNK_BYTES: u64 = 1 << 20;
/// Alignment of the read buffer (enough for O_DIRECT).
const ALIGN: usize = 4096;

/// Where written blocks are read back from (the target's module opens it).
pub type Reader = BlockReader;

/// Opens `path` for reading back, with O_DIRECT when the target used it (see
/// [`BlockReader::open`]).
pub fn open(path: &Path, direct: bool) -> Result<Reader, VerifyError> {
    BlockReader::open(path, direct).map_err(|e| match e {
        TargetError::Io { path, what, source } => VerifyError::Io { path, what, source },
        other => VerifyError::Invalid(other.to_string()),
    })
}

/// An aligned buffer for O_DIRECT reads.
struct Aligned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl Aligned {
    fn new(bytes: usize) -> Result<Aligned, VerifyError> {
        let layout = std::alloc::Layout::from_size_align(bytes.max(ALIGN), ALIGN)
            .map_err(|e| VerifyError::Invalid(format!("read buffer: {e}")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(VerifyError::Invalid(format!(
                "cannot allocate {bytes} bytes to read back"
            )));
        }
        Ok(Aligned { ptr, layout })
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() >= len bytes, and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.layout.size())) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Reads `buf.len()` bytes at `offset`, or fails.
fn read_full(file: &Reader, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "end of file",
                ));
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Classifies one block read back against its table entry (known generation, not failed).
/// `crashed`: a power-off or SIGKILL came before the pass; then a block with no header
/// whose acknowledged write was not yet durable still holds what it held before that write
/// reached storage (the target's fill, or nothing): the write was lost (`lost-unsynced`), as
/// an older generation would be. Otherwise a block with no header is `foreign`.
pub fn classify(
    table: &VerifyTable,
    block: &[u8],
    offset: u64,
    acked: u64,
    crashed: bool,
) -> (VerifyClass, bool) {
    let durable = || acked <= table.durable(table.thread_of(acked));
    let Some(h) = header::parse(block) else {
        if crashed && !durable() {
            return (VerifyClass::LostUnsynced, false);
        }
        return (VerifyClass::Foreign, false);
    };
    if !header::crc_ok(block, &h) {
        return (VerifyClass::Torn, false);
    }
    if h.target_id != table.target_id || h.offset != offset {
        return (VerifyClass::Misplaced, false);
    }
    if h.generation < acked {
        let class = if durable() {
            VerifyClass::LostDurable
        } else {
            VerifyClass::LostUnsynced
        };
        return (class, false);
    }
    (VerifyClass::Intact, h.generation > acked)
}

/// What a block whose write was in flight holds, if that is accepted: the acknowledged
/// generation `acked` (or, with none, anything but a torn write of this table), a newer one,
/// or a torn write. None: classify it as any other block.
pub fn in_flight_held(
    table: &VerifyTable,
    block: &[u8],
    offset: u64,
    acked: u64,
) -> Option<InFlightHeld> {
    let Some(h) = header::parse(block) else {
        return (acked == 0).then_some(InFlightHeld::Old);
    };
    let ours = h.target_id == table.target_id && h.offset == offset;
    if !header::crc_ok(block, &h) {
        return (acked == 0 || ours).then_some(InFlightHeld::Torn);
    }
    match (ours, h.generation) {
        (true, g) if acked == 0 && g > table.generation_base => Some(InFlightHeld::New),
        _ if acked == 0 => Some(InFlightHeld::Old),
        (true, g) if g == acked => Some(InFlightHeld::Old),
        (true, g) if g > acked => Some(InFlightHeld::New),
        _ => None,
    }
}

/// Reads back every block of `table` with a known generation from `file` and classifies it
/// (`crashed`: see [`classify`]).
pub fn run(table: &VerifyTable, file: &Reader, crashed: bool) -> Result<VerifyReport, VerifyError> {
    let started = std::time::Instant::now();
    let block = table.block_bytes as u64;
    let per_chunk = (CHUNK_BYTES / block).max(1) as usize;
    let mut buf = Aligned::new(per_chunk * block as usize)?;
    let mut r = VerifyReport {
        target: table.target.clone(),
        block_bytes: table.block_bytes,
        serialized_writes: table.serialized(),
        ..VerifyReport::default()
    };
    let blocks = table.blocks();
    let mut first = 0;
    while first < blocks {
        let end = (first + per_chunk).min(blocks);
        // Read only from the first to the last block with a known generation.
        let known = |i: &usize| table.entry(*i) & (GENERATION | FAILED | IN_FLIGHT) != 0;
        let (Some(lo), Some(hi)) = ((first..end).find(known), (first..end).rev().find(known))
        else {
            first = end;
            continue;
        };
        let len = (hi - lo + 1) * block as usize;
        let chunk_ok = read_full(file, buf.slice(len), table.offset_of(lo)).is_ok();
        for i in lo..=hi {
            let e = table.entry(i);
            let acked = e & GENERATION;
            if e & FAILED != 0 {
                r.skipped_failed_writes += 1;
                continue;
            }
            if acked == 0 && e & IN_FLIGHT == 0 {
                continue;
            }
            let offset = table.offset_of(i);
            let at = (i - lo) * block as usize;
            if !chunk_ok {
                // Find which blocks of the chunk cannot be read, one at a time.
                let one = &mut buf.slice(len)[at..at + block as usize];
                if read_full(file, one, offset).is_err() {
                    r.add(VerifyClass::Unreadable, offset);
                    continue;
                }
            }
            r.bytes_read += block;
            let data = &buf.slice(len)[at..at + block as usize];
            if e & IN_FLIGHT != 0
                && let Some(held) = in_flight_held(table, data, offset, acked)
            {
                r.in_flight.add(held, offset);
                continue;
            }
            let (class, newer) = classify(table, data, offset, acked, crashed);
            r.newer_than_acknowledged += u64::from(newer);
            r.add(class, offset);
        }
        first = end;
    }
    r.seconds = started.elapsed().as_secs_f64();
    r.rate_bytes = if r.seconds > 0.0 {
        r.bytes_read as f64 / r.seconds
    } else {
        0.0
    };
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{File, OpenOptions};
    use std::os::unix::fs::FileExt;
    use storlab_model::Region;

    /// A table over 8 blocks of a temporary file, with `writes` (block, generation) stamped
    /// into the file and acknowledged.
    fn setup(dir: &Path) -> (VerifyTable, File) {
        let path = dir.join("f");
        std::fs::write(&path, vec![0u8; 8 * 4096]).unwrap();
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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        (table, file)
    }

    fn write(t: &VerifyTable, f: &File, index: usize, generation: u64, at_index: usize) {
        let mut b = vec![0x33u8; 4096];
        header::stamp(&mut b, t.target_id, t.offset_of(index), generation);
        f.write_all_at(&b, t.offset_of(at_index)).unwrap();
    }

    #[test]
    fn each_kind_of_damage_is_found_at_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (t, f) = setup(dir.path());
        for i in 0..7 {
            t.begin_write(i);
            t.end_write(i, 110, true);
            write(&t, &f, i, 110, i);
        }
        t.make_durable(0, 105);
        // 1: lost (an older generation there, acknowledged one not durable)
        write(&t, &f, 1, 104, 1);
        // 2: torn
        let mut b = vec![0u8; 2048];
        f.read_exact_at(&mut b, 2 * 4096 + 2048).unwrap();
        b[100] ^= 1;
        f.write_all_at(&b, 2 * 4096 + 2048).unwrap();
        // 3: misplaced (block 5's write landed on 3)
        write(&t, &f, 5, 110, 3);
        // 4: foreign
        f.write_all_at(&[0u8; 4096], 4 * 4096).unwrap();
        // 5: a newer generation than acknowledged: intact
        write(&t, &f, 5, 120, 5);
        // 6: lost after it was durable
        t.make_durable(0, 110);
        write(&t, &f, 6, 101, 6);
        // 7: never written: not checked; 0: intact
        let r = run(&t, &Reader::File(f), false).unwrap();
        assert_eq!(r.blocks_checked, 7);
        assert_eq!(r.intact.first_offsets, vec![0, 5 * 4096]);
        assert_eq!(r.newer_than_acknowledged, 1);
        assert_eq!(r.torn.first_offsets, vec![2 * 4096]);
        assert_eq!(r.misplaced.first_offsets, vec![3 * 4096]);
        assert_eq!(r.foreign.first_offsets, vec![4 * 4096]);
        // The durable watermark moved to 110 before the pass: both losses are durable ones.
        assert_eq!(r.lost_durable.first_offsets, vec![4096, 6 * 4096]);
        assert_eq!(r.lost.blocks, 2);
        assert_eq!(r.bytes_read, 7 * 4096);
    }

    #[test]
    fn a_loss_before_any_fsync_is_unsynced() {
        let dir = tempfile::tempdir().unwrap();
        let (t, f) = setup(dir.path());
        t.begin_write(2);
        t.end_write(2, 110, true);
        write(&t, &f, 2, 105, 2);
        let r = run(&t, &Reader::File(f), false).unwrap();
        assert_eq!(r.lost_unsynced.first_offsets, vec![2 * 4096]);
        assert_eq!(r.lost_durable.blocks, 0);
    }

    /// After a crash, a block with no header whose write was not yet durable holds what it
    /// held before that write reached storage: lost, not foreign. A durable one is foreign.
    #[test]
    fn after_a_crash_a_headerless_block_whose_write_was_unsynced_is_lost_unsynced() {
        let dir = tempfile::tempdir().unwrap();
        let (t, f) = setup(dir.path());
        for i in 0..2 {
            t.begin_write(i);
            t.end_write(i, 110 + i as u64, true);
        }
        t.make_durable(0, 110);
        // Block 0 durable (110), block 1 not (111): both read back as the fill (zeros).
        let again = File::open(dir.path().join("f")).unwrap();
        let crashed = run(&t, &Reader::File(again), true).unwrap();
        assert_eq!(crashed.lost_unsynced.first_offsets, vec![4096]);
        assert_eq!(crashed.foreign.first_offsets, vec![0]);
        let up = run(&t, &Reader::File(f), false).unwrap();
        assert_eq!(up.foreign.first_offsets, vec![0, 4096]);
        assert_eq!(up.lost.blocks, 0);
    }

    /// A write in flight when the state was left may have landed or not: the old or the new
    /// generation (or a tear) is accepted; an older one than acknowledged is not.
    #[test]
    fn a_block_in_flight_may_hold_the_old_or_the_new_generation() {
        let dir = tempfile::tempdir().unwrap();
        let (t, f) = setup(dir.path());
        for i in 0..6 {
            t.begin_write(i);
            t.end_write(i, 110, true);
            t.begin_write(i);
        }
        write(&t, &f, 0, 110, 0); // old
        write(&t, &f, 1, 120, 1); // new
        write(&t, &f, 2, 120, 2);
        f.write_all_at(&[7u8; 100], 2 * 4096 + 3000).unwrap(); // torn
        write(&t, &f, 3, 105, 3); // older than acknowledged: lost
        // 4: zeros (foreign), 5: old
        write(&t, &f, 5, 110, 5);
        t.begin_write(7); // never acknowledged, zeros: old content
        let r = run(&t, &Reader::File(f), false).unwrap();
        assert_eq!(
            (
                r.in_flight.blocks,
                r.in_flight.old,
                r.in_flight.new,
                r.in_flight.torn
            ),
            (5, 3, 1, 1)
        );
        assert_eq!(
            r.in_flight.first_offsets,
            vec![0, 4096, 2 * 4096, 5 * 4096, 7 * 4096]
        );
        assert_eq!(r.lost_unsynced.first_offsets, vec![3 * 4096]);
        assert_eq!(r.foreign.first_offsets, vec![4 * 4096]);
        assert_eq!(r.blocks_checked, 2);
    }
}
