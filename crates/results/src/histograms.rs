//! Reading a run's latency histograms back from `histograms.hlog` (HDR interval log, one
//! interval per target, operation kind and second; tags `target.op` and `target.op.intended`)
//! and adding up its measured intervals, warm-up left out. Comparisons merge repetitions from
//! these by adding counts; a percentile is never averaged.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

use crate::timeline::TimelineRow;

/// Measured latency histograms of one run, by tag.
pub type Histograms = BTreeMap<String, Histogram<u64>>;

/// The tag the collector gives a target's kind in the interval log.
pub fn hlog_tag(target: &str, op: &str) -> String {
    format!("{}.{op}", target.replace([' ', ',', '='], "_"))
}

/// Adds up the measured intervals of an interval log, per tag.
pub fn sum_measured_intervals(log: &[u8], timeline: &[TimelineRow]) -> Result<Histograms, String> {
    let mut out: Histograms = BTreeMap::new();
    each_measured_interval(log, timeline, |tag, _, h| {
        add(&mut out, tag, &h).map_err(|e| format!("interval log: {e}"))
    })?;
    Ok(out)
}

/// Calls `f(tag, (start s, length s), histogram)` for each measured interval of the log.
///
/// Since the timeline has `interval_s`, the collector writes measured intervals only (the
/// warm-up's are on the timeline alone). Older files hold one interval per target, kind and
/// second in time order, warm-up seconds first, stamped at start time 0 like the first
/// measured second: there the number of warm-up rows of a target and kind (rows without
/// `interval_s`) is the number of leading intervals of its tags to skip.
/// One interval at a time, so that a reader of many intervals holds none it does not keep.
pub fn each_measured_interval(
    log: &[u8],
    timeline: &[TimelineRow],
    mut f: impl FnMut(&str, (f64, f64), Histogram<u64>) -> Result<(), String>,
) -> Result<(), String> {
    let mut warmup: BTreeMap<String, usize> = BTreeMap::new();
    for r in timeline
        .iter()
        .filter(|r| !r.measured && r.interval_s.is_none())
    {
        let tag = hlog_tag(&r.target, &r.op);
        *warmup.entry(tag.clone()).or_default() += 1;
        *warmup.entry(format!("{tag}.intended")).or_default() += 1;
    }
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(log) {
        let entry = entry.map_err(|e| format!("interval log: {e:?}"))?;
        let LogEntry::Interval(iv) = entry else {
            continue;
        };
        let tag = iv.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
        let n = seen.entry(tag.clone()).or_default();
        *n += 1;
        if *n <= warmup.get(&tag).copied().unwrap_or(0) {
            continue;
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(iv.encoded_histogram())
            .map_err(|e| format!("interval log: base64: {e}"))?;
        let h = decode_histogram(&raw, &mut de).map_err(|e| format!("interval log: {e}"))?;
        let span = (
            iv.start_timestamp().as_secs_f64(),
            iv.duration().as_secs_f64(),
        );
        f(&tag, span, h)?;
    }
    Ok(())
}

/// The V2 histogram encodings' first 4 bytes (hdrhistogram's serialization): plain, and
/// zlib-compressed (after the cookie, the compressed length, then the plain encoding deflated).
const V2_COOKIE: [u8; 4] = 0x1c84_9313_u32.to_be_bytes();
const V2_COMPRESSED_COOKIE: [u8; 4] = 0x1c84_9314_u32.to_be_bytes();
/// The plain encoding's header: cookie, payload length, offset, digits, low, high, ratio.
const V2_HEADER_BYTES: usize = 40;
/// The most bytes one histogram may inflate to (storlab's take a few KiB).
const MAX_HISTOGRAM_BYTES: u64 = 64 << 20;

/// One interval's histogram from its encoding. The encoding's payload length is checked
/// against the bytes it holds first: the deserializer allocates (and zeroes) what the header
/// says, so a corrupt length of up to 4 GiB ran a report out of memory.
fn decode_histogram(raw: &[u8], de: &mut Deserializer) -> Result<Histogram<u64>, String> {
    use std::io::Read;
    let plain = match raw.get(..4) {
        Some(c) if c == V2_COMPRESSED_COOKIE => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(raw.get(8..).unwrap_or_default())
                .take(MAX_HISTOGRAM_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("histogram: inflating: {e}"))?;
            if out.len() as u64 > MAX_HISTOGRAM_BYTES {
                return Err(format!(
                    "histogram: inflates to over {MAX_HISTOGRAM_BYTES} bytes"
                ));
            }
            out
        }
        _ => raw.to_vec(),
    };
    if plain.get(..4) == Some(&V2_COOKIE[..])
        && let Some(len) = plain.get(4..8)
    {
        let declared = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let held = plain.len().saturating_sub(V2_HEADER_BYTES);
        if declared > held {
            return Err(format!(
                "histogram: its header says {declared} bytes of counts, it holds {held}"
            ));
        }
    }
    de.deserialize(&mut std::io::Cursor::new(plain))
        .map_err(|e| format!("histogram: {e:?}"))
}

