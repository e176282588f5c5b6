//! Latency summaries computed from histograms: count, min, mean, percentiles and max, in ns.

use hdrhistogram::{Counter, Histogram};
use serde::{Deserialize, Serialize};

/// Percentiles reported everywhere, in order.
pub const PERCENTILES: [(&str, f64); 6] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("p99.99", 99.99),
];

/// A latency distribution's summary. All values in nanoseconds; a percentile is the highest
/// value equivalent to its bucket (within 0.1% of the true value).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LatencySummary {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    #[serde(rename = "p99.9-ns")]
    pub p99_9_ns: u64,
    #[serde(rename = "p99.99-ns")]
    pub p99_99_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    pub fn from_histogram<T: Counter>(h: &Histogram<T>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let q = |p: f64| h.value_at_percentile(p);
        LatencySummary {
            count: h.len(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: q(50.0),
            p90_ns: q(90.0),
            p95_ns: q(95.0),
            p99_ns: q(99.0),
            p99_9_ns: q(99.9),
            p99_99_ns: q(99.99),
            max_ns: h.max(),
        }
    }

    /// The value of a named percentile (`p50` ... `p99.99`, `max`, `min`).
    pub fn get(&self, name: &str) -> Option<u64> {
        Some(match name {
            "min" => self.min_ns,
            "p50" => self.p50_ns,
            "p90" => self.p90_ns,
            "p95" => self.p95_ns,
            "p99" => self.p99_ns,
            "p99.9" => self.p99_9_ns,
            "p99.99" => self.p99_99_ns,
            "max" => self.max_ns,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::new_histogram;

    #[test]
    fn summary_of_known_values() {
        let mut h = new_histogram::<u64>();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let s = LatencySummary::from_histogram(&h);
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_ns, 1000);
        assert!(
            (s.p50_ns as f64 - 500_000.0).abs() / 500_000.0 < 0.002,
            "{}",
            s.p50_ns
        );
        assert!(
            (s.p99_ns as f64 - 990_000.0).abs() / 990_000.0 < 0.002,
            "{}",
            s.p99_ns
        );
        assert!((s.max_ns as f64 - 1_000_000.0).abs() / 1_000_000.0 < 0.002);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"p99.9-ns\""), "{json}");
        assert!(json.contains("\"mean-ns\""), "{json}");
        assert_eq!(
            LatencySummary::from_histogram(&new_histogram::<u64>()).count,
            0
        );
    }
}
