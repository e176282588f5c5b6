//! One YCSB conformance suite, run against every database target through the real binary
//! (`storlab ycsb load|run DB ...`): load with `dataintegrity`, then check that every record
//! is there with all its fields at their lengths and values (a sequential read of every key),
//! run workloads A to F with verification, read every record again after the updates, and
//! show that the check can fail (reading with another field length must mismatch every
//! record read).
//!
//! Servers come from the environment, as `scripts/servers.sh start DIR` writes it to
//! `DIR/env.sh`: STORLAB_TEST_REDIS_URL, STORLAB_TEST_POSTGRES_URL, STORLAB_TEST_MONGODB_URL.
//! A test whose server is not given is skipped with a printed reason, unless
//! STORLAB_REQUIRE_SERVERS is set: then it fails. RocksDB is embedded and always runs.

mod common;

use std::collections::HashMap;

use common::{Lab, figures, get, server, text};

/// How to reach one database through YCSB's command line.
struct Db {
    /// The binding name.
    binding: &'static str,
    /// Its `-p` properties.
    props: Vec<String>,
    /// Records loaded and operations per run phase.
    records: u64,
    operations: u64,
}

fn ycsb(lab: &Lab, db: &Db, phase: &str, workload: &str, extra: &[&str]) -> HashMap<String, f64> {
    let file = format!("{}/workloads/{workload}", env!("CARGO_MANIFEST_DIR"));
    let mut args: Vec<String> = vec![
        "ycsb".into(),
        phase.into(),
        db.binding.into(),
        "-P".into(),
        file,
    ];
    for p in db
        .props
        .iter()
        .map(String::as_str)
        .chain(["dataintegrity=true", "maxscanlength=10"])
        .chain(extra.iter().copied())
    {
        args.push("-p".into());
        args.push(p.into());
    }
    if !extra.iter().any(|e| e.starts_with("recordcount=")) {
        args.push("-p".into());
        args.push(format!("recordcount={}", db.records));
    }
    let mut cmd = lab.cmd();
    cmd.args(&args);
    let out = cmd.output().expect("run storlab");
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "storlab {}: {stdout}\n{stderr}",
        args.join(" ")
    );
    let f = figures(&stdout);
    // No operation failed, whatever the phase.
    for (k, v) in &f {
        assert!(
            !k.contains("Return=ERROR") && !k.starts_with("[ERRORS]"),
            "{workload} {phase}: {k} = {v}\n{stdout}"
        );
    }
    f
}

/// Reads every loaded key once, in key-number order, verifying every field.
fn read_every_record(lab: &Lab, db: &Db, when: &str) {
    let f = ycsb(
        lab,
        db,
        "run",
        "workloadc",
        &[
            "requestdistribution=sequential",
            &format!("operationcount={}", db.records),
            "threadcount=1",
        ],
    );
    assert_eq!(get(&f, "[READ], Return=OK"), db.records, "{when}: {f:?}");
    assert_eq!(get(&f, "[READ], Return=NOT_FOUND"), 0, "{when}: {f:?}");
    assert_eq!(get(&f, "[VERIFY], Return=OK"), db.records, "{when}: {f:?}");
    assert_eq!(
        get(&f, "[VERIFY], Return=UNEXPECTED_STATE"),
        0,
        "{when}: {f:?}"
    );
}

