//! The session side of a YCSB record: a [`RecordBuf`] turns the key numbers and field indexes
//! of a [`YcsbOp`](storlab_model::YcsbOp) into key, field name and value bytes, in buffers it owns, and
//! checks values read back when `dataintegrity` is on. Every database session holds one, built
//! once when the session opens; nothing here allocates once its buffers have grown to size.
//!
//! Values are random printable bytes of a length from `fieldlengthdistribution`, or YCSB's
//! deterministic value of (key, field) with `dataintegrity`. With `verify` (see
//! [`storlab_verify::kv`]) the buffer also holds the session's [`KvStamper`]: a write started
//! with [`RecordBuf::begin_write`] fills YCSB's deterministic values stamped with the write's
//! generation, and [`RecordBuf::end_write`] records how it ended; values read back are checked
//! against their stamp. During a verify pass, [`RecordBuf::start_probe`] makes it note what
//! every field read holds instead of judging it. [`encode_record`] and
//! [`decode_record`] give the one-value encoding of a whole record that key-value stores
//! without fields (RocksDB) keep under the key.

use std::cell::Cell;
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::core::CoreWorkload;
use super::generators::LengthGenerator;
use super::keys::{self, InsertOrder};
use storlab_verify::kv::{KvStamper, KvTable, Observation, WriteOutcome, header};

/// Key, field names and values of one record, in reused buffers.
#[derive(Debug)]
pub struct RecordBuf {
    zero_padding: u32,
    insert_order: InsertOrder,
    data_integrity: bool,
    /// The constant field length (checked by verification).
    field_length_bytes: usize,
    lengths: LengthGenerator,
    rng: SmallRng,
    /// Field names, built once.
    names: Vec<Vec<u8>>,
    /// The current key.
    pub key: Vec<u8>,
    /// One value buffer per field; [`RecordBuf::fill`] writes the fields an operation sets.
    pub values: Vec<Vec<u8>>,
    /// The key number of [`RecordBuf::key`] (set by [`RecordBuf::set_key`]).
    keynum: u64,
    /// Verified writes: the session's stamper, and the generation of the write being built
    /// (0: none, values are not stamped).
    stamper: Option<KvStamper>,
    generation: u64,
    /// During a verify pass: what the fields read so far hold.
    probe: Option<Cell<Observation>>,
}

impl RecordBuf {
    /// Buffers for records of `w`; `seed` gives the random values' stream.
    pub fn new(w: &CoreWorkload, seed: u64) -> RecordBuf {
        let n = w.field_count as usize;
        let max_len = w.field_length_bytes as usize;
        let names = (0..w.field_count)
            .map(|i| {
                let mut b = Vec::with_capacity(w.field_name_prefix.len() + 10);
                keys::write_field_name(&w.field_name_prefix, i, &mut b);
                b
            })
            .collect();
        RecordBuf {
            zero_padding: w.zero_padding,
            insert_order: w.insert_order,
            data_integrity: w.data_integrity,
            field_length_bytes: max_len,
            lengths: w
                .field_length_generator()
                .unwrap_or(LengthGenerator::Constant(w.field_length_bytes)),
            rng: SmallRng::seed_from_u64(seed),
            names,
            key: Vec::with_capacity(keys::MAX_UNPADDED_KEY_BYTES + w.zero_padding as usize),
            values: (0..n).map(|_| Vec::with_capacity(max_len.max(1))).collect(),
            keynum: 0,
            stamper: None,
            generation: 0,
            probe: None,
        }
    }

    /// Verified writes into `table` from a session with `slots` slots (`None`: none).
    pub fn with_verify(mut self, table: Option<&Arc<KvTable>>, slots: u32) -> RecordBuf {
        self.stamper = table.map(|t| KvStamper::new(Arc::clone(t), slots as usize));
        self
    }

    /// Starts a write of the current key from `slot` (None: a write the session runs on the
    /// spot): values filled from now on carry its generation. Does nothing without `verify`.
    #[inline]
    pub fn begin_write(&mut self, slot: Option<u32>) {
        if let Some(s) = &mut self.stamper {
            self.generation = s.begin(slot, self.keynum);
        }
    }

