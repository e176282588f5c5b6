//! Quantities with units as users write them in study files and on the command line:
//! byte sizes (`4KiB`, `1MiB`, `10GB`, or a plain integer of bytes) and durations (`500ms`,
//! `30s`, `2m`). Hand-written because the size crates disagree with fio on what `K` means;
//! here `K`/`KiB` are 1024 and `KB` is 1000, as fio and most storage tools read them.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A duration written with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

const SIZE_HELP: &str =
    "a size such as 4096, \"4KiB\", \"1MiB\", \"10GB\" (K/KiB = 1024, KB = 1000)";
const DUR_HELP: &str = "a duration such as \"500ms\", \"30s\", \"2m\", \"1h\"";

/// Parses a byte size: an integer with an optional unit.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let unit = unit.trim();
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(format!("invalid size `{text}`: expected {SIZE_HELP}")),
    };
    if num.is_empty() {
        return Err(format!("invalid size `{text}`: expected {SIZE_HELP}"));
    }
    let value = if num.contains('.') {
        let f: f64 = num
            .parse()
            .map_err(|_| format!("invalid size `{text}`: expected {SIZE_HELP}"))?;
        let v = f * mult as f64;
        if v.fract() != 0.0 || v > u64::MAX as f64 {
            return Err(format!(
                "invalid size `{text}`: not a whole number of bytes"
            ));
        }
        v as u64
    } else {
        let n: u64 = num
            .parse()
            .map_err(|_| format!("invalid size `{text}`: expected {SIZE_HELP}"))?;
        n.checked_mul(mult)
            .ok_or_else(|| format!("invalid size `{text}`: too large"))?
    };
    Ok(value)
}

/// The longest duration storlab takes from a user (100 years, 3,153,600,000 s): any duration,
/// warm-up or run bound, and the sum of a few of them, then fits a u64 of nanoseconds.
pub const MAX_DURATION_SECS: u64 = 100 * 365 * 86_400;

/// The error for a duration above [`MAX_DURATION_SECS`].
pub fn duration_too_long(text: &str) -> String {
    format!("duration `{text}` is too long: at most {MAX_DURATION_SECS} s (100 years)")
}

/// `secs` as a duration, if it is a number of seconds from 0 to [`MAX_DURATION_SECS`].
pub fn duration_from_secs_f64(secs: f64, text: &str) -> Result<Duration, String> {
    if !(secs >= 0.0 && secs.is_finite()) {
        return Err(format!("invalid duration `{text}`: expected {DUR_HELP}"));
    }
    if secs > MAX_DURATION_SECS as f64 {
        return Err(duration_too_long(text));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a duration with a unit (`ns`, `us`, `ms`, `s`, `m`, `h`); a bare number is seconds.
/// At most [`MAX_DURATION_SECS`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        return duration_from_secs_f64(secs, text);
    }
    let d = humantime::parse_duration(t).map_err(|e| match e {
        humantime::DurationError::NumberOverflow => duration_too_long(text),
        _ => format!("invalid duration `{text}`: expected {DUR_HELP}"),
    })?;
    if d > Duration::from_secs(MAX_DURATION_SECS) {
        return Err(duration_too_long(text));
    }
    Ok(d)
}

/// Formats bytes for people, the one way storlab does everywhere (study values, tables, the
/// system disclosure): `4KiB`, `1MiB`, `1.5GiB` (binary units, one decimal when not whole),
/// or plain bytes (`7B`). The text parses back with [`parse_bytes`] when whole.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if b >= size {
            if b.is_multiple_of(size) {
                return format!("{}{name}", b / size);
            }
            return format!("{:.1}{name}", b as f64 / size as f64);
        }
    }
    format!("{b}B")
}

/// Formats a latency in nanoseconds with a unit that keeps 3-4 significant digits.
pub fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1_000_000.0 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1_000_000_000.0 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// Formats a duration compactly: `500ms`, `30s`, `2m30s`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IntOrText {
    Int(i64),
    Float(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match IntOrText::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("expected {SIZE_HELP}")))?
        {
            IntOrText::Int(i) if i >= 0 => Ok(Bytes(i as u64)),
            IntOrText::Int(i) => Err(serde::de::Error::custom(format!(
                "invalid size {i}: must not be negative"
            ))),
            IntOrText::Float(f) => Err(serde::de::Error::custom(format!(
                "invalid size {f}: expected {SIZE_HELP}"
            ))),
            IntOrText::Text(t) => parse_bytes(&t).map(Bytes).map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match IntOrText::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("expected {DUR_HELP}")))?
        {
            IntOrText::Int(i) if i >= 0 => duration_from_secs_f64(i as f64, &i.to_string())
                .map(|_| Dur(Duration::from_secs(i as u64)))
                .map_err(serde::de::Error::custom),
            IntOrText::Float(f) if f >= 0.0 && f.is_finite() => {
                duration_from_secs_f64(f, &f.to_string())
                    .map(Dur)
                    .map_err(serde::de::Error::custom)
            }
            IntOrText::Text(t) => parse_duration(&t)
                .map(Dur)
                .map_err(serde::de::Error::custom),
            _ => Err(serde::de::Error::custom(format!(
                "invalid duration: expected {DUR_HELP}"
            ))),
        }
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

