//! RESP, Redis's protocol, packed by hand into a session's command buffer (no allocation
//! per operation), and the reply values read back.

use redis::Value;

/// Appends a RESP array header.
#[inline]
pub(super) fn header(buf: &mut Vec<u8>, args: usize) {
    buf.push(b'*');
    decimal(buf, args as u64);
    buf.extend_from_slice(b"\r\n");
}

/// Appends one RESP bulk string argument: `prefix` then `bytes` (a key with the target's
/// `key-prefix`).
#[inline]
pub(super) fn key_arg(buf: &mut Vec<u8>, prefix: &str, bytes: &[u8]) {
    buf.push(b'$');
    decimal(buf, (prefix.len() + bytes.len()) as u64);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(prefix.as_bytes());
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
}

/// Appends one RESP bulk string argument.
#[inline]
pub(super) fn arg(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.push(b'$');
    decimal(buf, bytes.len() as u64);
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
}

#[inline]
fn decimal(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Writes `n` in decimal into `out` and returns the text.
#[inline]
pub(super) fn number(n: i64, out: &mut [u8; 21]) -> &[u8] {
    let mut m = n.unsigned_abs();
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        out[i] = b'-';
    }
    &out[i..]
}

/// Java's `String.hashCode()` of an ASCII key: YCSB's score in `_indices`.
#[inline]
pub(super) fn java_hash(key: &[u8]) -> i32 {
    key.iter()
        .fold(0i32, |h, &b| h.wrapping_mul(31).wrapping_add(b as i32))
}

pub(super) fn bulk(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resp_packing_and_java_hash() {
        let mut b = Vec::new();
        header(&mut b, 2);
        arg(&mut b, b"GET");
        arg(&mut b, b"k1");
        assert_eq!(b, b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n");
        // Java: "user1".hashCode() == 111578633, "hello".hashCode() == 99162322.
        assert_eq!(java_hash(b"hello"), 99162322);
        let mut t = [0u8; 21];
        assert_eq!(number(-42, &mut t), b"-42");
        assert_eq!(number(i64::MIN, &mut t), b"-9223372036854775808");
    }
}
