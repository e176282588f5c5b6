//! The line protocol of a `sample` event's command, one line at a time: `sample SERIES VALUE
//! UNIT` (a value at the moment storlab reads the line), `span START END NAME [bytes=N]
//! [DETAIL...]` (something the system did by itself, its times Unix seconds on this host's
//! clock), blank lines and `#` comments (nothing). Anything else is not a line of the
//! protocol, with the reason. See docs/events.md.

/// A line of the protocol.
#[derive(Debug, Clone, PartialEq)]
pub enum Line<'a> {
    /// Blank, or a comment (`#...`).
    Nothing,
    /// `sample SERIES VALUE UNIT`.
    Sample {
        series: &'a str,
        value: f64,
        unit: &'a str,
    },
    /// `span START END NAME [bytes=N] [DETAIL...]`.
    Span(Span<'a>),
}

/// Something the system did from `start` to `end` (ns after the Unix epoch).
#[derive(Debug, Clone, PartialEq)]
pub struct Span<'a> {
    pub start_unix_ns: i64,
    pub end_unix_ns: i64,
    pub name: &'a str,
    pub bytes: Option<u64>,
    /// The rest of the line, its words joined by single spaces.
    pub detail: String,
}

/// What a sample line is, said when a line is not one.
const SAMPLE_FORM: &str = "a sample is `sample SERIES VALUE UNIT`: a series name, a number and a one-word unit, none holding a comma or a quote";
/// What a span line is, said when a line is not one.
const SPAN_FORM: &str = "a span is `span START END NAME [bytes=N] [DETAIL...]`, START and END Unix times in seconds (as `date +%s.%N` prints them), END not before START";

/// Reads one line (its newline, if any, included or not).
pub fn parse(line: &str) -> Result<Line<'_>, &'static str> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(Line::Nothing);
    }
    let mut words = line.split_whitespace();
    match words.next() {
        Some("sample") => sample(words.collect()),
        Some("span") => span(words.collect()),
        _ => Err("neither `sample SERIES VALUE UNIT` nor `span START END NAME ...`"),
    }
}

/// A name storlab writes into `samples.csv` unquoted.
fn plain(word: &str) -> bool {
    !word.contains([',', '"'])
}

fn sample(words: Vec<&str>) -> Result<Line<'_>, &'static str> {
    let [series, value, unit] = words[..] else {
        return Err(SAMPLE_FORM);
    };
    let value: f64 = value.parse().map_err(|_| SAMPLE_FORM)?;
    if !value.is_finite() || !plain(series) || !plain(unit) {
        return Err(SAMPLE_FORM);
    }
    Ok(Line::Sample {
        series,
        value,
        unit,
    })
}

fn span(words: Vec<&str>) -> Result<Line<'_>, &'static str> {
    let [start, end, name, rest @ ..] = &words[..] else {
        return Err(SPAN_FORM);
    };
    let (Some(start_unix_ns), Some(end_unix_ns)) = (unix_ns(start), unix_ns(end)) else {
        return Err(SPAN_FORM);
    };
    if end_unix_ns < start_unix_ns {
        return Err(SPAN_FORM);
    }
    let (bytes, detail) = match rest.split_first() {
        Some((word, detail)) if word.starts_with("bytes=") => {
            let n = word["bytes=".len()..]
                .parse()
                .map_err(|_| "`bytes=N` in a span is a whole number of bytes")?;
            (Some(n), detail)
        }
        _ => (None, rest),
    };
    Ok(Line::Span(Span {
        start_unix_ns,
        end_unix_ns,
        name,
        bytes,
        detail: detail.join(" "),
    }))
}

/// `SECONDS[.FRACTION]` after the Unix epoch as ns (digits past the ninth are dropped).
fn unix_ns(text: &str) -> Option<i64> {
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: i64 = secs.parse().ok()?;
    let digits = &frac[..frac.len().min(9)];
    let ns = format!("{digits:0<9}").parse::<i64>().ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_read() {
        assert_eq!(
            parse("sample node1.cpu 0.231 cpus\n"),
            Ok(Line::Sample {
                series: "node1.cpu",
                value: 0.231,
                unit: "cpus"
            })
        );
        assert_eq!(
            parse("  sample node1.disk-write 1.25e7 bytes/s"),
            Ok(Line::Sample {
                series: "node1.disk-write",
                value: 1.25e7,
                unit: "bytes/s"
            })
        );
        assert!(matches!(parse("sample a -3 x"), Ok(Line::Sample { value, .. }) if value == -3.0));
    }

    #[test]
    fn blank_lines_and_comments_are_nothing() {
        for l in ["", "   \n", "# sample a 1 x", "  #note"] {
            assert_eq!(parse(l), Ok(Line::Nothing), "{l:?}");
        }
    }

    #[test]
    fn a_malformed_sample_is_refused_with_its_form() {
        for l in [
            "sample node1.cpu 0.2",
            "sample node1.cpu 0.2 cpus per node",
            "sample node1.cpu high cpus",
            "sample node1.cpu NaN cpus",
            "sample node1.cpu inf cpus",
            "sample node,1 0.2 cpus",
            "sample node1 0.2 \"cpus\"",
        ] {
            let e = parse(l).expect_err(l);
            assert!(e.contains("sample SERIES VALUE UNIT"), "{l}: {e}");
        }
        let e = parse("cpu=0.2").unwrap_err();
        assert!(e.contains("neither"), "{e}");
    }

    #[test]
    fn spans_are_read_with_their_bytes_and_detail() {
        let Ok(Line::Span(s)) =
            parse("span 1764540000.12 1764540009.80 move-tenant-2 node1->node4  switchover")
        else {
            panic!("a span")
        };
        assert_eq!(s.start_unix_ns, 1_764_540_000_120_000_000);
        assert_eq!(s.end_unix_ns, 1_764_540_009_800_000_000);
        assert_eq!(s.name, "move-tenant-2");
        assert_eq!(s.bytes, None);
        assert_eq!(s.detail, "node1->node4 switchover");
        let Ok(Line::Span(s)) = parse(
            "span 1764540000 1764540010.000000000999 resync-tenant-3 bytes=123456789 node2->node4 pg_basebackup",
        ) else {
            panic!("a span")
        };
        assert_eq!(s.end_unix_ns - s.start_unix_ns, 10_000_000_000);
        assert_eq!(s.bytes, Some(123_456_789));
        assert_eq!(s.detail, "node2->node4 pg_basebackup");
        let Ok(Line::Span(s)) = parse("span 5 5 instant") else {
            panic!("a span")
        };
        assert_eq!((s.detail.as_str(), s.bytes), ("", None));
    }

    #[test]
    fn a_malformed_span_is_refused_with_its_form() {
        for l in [
            "span 1764540000.12 move",
            "span 1764540009 1764540000 backwards",
            "span now later x",
            "span -1 2 x",
            "span 1.2.3 4 x",
            "span 1e9 2e9 x",
        ] {
            let e = parse(l).expect_err(l);
            assert!(e.contains("span START END NAME"), "{l}: {e}");
        }
        let e = parse("span 1 2 x bytes=lots").unwrap_err();
        assert!(e.contains("bytes=N"), "{e}");
    }
}
