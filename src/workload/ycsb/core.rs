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

pub use crate::model::YcsbOp;

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

    fn generators(&self) -> Result<Templates, GeneratorError> {
        Ok(Templates {
            ops: self.op_chooser()?,
            keys: self.key_chooser()?,
            fields: Uniform::new(0, self.field_count.max(1) as u64 - 1)?,
            field_length: self.field_length()?,
            scan_length: self.scan_length()?,
        })
    }

    /// Starts a run: builds the generators once (zeta included) and the counters the workers
    /// share. One per load or run phase.
    pub fn start(&self, seed: u64) -> Result<CoreRun, GeneratorError> {
        Ok(CoreRun {
            workload: Arc::new(self.clone()),
            templates: self.generators()?,
            load_keys: Arc::new(Counter::new(self.insert_start)),
            insert_keys: Arc::new(AcknowledgedCounter::new(self.record_count)),
            seed,
        })
    }
}

/// Generators built once per run and cloned into every worker.
#[derive(Debug, Clone)]
struct Templates {
    ops: Discrete<OpKind>,
    keys: KeyChooser,
    fields: Uniform,
    field_length: LengthGenerator,
    scan_length: LengthGenerator,
}

/// How a run chooses the key of a read, update, scan or read-modify-write
/// (`requestdistribution`), as YCSB's `CoreWorkload.init` builds its `keychooser`.
#[derive(Debug, Clone)]
pub enum KeyChooser {
    Uniform(Uniform),
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Sequential(Sequential),
    Exponential(Exponential),
}

impl KeyChooser {
    /// A key number below `acknowledged_end` (every key below it is inserted), YCSB's
    /// `nextKeynum`: keys past the latest acknowledged insert are drawn again; exponential
    /// counts back from it and draws again when that goes below 0. (YCSB takes the draw's
    /// `intValue()`; counts here stay 64-bit, which is the same below 2^31.)
    #[inline]
    pub fn next_keynum<R: Rng + ?Sized>(&mut self, rng: &mut R, acknowledged_end: u64) -> u64 {
        let end = acknowledged_end;
        loop {
            let keynum = match self {
                KeyChooser::Exponential(e) => {
                    let back = e.next(rng) as u64;
                    match (end - 1).checked_sub(back) {
                        Some(k) => return k,
                        None => continue,
                    }
                }
                KeyChooser::Latest(l) => l.next(rng, end - 1),
                KeyChooser::Uniform(u) => u.next(rng),
                KeyChooser::Zipfian(z) => z.next(rng),
                KeyChooser::Hotspot(h) => h.next(rng),
                KeyChooser::Sequential(s) => s.next(),
            };
            if keynum < end {
                return keynum;
            }
        }
    }
}

/// One load or run phase of a core workload: what its workers share.
#[derive(Debug)]
pub struct CoreRun {
    workload: Arc<CoreWorkload>,
    templates: Templates,
    load_keys: Arc<Counter>,
    insert_keys: Arc<AcknowledgedCounter>,
    seed: u64,
}

/// Operations thread `thread` of `threads` does out of `total`, as YCSB's Client splits them:
/// total / threads each, the first total % threads threads one more.
pub fn thread_op_count(total: u64, threads: u32, thread: u32) -> u64 {
    let threads = threads.max(1) as u64;
    let thread = thread as u64;
    total / threads + u64::from(thread < total % threads)
}

impl CoreRun {
    pub fn workload(&self) -> &CoreWorkload {
        &self.workload
    }

    /// The run phase's insert counter (shared by every source of this run).
    pub fn insert_keys(&self) -> &Arc<AcknowledgedCounter> {
        &self.insert_keys
    }

    /// Run-phase operations for thread `thread` of `threads` (from `operationcount`).
    pub fn thread_operation_count(&self, threads: u32, thread: u32) -> u64 {
        thread_op_count(self.workload.operation_count, threads, thread)
    }