/// RFC 3339 UTC time with seconds.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// An RFC 3339 time as storlab writes it (UTC, `Z`), with or without fractions of a second.
pub fn parse_rfc3339(text: &str) -> Option<std::time::SystemTime> {
    humantime::parse_rfc3339_weak(text.trim()).ok()
}

/// `20261120-230102` for folder names.
pub fn timestamp_for_path(t: std::time::SystemTime) -> String {
    rfc3339(t)
        .trim_end_matches('Z')
        .replace(['-', ':'], "")
        .replace('T', "-")
}

/// What stands for a password in a redacted URL, everywhere storlab writes or shows one (the
/// results' redaction of secret-named keys uses the same mask). Not `<redacted>`: the
/// results' redaction runs over finished HTML too, where that would read as a tag.
pub const MASK: &str = "***";

/// The mask of URLs saved before there was one mask (target configurations in plans and
/// verify states); read back like [`MASK`].
pub const LEGACY_MASK: &str = "<redacted>";

/// Whether a URL's password is a mask (redacted when it was saved), not a password.
pub fn is_mask(password: &str) -> bool {
    password == MASK || password == LEGACY_MASK
}

/// A URL without its password: `scheme://user:secret@host/db` becomes
/// `scheme://user:***@host/db`. The one redaction of URLs: [`redact_urls`] on a single URL.
pub fn redact_url(url: &str) -> String {
    redact_urls(url)
}

/// Every `scheme://user:password@host` in `text` with its password replaced by [`MASK`].
/// An authority ends at the first `/`, `?`, `#`, whitespace, quote or angle bracket; a URL
/// without a password (or with an empty one) is left as it is, so a redacted text redacts to
/// itself.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("://") {
        let (head, tail) = rest.split_at(pos + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| "/?#\"'`<>".contains(c) || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                match userinfo.find(':') {
                    Some(colon) if colon + 1 < userinfo.len() => {
                        out.push_str(&userinfo[..=colon]);
                        out.push_str(MASK);
                        out.push_str(&authority[at..]);
                    }
                    _ => out.push_str(authority),
                }
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("4k").unwrap(), 4096);
        assert_eq!(parse_bytes("4KB").unwrap(), 4000);
        assert_eq!(parse_bytes("1 MiB").unwrap(), 1 << 20);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("10GB").unwrap(), 10_000_000_000);
        assert!(parse_bytes("12x").is_err());
        assert!(parse_bytes("KiB").is_err());
        assert!(parse_bytes("0.3B").is_err());
    }

    #[test]
    fn durations_parse_and_format() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("soon").is_err());
        assert_eq!(format_duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        // Huge durations are errors, never a panic or a wrapped count of nanoseconds.
        for huge in [
            "1e30",
            "18446744073709551615",
            "18446744073709551615s",
            "18446744073709551615h",
            "3153600001",
            "876001h",
        ] {
            let e = parse_duration(huge).unwrap_err();
            assert!(e.contains("too long"), "{huge}: {e}");
        }
        assert_eq!(
            parse_duration("3153600000").unwrap(),
            Duration::from_secs(MAX_DURATION_SECS)
        );
        #[derive(Debug, serde::Deserialize)]
        struct T {
            #[allow(dead_code)]
            d: Dur,
        }
        for huge in ["d = 9223372036854775807", "d = 1e300", "d = \"1e300\""] {
            let e = toml::from_str::<T>(huge).unwrap_err().to_string();
            assert!(e.contains("too long"), "{huge}: {e}");
        }
        assert!(toml::from_str::<T>("d = 3153600000").is_ok());
    }

    #[test]
    fn formats_are_readable() {
        assert_eq!(format_bytes(4096), "4KiB");
        assert_eq!(format_bytes(1 << 20), "1MiB");
        assert_eq!(format_bytes(1536), "1.5KiB");
        assert_eq!(format_bytes(7), "7B");
        assert_eq!(format_bytes(3 << 30), "3GiB");
        assert_eq!(parse_bytes(&format_bytes(3 << 30)).unwrap(), 3 << 30);
        assert_eq!(format_ns(950.0), "950 ns");
        assert_eq!(format_ns(12_345.0), "12.3 µs");
    }

    #[test]
    fn urls_lose_their_passwords_and_redact_to_themselves() {
        assert_eq!(
            redact_url("postgres://u:secret@h:5/db?x=1"),
            "postgres://u:***@h:5/db?x=1"
        );
        assert_eq!(redact_url("redis://:pw@r:6379"), "redis://:***@r:6379");
        assert_eq!(redact_url("mongodb://h:1/db"), "mongodb://h:1/db");
        assert_eq!(redact_url("smb://u@h/share/f"), "smb://u@h/share/f");
        // The query is not the authority: an `@` there is no password's end.
        assert_eq!(redact_url("redis://h:1?user=a@b"), "redis://h:1?user=a@b");
        let once = redact_urls("a postgres://u:p@h/db and 'redis://x:y@r'");
        assert_eq!(once, "a postgres://u:***@h/db and 'redis://x:***@r'");
        assert_eq!(redact_urls(&once), once);
        assert_eq!(
            redact_url("smb://u:<redacted>@h/s"),
            "smb://u:<redacted>@h/s"
        );
        assert!(is_mask(MASK) && is_mask(LEGACY_MASK) && !is_mask("hunter2"));
    }
}
