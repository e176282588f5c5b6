//! YCSB record contents: key names ("user" + hashed or ordered key number, zero padded), field
//! names (prefix + index), field values (random printable bytes, or YCSB's deterministic value
//! when `dataintegrity` is on) and the check of a deterministic value read back.
//!
//! Everything writes into a buffer the caller owns and reuses, so building keys and values in
//! the hot path allocates nothing once the buffer has grown to size.

use rand::Rng;

use super::generators::fnvhash64;

/// Key order on insert (`insertorder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InsertOrder {
    /// The key number is hashed with FNV-64 first (YCSB's default), scattering inserts.
    #[default]
    Hashed,
    /// The key number itself (any other `insertorder` value, "ordered" by convention).
    Ordered,
}

/// The longest key: "user" + 20 digits, or the zero padding if longer.
pub const MAX_UNPADDED_KEY_BYTES: usize = 4 + 20;

/// Writes YCSB's key for `keynum` into `buf` (cleared first): "user", zeros up to
/// `zero_padding` digits, then the decimal number (hashed with [`fnvhash64`] unless ordered).
/// As `CoreWorkload.buildKeyName`.
#[inline]
pub fn write_key(keynum: u64, zero_padding: u32, order: InsertOrder, buf: &mut Vec<u8>) {
    let number = match order {
        InsertOrder::Hashed => fnvhash64(keynum),
        InsertOrder::Ordered => keynum,
    };
    let len = decimal_len(number);
    let pad = (zero_padding as usize).saturating_sub(len);
    let end = 4 + pad + len;
    buf.clear();
    if end > KEY_ARRAY_BYTES {
        let mut digits = [0u8; 20];
        buf.extend_from_slice(b"user");
        buf.resize(4 + pad, b'0');
        buf.extend_from_slice(format_u64(number, &mut digits));
        return;
    }
    // Built in place in the buffer, then cut: every copy has a fixed length, so none is a call
    // to memmove (two per key were a tenth of a YCSB run on the null target), and nothing
    // reads back what the digits' small stores just wrote (a key built on the stack and copied
    // over waited on that, the store-to-load forwarding stall: a sixth of the key's time).
    buf.extend_from_slice(&[b'0'; KEY_ARRAY_BYTES]);
    if let Some(key) = buf.first_chunk_mut::<KEY_ARRAY_BYTES>() {
        key[..4].copy_from_slice(b"user");
        write_decimal(number, key, end);
    }
    buf.truncate(end);
}

/// The fixed length a key is built at before it is cut: "user", a short padding and 20
/// digits fit in 32 bytes (longer keys take the slower path).
const KEY_ARRAY_BYTES: usize = 32;

/// Digits of `n` in decimal.
#[inline]
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Writes `n` in decimal into `out`, its last digit just before `end` (which leaves room).
/// Eight digits at a time from the right: the 32-bit chunks do not wait on each other, where
/// two digits at a time made one chain of ten divisions.
#[inline]
fn write_decimal<const N: usize>(mut n: u64, out: &mut [u8; N], mut end: usize) {
    while n >= 100_000_000 {
        let chunk = (n % 100_000_000) as u32;
        n /= 100_000_000;
        end -= 8;
        let (high, low) = (chunk / 10_000, chunk % 10_000);
        for (at, pair) in [
            (0, high / 100),
            (2, high % 100),
            (4, low / 100),
            (6, low % 100),
        ] {
            let p = pair as usize * 2;
            out[end + at..end + at + 2].copy_from_slice(&DIGIT_PAIRS[p..p + 2]);
        }
    }
    let mut m = n as u32;
    while m >= 100 {
        let p = (m % 100) as usize * 2;
        m /= 100;
        end -= 2;
        out[end..end + 2].copy_from_slice(&DIGIT_PAIRS[p..p + 2]);
    }
    if m >= 10 {
        let p = m as usize * 2;
        out[end - 2..end].copy_from_slice(&DIGIT_PAIRS[p..p + 2]);
    } else {
        out[end - 1] = b'0' + m as u8;
    }
}

/// Writes `prefix` + `index` ("field0", "field1", ...) into `buf` (cleared first).
#[inline]
pub fn write_field_name(prefix: &str, index: u32, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(prefix.as_bytes());
    let mut digits = [0u8; 20];
    buf.extend_from_slice(format_u64(index as u64, &mut digits));
}

