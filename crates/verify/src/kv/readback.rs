//! What a key read back holds ([`Observation`], [`ReadBack`]) and how it is classified against
//! the table of acknowledged writes ([`classify`]). Sessions fill these in; the pass that reads
//! every key back after the run is `storlab_engine::verify::kv_pass`.

use super::header::{self, Parsed};
use super::report::KvClass;
use super::table::KeyState;
use storlab_model::{ErrorKind, OpError};

/// What the fields of one record read back hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observation {
    /// Fields with a stamp that checks out for this key.
    pub stamped_fields: u32,
    /// Fields without a stamp (written without `verify`).
    pub unstamped_fields: u32,
    /// Fields with a stamp that does not check out (checksum, key number, format).
    pub bad_fields: u32,
    /// The newest generation of the stamped fields.
    pub newest_generation: u64,
}

impl Observation {
    /// Looks at the value of field `field` read for key `key` (number `keynum`).
    pub fn field(&mut self, key: &[u8], keynum: u64, field: &[u8], value: &[u8]) {
        match header::parse(value) {
            Parsed::Unstamped => self.unstamped_fields += 1,
            Parsed::Malformed => self.bad_fields += 1,
            Parsed::Stamped(s) => {
                if s.keynum == keynum && header::crc_ok(value, key, field, &s) {
                    self.stamped_fields += 1;
                    self.newest_generation = self.newest_generation.max(s.generation);
                } else {
                    self.bad_fields += 1;
                }
            }
        }
    }
}

/// One key read back by a session: found or not (or the error), and what its fields hold.
#[derive(Debug, Clone, Copy)]
pub struct ReadBack {
    pub result: Result<bool, OpError>,
    pub observation: Observation,
}

/// Classifies a key read back against what the table knows of it (it has an acknowledged
/// write): its class, and whether it holds a newer write than the last acknowledged one.
pub fn classify(rb: &ReadBack, state: KeyState, generation_base: u64) -> (KvClass, bool) {
    let found = match rb.result {
        Ok(found) => found,
        // The binding found the record's shape wrong (a field missing, a value not a string).
        Err(e) if e.kind == ErrorKind::Integrity => return (KvClass::Corrupt, false),
        Err(_) => return (KvClass::Unreadable, false),
    };
    let o = &rb.observation;
    if !found {
        return (KvClass::Missing, false);
    }
    if o.bad_fields > 0 {
        return (KvClass::Corrupt, false);
    }
    // No stamp at all (older data written without verify), or only an earlier run's.
    let Some(seq) = o
        .newest_generation
        .checked_sub(generation_base)
        .filter(|_| o.stamped_fields > 0)
    else {
        return (KvClass::Lost, false);
    };
    if seq < state.floor as u64 {
        return (KvClass::Lost, false);
    }
    (KvClass::Intact, seq > state.acked as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u64 = 1_000_000;

    fn value(key: &[u8], keynum: u64, field: &[u8], generation: u64) -> Vec<u8> {
        let mut v = vec![b'.'; 60];
        header::stamp(&mut v, key, field, keynum, generation);
        v
    }

    fn seen(fields: &[(&[u8], Vec<u8>)]) -> Observation {
        let mut o = Observation::default();
        for (name, v) in fields {
            o.field(b"user7", 7, name, v);
        }
        o
    }

    fn found(o: Observation) -> ReadBack {
        ReadBack {
            result: Ok(true),
            observation: o,
        }
    }

    #[test]
    fn each_class_from_what_a_record_holds() {
        let state = KeyState {
            acked: 5,
            floor: 4,
            failed: 0,
        };
        let f0: &[u8] = b"field0";
        let f1: &[u8] = b"field1";
        // The newest field decides: one field updated to the floor, the other older.
        let o = seen(&[
            (f0, value(b"user7", 7, f0, BASE + 2)),
            (f1, value(b"user7", 7, f1, BASE + 4)),
        ]);
        assert_eq!(o.stamped_fields, 2);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Intact, false));
        // A write in flight with the acknowledged one landed last.
        let o = seen(&[(f0, value(b"user7", 7, f0, BASE + 6))]);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Intact, true));
        // Older than the floor: a lost update.
        let o = seen(&[(f0, value(b"user7", 7, f0, BASE + 3))]);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Lost, false));
        // An earlier run's value, or YCSB's own unstamped one: lost too.
        let o = seen(&[(f0, value(b"user7", 7, f0, BASE - 10))]);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Lost, false));
        let o = seen(&[(f0, b"user7:field0:12345678".to_vec())]);
        assert_eq!(o.unstamped_fields, 1);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Lost, false));
        // Another key's value, a changed byte: corrupt.
        let o = seen(&[(f0, value(b"user8", 8, f0, BASE + 5))]);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Corrupt, false));
        let mut v = value(b"user7", 7, f0, BASE + 5);
        v[50] = b'!';
        let o = seen(&[(f1, value(b"user7", 7, f1, BASE + 5)), (f0, v)]);
        assert_eq!(o.bad_fields, 1);
        assert_eq!(classify(&found(o), state, BASE), (KvClass::Corrupt, false));
        // Not there; a read that failed; a record the binding found malformed.
        let missing = ReadBack {
            result: Ok(false),
            observation: Observation::default(),
        };
        assert_eq!(classify(&missing, state, BASE).0, KvClass::Missing);
        let err = |kind| ReadBack {
            result: Err(OpError { kind, code: 0 }),
            observation: Observation::default(),
        };
        assert_eq!(
            classify(&err(ErrorKind::Connection), state, BASE).0,
            KvClass::Unreadable
        );
        assert_eq!(
            classify(&err(ErrorKind::Integrity), state, BASE).0,
            KvClass::Corrupt
        );
    }
}
