//! A brief's published figures as data (`studies/baselines/*.toml`): what the brief measured,
//! on what system, in its own words, with its source. A study names its baseline
//! (`baseline = "baselines/NAME.toml"`) and the report puts the figures beside the user's with
//! the ratio; the hardware differs, and the report says so.
//!
//! A figure is matched to the user's by the report table it belongs to (`table`: the headline
//! section's title, `RAID efficiency`, `Elastic`, `Training`), the test's label in that table and the
//! metric's column name. Values are converted from the brief's unit to storlab's stored one
//! (operations per second, bytes per second, nanoseconds, seconds, a fraction).

use serde::{Deserialize, Serialize};

/// One brief's published figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Baseline {
    /// Short name, e.g. `kioxia-xd6-mongodb`.
    pub name: String,
    /// The publication's title.
    pub brief: String,
    /// Where it is published (an address, or the file it was read from).
    pub source: String,
    /// The system under test as the brief describes it.
    pub system: String,
    /// How the brief's method differs from the study's, said once above the figures.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    #[serde(rename = "figure")]
    pub figures: Vec<PublishedFigure>,
}

/// One published figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PublishedFigure {
    /// The report table it belongs to (`YCSB`, `Key-value`, `File server`, `Storage`,
    /// `RAID efficiency`, `Elastic`).
    pub table: String,
    /// The test's label in that table (e.g. `workload-a`, `readrandom, 64 threads`).
    pub test: String,
    /// The metric's column name in that table (e.g. `ops/s`, `mean read latency`).
    pub metric: String,
    pub value: f64,
    pub unit: FigureUnit,
    /// Which of the brief's systems, when it compares several (e.g. `Competitor A`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The study's target that stands for that system: only its figure is set beside this
    /// one (without it, every target's is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The brief's own words for this figure.
    pub wording: String,
}

/// The unit a brief states a figure in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FigureUnit {
    #[serde(rename = "ops/s")]
    OpsPerSecond,
    /// 10^6 bytes per second.
    #[serde(rename = "MB/s")]
    MegabytesPerSecond,
    /// 2^20 bytes per second (IOmeter's MBps).
    #[serde(rename = "MiB/s")]
    MebibytesPerSecond,
    /// 10^9 bytes per second.
    #[serde(rename = "GB/s")]
    GigabytesPerSecond,
    #[serde(rename = "us")]
    Microseconds,
    #[serde(rename = "ms")]
    Milliseconds,
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "h")]
    Hours,
    #[serde(rename = "%")]
    Percent,
    /// A count of things (emulated accelerators).
    #[serde(rename = "count")]
    Count,
    /// Training samples per second.
    #[serde(rename = "samples/s")]
    SamplesPerSecond,
    /// A ratio of two figures (a call-out's 2.1x).
    #[serde(rename = "x")]
    Times,
}

impl FigureUnit {
    /// The value in storlab's stored unit: ops/s, bytes/s, nanoseconds (latencies),
    /// seconds (durations), a fraction (percentages).
    pub fn to_stored(self, value: f64) -> f64 {
        match self {
            FigureUnit::OpsPerSecond
            | FigureUnit::Seconds
            | FigureUnit::Count
            | FigureUnit::SamplesPerSecond
            | FigureUnit::Times => value,
            FigureUnit::MegabytesPerSecond => value * 1e6,
            FigureUnit::MebibytesPerSecond => value * 1_048_576.0,
            FigureUnit::GigabytesPerSecond => value * 1e9,
            FigureUnit::Microseconds => value * 1e3,
            FigureUnit::Milliseconds => value * 1e6,
            FigureUnit::Hours => value * 3600.0,
            FigureUnit::Percent => value / 100.0,
        }
    }
}

impl Baseline {
    /// Reads a baseline file's text; a problem names the line and key (as `toml` words it).
    pub fn from_toml(text: &str) -> Result<Baseline, String> {
        let b: Baseline = toml::from_str(text).map_err(|e| e.to_string())?;
        if b.figures.is_empty() {
            return Err("a baseline has at least one [[figure]]".into());
        }
        if let Some(f) = b.figures.iter().find(|f| !f.value.is_finite()) {
            return Err(format!(
                "figure `{}` / `{}`: value is not a number",
                f.test, f.metric
            ));
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_to_what_storlab_stores() {
        assert_eq!(FigureUnit::Milliseconds.to_stored(5.54), 5_540_000.0);
        assert_eq!(FigureUnit::Hours.to_stored(18.33), 65_988.0);
        assert_eq!(FigureUnit::MebibytesPerSecond.to_stored(1.0), 1_048_576.0);
        assert_eq!(FigureUnit::Percent.to_stored(7.5), 0.075);
    }

    #[test]
    fn a_baseline_file_reads_and_a_bad_one_names_its_key() {
        let text = r#"
name = "b"
brief = "a brief"
source = "https://example.com/brief.pdf"
system = "one SSD"
[[figure]]
table = "YCSB"
test = "workload-a"
metric = "ops/s"
value = 30_316
unit = "ops/s"
wording = "Operations Throughput"
"#;
        let b = Baseline::from_toml(text).expect("reads");
        assert_eq!(b.figures[0].value, 30_316.0);
        let bad = text.replace("unit = \"ops/s\"", "unit = \"furlongs\"");
        let e = Baseline::from_toml(&bad).expect_err("bad unit");
        assert!(e.contains("line 11") && e.contains("furlongs"), "{e}");
        let e = Baseline::from_toml(&text.replace("wording", "words")).expect_err("bad key");
        assert!(e.contains("words"), "{e}");
    }
}
