//! fio's job-file syntax, read by hand: an ini-like file of `[section]` headers (`[global]`
//! and one per job) and `name=value` or bare `name` lines, `;` and `#` comments (fio cuts
//! every line at its first `;` or `#`, so `numjobs=4 ; four` is `numjobs=4`: fio 3.33's
//! `strip_blank_end`, checked with `fio --showcmd`), and `${VAR}` taken from the environment
//! (after the cut, as in fio: a `#` in a variable's value stays). fio's other expansions (`$pagesize`, `$ncpus`,
//! `$mb_memory`, arithmetic `$(...)`) and `include` are refused by name with their line.
//! Also fio's number rules: sizes with its suffixes under `kb_base` ([`parse_size`]) and times
//! with its units ([`parse_time`]).
//!
//! No ini crate fits: fio's files have bare keys without `=`, repeated section names, no
//! quoting, and a line is needed on every option for the refusals; the crates on hand
//! (`toml`) read another grammar.

use std::time::Duration;

/// The file name that errors in command-line options carry ("command line, argument N"; see
/// the command-line module).
pub const COMMAND_LINE: &str = "command line";

/// A problem at a line of a job file, printed as fio users read it: `job.fio:7: message`.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    /// The job file, or [`COMMAND_LINE`].
    pub file: String,
    /// The line, or on the command line the argument's position.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.file == COMMAND_LINE) {
            // The whole file (it cannot be read) or the whole command line.
            (0, _) => write!(f, "{}: {}", self.file, self.message),
            (_, true) => write!(f, "{}, argument {}: {}", self.file, self.line, self.message),
            (_, false) => write!(f, "{}:{}: {}", self.file, self.line, self.message),
        }
    }
}

impl std::error::Error for LineError {}

/// One `name=value` (or bare `name`) line.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub name: String,
    pub value: Option<String>,
    pub line: usize,
}

impl Entry {
    /// The value, trimmed; an option given without one is an error naming it.
    pub fn needed(&self) -> Result<&str, String> {
        self.value
            .as_deref()
            .map(str::trim)
            .ok_or_else(|| format!("option `{}` needs a value", self.name))
    }
}

/// A `[section]` and its lines, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub name: String,
    pub line: usize,
    pub entries: Vec<Entry>,
}

/// A parsed job file.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    pub file: String,
    pub sections: Vec<Section>,
}

/// Reads a job file's text. `env` gives environment variables for `${VAR}`. Every problem is
/// returned, not just the first.
pub fn parse(
    file: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, Vec<LineError>> {
    let mut sections: Vec<Section> = Vec::new();
    let mut errors = Vec::new();
    let err = |line: usize, message: String| LineError {
        file: file.to_string(),
        line,
        message,
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = strip_comment(raw).trim();
        if t.is_empty() {
            continue;
        }
        if let Some(rest) = t.strip_prefix('[') {
            match rest.strip_suffix(']') {
                Some(name) if !name.trim().is_empty() => sections.push(Section {
                    name: name.trim().to_string(),
                    line,
                    entries: Vec::new(),
                }),
                _ => errors.push(err(line, format!("`{t}` is not a section header"))),
            }
            continue;
        }
        if t == "include" || t.starts_with("include ") || t.starts_with("include\t") {
            errors.push(err(
                line,
                "`include` is not supported by storlab fio: put the included options in this file"
                    .into(),
            ));
            continue;
        }
        let (name, value) = match t.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (t, None),
        };
        if name.is_empty() {
            errors.push(err(line, format!("`{t}` has no option name")));
            continue;
        }
        let value = match value.map(|v| expand(v, env)) {
            Some(Err(m)) => {
                errors.push(err(line, m));
                continue;
            }
            Some(Ok(v)) => Some(v),
            None => None,
        };
        match sections.last_mut() {
            Some(s) => s.entries.push(Entry {
                name: name.to_string(),
                value,
                line,
            }),
            None => errors.push(err(
                line,
                format!("option `{name}` comes before any [section]"),
            )),
        }
    }
    if errors.is_empty() {
        Ok(JobFile {
            file: file.to_string(),
            sections,
        })
    } else {
        Err(errors)
    }
}

