//! Redaction of credentials in everything storlab writes, shows or exports: the password of a
//! `scheme://user:password@host` URI, and the value of any key named like a password, secret or
//! token (`password = "x"` in TOML, `"password": "x"` in JSON, `password=x` in a query string
//! or option list, `--password x` / `--password=x` on a command line).
//!
//! Redaction works on text, so one function covers study files, JSON and command lines; it is
//! applied by the writers in [`crate`] and again by every report format, so results
//! written before a target learned to hide its credentials are still masked when shown.

/// What a masked value is replaced with (the same mask as URLs' passwords).
use storlab_model::units::MASK;

/// Key names whose values are credentials (compared case-insensitively, ignoring `-`/`_`, as a
/// suffix: `db-password`, `api_key`, `authToken` all match).
const SECRET_KEYS: [&str; 10] = [
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "credential",
    "credentials",
];

fn is_secret_key(key: &str) -> bool {
    let norm: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    !norm.is_empty() && SECRET_KEYS.iter().any(|k| norm.ends_with(k))
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'
}

/// Masks credentials in `text` (see the module documentation). Text without credentials is
/// returned unchanged.
pub fn redact(text: &str) -> String {
    redact_keys(&storlab_model::units::redact_urls(text))
}

/// Values of secret-named keys, in the forms listed in the module documentation.
fn redact_keys(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        // Find a key: a maximal run of key characters.
        if !is_key_char(chars[i]) || (i > 0 && is_key_char(chars[i - 1])) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_key_char(chars[i]) {
            i += 1;
        }
        let key: String = chars[start..i].iter().collect();
        out.push_str(&key);
        if !is_secret_key(key.trim_start_matches('-')) {
            continue;
        }
        // After the key: an optional closing quote, spaces, then `=`, `:` or (command line
        // flag) a space before the value.
        let mut j = i;
        if j < chars.len() && (chars[j] == '"' || chars[j] == '\'') {
            j += 1;
        }
        let spaces = |mut j: usize| {
            while j < chars.len() && (chars[j] == ' ' || chars[j] == '\t') {
                j += 1;
            }
            j
        };
        j = spaces(j);
        let flag = key.starts_with("--");
        let separated = j < chars.len() && (chars[j] == '=' || chars[j] == ':');
        if separated {
            j = spaces(j + 1);
        } else if !(flag && j > i) {
            continue;
        }
        if j >= chars.len() || chars[j] == '\n' {
            continue;
        }
        // The value: quoted, or up to a separator.
        let (value_start, value_end, close) = if chars[j] == '"' || chars[j] == '\'' {
            let q = chars[j];
            let mut k = j + 1;
            while k < chars.len() && chars[k] != q && chars[k] != '\n' {
                if chars[k] == '\\' {
                    k += 1;
                }
                k += 1;
            }
            (j + 1, k.min(chars.len()), true)
        } else {
            let mut k = j;
            while k < chars.len() && !(chars[k].is_whitespace() || "&;,}])\"'".contains(chars[k])) {
                k += 1;
            }
            (j, k, false)
        };
        // JSON `null`, numbers meant as counts (`token-count`) are not secrets worth masking,
        // but a secret key's value always is: mask whatever it is unless empty.
        if value_end == value_start {
            continue;
        }
        out.extend(&chars[i..value_start]);
        out.push_str(MASK);
        i = value_end;
        if close && i < chars.len() {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_passwords_are_masked_and_the_rest_kept() {
        assert_eq!(
            redact("uri = \"mongodb://admin:s3cr3t@db1:27017/test?w=1\""),
            "uri = \"mongodb://admin:***@db1:27017/test?w=1\""
        );
        assert_eq!(
            redact("postgres://u:p%40ss@h/db and redis://:pw@r:6379"),
            "postgres://u:***@h/db and redis://:***@r:6379"
        );
        // No password, or no user info: unchanged.
        for s in [
            "mongodb://admin@db1/x",
            "https://example.invalid/a:b@c",
            "file:///tmp/a",
        ] {
            assert_eq!(redact(s), s);
        }
    }

    #[test]
    fn secret_keys_in_toml_json_and_command_lines() {
        assert_eq!(redact("password = \"hunter2\"\n"), "password = \"***\"\n");
        assert_eq!(
            redact("db-password='x y'\nuser = \"bob\""),
            "db-password='***'\nuser = \"bob\""
        );
        assert_eq!(
            redact(r#"{"user": "bob", "auth-token": "abc\"def", "n": 1}"#),
            r#"{"user": "bob", "auth-token": "***", "n": 1}"#
        );
        assert_eq!(
            redact("storlab run s.toml --password hunter2 --api-key=k1 -q"),
            "storlab run s.toml --password *** --api-key=*** -q"
        );
        assert_eq!(
            redact("host=db;Password=pw;secret_key=zz&x=1"),
            "host=db;Password=***;secret_key=***&x=1"
        );
        // Inside a JSON string: the string's closing quote is kept.
        assert_eq!(
            redact(r#"{"source-path": "/s/token=abc.toml", "n": 1}"#),
            r#"{"source-path": "/s/token=***", "n": 1}"#
        );
        // Keys that only contain a secret word elsewhere are kept; so are plain words.
        let plain = "tokens-per-run = 5\npassword-policy = \"long\"\nthe password is in a vault";
        assert_eq!(redact(plain), plain);
    }

    #[test]
    fn redaction_is_idempotent() {
        let s = "a = \"mongodb://u:pw@h\"\npassword = \"pw\"\n--token t";
        let once = redact(s);
        assert!(!once.contains("pw@") && !once.contains("\"pw\"") && !once.contains(" t"));
        assert_eq!(redact(&once), once);
    }
}