/// The suite: the same for every target.
fn conformance(db: Db) {
    let lab = Lab::new();
    let f = ycsb(&lab, &db, "load", "workloada", &["threadcount=2"]);
    assert_eq!(get(&f, "[INSERT], Return=OK"), db.records, "load: {f:?}");
    read_every_record(&lab, &db, "after the load");

    let ops = format!("operationcount={}", db.operations);
    for w in ["a", "b", "c", "d", "e", "f"] {
        // Workload D's inserts took the keys after the records: E inserts after those (the
        // databases with a unique key would refuse the same keys again).
        let after_d = format!("recordcount={}", db.records + db.operations);
        let records = format!("insertcount={}", db.records);
        let mut extra = vec![ops.as_str(), "threadcount=2"];
        if w == "e" {
            extra.extend([after_d.as_str(), records.as_str()]);
        }
        let f = ycsb(&lab, &db, "run", &format!("workload{w}"), &extra);
        let done: u64 = ["READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE"]
            .iter()
            .map(|k| get(&f, &format!("[{k}], Operations")))
            .sum();
        assert_eq!(done, db.operations, "workload {w}: {f:?}");
        for k in ["READ", "UPDATE", "SCAN", "READ-MODIFY-WRITE"] {
            assert_eq!(
                get(&f, &format!("[{k}], Return=NOT_FOUND")),
                0,
                "workload {w}: {f:?}"
            );
            assert_eq!(
                get(&f, &format!("[{k}], Return=UNEXPECTED_STATE")),
                0,
                "workload {w}: {f:?}"
            );
        }
        assert_eq!(
            get(&f, "[VERIFY], Return=UNEXPECTED_STATE"),
            0,
            "workload {w}: {f:?}"
        );
        assert!(
            get(&f, "[VERIFY], Return=OK") > 0 || w == "e" && get(&f, "[SCAN], Operations") == 0
        );
    }
    read_every_record(&lab, &db, "after workloads A-F");

    // The check can fail: values of another length are not the ones written.
    let f = ycsb(
        &lab,
        &db,
        "run",
        "workloadc",
        &["operationcount=50", "fieldlength=99", "threadcount=1"],
    );
    assert_eq!(get(&f, "[VERIFY], Return=UNEXPECTED_STATE"), 50, "{f:?}");
    assert_eq!(get(&f, "[READ], Return=UNEXPECTED_STATE"), 50, "{f:?}");
}

#[test]
fn rocksdb_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance(Db {
        binding: "rocksdb",
        props: vec![format!("rocksdb.dir={}", dir.path().join("db").display())],
        records: 2000,
        operations: 4000,
    });
}

#[test]
fn null_target_runs_every_workload() {
    // The null target stores nothing: only the phases' counts and the absence of errors hold.
    let lab = Lab::new();
    let db = Db {
        binding: "basic",
        props: Vec::new(),
        records: 1000,
        operations: 5000,
    };
    for w in ["a", "b", "c", "d", "e", "f"] {
        let f = ycsb(
            &lab,
            &db,
            "run",
            &format!("workload{w}"),
            &["operationcount=5000"],
        );
        assert!(f["[OVERALL], Throughput(ops/sec)"] > 0.0);
    }
}

#[test]
fn redis_conforms() {
    let Some(url) = server("STORLAB_TEST_REDIS_URL") else {
        return;
    };
    // A database of its own, emptied first.
    let addr = url
        .trim_start_matches("redis://")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let (host, port) = addr.rsplit_once(':').unwrap();
    let client = redis::Client::open(format!("redis://{addr}/0")).unwrap();
    let mut conn = client.get_connection().unwrap();
    let _: () = redis::cmd("FLUSHDB").query(&mut conn).unwrap();
    conformance(Db {
        binding: "redis",
        // Pipelined: inserts go 16 at a time (the load and workload D), the rest one by one.
        props: vec![
            format!("redis.host={host}"),
            format!("redis.port={port}"),
            "redis.pipeline=16".into(),
        ],
        records: 2000,
        operations: 4000,
    });
}

#[test]
fn postgres_conforms() {
    let Some(url) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let table = format!("conformance_{}", std::process::id());
    let jdbc = format!(
        "jdbc:postgresql://{}",
        url.split_once("://").map(|(_, rest)| rest).unwrap()
    );
    conformance(Db {
        binding: "jdbc",
        props: vec![format!("db.url={jdbc}"), format!("table={table}")],
        records: 1000,
        operations: 1000,
    });
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(&format!("DROP TABLE {table}")).unwrap();
}

#[test]
fn mongodb_conforms() {
    let Some(url) = server("STORLAB_TEST_MONGODB_URL") else {
        return;
    };
    // A database of its own; FerretDB on SQLite is slow, so the counts are small.
    let base = url.trim_end_matches('/');
    let (base, query) = base.split_once('?').map_or((base, ""), |(b, q)| (b, q));
    let db = format!("conformance{}", std::process::id());
    let url = if query.is_empty() {
        format!("{}/{db}?w=1", base.trim_end_matches('/'))
    } else {
        format!("{}/{db}?{query}", base.trim_end_matches('/'))
    };
    conformance(Db {
        binding: "mongodb",
        props: vec![format!("mongodb.url={url}"), "batchsize=20".into()],
        records: 300,
        operations: 300,
    });
    let client = mongodb::sync::Client::with_uri_str(&url).unwrap();
    client.database(&db).drop().run().unwrap();
}
