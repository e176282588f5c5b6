//! How sure a figure is: a confidence interval on each figure of a point (ops/s, mean and
//! percentile latencies), and on the ratio of two points' figures, with a verdict.
//!
//! The method, the same for every figure (docs/metrics.md, "How sure a figure is"):
//!
//! - **Groups.** A point with two repetitions or more is split into its repetitions; a point
//!   measured once into [`BATCHES`] consecutive batches of its measured intervals (batch
//!   means: neighbouring intervals are correlated, batches a tenth of a run long much less).
//!   Each group keeps its measured time and its latency histogram, as (value, count) pairs.
//! - **Spread.** ops/s and the mean: a delete-one-group jackknife, the figure of all groups
//!   but one for each group (ops/s all their operations over all their time). Percentiles:
//!   sectioning (Asmussen and Glynn; Nakayama), the spread of each group's own percentile
//!   over the square root of their number; the value itself stays the percentile of all the
//!   groups' histograms ADDED (a percentile is never averaged). The jackknife of a percentile
//!   is unreliable, the more so on a histogram's buckets: a group left out often leaves it
//!   in the same bucket. A percentile's error is the larger of that and Woodruff's (the
//!   spread of the share of each group's operations below the pooled percentile, mapped back
//!   through the pooled histogram): where runs fall at one of two levels, the pooled
//!   percentile jumps with their mix, which only the second sees. Either gives the standard
//!   error of the figure's logarithm, with `groups - 1` degrees of freedom; a percentile's is
//!   never below its resolution: its bucket's width, and the clock's step (the run's
//!   `clock-step-ns`), to which a latency a few steps long is known.
//! - **Intervals.** value x exp(+-t se), t from Student's distribution: honest with 3 or 5
//!   repetitions, where a bootstrap over so few groups is too narrow. No random draw: the same
//!   results give the same interval every time.
//! - **Ratios.** B/A, its log's error the two sides' combined and Welch's degrees of freedom:
//!   the interval of the ratio; B is better or worse than A when the interval excludes 1, else
//!   there is no difference beyond the noise.
//!
//! Batches only see the noise within one run: what differs from one run to the next (a CPU's
//! clock, a cache, a file's placement) is not in them. [`GroupsFrom`] says which, and reports
//! say it beside the interval.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Batches a single run's measured intervals are split into.
pub const BATCHES: usize = 10;

/// The relative width of a histogram bucket at storlab's precision (3 significant digits: at
/// most 1 in 1024): a percentile cannot be known better than that.
const BUCKET_RELATIVE_WIDTH: f64 = 1.0 / 1024.0;

/// A latency histogram as the (value, count) pairs of its recorded buckets, ascending by
/// value; each value is its bucket's highest equivalent, as hdrhistogram reports percentiles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sparse {
    pub counts: Vec<(u64, u64)>,
}

impl Sparse {
    pub fn of(h: &Histogram<u64>) -> Sparse {
        Sparse {
            counts: h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        }
    }

    /// Adds `other`'s counts (a merge of two ascending lists).
    pub fn add(&mut self, other: &Sparse) {
        if other.counts.is_empty() {
            return;
        }
        let (a, b) = (&self.counts, &other.counts);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => {
                    out.push(a[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    out.push(b[j]);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    out.push((a[i].0, a[i].1 + b[j].1));
                    i += 1;
                    j += 1;
                }
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        self.counts = out;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.1).sum()
    }
}

/// One group of a point: a repetition, or a batch of one run's intervals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Group {
    pub seconds: f64,
    /// Service latency of every operation measured in it (its count is the operations).
    pub latency: Sparse,
    /// The step of the clock that timed them, ns, the largest of its runs' (0: not known).
    pub clock_step_ns: u64,
}

impl Group {
    pub fn add(&mut self, other: &Group) {
        self.seconds += other.seconds;
        self.latency.add(&other.latency);
        self.clock_step_ns = self.clock_step_ns.max(other.clock_step_ns);
    }
}

