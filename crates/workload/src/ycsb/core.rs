//! YCSB's core workload: its configuration parsed from YCSB properties ([`CoreWorkload`]), the
//! state its workers share during a run ([`CoreRun`]: the load key sequence and the acknowledged
//! insert counter), and the per-worker operation sources for the run phase ([`CoreSource`]) and
//! the load phase ([`LoadSource`]). A source yields [`YcsbOp`]s, small `Copy` values naming key
//! numbers and field indexes; the worker turns those into key and value bytes with the helpers
//! here and in [`super::keys`], in buffers it owns. Nothing here allocates per operation.
//!
//! Semantics follow YCSB 0.17.0's `CoreWorkload.java` and `Client.java`, with 64-bit counts;
//! key choice ([`KeyChooser`]) is YCSB's draw for draw. Where storlab differs it says so on the
//! item concerned; `zipfianeta=current-count` is the one opt-in correction of YCSB's formulas.

use std::sync::Arc;

use storlab_model::YcsbOp;

use rand::SeedableRng;
use rand::rngs::SmallRng;

use rand::Rng;

use super::generators::{
    AckError, AcknowledgedCounter, Counter, Discrete, Exponential, GeneratorError, Hotspot,
    LengthGenerator, ScrambledZipfian, Sequential, SkewedLatest, Uniform, ZIPFIAN_CONSTANT,
    Zipfian, ZipfianEta,
};
use super::keys::{self, InsertOrder};
use super::properties::{Properties, Property};

mod run;
pub use run::{CoreRun, CoreSource, KeyChooser, LoadSource, thread_op_count};

/// The `workload` property value of YCSB's core workload, the only class understood here.
pub const CORE_WORKLOAD_CLASS: &str = "site.ycsb.workloads.CoreWorkload";

/// YCSB client properties (`Client.java`, measurements, status) that are not the core
/// workload's: it leaves them unclaimed for the caller.
pub const CLIENT_PROPERTIES: &[&str] = &[
    "db",
    "threadcount",
    "target",
    "maxexecutiontime",
    "dotransactions",
    "status",
    "status.interval",
    "label",
    "exporter",
    "exportfile",
    "measurementtype",
    "measurement.interval",
    "measurement.trackjvm",
    "histogram.buckets",
    "hdrhistogram.percentiles",
    "hdrhistogram.fileoutput",
    "hdrhistogram.output.path",
    "timeseries.granularity",
];

/// How operations choose their key (`requestdistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestDistribution {
    Uniform,
    /// Scrambled zipfian over the loaded keys plus room for the expected inserts.
    Zipfian,
    /// Skewed towards the latest acknowledged insert.
    Latest,
    Hotspot,
    Sequential,
    /// Exponential back from the latest acknowledged insert.
    Exponential,
}

/// Field value lengths (`fieldlengthdistribution`); YCSB's "histogram" is not supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldLengthDistribution {
    Constant,
    Uniform,
    Zipfian,
}

/// Scan lengths (`scanlengthdistribution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanLengthDistribution {
    Uniform,
    Zipfian,
}

/// The operation mix; weights, normalised by their sum when drawing (as YCSB).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpProportions {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

/// A core workload property that is wrong, with where it was set.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{property}: {reason}")]
    Invalid { property: Property, reason: String },
    #[error("{reason} ({})", list(properties))]
    Conflict {
        reason: String,
        /// The properties involved, as set (defaults are not listed).
        properties: Vec<Property>,
    },
}

