//! The stamp of a verified YCSB field value, at its start (46 bytes of printable ASCII, so
//! that text columns and documents take it as they take YCSB's own values):
//!
//! | bytes | field |
//! | --- | --- |
//! | 0..6 | magic `STLKV1` |
//! | 6..22 | key number, 16 lowercase hex digits |
//! | 22..38 | generation of the write, 16 hex digits |
//! | 38..46 | crc32c, 8 hex digits, of the key, the field name and the whole value with these 8 bytes left out |
//!
//! The rest of the value is YCSB's deterministic value of (key, field) (as `dataintegrity`
//! builds it) from byte 46 on. Every field a write sets carries its own stamp: an update of one
//! field (YCSB's default `writeallfields=false`) stamps that field, the others keep theirs, and
//! the record's generation is the newest of its fields'.

/// The first bytes of every verified value.
pub const MAGIC: &[u8; 6] = b"STLKV1";
/// Bytes of the stamp: a verified field value is at least this long.
pub const HEADER_BYTES: usize = 46;
const KEYNUM_AT: usize = 6;
const GENERATION_AT: usize = 22;
const CRC_AT: usize = 38;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A stamp as read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub keynum: u64,
    pub generation: u64,
    pub crc: u32,
}

/// What the start of a value says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// No magic: not a verified value (YCSB's own, or written without `verify`).
    Unstamped,
    /// The magic, but too short or with digits that are not hex: damaged.
    Malformed,
    Stamped(Stamp),
}

#[inline]
fn put_hex(out: &mut [u8], mut v: u64) {
    for b in out.iter_mut().rev() {
        *b = HEX[(v & 15) as usize];
        v >>= 4;
    }
}

#[inline]
fn get_hex(text: &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for &c in text {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | d as u64;
    }
    Some(v)
}

/// crc32c of (key, field name, value without its crc digits).
#[inline]
pub fn value_crc(key: &[u8], field: &[u8], value: &[u8]) -> u32 {
    let c = crc32c::crc32c(key);
    let c = crc32c::crc32c_append(c, &[0]);
    let c = crc32c::crc32c_append(c, field);
    let c = crc32c::crc32c_append(c, &[0]);
    let c = crc32c::crc32c_append(c, &value[..CRC_AT]);
    crc32c::crc32c_append(c, &value[HEADER_BYTES..])
}

/// Stamps `value` (at least [`HEADER_BYTES`] long; shorter values are left alone) as the
/// write of `generation` to field `field` of key `key` (number `keynum`). Allocates nothing.
#[inline]
pub fn stamp(value: &mut [u8], key: &[u8], field: &[u8], keynum: u64, generation: u64) {
    if value.len() < HEADER_BYTES {
        return;
    }
    value[..KEYNUM_AT].copy_from_slice(MAGIC);
    put_hex(&mut value[KEYNUM_AT..GENERATION_AT], keynum);
    put_hex(&mut value[GENERATION_AT..CRC_AT], generation);
    let crc = value_crc(key, field, value);
    put_hex(&mut value[CRC_AT..HEADER_BYTES], crc as u64);
}

/// The stamp at the start of `value`.
#[inline]
pub fn parse(value: &[u8]) -> Parsed {
    if value.len() < MAGIC.len() || value[..MAGIC.len()] != *MAGIC {
        return Parsed::Unstamped;
    }
    if value.len() < HEADER_BYTES {
        return Parsed::Malformed;
    }
    match (
        get_hex(&value[KEYNUM_AT..GENERATION_AT]),
        get_hex(&value[GENERATION_AT..CRC_AT]),
        get_hex(&value[CRC_AT..HEADER_BYTES]),
    ) {
        (Some(keynum), Some(generation), Some(crc)) => Parsed::Stamped(Stamp {
            keynum,
            generation,
            crc: crc as u32,
        }),
        _ => Parsed::Malformed,
    }
}

/// The stamp's checksum matches the value read for field `field` of key `key`.
#[inline]
pub fn crc_ok(value: &[u8], key: &[u8], field: &[u8], s: &Stamp) -> bool {
    value.len() >= HEADER_BYTES && value_crc(key, field, value) == s.crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_value_reads_back_and_any_change_breaks_it() {
        let mut v = vec![b'x'; 100];
        stamp(&mut v, b"user12", b"field3", 12, 0x1234_5678_9abc);
        assert!(v.iter().all(|b| b.is_ascii_graphic()), "printable");
        assert_eq!(&v[..6], b"STLKV1");
        let Parsed::Stamped(s) = parse(&v) else {
            panic!("{:?}", parse(&v))
        };
        assert_eq!((s.keynum, s.generation), (12, 0x1234_5678_9abc));
        assert!(crc_ok(&v, b"user12", b"field3", &s));
        // Another key's or field's value, a changed byte, a cut value: the checksum fails.
        assert!(!crc_ok(&v, b"user13", b"field3", &s));
        assert!(!crc_ok(&v, b"user12", b"field4", &s));
        let mut changed = v.clone();
        changed[70] = b'y';
        assert!(!crc_ok(&changed, b"user12", b"field3", &s));
        assert!(!crc_ok(&v[..99], b"user12", b"field3", &s));
        // A changed generation digit breaks it too.
        let mut older = v.clone();
        older[37] = b'b';
        let Parsed::Stamped(o) = parse(&older) else {
            panic!()
        };
        assert!(!crc_ok(&older, b"user12", b"field3", &o));
        // No magic, or the magic and garbage.
        assert_eq!(parse(b"user12:field3:12345"), Parsed::Unstamped);
        assert_eq!(parse(b"STLKV1short"), Parsed::Malformed);
        let mut bad = v.clone();
        bad[10] = b'Z';
        assert_eq!(parse(&bad), Parsed::Malformed);
        // Too short to stamp: left alone.
        let mut short = vec![b'a'; 20];
        stamp(&mut short, b"k", b"f", 1, 1);
        assert_eq!(short, vec![b'a'; 20]);
    }
}