/// Fills `buf` (cleared first) with `len_bytes` random printable ASCII bytes (' ' to '~').
/// YCSB's `RandomByteIterator` also writes printable bytes, from a narrower, uneven alphabet.
#[inline]
pub fn fill_random_value<R: Rng + ?Sized>(rng: &mut R, len_bytes: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.resize(len_bytes, 0);
    for chunk in buf.chunks_mut(8) {
        let bits = rng.next_u64().to_le_bytes();
        for (b, r) in chunk.iter_mut().zip(bits) {
            // Multiply-shift the byte onto 95 printable characters.
            *b = b' ' + ((r as u16 * 95) >> 8) as u8;
        }
    }
}

/// Writes YCSB's deterministic value for (key, field) of `len_bytes` bytes into `buf` (cleared
/// first), as `CoreWorkload.buildDeterministicValue`: start with "key:field", then while
/// shorter than the length append ':' and the Java `String.hashCode()` (signed 32-bit, decimal)
/// of everything so far including that ':'; cut to the length. Keys and field names are
/// ASCII, so hashing bytes equals Java's hashing of UTF-16 units.
pub fn write_deterministic_value(key: &[u8], field: &[u8], len_bytes: usize, buf: &mut Vec<u8>) {
    buf.clear();
    buf.reserve(len_bytes);
    deterministic_value(key, field, len_bytes, |chunk| buf.extend_from_slice(chunk));
}

/// Whether `value` is exactly the deterministic value of (key, field) with length `len_bytes`.
/// Compares as it generates, without a buffer.
pub fn verify_deterministic_value(
    key: &[u8],
    field: &[u8],
    len_bytes: usize,
    value: &[u8],
) -> bool {
    if value.len() != len_bytes {
        return false;
    }
    let mut offset = 0;
    let mut same = true;
    deterministic_value(key, field, len_bytes, |chunk| {
        same &= value[offset..offset + chunk.len()] == *chunk;
        offset += chunk.len();
    });
    same && offset == len_bytes
}

/// Streams the deterministic value in pieces to `sink`, cut to `len_bytes`.
fn deterministic_value(key: &[u8], field: &[u8], len_bytes: usize, sink: impl FnMut(&[u8])) {
    let mut out = Stream {
        hash: 0,
        len: 0,
        limit: len_bytes,
        sink,
    };
    out.push(key);
    out.push(b":");
    out.push(field);
    while out.len < len_bytes {
        out.push(b":");
        let mut digits = [0u8; 11];
        let text = format_i32(out.hash, &mut digits);
        out.push(text);
    }
}

struct Stream<F: FnMut(&[u8])> {
    /// Java's `String.hashCode()` of everything pushed so far.
    hash: i32,
    len: usize,
    limit: usize,
    sink: F,
}

impl<F: FnMut(&[u8])> Stream<F> {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.hash = self.hash.wrapping_mul(31).wrapping_add(b as i32);
        }
        let room = self.limit.saturating_sub(self.len).min(bytes.len());
        if room > 0 {
            (self.sink)(&bytes[..room]);
        }
        self.len += bytes.len();
    }
}

/// Decimal digits of `n`, written at the end of `digits`.
#[inline]
fn format_u64(n: u64, digits: &mut [u8; 20]) -> &[u8] {
    write_decimal(n, digits, 20);
    &digits[20 - decimal_len(n)..]
}