fn list(properties: &[Property]) -> String {
    if properties.is_empty() {
        return "all defaults".to_owned();
    }
    properties
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

/// YCSB's core workload configuration, counts in 64 bits. Build it with
/// [`CoreWorkload::from_properties`]; field names and defaults are YCSB's.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreWorkload {
    /// `table` (usertable).
    pub table: String,
    /// `recordcount`: records loaded before the run; the insert counter starts here.
    pub record_count: u64,
    /// `operationcount` (0 if absent): operations in the run phase, over all threads.
    pub operation_count: u64,
    /// `insertstart` (0): first key number this client loads and draws from.
    pub insert_start: u64,
    /// `insertcount` (recordcount - insertstart): keys this client loads.
    pub insert_count: u64,
    /// `fieldcount` (10).
    pub field_count: u32,
    /// `fieldlength` (100): the constant length, or the largest.
    pub field_length_bytes: u64,
    /// `minfieldlength` (1): the smallest length for uniform and zipfian lengths.
    pub min_field_length_bytes: u64,
    /// `fieldlengthdistribution` (constant).
    pub field_length_distribution: FieldLengthDistribution,
    /// `fieldnameprefix` (field).
    pub field_name_prefix: String,
    /// `readallfields` (true).
    pub read_all_fields: bool,
    /// `readallfieldsbyname` (false): reads of all fields name them (a binding's concern).
    pub read_all_fields_by_name: bool,
    /// `writeallfields` (false): an update rewrites one random field.
    pub write_all_fields: bool,
    /// `dataintegrity` (false): values are deterministic and reads are verified.
    pub data_integrity: bool,
    /// `readproportion` (0.95), `updateproportion` (0.05), `insertproportion` (0),
    /// `scanproportion` (0), `readmodifywriteproportion` (0).
    pub proportions: OpProportions,
    /// `requestdistribution` (uniform).
    pub request_distribution: RequestDistribution,
    /// `zipfianconstant` (0.99): a storlab extension; YCSB fixes the constant at 0.99.
    pub zipfian_constant: f64,
    /// `zipfianeta` (`initial-count`, YCSB 0.17.0's): how the latest distribution's zipfian
    /// computes eta once inserts have grown the key space; `current-count` is the corrected
    /// formula (a storlab extension). Only `requestdistribution=latest` grows its item count.
    pub zipfian_eta: ZipfianEta,
    /// `minscanlength` (1).
    pub min_scan_length: u64,
    /// `maxscanlength` (1000).
    pub max_scan_length: u64,
    /// `scanlengthdistribution` (uniform).
    pub scan_length_distribution: ScanLengthDistribution,
    /// `insertorder` (hashed; anything else is ordered).
    pub insert_order: InsertOrder,
    /// `zeropadding` (1): decimal digits the key number is padded to.
    pub zero_padding: u32,
    /// `hotspotdatafraction` (0.2).
    pub hotspot_data_fraction: f64,
    /// `hotspotopnfraction` (0.8).
    pub hotspot_opn_fraction: f64,
    /// `exponential.percentile` (95).
    pub exponential_percentile: f64,
    /// `exponential.frac` (0.8571428571).
    pub exponential_frac: f64,
    /// `core_workload_insertion_retry_limit` (0): load-phase retries of a failed insert.
    pub insertion_retry_limit: u32,
    /// `core_workload_insertion_retry_interval` (3): seconds between those retries.
    pub insertion_retry_interval_secs: u64,
    /// `core_workload_insertion_keep_going_on_error` (false).
    pub insertion_keep_going_on_error: bool,
}

/// Claims and parses properties, remembering which were set for error messages.
struct Reader<'a> {
    props: &'a mut Properties,
}