    /// Ends the write of `slot`: acknowledged, nothing written, or failed.
    #[inline]
    pub fn end_write(&mut self, slot: Option<u32>, outcome: WriteOutcome) {
        if let Some(s) = &mut self.stamper {
            s.end(slot, outcome);
            self.generation = 0;
        }
    }

    /// Verify pass: from now on, fields read are noted (see [`RecordBuf::take_probe`]) and
    /// never judged, so that the pass classifies them itself.
    pub fn start_probe(&mut self) {
        self.probe = Some(Cell::new(Observation::default()));
    }

    /// What the fields read since [`RecordBuf::start_probe`] held.
    pub fn take_probe(&mut self) -> Observation {
        self.probe.take().map(Cell::into_inner).unwrap_or_default()
    }

    pub fn field_count(&self) -> usize {
        self.names.len()
    }

    /// The name of field `i`.
    #[inline]
    pub fn name(&self, i: usize) -> &[u8] {
        &self.names[i]
    }

    /// Every field name, in order.
    pub fn names(&self) -> &[Vec<u8>] {
        &self.names
    }

    /// Writes the key of `keynum` into [`RecordBuf::key`].
    #[inline]
    pub fn set_key(&mut self, keynum: u64) {
        self.keynum = keynum;
        keys::write_key(keynum, self.zero_padding, self.insert_order, &mut self.key);
    }

    /// The key as text (keys are ASCII).
    #[inline]
    pub fn key_str(&self) -> &str {
        ascii(&self.key)
    }

    /// Fills the value of field `i` for the current key.
    #[inline]
    pub fn fill(&mut self, i: usize) {
        let len = self.lengths.next(&mut self.rng) as usize;
        let v = &mut self.values[i];
        if self.generation != 0 {
            keys::write_deterministic_value(&self.key, &self.names[i], len, v);
            header::stamp(v, &self.key, &self.names[i], self.keynum, self.generation);
        } else if self.data_integrity {
            keys::write_deterministic_value(&self.key, &self.names[i], len, v);
        } else {
            keys::fill_random_value(&mut self.rng, len, v);
        }
    }

    /// Fills every field's value for the current key.
    #[inline]
    pub fn fill_all(&mut self) {
        for i in 0..self.names.len() {
            self.fill(i);
        }
    }

    /// The value of field `i` as text (values are printable ASCII).
    #[inline]
    pub fn value_str(&self, i: usize) -> &str {
        ascii(&self.values[i])
    }

    /// Whether values are checked on read (`dataintegrity`), so that a record read must have
    /// every field. False during a verify pass, which judges records itself.
    #[inline]
    pub fn verifying(&self) -> bool {
        self.data_integrity && self.probe.is_none()
    }

    /// Whether `value`, read for field `i` of the current key, is the one written: with
    /// `verify`, a stamped value's checksum must match; an unstamped one (written without
    /// `verify`) and any value without `dataintegrity` pass; with `dataintegrity`, it must be
    /// YCSB's deterministic value. During a verify pass it notes the value and says true.
    #[inline]
    pub fn verify(&self, i: usize, value: &[u8]) -> bool {
        if let Some(p) = &self.probe {
            let mut o = p.get();
            o.field(&self.key, self.keynum, &self.names[i], value);
            p.set(o);
            return true;
        }
        if self.stamper.is_some() {
            match header::parse(value) {
                header::Parsed::Stamped(s) => {
                    return header::crc_ok(value, &self.key, &self.names[i], &s);
                }
                header::Parsed::Malformed => return false,
                header::Parsed::Unstamped => {}
            }
        }
        !self.data_integrity
            || keys::verify_deterministic_value(
                &self.key,
                &self.names[i],
                self.field_length_bytes,
                value,
            )
    }

    /// The index of a field from its name, if it is one of this workload's.
    #[inline]
    pub fn field_index(&self, name: &[u8]) -> Option<usize> {
        self.names.iter().position(|n| n.as_slice() == name)
    }

    /// Sum of the current values' lengths.
    #[inline]
    pub fn value_bytes(&self) -> u32 {
        self.values.iter().map(|v| v.len() as u32).sum()
    }