    /// The run-phase source of worker `thread`, with its own random stream.
    pub fn source(&self, thread: u32) -> CoreSource {
        let t = &self.templates;
        let w = &self.workload;
        CoreSource {
            rng: SmallRng::seed_from_u64(
                self.seed ^ (thread as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ),
            ops: t.ops.clone(),
            keys: t.keys.clone(),
            fields: t.fields.clone(),
            field_length: t.field_length.clone(),
            scan_length: t.scan_length.clone(),
            insert_keys: Arc::clone(&self.insert_keys),
            read_all_fields: w.read_all_fields,
            write_all_fields: w.write_all_fields,
            data_integrity: w.data_integrity,
            zero_padding: w.zero_padding,
            insert_order: w.insert_order,
            workload: Arc::clone(&self.workload),
        }
    }

    /// The load-phase source of thread `thread` of `threads`: its share of `insertcount`
    /// inserts (split as YCSB's Client does), keys from the counter every load thread shares,
    /// starting at `insertstart`. Together the threads insert each key of
    /// [insertstart, insertstart + insertcount) exactly once. (YCSB's Client counts the load
    /// from `insertcount` if given, else from `recordcount` even when `insertstart` is above
    /// 0; here always from the workload's `insertcount`, which defaults to
    /// recordcount - insertstart.)
    pub fn load_source(&self, threads: u32, thread: u32) -> LoadSource {
        LoadSource {
            keys: Arc::clone(&self.load_keys),
            remaining: thread_op_count(self.workload.insert_count, threads, thread),
        }
    }
}

/// One worker's run-phase operations. Not `Clone`: a copy would repeat the same random stream.
#[derive(Debug)]
pub struct CoreSource {
    rng: SmallRng,
    ops: Discrete<OpKind>,
    keys: KeyChooser,
    fields: Uniform,
    field_length: LengthGenerator,
    scan_length: LengthGenerator,
    insert_keys: Arc<AcknowledgedCounter>,
    read_all_fields: bool,
    write_all_fields: bool,
    data_integrity: bool,
    zero_padding: u32,
    insert_order: InsertOrder,
    workload: Arc<CoreWorkload>,
}

impl CoreSource {
    /// The next operation (YCSB's `doTransaction`).
    #[inline]
    pub fn next_op(&mut self) -> YcsbOp {
        match self.ops.next(&mut self.rng) {
            OpKind::Read => YcsbOp::Read {
                keynum: self.next_keynum(),
                field: self.read_field(),
            },
            OpKind::Update => YcsbOp::Update {
                keynum: self.next_keynum(),
                field: self.write_field(),
            },
            OpKind::Insert => YcsbOp::Insert {
                keynum: self.insert_keys.next(),
            },
            OpKind::Scan => YcsbOp::Scan {
                keynum: self.next_keynum(),
                count: self.scan_length.next(&mut self.rng),
                field: self.read_field(),
            },
            OpKind::ReadModifyWrite => YcsbOp::ReadModifyWrite {
                keynum: self.next_keynum(),
                read_field: self.read_field(),
                write_field: self.write_field(),
            },
        }
    }

    #[inline]
    fn read_field(&mut self) -> Option<u32> {
        (!self.read_all_fields).then(|| self.fields.next(&mut self.rng) as u32)
    }

    #[inline]
    fn write_field(&mut self) -> Option<u32> {
        (!self.write_all_fields).then(|| self.fields.next(&mut self.rng) as u32)
    }

    /// A key number for a read, update, scan or read-modify-write (YCSB's `nextKeynum`, see
    /// [`KeyChooser::next_keynum`]).
    #[inline]
    pub fn next_keynum(&mut self) -> u64 {
        let end = self.insert_keys.acknowledged_end();
        self.keys.next_keynum(&mut self.rng, end)
    }

    /// Marks a run-phase insert as done, so that readers may choose its key.
    pub fn acknowledge_insert(&self, keynum: u64) -> Result<(), AckError> {
        self.insert_keys.acknowledge(keynum)
    }

    /// Writes the key of `keynum` into `buf` (cleared first).
    #[inline]
    pub fn write_key(&self, keynum: u64, buf: &mut Vec<u8>) {
        keys::write_key(keynum, self.zero_padding, self.insert_order, buf);
    }

    /// Writes the name of field `index` into `buf` (cleared first).
    #[inline]
    pub fn write_field_name(&self, index: u32, buf: &mut Vec<u8>) {
        keys::write_field_name(&self.workload.field_name_prefix, index, buf);
    }

    /// Writes a value for (key, field) into `value` (cleared first): deterministic with
    /// `dataintegrity`, else random printable bytes of a length from `fieldlengthdistribution`.
    #[inline]
    pub fn fill_value(&mut self, key: &[u8], field_name: &[u8], value: &mut Vec<u8>) {
        let len = self.field_length.next(&mut self.rng) as usize;
        if self.data_integrity {
            keys::write_deterministic_value(key, field_name, len, value);
        } else {
            keys::fill_random_value(&mut self.rng, len, value);
        }
    }

    /// With `dataintegrity`, whether a value read back is the one written; YCSB's `verifyRow`
    /// for one field.
    pub fn verify_value(&self, key: &[u8], field_name: &[u8], value: &[u8]) -> bool {
        keys::verify_deterministic_value(
            key,
            field_name,
            self.workload.field_length_bytes as usize,
            value,
        )
    }

    pub fn workload(&self) -> &CoreWorkload {
        &self.workload
    }
}

/// One load thread's inserts.
#[derive(Debug)]
pub struct LoadSource {
    keys: Arc<Counter>,
    remaining: u64,
}

impl LoadSource {
    /// The next insert, or `None` when this thread's share is done.
    #[inline]
    pub fn next_op(&mut self) -> Option<YcsbOp> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(YcsbOp::Insert {
            keynum: self.keys.next(),
        })
    }

    /// Inserts left for this thread.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