impl Reader<'_> {
    fn raw(&mut self, name: &str) -> Option<Property> {
        self.props.claim(name).cloned()
    }

    fn string(&mut self, name: &str, default: &str) -> String {
        self.raw(name)
            .map_or_else(|| default.to_owned(), |p| p.value)
    }

    fn parse<T>(
        &mut self,
        name: &str,
        default: T,
        what: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, WorkloadError> {
        match self.raw(name) {
            None => Ok(default),
            Some(property) => parse(&property.value).ok_or_else(|| WorkloadError::Invalid {
                reason: format!("expected {what}"),
                property,
            }),
        }
    }

    fn u64(&mut self, name: &str, default: u64) -> Result<u64, WorkloadError> {
        self.parse(name, default, "a whole number from 0", |v| {
            v.strip_prefix('+').unwrap_or(v).parse().ok()
        })
    }

    fn u32(&mut self, name: &str, default: u32) -> Result<u32, WorkloadError> {
        self.parse(name, default, "a whole number from 0 to 4294967295", |v| {
            v.strip_prefix('+').unwrap_or(v).parse().ok()
        })
    }

    fn f64(&mut self, name: &str, default: f64) -> Result<f64, WorkloadError> {
        self.parse(name, default, "a finite number", |v| {
            v.parse::<f64>().ok().filter(|x| x.is_finite())
        })
    }

    /// Stricter than Java's `Boolean.parseBoolean`, which reads any typo as false.
    fn bool(&mut self, name: &str, default: bool) -> Result<bool, WorkloadError> {
        self.parse(name, default, "true or false", |v| {
            if v.eq_ignore_ascii_case("true") {
                Some(true)
            } else if v.eq_ignore_ascii_case("false") {
                Some(false)
            } else {
                None
            }
        })
    }

    fn choice<T: Copy>(
        &mut self,
        name: &str,
        default: T,
        choices: &[(&str, T)],
    ) -> Result<T, WorkloadError> {
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        self.parse(
            name,
            default,
            &format!("one of {}", names.join(", ")),
            |v| choices.iter().find(|(n, _)| *n == v).map(|(_, t)| *t),
        )
    }

    /// The property as set, for error messages (without claiming anything new).
    fn set(&self, names: &[&str]) -> Vec<Property> {
        names
            .iter()
            .filter_map(|n| self.props.get(n).cloned())
            .collect()
    }
}

impl CoreWorkload {
    /// Reads the core workload's properties, claiming them in `props`; whatever it does not
    /// know is left unclaimed for the caller (client settings, bindings' settings, typos).
    pub fn from_properties(props: &mut Properties) -> Result<Self, WorkloadError> {
        let mut r = Reader { props };
        if let Some(property) = r.raw("workload")
            && property.value != CORE_WORKLOAD_CLASS
        {
            return Err(WorkloadError::Invalid {
                property,
                reason: format!("only {CORE_WORKLOAD_CLASS} is supported"),
            });
        }
        let record_count = r.u64("recordcount", 0)?;
        let operation_count = r.u64("operationcount", 0)?;
        let insert_start = r.u64("insertstart", 0)?;
        let insert_count = r.u64("insertcount", record_count.saturating_sub(insert_start))?;
        let field_length_distribution = r.choice(
            "fieldlengthdistribution",
            FieldLengthDistribution::Constant,
            &[
                ("constant", FieldLengthDistribution::Constant),
                ("uniform", FieldLengthDistribution::Uniform),
                ("zipfian", FieldLengthDistribution::Zipfian),
            ],
        )?;
        let request_distribution = r.choice(
            "requestdistribution",
            RequestDistribution::Uniform,
            &[
                ("uniform", RequestDistribution::Uniform),
                ("zipfian", RequestDistribution::Zipfian),
                ("latest", RequestDistribution::Latest),
                ("hotspot", RequestDistribution::Hotspot),
                ("sequential", RequestDistribution::Sequential),
                ("exponential", RequestDistribution::Exponential),
            ],
        )?;
        let scan_length_distribution = r.choice(
            "scanlengthdistribution",
            ScanLengthDistribution::Uniform,
            &[
                ("uniform", ScanLengthDistribution::Uniform),
                ("zipfian", ScanLengthDistribution::Zipfian),
            ],
        )?;
        let insert_order = if r.string("insertorder", "hashed") == "hashed" {
            InsertOrder::Hashed
        } else {
            InsertOrder::Ordered
        };
        let w = CoreWorkload {
            table: r.string("table", "usertable"),
            record_count,
            operation_count,
            insert_start,
            insert_count,
            field_count: r.u32("fieldcount", 10)?,
            field_length_bytes: r.u64("fieldlength", 100)?,
            min_field_length_bytes: r.u64("minfieldlength", 1)?,
            field_length_distribution,
            field_name_prefix: r.string("fieldnameprefix", "field"),
            read_all_fields: r.bool("readallfields", true)?,
            read_all_fields_by_name: r.bool("readallfieldsbyname", false)?,
            write_all_fields: r.bool("writeallfields", false)?,
            data_integrity: r.bool("dataintegrity", false)?,
            proportions: OpProportions {
                read: r.f64("readproportion", 0.95)?,
                update: r.f64("updateproportion", 0.05)?,
                insert: r.f64("insertproportion", 0.0)?,
                scan: r.f64("scanproportion", 0.0)?,
                read_modify_write: r.f64("readmodifywriteproportion", 0.0)?,
            },
            request_distribution,
            zipfian_constant: r.f64("zipfianconstant", ZIPFIAN_CONSTANT)?,
            zipfian_eta: r.choice("zipfianeta", ZipfianEta::InitialCount, &ZipfianEta::NAMES)?,
            min_scan_length: r.u64("minscanlength", 1)?,
            max_scan_length: r.u64("maxscanlength", 1000)?,
            scan_length_distribution,
            insert_order,
            zero_padding: r.u32("zeropadding", 1)?,
            hotspot_data_fraction: r.f64("hotspotdatafraction", 0.2)?,
            hotspot_opn_fraction: r.f64("hotspotopnfraction", 0.8)?,
            exponential_percentile: r.f64("exponential.percentile", 95.0)?,
            exponential_frac: r.f64("exponential.frac", 0.8571428571)?,
            insertion_retry_limit: r.u32("core_workload_insertion_retry_limit", 0)?,
            insertion_retry_interval_secs: r.u64("core_workload_insertion_retry_interval", 3)?,
            insertion_keep_going_on_error: r
                .bool("core_workload_insertion_keep_going_on_error", false)?,
        };
        w.check(&r)?;
        Ok(w)
    }