/// One run's measured intervals in [`BATCHES`] consecutive batches, per tag (`target.op`;
/// the intended-start tags left out): an interval's batch is where its start falls in the
/// run's measured time.
pub type Batches = std::collections::BTreeMap<String, Vec<Group>>;

/// Puts a run's intervals into their batches, one at a time.
pub struct Batcher {
    measured_seconds: f64,
    clock_step_ns: u64,
    /// Per tag: the first interval's start, and the batches so far.
    tags: std::collections::BTreeMap<String, (f64, Vec<Group>)>,
}

impl Batcher {
    /// For a run measured over `measured_seconds` with a clock of `clock_step_ns` (0: not
    /// known).
    pub fn new(measured_seconds: f64, clock_step_ns: u64) -> Batcher {
        Batcher {
            measured_seconds,
            clock_step_ns,
            tags: Default::default(),
        }
    }

    /// Adds the interval of `tag` that starts at `span.0` s and lasts `span.1` s.
    pub fn add(&mut self, tag: &str, span: (f64, f64), h: &Histogram<u64>) {
        if tag.ends_with(".intended") || self.measured_seconds <= 0.0 {
            return;
        }
        let (first, batches) = self
            .tags
            .entry(tag.to_string())
            .or_insert_with(|| (span.0, vec![Group::default(); BATCHES]));
        let at = ((span.0 - *first) / self.measured_seconds * BATCHES as f64).floor();
        let i = (at.max(0.0) as usize).min(BATCHES - 1);
        batches[i].add(&Group {
            seconds: span.1,
            latency: Sparse::of(h),
            clock_step_ns: self.clock_step_ns,
        });
    }

    pub fn finish(self) -> Batches {
        self.tags.into_iter().map(|(t, (_, b))| (t, b)).collect()
    }
}

/// What a point's groups are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupsFrom {
    /// Its repetitions: the noise from one run to the next included.
    Repetitions,
    /// Batches of one run's intervals: the noise within that run only.
    Batches,
}

impl GroupsFrom {
    /// For a report: `from 5 repetitions`, `from 10 batches of one run`.
    pub fn describe(self, groups: usize) -> String {
        match self {
            GroupsFrom::Repetitions => format!("from {groups} repetitions"),
            GroupsFrom::Batches => {
                format!("from {groups} batches of one run: within-run noise only")
            }
        }
    }
}

/// The figures that carry an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    RateOps,
    MeanLatency,
    P50Latency,
    P99Latency,
    P999Latency,
}

impl Figure {
    pub const ALL: [Figure; 5] = [
        Figure::RateOps,
        Figure::MeanLatency,
        Figure::P50Latency,
        Figure::P99Latency,
        Figure::P999Latency,
    ];

    /// As the comparison tables name it.
    pub fn name(self) -> &'static str {
        match self {
            Figure::RateOps => "ops/s",
            Figure::MeanLatency => "mean",
            Figure::P50Latency => "p50",
            Figure::P99Latency => "p99",
            Figure::P999Latency => "p99.9",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Figure::RateOps
    }

    fn percentile(self) -> Option<f64> {
        match self {
            Figure::P50Latency => Some(50.0),
            Figure::P99Latency => Some(99.0),
            Figure::P999Latency => Some(99.9),
            Figure::RateOps | Figure::MeanLatency => None,
        }
    }
}

/// One figure's spread: the standard error of its logarithm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FigureSpread {
    pub figure: Figure,
    pub log_standard_error: f64,
}

/// How sure a point's figures are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Uncertainty {
    pub from: GroupsFrom,
    pub groups: usize,
    /// The figures whose spread could be measured (a figure that is 0 without some group has
    /// none).
    pub figures: Vec<FigureSpread>,
}

/// A figure's value with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Interval {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

