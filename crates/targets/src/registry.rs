//! The target contract and the registry: what a target type declares ([`Target`]: its row,
//! capabilities, preparation, sessions) and the macro that turns the list of target types in
//! `targets/mod.rs` into the [`TargetConfig`] enum, its dispatch and
//! [`REGISTRY`](super::REGISTRY).
//!
//! Adding a target is its own file, implementing [`Target`], plus one row in that list. The
//! study's validation reads every rule from the declaration ([`check_workload`]), so no other
//! file names a target type.

use std::path::PathBuf;

use super::{
    Capabilities, OptionError, Overlap, PrepareOptions, Region, SessionParams, SessionUser,
    TargetConfig, TargetError,
};
use storlab_workload::Workload;
use storlab_workload::ycsb::Properties;

/// One registry row: a target type's name, help, options and parser.
pub struct TargetType {
    pub name: &'static str,
    pub summary: &'static str,
    /// (option, meaning) pairs for `storlab targets` and `--help`.
    pub options: &'static [(&'static str, &'static str)],
    pub parse: fn(toml::Table) -> Result<TargetConfig, OptionError>,
    /// A file on a file server's share (IOmeter's disk on a server): the server it is on, read
    /// from the target's stored configuration (`smb://host:port`, no user or password). A
    /// study's targets of this type on one server are replicas of one system: reports add
    /// them up per server and compare servers, never shares. None: each target is a system
    /// of its own.
    pub file_server: Option<FileServer>,
    /// The YCSB binding this type stands in for (`storlab ycsb -db NAME`); None: the target
    /// takes no YCSB workloads.
    pub ycsb: Option<YcsbBinding>,
}

/// How YCSB's command line names a kind of database and configures it.
pub struct YcsbBinding {
    /// Names YCSB gives this kind of database on its command line (`-db`, binding name),
    /// besides the target type's own name.
    pub names: &'static [&'static str],
    /// YCSB's Java class names for this binding (`-db site.ycsb.db.RedisClient`).
    pub classes: &'static [&'static str],
    /// The YCSB property that batches a load's inserts (YCSB's mongodb `batchsize`,
    /// storlab's `redis.pipeline`), taken as the workload's queue depth.
    pub batch: Option<&'static str>,
    /// Turns the binding's YCSB properties (`redis.host`, `mongodb.url`, ...) into this
    /// target's option table, claiming them.
    pub options: YcsbOptions,
}

/// A file-server target's server, from its stored configuration (the plan's JSON).
pub type FileServer = fn(&serde_json::Value) -> Option<String>;

/// A target type's reading of a YCSB binding's properties into its option table.
pub type YcsbOptions = fn(&mut Properties) -> Result<toml::Table, super::YcsbBindingError>;

/// What a target type implements: one file each.
pub trait Target {
    /// Its registry row.
    const TYPE: TargetType;
    /// What its sessions share during a run (an open database, a server's version).
    type Shared;

    /// What it can do, for this configuration (a file through psync cannot overlap I/O).
    fn capabilities(&self) -> Capabilities;

    /// Rules beyond the capabilities for a workload (e.g. O_DIRECT alignment): the workload
    /// key to blame and the message.
    fn check_workload(&self, _workload: &Workload) -> Option<(&'static str, String)> {
        None
    }

    /// Why its region has no room for one block of `block_bytes` (of the workload named
    /// `workload_name`): the target key to blame and the message. Checked at `check` time.
    fn region_problem(
        &self,
        _block_bytes: storlab_model::units::Bytes,
        _workload_name: &str,
    ) -> Option<(&'static str, String)> {
        None
    }

    /// A hint added when a queue depth above 1 is refused (e.g. another engine that can).
    fn queue_depth_hint(&self) -> &'static str {
        ""
    }

    /// Paths whose storage this target measures (for the system capture).
    fn paths(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Readies the target before its workers open sessions (checks safety, lays out files,
    /// opens databases): the region operations may address, and what sessions share.
    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, Self::Shared), TargetError>;

    /// Opens a session for one worker and runs `user` with it (the worker loop,
    /// monomorphized for this target's session type).
    fn open<U: SessionUser>(
        &self,
        shared: &Self::Shared,
        params: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError>;

    /// Software versions to disclose (library or server), as the target reports them.
    fn software(&self, _shared: &Self::Shared) -> Vec<(String, String)> {
        Vec::new()
    }

    /// What `prepare` did to the system under test that the run's results must say, as
    /// events stamped at the run's start: (kind, detail), e.g. a server's memory limit set.
    fn setup_events(&self, _shared: &Self::Shared) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Scales the target down for `--quick` (e.g. a smaller file).
    fn make_quick(&mut self) {}

    /// Where verified writes (`verify = true`) of a block workload can be read back. None:
    /// the target cannot verify written blocks.
    fn verify_file(&self) -> Option<ReadBackFile> {
        None
    }

    /// The ability to check pgbench's lost-transaction ledger, for a target whose capabilities
    /// say `keeps_ledger`. None: it has none.
    fn ledger(&self) -> Option<&dyn LedgerKeeper<Self::Shared>> {
        None
    }

    /// Cleans up after the study (removes files storlab created when asked to).
    fn finish(&self) {}
}

/// Where a block target's written blocks are read back by the verify pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBackFile {
    /// The file or device (or the URL the target reads it through).
    pub path: PathBuf,
    /// Read it with O_DIRECT.
    pub direct: bool,
}