    /// Combinations YCSB rejects (or would fail on mid-run), reported with the properties set.
    fn check(&self, r: &Reader<'_>) -> Result<(), WorkloadError> {
        let conflict = |reason: String, names: &[&str]| {
            Err(WorkloadError::Conflict {
                reason,
                properties: r.set(names),
            })
        };
        if self.record_count == 0 {
            // YCSB reads recordcount 0 as 2^31 - 1; here it must be given.
            return conflict("recordcount must be at least 1".into(), &["recordcount"]);
        }
        if self.insert_count == 0 {
            return conflict(
                "no keys to load or draw: insertcount is 0".into(),
                &["insertcount", "insertstart", "recordcount"],
            );
        }
        if self
            .insert_start
            .checked_add(self.insert_count)
            .is_none_or(|end| end > self.record_count)
        {
            return conflict(
                format!(
                    "insertstart + insertcount ({} + {}) is above recordcount ({})",
                    self.insert_start, self.insert_count, self.record_count
                ),
                &["insertstart", "insertcount", "recordcount"],
            );
        }
        if self.field_count == 0 {
            return conflict("fieldcount must be at least 1".into(), &["fieldcount"]);
        }
        if self.data_integrity
            && self.field_length_distribution != FieldLengthDistribution::Constant
        {
            return conflict(
                "dataintegrity needs fieldlengthdistribution=constant".into(),
                &["dataintegrity", "fieldlengthdistribution"],
            );
        }
        let p = self.proportions;
        let weights = [p.read, p.update, p.insert, p.scan, p.read_modify_write];
        if weights.iter().any(|w| *w < 0.0) || weights.iter().sum::<f64>() <= 0.0 {
            return conflict(
                "operation proportions must not be negative and must not all be 0".into(),
                &[
                    "readproportion",
                    "updateproportion",
                    "insertproportion",
                    "scanproportion",
                    "readmodifywriteproportion",
                ],
            );
        }
        if !(self.zipfian_constant > 0.0 && self.zipfian_constant < 1.0) {
            return conflict(
                format!(
                    "zipfianconstant {} is outside (0, 1)",
                    self.zipfian_constant
                ),
                &["zipfianconstant"],
            );
        }
        if let Err(e) = self.generators() {
            let names: &[&str] = match e {
                GeneratorError::Theta { .. } => &["zipfianconstant"],
                GeneratorError::TooManyItems { .. } => &[
                    "recordcount",
                    "insertstart",
                    "insertcount",
                    "operationcount",
                    "insertproportion",
                ],
                GeneratorError::Exponential { .. } => {
                    &["exponential.percentile", "exponential.frac", "recordcount"]
                }
                GeneratorError::Fraction { .. } | GeneratorError::HotspotEmptySet { .. } => &[
                    "hotspotdatafraction",
                    "hotspotopnfraction",
                    "insertcount",
                    "recordcount",
                ],
                GeneratorError::EmptyRange { .. } | GeneratorError::Weights => &[
                    "fieldlength",
                    "minfieldlength",
                    "fieldlengthdistribution",
                    "minscanlength",
                    "maxscanlength",
                    "scanlengthdistribution",
                ],
            };
            return conflict(e.to_string(), names);
        }
        Ok(())
    }