    /// Whether `value`, a whole record as [`encode_record`] makes it (what a store without
    /// fields keeps under the key), holds the fields asked for (one, or all), each passing
    /// [`RecordBuf::verify`] for the current key.
    pub fn check_encoded(&self, value: &[u8], field: Option<u32>) -> bool {
        let (mut seen, mut good) = (0usize, true);
        let whole = decode_record(value, |i, v| {
            if field.is_none_or(|f| f as usize == i) {
                seen += 1;
                good &= i < self.field_count() && self.verify(i, v);
            }
        });
        let wanted = if field.is_some() {
            1
        } else {
            self.field_count()
        };
        whole && good && seen == wanted
    }

    /// Takes the fields of `value`, a whole record as [`encode_record`] makes it, as the
    /// current values: an update of one field then writes the others back as they were.
    /// False if `value` is no such record.
    pub fn take_encoded(&mut self, value: &[u8]) -> bool {
        let values = &mut self.values;
        decode_record(value, |i, v| {
            if let Some(slot) = values.get_mut(i) {
                slot.clear();
                slot.extend_from_slice(v);
            }
        })
    }
}

#[inline]
fn ascii(b: &[u8]) -> &str {
    // Keys, field names and values are generated ASCII; anything else is a bug here.
    std::str::from_utf8(b).unwrap_or("")
}

/// Encodes a whole record as one value: for each field, its index (u16 little-endian), its
/// value length (u32 little-endian) and the value. `out` is cleared first.
#[inline]
pub fn encode_record(values: &[Vec<u8>], out: &mut Vec<u8>) {
    out.clear();
    for (i, v) in values.iter().enumerate() {
        out.extend_from_slice(&(i as u16).to_le_bytes());
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
    }
}

/// Calls `field(index, value)` for each field of a record made by [`encode_record`]; false if
/// the bytes are not such a record.
#[inline]
pub fn decode_record(mut bytes: &[u8], mut field: impl FnMut(usize, &[u8])) -> bool {
    while !bytes.is_empty() {
        if bytes.len() < 6 {
            return false;
        }
        let i = u16::from_le_bytes([bytes[0], bytes[1]]) as usize;
        let n = u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]) as usize;
        let Some(v) = bytes.get(6..6 + n) else {
            return false;
        };
        field(i, v);
        bytes = &bytes[6 + n..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ycsb::Properties;

    fn workload(overrides: &[&str]) -> CoreWorkload {
        let mut p = Properties::new();
        p.set_override("recordcount=100").unwrap();
        for o in overrides {
            p.set_override(o).unwrap();
        }
        CoreWorkload::from_properties(&mut p).unwrap()
    }

    #[test]
    fn records_encode_decode_and_verify() {
        let w = workload(&["dataintegrity=true", "fieldcount=3", "fieldlength=20"]);
        let mut r = RecordBuf::new(&w, 1);
        r.set_key(7);
        assert!(r.key_str().starts_with("user"));
        r.fill_all();
        let mut enc = Vec::new();
        encode_record(&r.values, &mut enc);
        let mut seen = 0;
        assert!(decode_record(&enc, |i, v| {
            assert!(r.verify(i, v), "field {i}");
            assert_eq!(v.len(), 20);
            seen += 1;
        }));
        assert_eq!(seen, 3);
        // Another key's values do not verify.
        let other = r.values[0].clone();
        r.set_key(8);
        assert!(!r.verify(0, &other));
        assert!(!decode_record(&enc[..enc.len() - 1], |_, _| {}));
        assert_eq!(r.field_index(b"field2"), Some(2));
        assert_eq!(r.field_index(b"field3"), None);
    }

    #[test]
    fn random_values_have_the_configured_lengths() {
        let w = workload(&[
            "fieldlength=50",
            "fieldlengthdistribution=uniform",
            "minfieldlength=10",
        ]);
        let mut r = RecordBuf::new(&w, 2);
        r.set_key(1);
        for _ in 0..100 {
            r.fill(0);
            let n = r.values[0].len();
            assert!((10..=50).contains(&n), "{n}");
            assert!(r.verify(0, b"anything: not verifying"));
        }
    }
}