/// Adds `h` into `sums[tag]` (counts added, never percentiles averaged).
pub fn add(sums: &mut Histograms, tag: &str, h: &Histogram<u64>) -> Result<(), String> {
    match sums.get_mut(tag) {
        Some(sum) => sum.add(h).map_err(|e| format!("adding `{tag}`: {e:?}")),
        None => {
            sums.insert(tag.to_string(), h.clone());
            Ok(())
        }
    }
}

/// [`each_measured_interval`] of `histograms.hlog` of a run folder; the error names the file.
pub fn read_each_measured_interval(
    folder: &Path,
    timeline: &[TimelineRow],
    f: impl FnMut(&str, (f64, f64), Histogram<u64>) -> Result<(), String>,
) -> Result<(), String> {
    let path = folder.join("histograms.hlog");
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    each_measured_interval(&bytes, timeline, f).map_err(|e| format!("{}: {e}", path.display()))
}

/// Reads `histograms.hlog` of a run folder and adds up its measured intervals; the error
/// names the file.
pub fn read_measured(folder: &Path, timeline: &[TimelineRow]) -> Result<Histograms, String> {
    let path = folder.join("histograms.hlog");
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    sum_measured_intervals(&bytes, timeline).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    use std::time::Duration;

    /// (value, count) pairs recorded into one interval.
    pub(crate) type Values<'a> = &'a [(u64, u64)];

    /// An interval log with one interval per (second, tag, values), as the collector writes
    /// it (warm-up stamped at 0 too).
    pub(crate) fn log_of(intervals: &[(i64, &str, Values)]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        let builder = &mut IntervalLogWriterBuilder::new();
        let mut log = builder.begin_log_with(&mut buf, &mut ser).expect("log");
        for (second, tag, values) in intervals {
            let mut h = storlab_record::new_histogram::<u64>();
            for (v, n) in *values {
                h.record_n(*v, *n).expect("record");
            }
            let start = Duration::from_secs((*second).max(0) as u64);
            log.write_histogram(&h, start, Duration::from_secs(1), Tag::new(tag))
                .expect("write");
        }
        drop(log);
        buf
    }

    fn row(second: i64, target: &str, op: &str) -> TimelineRow {
        TimelineRow {
            second,
            measured: second >= 0,
            interval_s: None,
            target: target.into(),
            op: op.into(),
            ops: 10,
            rate_ops: 10.0,
            rate_bytes: 0.0,
            errors: 0,
            p50_ns: 0,
            p99_ns: 0,
            max_ns: 0,
            client_cpu_cores: 0.0,
            error_kinds: Vec::new(),
        }
    }

    /// A histogram whose header claims far more counts than it holds (the fuzz target's
    /// out-of-memory input: fuzz/corpus/interval-log/crash-oom-payload-length.hlog) is refused
    /// before hdrhistogram allocates the length it claims.
    #[test]
    fn a_histogram_longer_than_its_bytes_is_refused_before_allocating() {
        let log = include_bytes!("../../../fuzz/corpus/interval-log/crash-oom-payload-length.hlog");
        let e = sum_measured_intervals(log, &[]).unwrap_err();
        assert!(e.contains("inflating: corrupt deflate stream"), "{e}");
        // A plain (uncompressed) encoding that claims 4 GiB of counts.
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(1000).unwrap();
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        plain[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let mut de = Deserializer::new();
        let e = decode_histogram(&plain, &mut de).unwrap_err();
        assert!(e.contains("its header says 4294967295 bytes"), "{e}");
    }

    #[test]
    fn warmup_intervals_are_left_out_of_the_sum() {
        let seconds = [-2i64, -1, 0, 1, 2];
        let intervals: Vec<(i64, &str, Values)> = seconds
            .iter()
            .map(|&s| {
                let v: Values = if s < 0 {
                    &[(1_000_000, 10)]
                } else {
                    &[(2_000_000, 10)]
                };
                (s, "a_b.read", v)
            })
            .collect();
        let buf = log_of(&intervals);
        let timeline: Vec<TimelineRow> = seconds.iter().map(|&s| row(s, "a b", "read")).collect();
        let sums = sum_measured_intervals(&buf, &timeline).unwrap();
        let h = &sums["a_b.read"];
        assert_eq!(h.len(), 30);
        assert!(
            h.min() >= 1_990_000,
            "a warm-up value was counted: {}",
            h.min()
        );
    }

    /// Files with `interval_s` hold no warm-up interval in the log: nothing is skipped.
    #[test]
    fn new_files_skip_no_measured_interval() {
        let seconds = [0i64, 1, 2];
        type Interval<'a> = (i64, &'a str, &'a [(u64, u64)]);
        let intervals: Vec<Interval> = seconds
            .iter()
            .map(|&s| {
                let v: &[(u64, u64)] = &[(2_000_000, 10)];
                (s, "a_b.read", v)
            })
            .collect();
        let buf = log_of(&intervals);
        let mut timeline: Vec<TimelineRow> = [-2i64, -1, 0, 1, 2]
            .iter()
            .map(|&s| row(s, "a b", "read"))
            .collect();
        for r in &mut timeline {
            r.interval_s = Some(1.0);
        }
        let sums = sum_measured_intervals(&buf, &timeline).unwrap();
        assert_eq!(sums["a_b.read"].len(), 30);
    }
}