    fn op_chooser(&self) -> Result<Discrete<OpKind>, GeneratorError> {
        let p = self.proportions;
        Discrete::new(&[
            (p.read, OpKind::Read),
            (p.update, OpKind::Update),
            (p.insert, OpKind::Insert),
            (p.scan, OpKind::Scan),
            (p.read_modify_write, OpKind::ReadModifyWrite),
        ])
    }

    /// Keys YCSB expects the run to insert, for the scrambled zipfian's key space:
    /// operationcount * insertproportion * 2 (its "fudge factor").
    pub fn expected_new_keys(&self) -> u64 {
        (self.operation_count as f64 * self.proportions.insert * 2.0) as u64
    }

    /// The generator of field value lengths (`fieldlengthdistribution`).
    pub fn field_length_generator(&self) -> Result<LengthGenerator, GeneratorError> {
        self.field_length()
    }

    fn field_length(&self) -> Result<LengthGenerator, GeneratorError> {
        let (min, max) = (self.min_field_length_bytes, self.field_length_bytes);
        Ok(match self.field_length_distribution {
            FieldLengthDistribution::Constant => LengthGenerator::Constant(max),
            FieldLengthDistribution::Uniform => LengthGenerator::Uniform(Uniform::new(min, max)?),
            FieldLengthDistribution::Zipfian => {
                LengthGenerator::Zipfian(Zipfian::new(min, max, ZIPFIAN_CONSTANT)?)
            }
        })
    }

    fn scan_length(&self) -> Result<LengthGenerator, GeneratorError> {
        let (min, max) = (self.min_scan_length, self.max_scan_length);
        Ok(match self.scan_length_distribution {
            ScanLengthDistribution::Uniform => LengthGenerator::Uniform(Uniform::new(min, max)?),
            ScanLengthDistribution::Zipfian => {
                LengthGenerator::Zipfian(Zipfian::new(min, max, ZIPFIAN_CONSTANT)?)
            }
        })
    }

    /// The key chooser, as CoreWorkload.init builds it.
    pub fn key_chooser(&self) -> Result<KeyChooser, GeneratorError> {
        let first = self.insert_start;
        let last = self.insert_start + self.insert_count - 1;
        let theta = self.zipfian_constant;
        Ok(match self.request_distribution {
            RequestDistribution::Uniform => KeyChooser::Uniform(Uniform::new(first, last)?),
            RequestDistribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::new(
                first,
                // YCSB's upper bound is inclusive, one past the expected keys.
                self.insert_start
                    .saturating_add(self.insert_count)
                    .saturating_add(self.expected_new_keys()),
                theta,
            )?),
            // Over the latest acknowledged key when the run starts: recordcount - 1.
            RequestDistribution::Latest => KeyChooser::Latest(SkewedLatest::new(
                self.record_count - 1,
                theta,
                self.zipfian_eta,
            )?),
            RequestDistribution::Hotspot => KeyChooser::Hotspot(Hotspot::new(
                first,
                last,
                self.hotspot_data_fraction,
                self.hotspot_opn_fraction,
            )?),
            RequestDistribution::Sequential => {
                KeyChooser::Sequential(Sequential::new(first, last)?)
            }
            RequestDistribution::Exponential => KeyChooser::Exponential(Exponential::new(
                self.exponential_percentile,
                self.record_count as f64 * self.exponential_frac,
            )?),
        })
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
