//! Reading a run's `timeline.csv` back: one row per interval, target and operation kind, read
//! by column name so that files from older storlab versions (no `interval_s` column, warm-up
//! seconds written with 0 operations) and newer ones (warm-up seconds with their real
//! operations, the last interval divided by its real length) both read right. The rates of a
//! row come from its operations over its real length, never from a full interval assumed.

/// One interval of one target and operation kind.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    /// Interval index: negative during warm-up.
    pub second: i64,
    /// `phase` = `measure` (else warm-up).
    pub measured: bool,
    /// The interval's real length in seconds (`interval_s`), when the file says.
    pub interval_s: Option<f64>,
    pub target: String,
    pub op: String,
    pub ops: u64,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub errors: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub client_cpu_cores: f64,
    /// `errors` by kind name, when the file says (`error_kinds`; older files do not).
    pub error_kinds: Vec<(String, u64)>,
}

/// A parsed `timeline.csv`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub rows: Vec<TimelineRow>,
    /// The file has the `interval_s` column: its warm-up rows hold what the warm-up did and
    /// every row's length is stated. Older files have neither (their warm-up rows say 0
    /// operations although operations ran, and their last interval was divided by a full one).
    pub has_interval_lengths: bool,
}

/// One point of a target's timeline: all its operation kinds in one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelinePoint {
    /// Seconds from the start of measurement to the end of the interval (negative or 0 during
    /// warm-up).
    pub end_s: f64,
    /// The interval's real length in seconds.
    pub length_s: f64,
    pub ops: u64,
    /// Operations over the interval's real length.
    pub rate_ops: f64,
    pub warmup: bool,
}

/// Parses `timeline.csv` (rows that do not parse are skipped).
pub fn parse_timeline(text: &str) -> Timeline {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Timeline::default();
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let at = |name: &str| cols.iter().position(|c| *c == name);
    let idx = [
        "second",
        "phase",
        "target",
        "op",
        "ops",
        "rate_ops",
        "rate_bytes",
        "errors",
        "p50_ns",
        "p99_ns",
        "max_ns",
        "client_cpu_cores",
        "interval_s",
        "error_kinds",
    ]
    .map(at);
    let mut rows = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != cols.len() {
            continue;
        }
        let get = |i: usize| idx[i].and_then(|i| f.get(i)).copied().unwrap_or("");
        let num = |i: usize| get(i).parse::<f64>().ok();
        let int = |i: usize| get(i).parse::<u64>().ok();
        let Some(second) = get(0).parse::<i64>().ok() else {
            continue;
        };
        rows.push(TimelineRow {
            second,
            measured: get(1) == "measure",
            interval_s: num(12).filter(|s| *s > 0.0 && s.is_finite()),
            target: get(2).to_string(),
            op: get(3).to_string(),
            ops: int(4).unwrap_or(0),
            rate_ops: num(5).unwrap_or(0.0),
            rate_bytes: num(6).unwrap_or(0.0),
            errors: int(7).unwrap_or(0),
            p50_ns: int(8).unwrap_or(0),
            p99_ns: int(9).unwrap_or(0),
            max_ns: int(10).unwrap_or(0),
            client_cpu_cores: num(11).unwrap_or(0.0),
            error_kinds: get(13)
                .split(';')
                .filter_map(|kv| {
                    let (k, n) = kv.split_once(':')?;
                    Some((k.to_string(), n.parse().ok()?))
                })
                .collect(),
        });
    }
    Timeline {
        rows,
        has_interval_lengths: idx[12].is_some(),
    }
}