impl Uncertainty {
    /// The spread of each figure from `groups` (two or more with operations), or None.
    pub fn of_groups(from: GroupsFrom, groups: &[Group]) -> Option<Uncertainty> {
        let groups: Vec<&Group> = groups
            .iter()
            .filter(|g| g.seconds > 0.0 && g.latency.total() > 0)
            .collect();
        if groups.len() < 2 {
            return None;
        }
        let pool = Pool::of(&groups);
        let figures = Figure::ALL
            .into_iter()
            .filter_map(|figure| {
                let se = match figure.percentile() {
                    None => {
                        let without: Vec<f64> = (0..groups.len())
                            .map(|i| pool.figure_without(i, figure))
                            .collect::<Option<_>>()?;
                        jackknife_log_se(&without)?
                    }
                    Some(p) => pool
                        .sectioning_log_se(p)?
                        .max(pool.woodruff_log_se(p)?)
                        .max(pool.resolution_log_se(p)),
                };
                Some(FigureSpread {
                    figure,
                    log_standard_error: se,
                })
            })
            .collect();
        Some(Uncertainty {
            from,
            groups: groups.len(),
            figures,
        })
    }

    pub fn spread(&self, figure: Figure) -> Option<f64> {
        self.figures
            .iter()
            .find(|f| f.figure == figure)
            .map(|f| f.log_standard_error)
    }

    fn degrees_of_freedom(&self) -> f64 {
        (self.groups - 1) as f64
    }

    /// `value`'s interval at `confidence` (0.95 for 95%).
    pub fn interval(&self, figure: Figure, value: f64, confidence: f64) -> Option<Interval> {
        let se = self.spread(figure)?;
        let t = t_quantile(confidence, self.degrees_of_freedom())?;
        Some(Interval {
            value,
            low: value * (-t * se).exp(),
            high: value * (t * se).exp(),
        })
    }
}

/// What a comparison of B with A says of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// B is better than A beyond the noise (more ops/s, lower latency).
    Better,
    /// B is worse than A beyond the noise.
    Worse,
    /// The interval of the ratio holds 1.
    NoDifference,
}

impl Verdict {
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifference => "no difference beyond the noise",
        }
    }
}

/// B/A of one figure with its interval and the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RatioVerdict {
    pub figure: Figure,
    pub ratio: Interval,
    pub verdict: Verdict,
}

/// The figure's value from each side, with each side's spread.
pub struct Sides<'a> {
    pub a_value: f64,
    pub a: &'a Uncertainty,
    pub b_value: f64,
    pub b: &'a Uncertainty,
}

impl Sides<'_> {
    /// B/A with its interval at `confidence`, and the verdict; None where a side lacks the
    /// figure's spread or a value is not positive.
    pub fn ratio(&self, figure: Figure, confidence: f64) -> Option<RatioVerdict> {
        if self.a_value <= 0.0 || self.b_value <= 0.0 {
            return None;
        }
        let (sa, sb) = (self.a.spread(figure)?, self.b.spread(figure)?);
        let (va, vb) = (sa * sa, sb * sb);
        let se = (va + vb).sqrt();
        let (da, db) = (self.a.degrees_of_freedom(), self.b.degrees_of_freedom());
        // Welch-Satterthwaite; with no spread at all on both sides, the smaller count.
        let df = if va + vb > 0.0 {
            (va + vb).powi(2) / (va * va / da + vb * vb / db)
        } else {
            da.min(db)
        };
        let t = t_quantile(confidence, df)?;
        let ratio = self.b_value / self.a_value;
        let interval = Interval {
            value: ratio,
            low: ratio * (-t * se).exp(),
            high: ratio * (t * se).exp(),
        };
        let up = figure.higher_is_better();
        let verdict = if interval.low > 1.0 {
            if up { Verdict::Better } else { Verdict::Worse }
        } else if interval.high < 1.0 {
            if up { Verdict::Worse } else { Verdict::Better }
        } else {
            Verdict::NoDifference
        };
        Some(RatioVerdict {
            figure,
            ratio: interval,
            verdict,
        })
    }
}

/// Student's t quantile for a two-sided interval at `confidence`.
pub fn t_quantile(confidence: f64, degrees_of_freedom: f64) -> Option<f64> {
    if !(0.0..1.0).contains(&confidence) || degrees_of_freedom.is_nan() || degrees_of_freedom <= 0.0
    {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, degrees_of_freedom).ok()?;
    Some(t.inverse_cdf(0.5 + confidence / 2.0))
}

