//! The target conformance suite: one set of checks, run through the real binary against every
//! target type in the registry (tokio's `rt_common` style: the `conformance!` macro below
//! instantiates the same tests once per target).
//!
//! What a target declares decides what is run, so a target is held to its own declaration:
//!
//! - for every workload kind its capabilities list, a short study runs to its end with every
//!   operation measured and none failed;
//! - what it declares it can check is checked, and finds every acknowledged write: blocks read
//!   back through its verify file, YCSB records read back, pgbench's ledger;
//! - a workload kind it does not list is refused by `storlab check`, naming the key;
//! - every registry row has its place in this suite (a new target type without one fails
//!   `every_target_type_is_in_the_suite`).
//!
//! Servers come from the test command's scripts (`scripts/servers.sh`, `fileservers.sh`:
//! `. DIR/env.sh`). A target whose server is not given is skipped with a printed reason,
//! unless STORLAB_REQUIRE_SERVERS is set: then it fails (see `common::server`).

mod common;

use std::io::{Read, Write};

use common::{Lab, server, text};
use serde_json::Value;
use storlab_model::WorkloadKind;
use storlab_targets::{Overlap, REGISTRY, TargetConfig, find_type};

/// One target as this suite configures it: the body of its `[targets.t]` table (without
/// `type`; `{lab}` stands for the test's own folder), and the YCSB table name its workloads
/// use.
struct Setup {
    options: String,
    ycsb_table: String,
}

impl Setup {
    fn new(options: String) -> Setup {
        Setup {
            options,
            ycsb_table: "usertable".into(),
        }
    }

    /// The target's configuration as storlab reads it, for its declaration.
    fn config(&self, type_name: &str) -> TargetConfig {
        let options = self.options.replace("{lab}", "/lab");
        let table: toml::Table = toml::from_str(&options).expect("the setup is TOML");
        let row = find_type(type_name).expect("a registered type");
        (row.parse)(table).unwrap_or_else(|e| panic!("{type_name}: {e:?}"))
    }
}

/// The study that runs workload kind `kind` on target `t` of type `type_name` in `lab`, with
/// verification when `verify`.
fn study(
    lab: &Lab,
    type_name: &str,
    setup: &Setup,
    kind: WorkloadKind,
    qd: u32,
    verify: bool,
) -> String {
    let workloads = format!("{}/workloads", env!("CARGO_MANIFEST_DIR"));
    let table = &setup.ycsb_table;
    let body = match kind {
        WorkloadKind::Block => format!(
            r#"[workloads.w]
access = "random"
block-size = "4KiB"
read-share = 0.5
queue-depth = {qd}
verify = {verify}
[[steps]]
workload = "w"
targets = ["t"]
ops = 400
"#
        ),
        WorkloadKind::DbBench => r#"[workloads.fill]
type = "db-bench"
benchmark = "fillrandom"
num = 2000
[workloads.read]
type = "db-bench"
benchmark = "readrandom"
num = 2000
[[steps]]
workload = "fill"
targets = ["t"]
ops = 1000
[[steps]]
workload = "read"
targets = ["t"]
ops = 1000
"#
        .to_string(),
        WorkloadKind::Ycsb => format!(
            r#"[workloads.load]
type = "ycsb"
phase = "load"
workload-file = "{workloads}/workloada"
table = "{table}"
record-count = 300
threads = 2
verify = {verify}
[workloads.run]
type = "ycsb"
phase = "run"
workload-file = "{workloads}/workloada"
table = "{table}"
record-count = 300
operation-count = 600
threads = 2
verify = {verify}
[[steps]]
workload = "load"
targets = ["t"]
[[steps]]
workload = "run"
targets = ["t"]
"#
        ),
        WorkloadKind::Training => format!(
            r#"[workloads.train]
type = "training"
preset = "resnet50-h100"
files = 4
samples-per-file = 3
record-bytes = 5000
batch-size = 2
read-threads = {qd}
compute-time = "1ms"
epochs = 2
[[steps]]
workload = "train"
targets = ["t"]
"#
        ),
        WorkloadKind::Checkpoint => r#"[workloads.ckpt]
type = "checkpoint"
preset = "llama3-8b"
layers = 2
hidden-size = 256
ffn-hidden-size = 768
attention-heads = 8
kv-heads = 2
vocab-size = 2048
ranks = 2
checkpoints-write = 2
checkpoints-read = 2
time-between-checkpoints = "0s"
[[steps]]
workload = "ckpt"
targets = ["t"]
"#
        .to_string(),
        WorkloadKind::Pgbench => format!(
            r#"[workloads.tpcb]
type = "pgbench"
script = "tpcb-like"
scale = 1
threads = 2
verify = {verify}
[[steps]]
workload = "tpcb"
targets = ["t"]
ops = 200
"#
        ),
    };
    let options = setup
        .options
        .replace("{lab}", &lab.path().display().to_string());
    format!("name = \"conformance\"\n[targets.t]\ntype = \"{type_name}\"\n{options}\n{body}")
}

