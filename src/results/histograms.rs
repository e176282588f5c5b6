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

use crate::results::timeline::TimelineRow;

/// Measured latency histograms of one run, by tag.
pub type Histograms = BTreeMap<String, Histogram<u64>>;

/// The tag the collector gives a target's kind in the interval log.
pub fn hlog_tag(target: &str, op: &str) -> String {
    format!("{}.{op}", target.replace([' ', ',', '='], "_"))
}

/// Adds up the measured intervals of an interval log, per tag.
///
/// Since the timeline has `interval_s`, the collector writes measured intervals only (the
/// warm-up's are on the timeline alone). Older files hold one interval per target, kind and
/// second in time order, warm-up seconds first, stamped at start time 0 like the first
/// measured second: there the number of warm-up rows of a target and kind (rows without
/// `interval_s`) is the number of leading intervals of its tags to skip.
pub fn sum_measured_intervals(log: &[u8], timeline: &[TimelineRow]) -> Result<Histograms, String> {
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
    let mut out: Histograms = BTreeMap::new();
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
        let h: Histogram<u64> = de
            .deserialize(&mut std::io::Cursor::new(raw))
            .map_err(|e| format!("interval log: histogram: {e:?}"))?;
        add(&mut out, &tag, &h).map_err(|e| format!("interval log: {e}"))?;
    }
    Ok(out)
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
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
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
            let mut h = crate::record::new_histogram::<u64>();
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
