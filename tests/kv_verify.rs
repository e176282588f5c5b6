//! Verified key-value writes (`verify = true` on a ycsb workload), run by the real binary:
//! honest RocksDB and Redis runs report every key intact (every key loaded is checked);
//! records damaged after the run are found by `storlab verify` from the saved table, each in
//! its class; and a Redis server killed with SIGKILL and started again loses exactly the keys
//! acknowledged before the kill without persistence, and none with `--appendonly yes
//! --appendfsync always`.
//!
//! Redis comes from `scripts/servers.sh start DIR` (`. DIR/env.sh`: STORLAB_TEST_REDIS_URL);
//! the kill tests start a `redis-server` of their own. Without them a test is skipped with a
//! printed reason, unless STORLAB_REQUIRE_SERVERS is set: then it fails. RocksDB is embedded
//! and always runs.

mod common;

use std::process::Command;

use common::{Lab, server, text};
use storlab_workload::ycsb::InsertOrder;
use storlab_workload::ycsb::keys::write_key;

/// A load of `records` records and a run mixing reads, updates, read-modify-writes and
/// inserts over 4 threads (zipfian: hot keys written by several threads at once), both
/// verified, the run's table saved.
fn study(target: &str, load_queue_depth: u32, records: u64) -> String {
    format!(
        r#"name = "kv-verify"
[targets.kv]
{target}

[workloads.load]
type = "ycsb"
phase = "load"
record-count = {records}
threads = 2
queue-depth = {load_queue_depth}
verify = true

[workloads.run]
type = "ycsb"
phase = "run"
record-count = {records}
operation-count = 6000
read-proportion = 0.3
update-proportion = 0.4
read-modify-write-proportion = 0.1
insert-proportion = 0.2
request-distribution = "zipfian"
data-integrity = true
threads = 4
verify = true
verify-state = "state/kv.vstate"

[[steps]]
name = "load"
workload = "load"
targets = ["kv"]

[[steps]]
name = "run"
workload = "run"
targets = ["kv"]
"#
    )
}

/// The summaries of the study's runs, in order.
fn summaries(lab: &Lab) -> Vec<serde_json::Value> {
    let study = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("study folder");
    let mut runs: Vec<_> = std::fs::read_dir(&study)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("summary.json"))
        .filter(|p| p.exists())
        .collect();
    runs.sort();
    runs.iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

fn keys(v: &serde_json::Value, class: &str) -> u64 {
    v[class]["keys"]
        .as_u64()
        .unwrap_or_else(|| panic!("{class}: {v}"))
}