/// The delete-one jackknife's standard error of log(figure), from the figure without each
/// group; None when one is not positive.
fn jackknife_log_se(without: &[f64]) -> Option<f64> {
    if without.iter().any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let logs: Vec<f64> = without.iter().map(|v| v.ln()).collect();
    let k = logs.len() as f64;
    let (_, sd) = mean_and_sd(&logs);
    // (k - 1)/k times the sum of squares, which is (k - 1) sd^2.
    Some((k - 1.0) / k.sqrt() * sd)
}

/// The mean and the sample standard deviation (n - 1) of two values or more.
pub fn mean_and_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (mean, sd)
}

/// Every group's latency counts over the values any group recorded, and their sums.
struct Pool<'a> {
    groups: &'a [&'a Group],
    values: Vec<u64>,
    /// Per group: (index into `values`, count).
    indexed: Vec<Vec<(usize, u64)>>,
    total: Vec<u64>,
    seconds: f64,
    /// The largest clock step of the groups, ns.
    clock_step_ns: u64,
}

impl<'a> Pool<'a> {
    fn of(groups: &'a [&'a Group]) -> Pool<'a> {
        let mut values: Vec<u64> = groups
            .iter()
            .flat_map(|g| g.latency.counts.iter().map(|c| c.0))
            .collect();
        values.sort_unstable();
        values.dedup();
        let mut total = vec![0u64; values.len()];
        let indexed = groups
            .iter()
            .map(|g| {
                g.latency
                    .counts
                    .iter()
                    .map(|&(v, n)| {
                        let i = values.partition_point(|&x| x < v);
                        total[i] += n;
                        (i, n)
                    })
                    .collect()
            })
            .collect();
        Pool {
            groups,
            values,
            indexed,
            total,
            seconds: groups.iter().map(|g| g.seconds).sum(),
            clock_step_ns: groups.iter().map(|g| g.clock_step_ns).max().unwrap_or(0),
        }
    }

    /// The least error of a percentile, from how finely its value was measured: its bucket
    /// (1 ns below 2,048 ns, 1 part in 1,024 above) read as a rounding, uniform over the
    /// bucket (sd width/sqrt 12); and the clock's step, each latency being the difference of
    /// two readings rounded to it (the difference of two uniform roundings: sd step/sqrt 6).
    /// Where latencies are a few steps long, they fall on levels a step apart and a
    /// percentile near the edge of one moves a whole step with a tiny change in the mix of
    /// operations, which neither the groups' own percentiles nor their shares may show.
    fn resolution_log_se(&self, percentile: f64) -> f64 {
        let pooled = (value_at_percentile(&self.total, &self.values, percentile) as f64).max(1.0);
        let bucket = BUCKET_RELATIVE_WIDTH.max(1.0 / pooled) / 12f64.sqrt();
        let step = self.clock_step_ns as f64 / pooled / 6f64.sqrt();
        bucket.max(step)
    }

    /// A percentile's error by sectioning: the spread of each group's own percentile (from
    /// its own histogram) over the square root of their number. The jackknife of a
    /// percentile is unreliable (a group left out often leaves it in the same bucket).
    fn sectioning_log_se(&self, percentile: f64) -> Option<f64> {
        let logs: Vec<f64> = self
            .indexed
            .iter()
            .map(|g| {
                let mut counts = vec![0u64; self.values.len()];
                for &(i, n) in g {
                    counts[i] += n;
                }
                value_at_percentile(&counts, &self.values, percentile) as f64
            })
            .map(|v| (v > 0.0).then(|| v.ln()))
            .collect::<Option<_>>()?;
        let k = logs.len() as f64;
        let (_, sd) = mean_and_sd(&logs);
        Some(sd / k.sqrt())
    }

    /// A percentile's error by Woodruff's method: the spread of the share of each group's
    /// operations at or below the pooled percentile's value (sectioning of a proportion, sd
    /// over the square root of the groups), mapped back through the pooled histogram as half
    /// the log distance between its values at the percentile's level less and more that
    /// error. Where the pooled histogram is thin around the percentile (between two modes, as
    /// when runs fall at one of two levels), a small change in the groups' mix moves the
    /// percentile far; this says so, where the groups' own percentiles do not.
    fn woodruff_log_se(&self, percentile: f64) -> Option<f64> {
        let pooled = value_at_percentile(&self.total, &self.values, percentile);
        let at = self.values.partition_point(|&v| v <= pooled);
        let shares: Vec<f64> = self
            .indexed
            .iter()
            .map(|g| {
                let (below, all) = g.iter().fold((0u64, 0u64), |(b, a), &(i, n)| {
                    (b + if i < at { n } else { 0 }, a + n)
                });
                below as f64 / all as f64
            })
            .collect();
        let (_, sd) = mean_and_sd(&shares);
        let error = 100.0 * sd / (shares.len() as f64).sqrt();
        let value = |p: f64| value_at_percentile(&self.total, &self.values, p).max(1) as f64;
        let (low, high) = (
            value((percentile - error).max(0.0)),
            value((percentile + error).min(100.0)),
        );
        Some((high.ln() - low.ln()) / 2.0)
    }

    /// The figure of every group but `left_out`.
    fn figure_without(&self, left_out: usize, figure: Figure) -> Option<f64> {
        let mut counts = self.total.clone();
        for &(i, n) in &self.indexed[left_out] {
            counts[i] -= n;
        }
        let ops: u64 = counts.iter().sum();
        let seconds = self.seconds - self.groups[left_out].seconds;
        if ops == 0 || seconds <= 0.0 {
            return None;
        }
        Some(match figure {
            Figure::RateOps => ops as f64 / seconds,
            Figure::MeanLatency => {
                let sum: f64 = counts
                    .iter()
                    .zip(&self.values)
                    .map(|(n, v)| *n as f64 * *v as f64)
                    .sum();
                sum / ops as f64
            }
            _ => value_at_percentile(&counts, &self.values, figure.percentile()?) as f64,
        })
    }
}