/// The line up to its first `;` or `#`, as fio reads it (a whole-line comment is empty).
pub fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(at) => &line[..at],
        None => line,
    }
}

/// `${VAR}` from the environment; any other `$` expansion is refused by name.
fn expand(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(format!("`{value}`: `${{` without its closing `}}`"));
            };
            let name = &body[..end];
            match env(name) {
                Some(v) => out.push_str(&v),
                None => {
                    return Err(format!(
                        "`${{{name}}}`: environment variable {name} is not set"
                    ));
                }
            }
            rest = &body[end + 1..];
        } else {
            let word: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '(')
                .collect();
            return Err(format!(
                "expansion `${word}` is not supported by storlab fio (only `${{VAR}}` from the environment)"
            ));
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// A size in bytes, as fio reads it: a whole number (decimal or `0x` hex) and an optional
/// case-insensitive suffix. With `kb_base=1024` (fio's default) `k`, `kb`, `m`, `mb`, ...
/// are powers of 1024 and `kib`, `mib`, ... powers of 1000 (fio's compatibility rule, the
/// reverse of IEC's: `size=10KiB` is 10000 bytes); with `kb_base=1000` the other way round.
/// A lone `b` means bytes.
pub fn parse_size(text: &str, kb_base: u64) -> Result<u64, String> {
    let t = text.trim();
    let bad =
        || format!("`{text}` is not a size (a whole number with an optional k, m, g, t, p suffix)");
    let (digits, suffix, radix) = if let Some(h) = t.strip_prefix("0x").or(t.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        (&h[..end], &h[end..], 16)
    } else {
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        (&t[..end], &t[end..], 10)
    };
    if digits.is_empty() {
        return Err(bad());
    }
    let n = u64::from_str_radix(digits, radix).map_err(|_| bad())?;
    let s = suffix.trim().to_ascii_lowercase();
    let (power, iec) = match s.as_str() {
        "" | "b" => (0, false),
        _ => {
            let mut chars = s.chars();
            let p = match chars.next() {
                Some('k') => 1,
                Some('m') => 2,
                Some('g') => 3,
                Some('t') => 4,
                Some('p') => 5,
                _ => return Err(bad()),
            };
            match chars.as_str() {
                "" | "b" => (p, false),
                "i" | "ib" => (p, true),
                _ => return Err(bad()),
            }
        }
    };
    // kb_base=1024: plain suffixes are binary, IEC ones decimal; kb_base=1000: as the
    // standards say.
    let base: u64 = match (kb_base == 1000, iec) {
        (false, false) | (true, true) => 1024,
        _ => 1000,
    };
    base.checked_pow(power)
        .and_then(|m| n.checked_mul(m))
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// A time as fio reads it: a whole number, seconds unless a unit follows (`us`/`usec`,
/// `ms`/`msec`, `s`/`sec`, `m`/`min`, `h`, `d`; case-insensitive).
pub fn parse_time(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(end);
    let bad =
        || format!("`{text}` is not a time (a whole number with an optional us, ms, s, m, h or d)");
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let us: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "" | "s" | "sec" => 1_000_000,
        "m" | "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(us)
        .map(Duration::from_micros)
        .ok_or_else(|| format!("`{text}` is too long"))
}

/// A boolean option: a bare name, `1` or `0` (fio also takes true/false).
pub fn parse_bool(value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.to_ascii_lowercase()) {
        None => Ok(true),
        Some(v) => match v.as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("`{v}` is not 0 or 1")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn sections_entries_and_comments() {
        let text = "; a comment\n# another\n[global]\nioengine=libaio\n  direct = 1\ntime_based\n\n[job one]\nrw=randread\n";
        let f = parse("j.fio", text, &no_env).unwrap();
        assert_eq!(f.sections.len(), 2);
        assert_eq!(f.sections[0].name, "global");
        assert_eq!(f.sections[0].entries[1].name, "direct");
        assert_eq!(f.sections[0].entries[1].value.as_deref(), Some("1"));
        assert_eq!(f.sections[0].entries[2].value, None);
        assert_eq!(f.sections[0].entries[2].line, 6);
        assert_eq!(f.sections[1].name, "job one");
        assert_eq!(f.sections[1].line, 8);
    }

    #[test]
    fn comments_after_values_are_cut_as_fio_cuts_them() {
        // fio 3.33 `--showcmd` of these lines: --name=a --numjobs=2 --runtime=3600 --bs=8k
        // --time_based.
        let text = "[a] ; first job\nnumjobs=2 ; two threads\nruntime=3600  # max\nbs=8k;x\ntime_based # bare\n   ; indented comment\n";
        let f = parse("j.fio", text, &no_env).unwrap();
        assert_eq!(f.sections[0].name, "a");
        let got: Vec<(&str, Option<&str>)> = f.sections[0]
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.value.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("numjobs", Some("2")),
                ("runtime", Some("3600")),
                ("bs", Some("8k")),
                ("time_based", None)
            ]
        );
        // The cut comes before `${VAR}`: a `#` in the variable's value stays.
        let env = |n: &str| (n == "F").then(|| "/tmp/a#b".to_string());
        let f = parse("j.fio", "[a]\nfilename=${F} # the file\n", &env).unwrap();
        assert_eq!(f.sections[0].entries[0].value.as_deref(), Some("/tmp/a#b"));
    }

    #[test]
    fn include_and_expansions_are_refused_with_their_line() {
        let text = "include other.fio\n[a]\nsize=$mb_memory\nfilename=${STORLAB_NOPE}\n";
        let e = parse("j.fio", text, &no_env).unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert_eq!(e[0].line, 1);
        assert!(
            e[0].to_string().starts_with("j.fio:1: `include`"),
            "{}",
            e[0]
        );
        assert!(e[1].message.contains("`$mb_memory`"), "{}", e[1]);
        assert!(e[2].message.contains("STORLAB_NOPE"), "{}", e[2]);
        let env = |n: &str| (n == "DEV").then(|| "/dev/x".to_string());
        let f = parse("j.fio", "[a]\nfilename=${DEV}1\n", &env).unwrap();
        assert_eq!(f.sections[0].entries[0].value.as_deref(), Some("/dev/x1"));
        assert!(parse("j.fio", "rw=read\n", &no_env).is_err());
    }

    #[test]
    fn sizes_follow_fio_kb_base_rules() {
        // Measured with fio 3.33: size=10k is 10240 bytes, size=10KiB 10000.
        assert_eq!(parse_size("4k", 1024), Ok(4096));
        assert_eq!(parse_size("4K", 1024), Ok(4096));
        assert_eq!(parse_size("10kB", 1024), Ok(10240));
        assert_eq!(parse_size("10KiB", 1024), Ok(10000));
        assert_eq!(parse_size("1MiB", 1024), Ok(1_000_000));
        assert_eq!(parse_size("1m", 1024), Ok(1 << 20));
        assert_eq!(parse_size("1g", 1024), Ok(1 << 30));
        assert_eq!(parse_size("0x400", 1024), Ok(1024));
        assert_eq!(parse_size("512", 1024), Ok(512));
        assert_eq!(parse_size("4k", 1000), Ok(4000));
        assert_eq!(parse_size("4KiB", 1000), Ok(4096));
        assert!(parse_size("1.5g", 1024).is_err());
        assert!(parse_size("50%", 1024).is_err());
        assert!(parse_size("4x", 1024).is_err());
    }

    #[test]
    fn times_follow_fio_units() {
        assert_eq!(parse_time("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_time("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_time("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_time("2000us"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_time("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_time("1.5s").is_err());
        assert_eq!(parse_bool(None), Ok(true));
        assert_eq!(parse_bool(Some("0")), Ok(false));
    }
}