/// "00" to "99", two digits at a time.
const DIGIT_PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Decimal text of a signed 32-bit number, as Java's `Integer.toString`.
fn format_i32(n: i32, digits: &mut [u8; 11]) -> &[u8] {
    let mut magnitude = n.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (magnitude % 10) as u8;
        magnitude /= 10;
        if magnitude == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        digits[at] = b'-';
    }
    &digits[at..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn key(keynum: u64, padding: u32, order: InsertOrder) -> String {
        let mut buf = Vec::new();
        write_key(keynum, padding, order, &mut buf);
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn decimal_text_equals_to_string() {
        let mut d = [0u8; 20];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let cases = [
            0,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            1 << 32,
            u64::MAX - 1,
            u64::MAX,
        ];
        for n in cases.into_iter().chain((0..10_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        })) {
            assert_eq!(format_u64(n, &mut d), n.to_string().as_bytes());
        }
    }

    /// Keys built in place equal "user" + padding + `to_string`, at every digit count and
    /// padding, through the fallback for keys longer than the stack array too.
    #[test]
    fn keys_equal_the_plain_formatting() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let numbers = (0..20_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        });
        let edges = (0..20).flat_map(|p| {
            let t = 10u64.pow(p);
            [t - 1, t, t + 1]
        });
        for n in numbers.chain(edges).chain([u64::MAX]) {
            for padding in [0, 1, 12, 20, 28, 29, 40] {
                let text = n.to_string();
                let zeros = "0".repeat((padding as usize).saturating_sub(text.len()));
                assert_eq!(
                    key(n, padding, InsertOrder::Ordered),
                    format!("user{zeros}{text}")
                );
            }
        }
    }

    #[test]
    fn key_names_for_known_keynums() {
        // fnvhash64(0) = 6284781860667377211 (see generators' tests).
        assert_eq!(key(0, 1, InsertOrder::Hashed), "user6284781860667377211");
        assert_eq!(key(1, 1, InsertOrder::Hashed), "user8517097267634966620");
        assert_eq!(key(42, 1, InsertOrder::Hashed), "user55488592825689361");
        assert_eq!(key(42, 20, InsertOrder::Hashed), "user00055488592825689361");
        assert_eq!(key(0, 1, InsertOrder::Ordered), "user0");
        assert_eq!(key(123, 8, InsertOrder::Ordered), "user00000123");
        assert_eq!(key(123, 2, InsertOrder::Ordered), "user123");
        assert_eq!(
            key(u64::MAX, 0, InsertOrder::Ordered),
            format!("user{}", u64::MAX)
        );
        // The buffer is reused: cleared, not appended to.
        let mut buf = Vec::with_capacity(64);
        write_key(5, 1, InsertOrder::Ordered, &mut buf);
        write_key(6, 1, InsertOrder::Ordered, &mut buf);
        assert_eq!(buf, b"user6");
    }

    #[test]
    fn field_names() {
        let mut buf = Vec::new();
        write_field_name("field", 0, &mut buf);
        assert_eq!(buf, b"field0");
        write_field_name("f", 19, &mut buf);
        assert_eq!(buf, b"f19");
    }

    /// Java's algorithm written plainly: re-hash the whole string on every round.
    fn java_deterministic(key: &str, field: &str, size: usize) -> String {
        let java_hash = |s: &str| {
            s.encode_utf16()
                .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
        };
        let mut sb = format!("{key}:{field}");
        while sb.len() < size {
            sb.push(':');
            let h = java_hash(&sb);
            sb.push_str(&h.to_string());
        }
        sb.truncate(size);
        sb
    }

    #[test]
    fn deterministic_values_match_ycsb_and_verify() {
        let mut buf = Vec::new();
        // Computed separately (Python) with YCSB's algorithm.
        let k0 = "user6284781860667377211";
        write_deterministic_value(k0.as_bytes(), b"field0", 100, &mut buf);
        assert_eq!(
            buf,
            b"user6284781860667377211:field0:-56807877:2032869390:-165488160:1762371712:\
              -169193395:-1039977118:-10"
                .as_slice()
        );
        write_deterministic_value(b"user1", b"field9", 10, &mut buf);
        assert_eq!(buf, b"user1:fiel");
        for (key, field, size) in [
            (k0, "field9", 1000),
            ("user00012", "field3", 1),
            ("user7", "f0", 0),
            ("user8517097267634966620", "field1", 4096),
        ] {
            write_deterministic_value(key.as_bytes(), field.as_bytes(), size, &mut buf);
            assert_eq!(buf, java_deterministic(key, field, size).as_bytes());
            assert!(verify_deterministic_value(
                key.as_bytes(),
                field.as_bytes(),
                size,
                &buf
            ));
        }
        // A corrupted byte, a short value, a wrong field or key: all fail.
        write_deterministic_value(k0.as_bytes(), b"field2", 100, &mut buf);
        assert!(verify_deterministic_value(
            k0.as_bytes(),
            b"field2",
            100,
            &buf
        ));
        let mut corrupt = buf.clone();
        corrupt[77] ^= 1;
        assert!(!verify_deterministic_value(
            k0.as_bytes(),
            b"field2",
            100,
            &corrupt
        ));
        assert!(!verify_deterministic_value(
            k0.as_bytes(),
            b"field2",
            100,
            &buf[..99]
        ));
        assert!(!verify_deterministic_value(
            k0.as_bytes(),
            b"field3",
            100,
            &buf
        ));
        assert!(!verify_deterministic_value(b"user1", b"field2", 100, &buf));
    }

    #[test]
    fn random_values_are_printable_and_sized() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut buf = Vec::new();
        for len in [0, 1, 7, 8, 9, 100, 4096] {
            fill_random_value(&mut rng, len, &mut buf);
            assert_eq!(buf.len(), len);
            assert!(buf.iter().all(|b| (b' '..=b'~').contains(b)));
        }
        // All 95 characters show up.
        fill_random_value(&mut rng, 100_000, &mut buf);
        let mut seen = [false; 256];
        for &b in &buf {
            seen[b as usize] = true;
        }
        assert_eq!(seen.iter().filter(|s| **s).count(), 95);
    }
}