/// A target that keeps pgbench's lost-transaction ledger: it reads a run's history rows back
/// and checks the ledger against them (see [`storlab_verify::ledger`]).
pub trait LedgerKeeper<Shared> {
    fn check_ledger(
        &self,
        shared: &Shared,
        ledger: &storlab_verify::ledger::Ledger,
    ) -> Result<storlab_verify::kv::KvVerifyReport, TargetError>;
}

/// Declares the target types: `Variant => module::Config` rows. Generates the modules, the
/// [`TargetConfig`] enum (serialized with `type = "name"`), the
/// [`Handle`](super::Handle) of what a prepared target's sessions share, the dispatch of
/// every [`Target`] method (one match, then generic code), and [`REGISTRY`](super::REGISTRY).
macro_rules! registry {
    ($($variant:ident => $module:ident :: $config:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// A configured target, as validated from a study file.
        #[derive(Debug, Clone, serde::Serialize)]
        #[serde(tag = "type", rename_all = "kebab-case")]
        pub enum TargetConfig {
            $($variant($module::$config),)*
        }

        /// What a prepared target's sessions share during a run.
        pub enum Handle {
            $($variant(<$module::$config as registry::Target>::Shared),)*
        }

        /// Every target type storlab knows.
        pub static REGISTRY: &[registry::TargetType] =
            &[$(<$module::$config as registry::Target>::TYPE,)*];

        impl TargetConfig {
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(TargetConfig::$variant(_) =>
                        <$module::$config as registry::Target>::TYPE.name,)*
                }
            }

            pub fn capabilities(&self) -> Capabilities {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::capabilities(c),)*
                }
            }

            /// The target runs inside storlab's process, on the worker threads.
            pub fn in_process(&self) -> bool {
                self.capabilities().in_process
            }

            pub fn check_workload_rules(
                &self,
                w: &storlab_workload::Workload,
            ) -> Option<(&'static str, String)> {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::check_workload(c, w),)*
                }
            }

            pub fn region_problem(
                &self,
                block_bytes: storlab_model::units::Bytes,
                workload_name: &str,
            ) -> Option<(&'static str, String)> {
                match self {
                    $(TargetConfig::$variant(c) =>
                        registry::Target::region_problem(c, block_bytes, workload_name),)*
                }
            }

            pub fn queue_depth_hint(&self) -> &'static str {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::queue_depth_hint(c),)*
                }
            }

            /// Paths whose storage this target measures (for the system capture).
            pub fn paths(&self) -> Vec<std::path::PathBuf> {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::paths(c),)*
                }
            }

            /// Readies the target before its workers open sessions.
            pub fn prepare(&self, opts: &PrepareOptions) -> Result<Prepared, TargetError> {
                match self {
                    $(TargetConfig::$variant(c) => {
                        let (region, shared) = registry::Target::prepare(c, opts)?;
                        Ok(Prepared { region, handle: Handle::$variant(shared) })
                    })*
                }
            }

            /// Opens a session for one worker and runs `user` with it.
            pub fn open<U: SessionUser>(
                &self,
                prepared: &Prepared,
                params: &SessionParams,
                user: U,
            ) -> Result<U::Output, TargetError> {
                #[allow(unreachable_patterns)]
                match (self, &prepared.handle) {
                    $((TargetConfig::$variant(c), Handle::$variant(shared)) =>
                        registry::Target::open(c, shared, params, user),)*
                    _ => Err(TargetError::Invalid(
                        "the target was not prepared before its sessions opened".into(),
                    )),
                }
            }

            /// Software versions to disclose (library or server).
            pub fn software(&self, prepared: &Prepared) -> Vec<(String, String)> {
                #[allow(unreachable_patterns)]
                match (self, &prepared.handle) {
                    $((TargetConfig::$variant(c), Handle::$variant(shared)) =>
                        registry::Target::software(c, shared),)*
                    _ => Vec::new(),
                }
            }

            /// What `prepare` did that the run's results must say: (kind, detail) events.
            pub fn setup_events(&self, prepared: &Prepared) -> Vec<(String, String)> {
                #[allow(unreachable_patterns)]
                match (self, &prepared.handle) {
                    $((TargetConfig::$variant(c), Handle::$variant(shared)) =>
                        registry::Target::setup_events(c, shared),)*
                    _ => Vec::new(),
                }
            }

            /// Where verified writes can be read back (file or device, O_DIRECT), if anywhere.
            pub fn verify_file(&self) -> Option<registry::ReadBackFile> {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::verify_file(c),)*
                }
            }

            /// Whether its sessions read whole YCSB records back (key-value verification).
            pub fn reads_records_back(&self) -> bool {
                self.capabilities().reads_records_back
            }

            /// Reads a pgbench run's history back and checks its ledger.
            pub fn check_ledger(
                &self,
                prepared: &Prepared,
                ledger: &storlab_verify::ledger::Ledger,
            ) -> Result<storlab_verify::kv::KvVerifyReport, TargetError> {
                #[allow(unreachable_patterns)]
                match (self, &prepared.handle) {
                    $((TargetConfig::$variant(c), Handle::$variant(shared)) =>
                        match registry::Target::ledger(c) {
                            Some(keeper) => keeper.check_ledger(shared, ledger),
                            None => Err(TargetError::Invalid(format!(
                                "a {} target keeps no transaction ledger",
                                self.type_name()
                            ))),
                        },)*
                    _ => Err(TargetError::Invalid(
                        "the target was not prepared before its ledger was checked".into(),
                    )),
                }
            }

            /// Whether it keeps pgbench's lost-transaction ledger.
            pub fn keeps_ledger(&self) -> bool {
                self.capabilities().keeps_ledger
            }

            /// Scales the target down for `--quick`.
            pub fn make_quick(&mut self) {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::make_quick(c),)*
                }
            }

            /// Cleans up after the study.
            pub fn finish(&self) {
                match self {
                    $(TargetConfig::$variant(c) => registry::Target::finish(c),)*
                }
            }
        }
    };
}
pub(crate) use registry;