impl Timeline {
    /// One target's timeline, all kinds added per interval, in time order.
    ///
    /// `interval_s` is the run's nominal interval length and `measured_seconds` its measured
    /// time: for a file without `interval_s`, the last measured interval's real length is what
    /// remains of the measured time after the whole intervals before it. Warm-up intervals are
    /// returned (marked) only when the file recorded them; an older file's warm-up rows say 0
    /// operations whatever ran, so they are left out rather than drawn as a false zero.
    pub fn target_points(
        &self,
        target: &str,
        interval_s: f64,
        measured_seconds: f64,
    ) -> Vec<TimelinePoint> {
        let nominal = if interval_s > 0.0 { interval_s } else { 1.0 };
        let mut by_second: std::collections::BTreeMap<i64, (u64, Option<f64>, bool)> =
            std::collections::BTreeMap::new();
        for r in self.rows.iter().filter(|r| r.target == target) {
            if !r.measured && !self.has_interval_lengths {
                continue;
            }
            let e = by_second.entry(r.second).or_insert((0, None, !r.measured));
            e.0 = e.0.saturating_add(r.ops);
            if r.interval_s.is_some() {
                e.1 = r.interval_s;
            }
        }
        let last_measured = by_second
            .iter()
            .filter(|(_, v)| !v.2)
            .map(|(k, _)| *k)
            .max();
        by_second
            .into_iter()
            .map(|(second, (ops, stated, warmup))| {
                let length_s = match stated {
                    Some(l) => l,
                    None if Some(second) == last_measured => {
                        let rest = measured_seconds - second as f64 * nominal;
                        if rest > 0.0 && rest < nominal {
                            rest
                        } else {
                            nominal
                        }
                    }
                    None => nominal,
                };
                // Warm-up intervals end where the next begins; the last one ends at 0.
                let end_s = if warmup {
                    (second + 1) as f64 * nominal
                } else {
                    second as f64 * nominal + length_s
                };
                TimelinePoint {
                    end_s,
                    length_s,
                    ops,
                    rate_ops: ops as f64 / length_s,
                    warmup,
                }
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fixtures::{NEW_HEADER, new_style};

    const OLD_HEADER: &str = "second,phase,target,op,ops,rate_ops,bytes,rate_bytes,errors,p50_ns,p99_ns,max_ns,intended_p99_ns,intended_max_ns,client_cpu_cores";

    /// Two kinds of one interval whose operations add past u64 (a corrupt file:
    /// fuzz/corpus/timeline-csv/crash-ops-overflow.csv) saturate instead of overflowing (a panic in
    /// a debug build).
    #[test]
    fn operations_that_add_past_u64_saturate() {
        let text = format!(
            "{NEW_HEADER}\n0,measure,1.0,t,read,18446744073709551615,0,0,0,0,0,0,0,,,0\n0,measure,1.0,t,write,5,0,0,0,0,0,0,0,,,0\n"
        );
        let points = parse_timeline(&text).target_points("t", 1.0, 1.0);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].ops, u64::MAX);
    }

    #[test]
    fn old_column_set_parses() {
        let text = format!(
            "{OLD_HEADER}\n-1,warmup,a,read,10,10.0,40960,40960.0,0,5,9,12,,,0.5\n0,measure,a,read,20,20.0,81920,81920.0,1,6,10,15,,,0.25\nbad line\n"
        );
        let t = parse_timeline(&text);
        assert!(!t.has_interval_lengths);
        let rows = &t.rows;
        assert_eq!(rows.len(), 2);
        assert!(!rows[0].measured && rows[1].measured);
        assert_eq!((rows[1].second, rows[1].ops, rows[1].errors), (0, 20, 1));
        assert_eq!((rows[1].p99_ns, rows[1].max_ns), (10, 15));
        assert_eq!(rows[1].client_cpu_cores, 0.25);
        assert_eq!(rows[1].interval_s, None);
    }

    #[test]
    fn new_column_set_gives_warmup_and_the_real_last_interval() {
        let t = parse_timeline(&new_style());
        assert!(t.has_interval_lengths);
        let pts = t.target_points("a", 1.0, 2.25);
        let rates: Vec<(f64, f64, bool)> = pts
            .iter()
            .map(|p| (p.end_s, p.rate_ops, p.warmup))
            .collect();
        assert_eq!(
            rates,
            [
                (-1.0, 400.0, true),
                (0.0, 900.0, true),
                (1.0, 1000.0, false),
                (2.0, 1000.0, false),
                (2.25, 1000.0, false),
            ]
        );
    }

    #[test]
    fn old_files_leave_warmup_out_and_divide_the_last_interval_by_its_length() {
        let text = format!(
            "{OLD_HEADER}\n-1,warmup,a,read,0,0.0,0,0.0,0,0,0,0,,,0\n0,measure,a,read,1000,1000.0,0,0.0,0,1,2,3,,,0.1\n1,measure,a,read,500,500.0,0,0.0,0,1,2,3,,,0.1\n"
        );
        let pts = parse_timeline(&text).target_points("a", 1.0, 1.5);
        assert_eq!(
            pts.len(),
            2,
            "the unrecorded warm-up second is not drawn as 0"
        );
        assert_eq!((pts[1].end_s, pts[1].rate_ops), (1.5, 1000.0));
    }
}