fn first_keys(v: &serde_json::Value, class: &str) -> Vec<String> {
    v[class]["first-keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect()
}

/// Every key checked is intact, and the run had no error (reads checked the stamps too).
fn assert_all_intact(s: &serde_json::Value) -> u64 {
    let v = &s["targets"][0]["verify"];
    assert_eq!(v["kind"], "key-value", "{v}");
    for class in ["lost", "missing", "corrupt", "unreadable"] {
        assert_eq!(keys(v, class), 0, "{class}: {v}");
    }
    let checked = v["keys-checked"].as_u64().unwrap();
    assert_eq!(keys(v, "intact"), checked, "{v}");
    assert_eq!(v["untracked-writes"], 0, "{v}");
    assert_eq!(s["total"]["errors"], 0, "{s}");
    checked
}

/// Runs the honest study; returns the lab, the run step's keys checked and the output.
fn honest(target: &str, load_queue_depth: u32) -> (Lab, u64) {
    let lab = Lab::new();
    let path = lab.write("kv.toml", &study(target, load_queue_depth, 2000));
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let s = summaries(&lab);
    assert_eq!(s.len(), 2);
    // The load: every record inserted is checked, and intact.
    assert_eq!(assert_all_intact(&s[0]), 2000, "{}", s[0]);
    let checked = assert_all_intact(&s[1]);
    // The run wrote some hundreds of distinct keys, of the records and inserted ones.
    assert!(checked > 500, "{}", s[1]);
    assert!(stderr.contains("keys checked") || stdout.contains("keys checked"));
    // The results store has the pass, as a key-value one.
    let db = rusqlite::Connection::open(lab.results().join("results.db")).unwrap();
    let (n, kind): (i64, String) = db
        .query_row(
            "SELECT blocks, kind FROM verify WHERE class = 'intact' ORDER BY rowid DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n as u64, kind.as_str()), (checked, "key-value"));
    (lab, checked)
}

/// The saved state: (generation base, per key (acked, floor, failed)).
fn state(lab: &Lab) -> (u64, Vec<(u32, u32, u32)>) {
    let bytes = std::fs::read(lab.path().join("state/kv.vstate")).unwrap();
    let mut lines = bytes.splitn(3, |b| *b == b'\n');
    assert_eq!(lines.next().unwrap(), b"storlab-kv-verify-state 1");
    let meta: serde_json::Value = serde_json::from_slice(lines.next().unwrap()).unwrap();
    let entries = lines.next().unwrap();
    let u = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let keys = entries
        .chunks(12)
        .map(|c| (u(&c[0..]), u(&c[4..]), u(&c[8..])))
        .collect();
    (meta["generation-base"].as_u64().unwrap(), keys)
}

fn key_name(keynum: u64) -> String {
    let mut b = Vec::new();
    write_key(keynum, 1, InsertOrder::Hashed, &mut b);
    String::from_utf8(b).unwrap()
}

#[test]
fn rocksdb_verified_runs_are_intact_and_damage_is_found_from_the_state() {
    let (lab, checked) = honest("type = \"rocksdb\"\npath = \"db\"", 1);

    // `storlab verify` from the saved table, elsewhere: the same keys, all intact.
    let state_path = lab.path().join("state/kv.vstate");
    let o = Command::new(common::bin())
        .args(["verify", state_path.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["keys-checked"].as_u64(), Some(checked), "{r}");
    assert_eq!(keys(&r, "intact"), checked, "{r}");

    // Damage three keys written by the run: one deleted, one holding an earlier run's
    // write (stamped with a generation below this table's), one with a byte changed.
    let (base, entries) = state(&lab);
    let written: Vec<u64> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.0 > 0)
        .map(|(k, _)| k as u64)
        .take(3)
        .collect();
    let [gone, older, changed] = [written[0], written[1], written[2]];
    {
        let db = rocksdb::DB::open_default(lab.path().join("db")).unwrap();
        db.delete(key_name(gone)).unwrap();
        for (keynum, restamp) in [(older, true), (changed, false)] {
            let key = key_name(keynum);
            let value = db.get(&key).unwrap().unwrap();
            let mut fields: Vec<Vec<u8>> = vec![Vec::new(); 10];
            assert!(storlab_workload::ycsb::record::decode_record(
                &value,
                |i, v| { fields[i] = v.to_vec() }
            ));
            if restamp {
                for (i, f) in fields.iter_mut().enumerate() {
                    let name = format!("field{i}");
                    storlab_verify::kv::header::stamp(
                        f,
                        key.as_bytes(),
                        name.as_bytes(),
                        keynum,
                        base - 1,
                    );
                }
            } else {
                fields[4][60] ^= 1;
            }
            let mut enc = Vec::new();
            storlab_workload::ycsb::record::encode_record(&fields, &mut enc);
            db.put(&key, &enc).unwrap();
        }
    }
    let o = lab.run(&["verify", "state/kv.vstate", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(first_keys(&r, "missing"), [key_name(gone)], "{r}");
    assert_eq!(first_keys(&r, "lost"), [key_name(older)], "{r}");
    assert_eq!(first_keys(&r, "corrupt"), [key_name(changed)], "{r}");
    assert_eq!(keys(&r, "intact"), checked - 3, "{r}");
}

#[test]
fn redis_verified_runs_are_intact() {
    let Some(url) = server("STORLAB_TEST_REDIS_URL") else {
        return;
    };
    let addr = url
        .trim_start_matches("redis://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let (host, port) = addr.rsplit_once(':').unwrap();
    // A database of its own, emptied first.
    let client = redis::Client::open(format!("redis://{addr}/7")).unwrap();
    let mut conn = client.get_connection().unwrap();
    let _: () = redis::cmd("FLUSHDB").query(&mut conn).unwrap();
    // The load pipelined 16 inserts at a time.
    honest(
        &format!("type = \"redis\"\nhost = \"{host}\"\nport = {port}\ndatabase = 7"),
        16,
    );
}

/// A Redis Cluster (`scripts/rediscluster.sh`) at queue depth 16: every insert is sent and
/// timed alone (a cluster's pipeline would go command by command, each insert timed to the
/// last reply), the summary says so, and every key is intact.
#[test]
fn redis_cluster_verified_runs_are_intact_each_insert_timed_alone() {
    let Some(seeds) = server("STORLAB_REDIS_CLUSTER_URLS") else {
        return;
    };
    let prefix = format!("kvverify{}:", std::process::id());
    let (lab, _) = honest(
        &format!(
            "type = \"redis\"\ncluster = true\nseeds = \"{seeds}\"\nkey-prefix = \"{prefix}\""
        ),
        16,
    );
    let s = summaries(&lab);
    let execution = s[0]["targets"][0]["session-used"]["execution"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        execution.starts_with("one insert at a time (queue depth 16 asked)"),
        "{}",
        s[0]
    );
}

fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One thread updates keys user0, user1, ... in order (one write per key) at 1,000 ops/s
/// for 3 s against a redis-server the study starts with `persistence`, kills with SIGKILL
/// at 1 s and starts again at 1.5 s. Returns the run's summary.
/// `expect`: the study's `verify-expect` line (the damage it declares, which then does not
/// fail the run), or "".
fn killed_redis(lab: &Lab, persistence: &[&str], expect: &str) -> serde_json::Value {
    let port = free_port();
    let dir = lab.path().display().to_string();
    let mut args = vec![
        "redis-server".to_string(),
        "--port".into(),
        port.to_string(),
        "--bind".into(),
        "127.0.0.1".into(),
        "--save".into(),
        String::new(),
        "--dir".into(),
        dir,
    ];
    args.extend(persistence.iter().map(|s| s.to_string()));
    let server = format!("{args:?}");
    let study = format!(
        r#"name = "kv-kill"
interval = "100ms"

[targets.redis]
type = "redis"
port = {port}
timeout = "1s"

[workloads.updates]
type = "ycsb"
phase = "run"
record-count = 100000
operation-count = 1000000000
read-proportion = 0
update-proportion = 1
request-distribution = "sequential"
insert-order = "ordered"
threads = 1
rate-ops = 1000
verify = true
{expect}

[[steps]]
workload = "updates"
targets = ["redis"]
duration = "3s"

[[steps.events]]
name = "redis"
action = "start"
before-step = true
command = {server}

[[steps.events]]
name = "redis-up"
action = "wait-for"
before-step = true
command = ["redis-cli", "-p", "{port}", "ping"]
timeout = "10s"

[[steps.events]]
name = "crash"
action = "kill"
signal = "KILL"
process = "redis"
at = "1s"
recovery = false

[[steps.events]]
name = "redis-again"
action = "start"
at = "1.5s"
command = {server}
"#
    );
    let path = lab.write("kill.toml", &study);
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    summaries(lab).remove(0)
}

fn redis_or_skip() -> bool {
    if have("redis-server") && have("redis-cli") {
        return true;
    }
    assert!(
        std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
        "redis-server or redis-cli is not installed and STORLAB_REQUIRE_SERVERS is set"
    );
    eprintln!("skipped: redis-server or redis-cli is not installed (scripts/servers.sh install)");
    false
}

/// The successful and failed updates of the run.
fn updates(s: &serde_json::Value) -> (u64, u64) {
    let u = &s["targets"][0]["kinds"]["update"];
    (u["ops"].as_u64().unwrap(), u["errors"].as_u64().unwrap())
}

/// Without persistence the restarted server is empty. Updates ran in key order, one per key:
/// the M acknowledged before the kill, then E failed ones (server down, never acknowledged,
/// not checked), then K acknowledged after the restart. Exactly the first M keys are
/// missing, the K after them and the failed ones are intact, nothing is lost otherwise.
#[test]
fn redis_killed_without_persistence_loses_every_key_acknowledged_before_the_kill() {
    if !redis_or_skip() {
        return;
    }
    let lab = Lab::new();
    // The keys lost with the server are what the study expects: the run succeeds.
    let s = killed_redis(
        &lab,
        &["--appendonly", "no"],
        r#"verify-expect = ["missing"]"#,
    );
    let v = &s["targets"][0]["verify"];
    let (ok, failed) = updates(&s);
    assert!(failed > 0, "the outage failed some updates: {s}");
    assert_eq!(v["keys-checked"].as_u64(), Some(ok), "{v}");
    let missing = keys(v, "missing");
    assert_eq!(v["expected"], serde_json::json!(["missing"]), "{v}");
    // About 1,000 updates before the kill at 1 s; and some after the restart.
    assert!(missing > 200, "{v}");
    assert!(keys(v, "intact") > 200, "{v}");
    assert_eq!(missing + keys(v, "intact"), ok, "{v}");
    for class in ["lost", "corrupt", "unreadable"] {
        assert_eq!(keys(v, class), 0, "{class}: {v}");
    }
    let user = |n: u64| format!("user{n}");
    assert_eq!(
        first_keys(v, "missing"),
        (0..16).map(user).collect::<Vec<_>>(),
        "{v}"
    );
    // The first key intact is the first acknowledged after the restart.
    assert_eq!(first_keys(v, "intact")[0], user(missing + failed), "{v}");
    assert!(
        s["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(&format!(
                "verify found {missing} of {ok} keys damaged (lost 0, missing {missing}"
            ))),
        "{s}"
    );
}

/// With every write synced to the append-only file before it is acknowledged, the restarted
/// server has every acknowledged update: nothing missing or lost.
#[test]
fn redis_killed_with_appendfsync_always_loses_nothing() {
    if !redis_or_skip() {
        return;
    }
    let lab = Lab::new();
    // Nothing declared and nothing damaged: the run succeeds.
    let s = killed_redis(
        &lab,
        &["--appendonly", "yes", "--appendfsync", "always"],
        "",
    );
    let v = &s["targets"][0]["verify"];
    let (ok, failed) = updates(&s);
    assert!(failed > 0, "the outage failed some updates: {s}");
    assert!(ok > 1000, "{s}");
    assert_eq!(v["keys-checked"].as_u64(), Some(ok), "{v}");
    assert_eq!(keys(v, "intact"), ok, "{v}");
    assert_eq!(first_keys(v, "intact")[0], "user0", "{v}");
    for class in ["lost", "missing", "corrupt", "unreadable"] {
        assert_eq!(keys(v, class), 0, "{class}: {v}");
    }
}

/// Where verification cannot work, `storlab check` says so with the file, line and key.
#[test]
fn check_refuses_verify_where_it_cannot_work() {
    let lab = Lab::new();
    for (extra, says) in [
        (
            "field-length = 20\noperation-count = 100",
            "field values must be at least 46 bytes (field-length), here 20",
        ),
        (
            "insert-proportion = 0.5\nupdate-proportion = 0.5\nread-proportion = 0\nmax-execution-time = 5",
            "needs operation-count to bound its inserts",
        ),
        (
            "read-proportion = 1\nupdate-proportion = 0\noperation-count = 100",
            "this workload writes none",
        ),
    ] {
        let path = lab.write(
            "bad.toml",
            &format!(
                "name = \"bad\"\n[targets.kv]\ntype = \"rocksdb\"\npath = \"db\"\n\n[workloads.w]\ntype = \"ycsb\"\nphase = \"run\"\nrecord-count = 100\n{extra}\nverify = true\n\n[[steps]]\nworkload = \"w\"\ntargets = [\"kv\"]\n"
            ),
        );
        let o = lab.run(&["check", path.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert!(!o.status.success(), "{extra}: {out}");
        assert!(err.contains(says), "{extra}: {err}");
        assert!(err.contains("bad.toml:"), "file and line: {err}");
    }
}