/// hdrhistogram's `value_at_percentile` over counts of ascending bucket values: the first
/// value whose cumulative count reaches ceil(percentile/100 x total).
fn value_at_percentile(counts: &[u64], values: &[u64], percentile: f64) -> u64 {
    let total: u64 = counts.iter().sum();
    let quantile = (percentile / 100.0).min(1.0);
    let rank = ((quantile * total as f64).ceil() as u64).max(1);
    let mut seen = 0u64;
    for (n, v) in counts.iter().zip(values) {
        seen += n;
        if seen >= rank {
            return *v;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = storlab_record::new_histogram::<u64>();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    fn group(seconds: f64, values: &[(u64, u64)]) -> Group {
        Group {
            seconds,
            latency: Sparse::of(&histogram(values)),
            clock_step_ns: 0,
        }
    }

    /// The percentile over sparse counts is hdrhistogram's own, value for value.
    #[test]
    fn percentiles_of_sparse_counts_are_hdrhistograms() {
        let h = histogram(&[(1_000, 500), (12_345, 480), (99_999, 19), (5_000_000, 1)]);
        let s = Sparse::of(&h);
        let (values, counts): (Vec<u64>, Vec<u64>) = s.counts.iter().copied().unzip();
        for p in [0.1, 50.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.99, 100.0] {
            assert_eq!(
                value_at_percentile(&counts, &values, p),
                h.value_at_percentile(p),
                "p{p}"
            );
        }
        let mut merged = s.clone();
        merged.add(&Sparse::of(&histogram(&[(12_345, 20), (7, 3)])));
        let dense = {
            let mut d = h.clone();
            d.add(histogram(&[(12_345, 20), (7, 3)])).unwrap();
            d
        };
        assert_eq!(
            merged,
            Sparse::of(&dense),
            "adding sparse = adding histograms"
        );
    }

    /// Groups with the same figures have no spread (a percentile keeps its bucket's width);
    /// groups that differ have, and a ratio between such points says so.
    #[test]
    fn the_spread_follows_the_groups_and_the_verdict_the_ratio() {
        let same: Vec<Group> = (0..5).map(|_| group(1.0, &[(100_000, 1000)])).collect();
        let u = Uncertainty::of_groups(GroupsFrom::Repetitions, &same).unwrap();
        assert_eq!(u.groups, 5);
        assert_eq!(u.spread(Figure::RateOps), Some(0.0));
        let p99 = u.spread(Figure::P99Latency).unwrap();
        assert!(p99 > 0.0 && p99 < 0.001, "{p99}");
        let noisy: Vec<Group> = [950, 1000, 1050, 980, 1020]
            .iter()
            .map(|&n| group(1.0, &[(100_000, n)]))
            .collect();
        let a = Uncertainty::of_groups(GroupsFrom::Repetitions, &noisy).unwrap();
        let se = a.spread(Figure::RateOps).unwrap();
        // The rates' own spread: sd ~ 39.5 ops/s over 5 groups, relative to 1000.
        assert!((se - 0.0177).abs() < 0.002, "{se}");
        let interval = a.interval(Figure::RateOps, 1000.0, 0.95).unwrap();
        assert!(
            interval.low < 960.0 && interval.high > 1040.0,
            "{interval:?}"
        );
        // 10% more ops/s than A's noise allows: better; 1% more: no difference.
        let sides = |b_value| Sides {
            a_value: 1000.0,
            a: &a,
            b_value,
            b: &a,
        };
        let r = sides(1100.0).ratio(Figure::RateOps, 0.95).unwrap();
        assert_eq!(r.verdict, Verdict::Better);
        assert!(r.ratio.low > 1.0 && r.ratio.high > 1.1, "{r:?}");
        let r = sides(1010.0).ratio(Figure::RateOps, 0.95).unwrap();
        assert_eq!(r.verdict, Verdict::NoDifference);
        // Latency: higher is worse.
        let r = sides(1100.0).ratio(Figure::MeanLatency, 0.95).unwrap();
        assert_eq!(r.verdict, Verdict::Worse);
    }

    /// A percentile's error is the spread of the groups' own percentiles over the square root
    /// of their number (sectioning), its value the pooled histogram's.
    #[test]
    fn a_percentiles_error_comes_from_each_groups_own_percentile() {
        let tails = [100_000u64, 110_000, 90_000, 105_000];
        let groups: Vec<Group> = tails
            .iter()
            .map(|&t| group(1.0, &[(10_000, 990), (t, 10)]))
            .collect();
        let u = Uncertainty::of_groups(GroupsFrom::Repetitions, &groups).unwrap();
        let logs: Vec<f64> = groups
            .iter()
            .map(|g| {
                let (values, counts): (Vec<u64>, Vec<u64>) =
                    g.latency.counts.iter().copied().unzip();
                (value_at_percentile(&counts, &values, 99.9) as f64).ln()
            })
            .collect();
        let mean = logs.iter().sum::<f64>() / 4.0;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
        let se = u.spread(Figure::P999Latency).unwrap();
        assert!((se - sd / 2.0).abs() < 1e-12, "{se} vs {}", sd / 2.0);
        assert!(se > 0.03, "{se}");
    }

    /// Runs that fall at one of two levels: 3 of 10 with their p99 at 250 us, 7 at 181 us.
    /// The pooled p99 sits at 181 us with the 250 us mode just past it, so one run more at
    /// the higher level moves it 38%. The groups' own p99s give an error of 0.049; Woodruff's
    /// sees the thin pooled histogram between the modes and gives half the log distance
    /// between them, 0.16, and the larger is the figure's.
    #[test]
    fn a_percentile_between_two_modes_is_as_unsure_as_the_jump() {
        let low = [(10_000, 9_850), (181_000, 100), (250_000, 50)];
        let high = [(10_000, 9_700), (181_000, 100), (250_000, 200)];
        let groups: Vec<Group> = (0..10)
            .map(|i| group(1.0, if i < 3 { &high } else { &low }))
            .collect();
        let refs: Vec<&Group> = groups.iter().collect();
        let pool = Pool::of(&refs);
        let sectioning = pool.sectioning_log_se(99.0).unwrap();
        let woodruff = pool.woodruff_log_se(99.0).unwrap();
        assert!((sectioning - 0.049).abs() < 0.002, "{sectioning}");
        let jump = ((250_000f64).ln() - (181_000f64).ln()) / 2.0;
        assert!((woodruff - jump).abs() < 0.01, "{woodruff} vs {jump}");
        let u = Uncertainty::of_groups(GroupsFrom::Repetitions, &groups).unwrap();
        assert_eq!(u.spread(Figure::P99Latency), Some(woodruff));
    }

    /// Latencies a few clock steps long fall on levels a step apart (this machine's clock
    /// moves every 10 ns). Two sides whose groups all have their p99 at 40 ns, and at 50 ns,
    /// differ only in a hundredth of a percent of operations at 40 ns. Without the clock's
    /// step, neither side has any spread and the 25% jump is a verdict; with it, each p99 is
    /// known to a step, and it is no difference beyond the noise, at 95% as at 99%.
    #[test]
    fn a_percentile_a_few_clock_steps_long_is_known_to_a_step() {
        let side = |at_40: u64, clock_step_ns: u64| -> Uncertainty {
            let groups: Vec<Group> = (0..10)
                .map(|_| Group {
                    clock_step_ns,
                    ..group(1.0, &[(31, 9_000), (40, at_40), (50, 1_000 - at_40)])
                })
                .collect();
            Uncertainty::of_groups(GroupsFrom::Repetitions, &groups).unwrap()
        };
        let verdict = |clock_step_ns: u64, confidence: f64| {
            let (a, b) = (side(901, clock_step_ns), side(899, clock_step_ns));
            let sides = Sides {
                a_value: 40.0,
                a: &a,
                b_value: 50.0,
                b: &b,
            };
            sides.ratio(Figure::P99Latency, confidence).unwrap().verdict
        };
        assert_eq!(verdict(0, 0.99), Verdict::Worse);
        assert_eq!(verdict(10, 0.99), Verdict::NoDifference);
        assert_eq!(verdict(10, 0.95), Verdict::NoDifference);
        // A step each way, as the difference of two readings: 10 / 40 / sqrt 6.
        let se = side(901, 10).spread(Figure::P99Latency).unwrap();
        assert!((se - 10.0 / 40.0 / 6f64.sqrt()).abs() < 1e-12, "{se}");
        // Far above the step, it is the bucket's width that bounds a percentile.
        let slow = [
            group(1.0, &[(1_000_000, 10)]),
            group(1.0, &[(1_000_000, 10)]),
        ];
        let slow = Uncertainty::of_groups(GroupsFrom::Repetitions, &slow).unwrap();
        let se = slow.spread(Figure::P99Latency).unwrap();
        assert!(
            (se - BUCKET_RELATIVE_WIDTH / 12f64.sqrt()).abs() < 1e-12,
            "{se}"
        );
    }

    /// One group, or groups without operations, have no interval.
    #[test]
    fn fewer_than_two_groups_have_no_interval() {
        assert!(Uncertainty::of_groups(GroupsFrom::Batches, &[group(1.0, &[(5, 5)])]).is_none());
        let empty = [group(1.0, &[(5, 5)]), Group::default()];
        assert!(Uncertainty::of_groups(GroupsFrom::Batches, &empty).is_none());
    }

    #[test]
    fn t_quantiles_are_students() {
        assert!((t_quantile(0.95, 4.0).unwrap() - 2.776).abs() < 1e-3);
        assert!((t_quantile(0.99, 9.0).unwrap() - 3.250).abs() < 1e-3);
        assert!((t_quantile(0.95, 1e6).unwrap() - 1.960).abs() < 1e-3);
        assert!(t_quantile(1.0, 3.0).is_none());
    }
}