/// A verify pass found every acknowledged write: blocks or keys, none lost or wrong.
fn assert_intact(v: &Value) {
    let (unit, bad): (&str, &[&str]) = match v["kind"].as_str() {
        Some("block") => (
            "blocks",
            &["lost", "torn", "misplaced", "foreign", "unreadable"],
        ),
        Some("key-value") => ("keys", &["lost", "missing", "corrupt", "unreadable"]),
        _ => panic!("no verify pass: {v}"),
    };
    for class in bad {
        assert_eq!(v[class][unit], 0, "{class}: {v}");
    }
    let checked = v[format!("{unit}-checked")].as_u64().unwrap();
    assert!(checked > 0, "nothing checked: {v}");
    assert_eq!(v["intact"][unit].as_u64(), Some(checked), "{v}");
}

/// Runs each workload kind the target declares, verified where it declares it can be.
fn runs_what_it_declares(type_name: &str, setup: &Setup) {
    let config = setup.config(type_name);
    let caps = config.capabilities();
    assert!(!caps.workloads.is_empty(), "{type_name} takes no workload");
    for &kind in caps.workloads {
        let verify = match kind {
            WorkloadKind::Block => config.verify_file().is_some(),
            WorkloadKind::Ycsb => caps.reads_records_back,
            WorkloadKind::Pgbench => caps.keeps_ledger,
            // A checkpoint read checks each piece's stamp, with no verify table.
            WorkloadKind::DbBench | WorkloadKind::Training | WorkloadKind::Checkpoint => false,
        };
        let qd = match caps.overlap {
            Overlap::None => 1,
            _ => 4.min(caps.overlap.max_queue_depth()),
        };
        let lab = Lab::new();
        let path = lab.write(
            "study.toml",
            &study(&lab, type_name, setup, kind, qd, verify),
        );
        let out = lab.run(&["run", path.to_str().unwrap()]);
        let (stdout, stderr) = text(&out);
        assert!(
            out.status.success(),
            "{type_name} {kind}: {stdout}\n{stderr}"
        );
        let runs = common::summaries(&lab);
        assert!(!runs.is_empty(), "{type_name} {kind}: no run stored");
        for s in &runs {
            let t = &s["targets"][0];
            assert_eq!(t["target-type"], type_name, "{s}");
            assert!(t["ops"].as_u64().unwrap() > 0, "{type_name} {kind}: {t}");
            assert_eq!(t["errors"], 0, "{type_name} {kind}: {t}");
            if verify {
                assert_intact(&t["verify"]);
            }
        }
    }
}

