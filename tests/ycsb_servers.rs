//! YCSB against real servers, beyond the conformance suite: the MongoDB brief's study in its
//! quick form (against FerretDB, printing the brief's four metrics), and servers that go away
//! in the middle of a run (Redis killed and restarted, PostgreSQL sessions terminated): the
//! lost operations are counted as errors, the sessions reconnect, and storlab finishes the run.
//!
//! Servers come from `scripts/servers.sh start DIR` (`. DIR/env.sh`); the Redis test starts a
//! `redis-server` of its own, since it kills it. Without them a test is skipped with a printed
//! reason, unless STORLAB_REQUIRE_SERVERS is set: then it fails.

mod common;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Lab, figures, get, server, text};

fn required() -> bool {
    std::env::var_os("STORLAB_REQUIRE_SERVERS").is_some()
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A MongoDB URL for database `db` on the server of `url`.
fn mongodb_url(url: &str, db: &str) -> String {
    let base = url.trim_end_matches('/');
    let (base, query) = base.split_once('?').map_or((base, ""), |(b, q)| (b, q));
    let base = base.trim_end_matches('/');
    if query.is_empty() {
        format!("{base}/{db}?w=1")
    } else {
        format!("{base}/{db}?{query}")
    }
}

#[test]
fn mongodb_study_quick_prints_the_briefs_four_metrics() {
    let Some(url) = server("STORLAB_TEST_MONGODB_URL") else {
        return;
    };
    let db = format!("study{}", std::process::id());
    let url = mongodb_url(&url, &db);
    let lab = Lab::new();
    // FerretDB's memory cgroup (scripts/servers.sh makes one as root): the study holds the
    // server to its own memory + 0.326 of the database for the run, and puts it back.
    let cgroup = std::env::var("STORLAB_TEST_MONGODB_CGROUP").unwrap_or_default();
    assert!(
        !cgroup.is_empty()
            || !common::is_root()
            || std::env::var_os("STORLAB_REQUIRE_ROOT").is_none(),
        "scripts/servers.sh made no memory cgroup for FerretDB, as root"
    );
    let limit_file = ["memory.max", "memory.limit_in_bytes"]
        .map(|f| Path::new(&cgroup).join(f))
        .into_iter()
        .find(|f| !cgroup.is_empty() && f.is_file());
    let limit_before = limit_file
        .as_ref()
        .map(|f| std::fs::read_to_string(f).unwrap());
    // From the repository, as a user runs it: the workload file is relative to it.
    let out = lab
        .cmd()
        .current_dir(repo())
        .env("STORLAB_MONGODB_URL", &url)
        .env("STORLAB_MONGODB_CGROUP", &cgroup)
        .args(["run", "studies/ycsb-mongodb.toml", "--quick"])
        .output()
        .expect("run storlab");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The load inserted the quick scale's 1,000 records, without an error.
    let load = stdout
        .lines()
        .find(|l| l.starts_with("mongodb  insert"))
        .unwrap_or_else(|| panic!("no load row:\n{stdout}"));
    let cells: Vec<&str> = load.split_whitespace().collect();
    assert_eq!(cells[2], "1000", "{load}");
    assert_eq!(cells.last(), Some(&"0"), "{load}");
    // The brief's four metrics, each measured (above zero).
    let line = stdout
        .lines()
        .find(|l| l.starts_with("mongodb ycsb: run time "))
        .unwrap_or_else(|| panic!("no ycsb line:\n{stdout}"));
    let number_after = |label: &str| -> f64 {
        let rest = &line[line
            .find(label)
            .unwrap_or_else(|| panic!("{label}: {line}"))
            + label.len()..];
        rest.split([' ', ','])
            .find(|w| !w.is_empty())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{label}: {line}"))
    };
    assert!(number_after("run time ") > 0.0, "{line}");
    assert!(number_after("throughput ") > 0.0, "{line}");
    assert!(number_after("average read latency ") > 0.0, "{line}");
    assert!(number_after("average update latency ") > 0.0, "{line}");
    // The table has p95 and p99 per operation, and every read found its record.
    assert!(
        stdout.contains(" p95 ") && stdout.contains(" p99 "),
        "{stdout}"
    );
    let found = stdout
        .lines()
        .find(|l| l.starts_with("mongodb read: "))
        .unwrap_or_else(|| panic!("no found line:\n{stdout}"));
    let words: Vec<&str> = found.split_whitespace().collect();
    assert_eq!(words[2], words[4], "{found}");
    // The stored summary says the same 1,000 operations and no error.
    let summaries = std::fs::read_dir(lab.results())
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("ycsb-mongodb-"))
        .expect("study folder");
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(summaries.path().join("run-002/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s["total"]["ops"], 1000, "{s}");
    assert_eq!(s["total"]["errors"], 0, "{s}");
    assert_eq!(s["targets"][0]["workload-type"], "ycsb-run", "{s}");
    // The report opens with the brief's four metrics for the run phase (the load is not a
    // row of the brief's table).
    let out = Command::new(common::bin())
        .args(["report", "--format", "md", "-o", "-"])
        .arg(summaries.path())
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{md}");
    let at = |title: &str| {
        md.find(title)
            .unwrap_or_else(|| panic!("no {title}:\n{md}"))
    };
    assert!(
        at("### YCSB") < at("### Throughput"),
        "the brief's table first:\n{md}"
    );
    // What each run set of the server's memory: nothing for the load (an empty database),
    // the limit for workload A; and the limit put back after.
    if let Some(f) = &limit_file {
        let said = md
            .lines()
            .find(|l| l.starts_with("- **mongodb**: "))
            .unwrap_or_else(|| panic!("no tested line:\n{md}"));
        assert!(
            said.contains("Server memory: run 1: the database is empty")
                && said.contains("; run 2: memory.")
                && said.contains(" + 0.326 x the database's "),
            "{said}"
        );
        assert_eq!(
            std::fs::read_to_string(f).ok(),
            limit_before,
            "{}",
            f.display()
        );
    }
    let ycsb: Vec<&str> = md[at("### YCSB")..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(ycsb.len(), 3, "header, rule, workload-a: {md}");
    assert!(
        ycsb[0].contains("| run time | ops/s | mean read latency | mean update latency |"),
        "{md}"
    );
    assert!(ycsb[2].starts_with("| workload-a | mongodb | "), "{md}");
    // The study names the brief's published figures: beside the run's, in the HTML too.
    assert!(
        md.contains("## Published figures: kioxia-xd6-mongodb"),
        "{md}"
    );
    let page = lab.path().join("ycsb-mongodb.html");
    let out = Command::new(common::bin())
        .args(["report", "-o", page.to_str().unwrap()])
        .arg(summaries.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    common::shot::first_screen(&page, "brief-ycsb-mongodb");
    let client = mongodb::sync::Client::with_uri_str(&url).unwrap();
    client.database(&db).drop().run().unwrap();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "nothing answers on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A redis-server of the test's own, without persistence (a restart comes back empty).
fn start_redis(port: u16, dir: &Path) -> Child {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start redis-server");
    wait_for_port(port);
    child
}

#[test]
fn redis_killed_mid_run_gives_counted_errors_then_reconnection() {
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            !required(),
            "redis-server is not installed and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!("skipped: redis-server is not installed (scripts/servers.sh install)");
        return;
    }
    let lab = Lab::new();
    let port = free_port();
    let mut redis = start_redis(port, lab.path());
    let workload = repo().join("workloads/workloada");
    let common: Vec<String> = vec![
        "-P".into(),
        workload.display().to_string(),
        "-p".into(),
        "redis.host=127.0.0.1".into(),
        "-p".into(),
        format!("redis.port={port}"),
        "-p".into(),
        "recordcount=1000".into(),
    ];
    let out = lab
        .cmd()
        .args(["ycsb", "load", "redis"])
        .args(&common)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        get(&figures(&stdout), "[INSERT], Return=OK"),
        1000,
        "{stdout}"
    );

    // Six seconds at 1,000 ops/s; Redis is killed after 2 s and back 1 s later, empty.
    let run = lab
        .cmd()
        .args(["ycsb", "run", "redis"])
        .args(&common)
        .args([
            "-p",
            "operationcount=1000000000",
            "-p",
            "maxexecutiontime=6",
        ])
        .args(["-threads", "2", "-target", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    redis.kill().unwrap();
    redis.wait().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let mut redis = start_redis(port, lab.path());
    let out = run.wait_with_output().unwrap();
    redis.kill().unwrap();
    redis.wait().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let f = figures(&stdout);
    let errors = get(&f, "[READ], Return=ERROR") + get(&f, "[UPDATE], Return=ERROR");
    // About a second of operations failed (1,000 ops/s): counted, not a crash.
    assert!(errors >= 100, "errors {errors}\n{stdout}");
    // Before the kill reads found the loaded records; after the restart the sessions
    // reconnected to an empty server, where reads find nothing and updates create records.
    assert!(get(&f, "[READ], Return=OK") >= 500, "{stdout}");
    assert!(get(&f, "[READ], Return=NOT_FOUND") >= 200, "{stdout}");
    let timeline = std::fs::read_dir(lab.results())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.path().join("run-001/timeline.csv"))
        .filter(|p| p.exists())
        .max_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap())
        .expect("timeline of the run");
    // Per second: operations and errors. After the last second with errors, operations
    // succeed again.
    let rows = std::fs::read_to_string(timeline).unwrap();
    let mut by_second: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
    for l in rows.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        let e = by_second.entry(c[0].parse().unwrap()).or_default();
        e.0 += c[4].parse::<u64>().unwrap();
        e.1 += c[8].parse::<u64>().unwrap();
    }
    let last_error = by_second
        .iter()
        .filter(|(_, (_, e))| *e > 0)
        .map(|(s, _)| *s)
        .max()
        .unwrap();
    let ok_after: u64 = by_second.range(last_error + 1..).map(|(_, (o, _))| o).sum();
    assert!(
        ok_after >= 1000,
        "too few operations after the restart:\n{rows}"
    );
}

#[test]
fn postgres_sessions_terminated_mid_run_reconnect() {
    let Some(url) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let lab = Lab::new();
    let app = format!("storlab_kill_{}", std::process::id());
    let table = format!("kill_{}", std::process::id());
    let rest = url.split_once("://").map(|(_, r)| r).unwrap();
    let sep = if rest.contains('?') { '&' } else { '?' };
    let jdbc = format!("jdbc:postgresql://{rest}{sep}application_name={app}");
    let workload = repo().join("workloads/workloada");
    let common: Vec<String> = vec![
        "-P".into(),
        workload.display().to_string(),
        "-p".into(),
        format!("db.url={jdbc}"),
        "-p".into(),
        format!("table={table}"),
        "-p".into(),
        "recordcount=500".into(),
    ];
    let out = lab
        .cmd()
        .args(["ycsb", "load", "jdbc"])
        .args(&common)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");

    let run = lab
        .cmd()
        .args(["ycsb", "run", "jdbc"])
        .args(&common)
        .args([
            "-p",
            "operationcount=1000000000",
            "-p",
            "maxexecutiontime=5",
        ])
        .args(["-threads", "2", "-target", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let terminated: i64 = admin
        .query_one(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t",
            &[&app],
        )
        .unwrap()
        .get(0);
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    admin
        .batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
        .unwrap();
    assert_eq!(terminated, 2, "one session per worker");
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let f = figures(&stdout);
    let errors = get(&f, "[READ], Return=ERROR") + get(&f, "[UPDATE], Return=ERROR");
    // Each worker loses the operation in flight (or the next one) and reconnects.
    assert!((1..=10).contains(&errors), "errors {errors}\n{stdout}");
    let ok = get(&f, "[READ], Return=OK") + get(&f, "[UPDATE], Return=OK");
    assert!(ok >= 2000, "ok {ok}\n{stdout}");
}

#[test]
fn postgres_pool_shares_fewer_connections_than_threads() {
    let Some(url) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let lab = Lab::new();
    let app = format!("storlab_pool_{}", std::process::id());
    let table = format!("pool_{}", std::process::id());
    let rest = url.split_once("://").map(|(_, r)| r).unwrap();
    let sep = if rest.contains('?') { '&' } else { '?' };
    let jdbc = format!("jdbc:postgresql://{rest}{sep}application_name={app}");
    let workload = repo().join("workloads/workloada");
    let common: Vec<String> = vec![
        "-P".into(),
        workload.display().to_string(),
        "-p".into(),
        format!("db.url={jdbc}"),
        "-p".into(),
        format!("table={table}"),
        "-p".into(),
        "recordcount=500".into(),
        "-p".into(),
        "db.poolsize=2".into(),
        "-threads".into(),
        "8".into(),
    ];
    let out = lab
        .cmd()
        .args(["ycsb", "load", "jdbc"])
        .args(&common)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        get(&figures(&stdout), "[INSERT], Return=OK"),
        500,
        "{stdout}"
    );
    let run = lab
        .cmd()
        .args(["ycsb", "run", "jdbc"])
        .args(&common)
        .args([
            "-p",
            "operationcount=1000000000",
            "-p",
            "maxexecutiontime=3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let sessions: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&app],
        )
        .unwrap()
        .get(0);
    let out = run.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    admin
        .batch_execute(&format!("DROP TABLE IF EXISTS {table}"))
        .unwrap();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Eight threads, two connections.
    assert_eq!(sessions, 2, "{stdout}");
    let f = figures(&stdout);
    let errors = get(&f, "[READ], Return=ERROR") + get(&f, "[UPDATE], Return=ERROR");
    assert_eq!(errors, 0, "{stdout}");
    assert_eq!(get(&f, "[READ], Return=NOT_FOUND"), 0, "{stdout}");
    assert!(get(&f, "[READ], Return=OK") > 100, "{stdout}");
}