/// Why a target cannot run a workload, from its declaration: the workload key to blame and
/// the message.
pub fn check_workload(t: &TargetConfig, w: &Workload) -> Option<(&'static str, String)> {
    let caps = t.capabilities();
    let name = t.type_name();
    let wtype = w.kind();
    if !caps.workloads.contains(&wtype) {
        let takes = caps
            .workloads
            .iter()
            .map(|t| format!("{t}"))
            .collect::<Vec<_>>()
            .join(" or ");
        return Some((
            "type",
            format!("a {name} target takes {takes} workloads, not {wtype} workloads"),
        ));
    }
    for k in w.all_kinds() {
        if !caps.ops.contains(&k) {
            return Some((
                wtype.operations_key(),
                format!("a {name} target cannot {}", k.name()),
            ));
        }
    }
    if w.as_block().is_some_and(|b| b.verify) && t.verify_file().is_none() {
        return Some((
            "verify",
            format!("a {name} target cannot read written blocks back to verify them"),
        ));
    }
    if w.as_block().is_some_and(|b| b.write_buffers.is_some()) && !caps.writes_given_buffers {
        return Some((
            "write-buffers",
            format!(
                "a {name} target writes storlab's own data: write-buffers needs a file (or null) target"
            ),
        ));
    }
    if w.as_ycsb().is_some_and(|y| y.verify) && !caps.reads_records_back {
        return Some((
            "verify",
            format!("a {name} target cannot read records back to verify them"),
        ));
    }
    if w.as_pgbench().is_some_and(|p| p.verify) && !caps.keeps_ledger {
        return Some((
            "verify",
            format!("a {name} target keeps no ledger of transactions to verify"),
        ));
    }
    let qd = w.queue_depth();
    if qd > 1 && caps.overlap == Overlap::None {
        let hint = t.queue_depth_hint();
        return Some((
            "queue-depth",
            format!(
                "a {name} target executes one operation at a time per thread (it cannot overlap operations), so queue-depth must be 1 (got {qd}): raise `threads` for parallelism{}{hint}",
                if hint.is_empty() { "" } else { ", or " }
            ),
        ));
    }
    if qd > caps.overlap.max_queue_depth() {
        return Some((
            "queue-depth",
            format!(
                "queue-depth {qd} is above a {name} target's limit of {}",
                caps.overlap.max_queue_depth()
            ),
        ));
    }
    t.check_workload_rules(w)
}