/// A workload kind the target does not list is refused before anything runs, with the
/// file and line, the target type and the kind it does not take.
fn refuses_what_it_does_not_take(type_name: &str, setup: &Setup) {
    let caps = setup.config(type_name).capabilities();
    let Some(other) = WorkloadKind::ALL
        .into_iter()
        .find(|k| !caps.workloads.contains(k))
    else {
        // It takes every kind (the null target): nothing to refuse.
        assert_eq!(caps.workloads.len(), WorkloadKind::ALL.len(), "{type_name}");
        return;
    };
    let lab = Lab::new();
    let path = lab.write(
        "study.toml",
        &study(&lab, type_name, setup, other, 1, false),
    );
    let out = lab.run(&["check", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{type_name} took {other}: {stdout}");
    assert!(
        stderr.contains("study.toml:")
            && stderr.contains(&format!("a {type_name} target takes"))
            && stderr.contains(&format!("not {other} workloads")),
        "{type_name} {other}: {stderr}"
    );
}

/// The suite, once per target type: `module: "type" => setup`, the setup an
/// `Option<Setup>` (None: the target's server is not given here).
macro_rules! conformance {
    ($($module:ident: $type:literal => $setup:expr;)*) => {
        $(
            mod $module {
                use super::*;

                fn setup() -> Option<Setup> {
                    $setup
                }

                #[test]
                fn runs_what_it_declares() {
                    if let Some(s) = setup() {
                        super::runs_what_it_declares($type, &s);
                    }
                }

                #[test]
                fn refuses_what_it_does_not_take() {
                    if let Some(s) = setup() {
                        super::refuses_what_it_does_not_take($type, &s);
                    }
                }
            }
        )*

        #[test]
        fn every_target_type_is_in_the_suite() {
            let covered = [$($type),*];
            for row in REGISTRY {
                assert!(
                    covered.contains(&row.name),
                    "target type {} has no place in tests/conformance.rs",
                    row.name
                );
            }
        }
    };
}

/// A file of this test's own under `dir`, for a file-server target.
fn own_file(tag: &str) -> String {
    format!("storlab-conformance-{tag}-{}.dat", std::process::id())
}

fn redis() -> Option<Setup> {
    let url = server("STORLAB_TEST_REDIS_URL")?;
    let addr = url.trim_start_matches("redis://").split('/').next()?;
    let (host, port) = addr.rsplit_once(':')?;
    let prefix = format!("conformance{}:", std::process::id());
    Some(Setup::new(format!(
        "host = \"{host}\"\nport = {port}\nkey-prefix = \"{prefix}\""
    )))
}

fn memcached() -> Option<Setup> {
    let url = server("STORLAB_TEST_MEMCACHED_URL")?;
    let addr = url.trim_start_matches("memcache://").trim_end_matches('/');
    let (host, port) = addr.rsplit_once(':')?;
    // The test servers' own memcached, emptied first: a load's `add` of an item that an
    // earlier run left there fails.
    let mut conn = std::net::TcpStream::connect(addr).expect("connect to memcached");
    conn.write_all(b"flush_all\r\n").unwrap();
    let mut reply = [0u8; 4];
    conn.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"OK\r\n");
    Some(Setup::new(format!("host = \"{host}\"\nport = {port}")))
}

fn postgres() -> Option<Setup> {
    let url = server("STORLAB_TEST_POSTGRES_URL")?;
    let mut s = Setup::new(format!("url = \"{url}\""));
    s.ycsb_table = format!("conformance_{}", std::process::id());
    Some(s)
}

fn mongodb() -> Option<Setup> {
    let url = server("STORLAB_TEST_MONGODB_URL")?;
    let base = url.trim_end_matches('/');
    let (base, query) = base.split_once('?').unwrap_or((base, "w=1"));
    let db = format!("conformance{}", std::process::id());
    let query = if query.is_empty() { "w=1" } else { query };
    Some(Setup::new(format!(
        "url = \"{}/{db}?{query}\"",
        base.trim_end_matches('/')
    )))
}

fn smb() -> Option<Setup> {
    let url = server("STORLAB_SMB_URL")?;
    let url = url.trim_end_matches('/');
    Some(Setup::new(format!(
        "url = \"{url}/{}\"\nsize = \"4MiB\"",
        own_file("smb")
    )))
}

fn nfs() -> Option<Setup> {
    let server_url = server("STORLAB_NFS_SERVER")?;
    let url = server_url.trim_end_matches('/');
    Some(Setup::new(format!(
        "url = \"{url}/export1/{}\"\nsize = \"4MiB\"",
        own_file("nfs")
    )))
}

conformance! {
    null: "null" => Some(Setup::new(String::new()));
    file: "file" => Some(Setup::new("path = \"{lab}/data.bin\"\nsize = \"8MiB\"".into()));
    fileops: "fileops" => Some(Setup::new("path = \"{lab}/ops.bin\"\nsize = \"8MiB\"\noperation = \"allocate\"".into()));
    rocksdb: "rocksdb" => Some(Setup::new("path = \"{lab}/rocksdb\"".into()));
    redis: "redis" => super::redis();
    postgres: "postgres" => super::postgres();
    mongodb: "mongodb" => super::mongodb();
    smb: "smb" => super::smb();
    nfs: "nfs" => super::nfs();
    memcached: "memcached" => super::memcached();
    dataset: "dataset" => Some(Setup::new("path = \"{lab}/datasets\"".into()));
}
