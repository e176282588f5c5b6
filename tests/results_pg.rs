//! A lab's results in one place (issue 30, part 1): a results store in PostgreSQL
//! (`--store postgres://...`). Two storlab processes write to it at once and every run is
//! there, complete; a report made from the store alone (the run folders gone) equals, byte
//! for byte, the one made from the folders; pushing folders twice leaves the same rows; a
//! run whose store is down keeps its folders, says so, exits 4, and is pushed later.
//!
//! Uses the PostgreSQL 15 of scripts/servers.sh (STORLAB_TEST_POSTGRES_URL); each test makes
//! its own database and drops it. Skipped when the variable is absent, unless
//! STORLAB_REQUIRE_SERVERS is set.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Lab, server};

/// Two short runs of the null target (queue depth 1 and 4), in 100 ms intervals.
const STUDY: &str = r#"
name = "pg-store"
interval = "100ms"
[targets.null]
type = "null"
[workloads.w]
access = "random"
block-size = "4KiB"
[[steps]]
name = "s"
workload = "w"
targets = ["null"]
warmup = "0s"
duration = "500ms"
sweep.queue-depth = [1, 4]
"#;

/// A database of this test's own on the test server, dropped at the end.
struct TestDb {
    admin_url: String,
    name: String,
    /// The URL of the database (with its password).
    url: String,
}

impl TestDb {
    fn new(base_url: &str, test: &str) -> TestDb {
        let name = format!("storlab_{test}_{}", std::process::id());
        let (head, query) = base_url.split_once('?').unwrap_or((base_url, ""));
        let server = &head[..head.rfind('/').expect("a database in the URL")];
        let url = format!("{server}/{name}?{query}");
        let mut admin = postgres::Client::connect(base_url, postgres::NoTls).expect("connect");
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .expect("drop");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("the test role may create databases (scripts/servers.sh)");
        TestDb {
            admin_url: base_url.to_string(),
            name,
            url,
        }
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect")
    }

    /// Every row of the store, as text, in a fixed order (the files by content hash).
    fn dump(&self) -> Vec<String> {
        let mut c = self.client();
        let mut out = Vec::new();
        for (table, order) in [
            ("runs", "run_id"),
            ("events", "run_id, position"),
            ("recovery", "run_id, event"),
            ("verify", "run_id, target, class"),
            ("schema_version", "version"),
        ] {
            for r in c
                .query(
                    &format!("SELECT t::text FROM {table} t ORDER BY {order}"),
                    &[],
                )
                .expect("dump")
            {
                out.push(format!("{table}: {}", r.get::<_, String>(0)));
            }
        }
        for r in c
            .query(
                "SELECT run_id, name, md5(bytes), length(bytes) FROM run_files ORDER BY run_id, name",
                &[],
            )
            .expect("files")
        {
            let (id, name, md5, len): (String, String, String, i32) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            out.push(format!("run_files: {id} {name} {md5} {len}"));
        }
        out
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The password of a URL, to check it is never shown.
fn password(url: &str) -> String {
    let auth = url.split("://").nth(1).and_then(|r| r.split('@').next());
    auth.and_then(|a| a.split_once(':'))
        .map(|(_, p)| p.to_string())
        .expect("a password in the URL")
}

/// What storlab printed, stdout then stderr.
fn both(o: &Output) -> String {
    let (out, err) = common::text(o);
    out + &err
}

fn list(lab: &Lab, store: &str) -> Vec<serde_json::Value> {
    let out = lab
        .cmd()
        .args(["results", "list", "--json", "--store", store])
        .output()
        .expect("list");
    assert!(out.status.success(), "{}", both(&out));
    serde_json::from_slice(&out.stdout).expect("json list")
}

fn run_study(lab: &Lab, extra: &[&str]) -> Output {
    let study = lab.write("study.toml", STUDY);
    lab.cmd()
        .arg("run")
        .arg(&study)
        .args(["--quick", "-q"])
        .args(extra)
        .output()
        .expect("run storlab")
}

fn run_folders(study_folder: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(study_folder)
        .expect("study folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("run-"))
        })
        .collect();
    v.sort();
    v
}

/// The run ids of a study folder's runs, in order.
fn run_ids(study_folder: &Path) -> Vec<String> {
    run_folders(study_folder)
        .iter()
        .map(|f| {
            let s: serde_json::Value = serde_json::from_slice(
                &std::fs::read(f.join("summary.json")).expect("summary.json"),
            )
            .expect("summary");
            s["run-id"].as_str().expect("run-id").to_string()
        })
        .collect()
}

#[test]
fn two_storlab_processes_write_to_one_postgres_store_at_once() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "two_writers");
    // Two machines: each its own results folder, one shared store (made by whichever
    // opens it first: the schema is applied once).
    let (a, b) = (Lab::new(), Lab::new());
    let spawn = |lab: &Lab| {
        let study = lab.write("study.toml", STUDY);
        lab.cmd()
            .arg("run")
            .arg(&study)
            .args(["--quick", "-q"])
            .env("STORLAB_STORE", &db.url)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (pa, pb) = (spawn(&a), spawn(&b));
    let (oa, ob) = (
        pa.wait_with_output().expect("a"),
        pb.wait_with_output().expect("b"),
    );
    for o in [&oa, &ob] {
        assert!(o.status.success(), "{}", both(o));
        assert!(!both(o).contains(&password(&db.url)), "{}", both(o));
    }
    let rows = list(&a, &db.url);
    assert_eq!(rows.len(), 4, "{rows:#?}");
    for r in &rows {
        assert_eq!(r["status"], "complete", "{r:#?}");
        assert!(r["rate-ops"].as_f64().is_some_and(|x| x > 0.0), "{r:#?}");
    }
    let mut expected: Vec<String> = run_ids(&a.study_folder());
    expected.extend(run_ids(&b.study_folder()));
    expected.sort();
    let mut got: Vec<String> = rows
        .iter()
        .map(|r| r["run-id"].as_str().expect("id").to_string())
        .collect();
    got.sort();
    assert_eq!(got, expected);
    // Every run's six files, as its folder holds them; each schema version once.
    let dump = db.dump();
    assert_eq!(
        dump.iter().filter(|l| l.starts_with("run_files:")).count(),
        4 * 6,
        "{dump:#?}"
    );
    let versions: Vec<&String> = dump
        .iter()
        .filter(|l| l.starts_with("schema_version:"))
        .collect();
    assert_eq!(versions.len(), 3, "{versions:?}");
    for (folder, id) in run_folders(&a.study_folder())
        .iter()
        .zip(run_ids(&a.study_folder()))
    {
        let mut c = db.client();
        let hlog: Vec<u8> = c
            .query_one(
                "SELECT bytes FROM run_files WHERE run_id = $1 AND name = 'histograms.hlog'",
                &[&id],
            )
            .expect("hlog")
            .get(0);
        assert_eq!(
            hlog,
            std::fs::read(folder.join("histograms.hlog")).expect("hlog")
        );
    }
}

#[test]
fn a_report_from_the_store_alone_equals_the_one_from_the_folders() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "report");
    let lab = Lab::new();
    let out = run_study(&lab, &["--store", &db.url]);
    assert!(out.status.success(), "{}", both(&out));
    let study = lab.study_folder();
    let folders: Vec<String> = run_folders(&study)
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let ids = run_ids(&study);
    let report = |lab: &Lab, results: &[String], format: &str, out: &str, store: Option<&str>| {
        let mut c = lab.cmd();
        c.arg("report")
            .args(results)
            .args(["--format", format, "-o", out]);
        if let Some(s) = store {
            c.args(["--store", s]);
        }
        let o = c.output().expect("report");
        assert!(o.status.success(), "{}", both(&o));
        std::fs::read(lab.path().join(out)).expect("report file")
    };
    let from_folders: Vec<Vec<u8>> = ["md", "html", "csv"]
        .iter()
        .map(|f| report(&lab, &folders, f, &format!("folder.{f}"), None))
        .collect();
    // Another machine: a clean folder, and the run folders gone from this one.
    std::fs::remove_dir_all(lab.results()).expect("remove the results");
    let clean = Lab::new();
    // The study's folder name, as `results:` printed it, selects every run of the study, as
    // the folder does.
    let study_name = study.file_name().unwrap().to_str().unwrap().to_string();
    for (f, expected) in ["md", "html", "csv"].iter().zip(&from_folders) {
        for (how, results) in [("ids", ids.clone()), ("study", vec![study_name.clone()])] {
            let got = report(
                &clean,
                &results,
                f,
                &format!("store-{how}.{f}"),
                Some(&db.url),
            );
            assert!(
                &got == expected,
                "{f} by {how} differs:\n--- from the folders\n{}\n--- from the store\n{}",
                String::from_utf8_lossy(expected),
                String::from_utf8_lossy(&got)
            );
        }
    }
    // The HTML's latency charts came from the HDR log the store kept.
    let html = String::from_utf8_lossy(&from_folders[1]).to_string();
    assert!(!html.contains("histograms.hlog:"), "the HDR log was read");
    assert!(
        !clean.results().exists(),
        "nothing was written on the clean machine"
    );
}

#[test]
fn pushing_folders_twice_leaves_the_same_rows() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "push");
    let lab = Lab::new();
    let out = run_study(&lab, &[]); // into the folder's SQLite store
    assert!(out.status.success(), "{}", both(&out));
    let push = || {
        let o = lab
            .cmd()
            .args(["results", "push"])
            .arg(lab.study_folder())
            .env("STORLAB_STORE", &db.url)
            .output()
            .expect("push");
        assert!(o.status.success(), "{}", both(&o));
        assert!(both(&o).contains("2 runs, 0 incomplete"), "{}", both(&o));
        assert!(!both(&o).contains(&password(&db.url)), "{}", both(&o));
    };
    push();
    let first = db.dump();
    push();
    assert_eq!(db.dump(), first);
    assert_eq!(first.iter().filter(|l| l.starts_with("runs:")).count(), 2);
    assert_eq!(
        first.iter().filter(|l| l.starts_with("run_files:")).count(),
        2 * 6
    );
    let rows = list(&lab, &db.url);
    assert!(rows.iter().all(|r| r["status"] == "complete"), "{rows:#?}");
}

#[test]
fn a_run_whose_store_is_down_keeps_its_folders_says_so_and_is_pushed_later() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "down");
    // A port nothing listens on: the store is down.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let down = format!("postgres://storlab:hunter2secret@127.0.0.1:{port}/results?sslmode=disable");
    let lab = Lab::new();
    let out = run_study(&lab, &["--store", &down]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(text.contains("cannot be reached"), "{text}");
    assert!(text.contains("storlab results push"), "{text}");
    assert!(!text.contains("hunter2secret"), "{text}");
    let study = lab.study_folder();
    let folders = run_folders(&study);
    assert_eq!(folders.len(), 2);
    for f in &folders {
        for file in ["summary.json", "timeline.csv", "histograms.hlog"] {
            assert!(f.join(file).exists(), "{} lacks {file}", f.display());
        }
        let note = std::fs::read_to_string(f.join("store-unreachable.txt")).expect("the note");
        assert!(note.contains("storlab results push"), "{note}");
        assert!(!note.contains("hunter2secret"), "{note}");
        // The command pastes as it is: the URL without a password, no `***`.
        assert!(
            note.contains(&format!(
                "--store 'postgres://storlab@127.0.0.1:{port}/results?sslmode=disable'"
            )),
            "{note}"
        );
    }
    // Nothing anywhere in the folder holds the password (the command line is redacted).
    for f in common::walk(&lab.results()) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("hunter2secret"),
            "{} holds the password",
            f.display()
        );
    }
    // Later, the store up: the push uploads them, its URL without a password on the command
    // line (the password from PGPASSWORD, as libpq takes it), and removes the notes.
    let secret = password(&db.url);
    let bare = db.url.replacen(&format!(":{secret}@"), "@", 1);
    assert!(!bare.contains(&secret), "{bare}");
    let o = lab
        .cmd()
        .args(["results", "push"])
        .arg(&study)
        .args(["--store", &bare])
        .env("PGPASSWORD", &secret)
        .output()
        .expect("push");
    assert!(o.status.success(), "{}", both(&o));
    assert!(
        both(&o).contains("removed 2 store-unreachable.txt notes"),
        "{}",
        both(&o)
    );
    for f in &folders {
        assert!(!f.join("store-unreachable.txt").exists(), "{}", f.display());
    }
    let rows = list(&lab, &db.url);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r["status"] == "complete"), "{rows:#?}");
}

#[test]
fn a_store_lost_in_the_middle_of_a_study_stops_nothing_and_the_push_completes_it() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "lost");
    let lab = Lab::new();
    // Two runs of a second each (--quick keeps them so).
    let study = lab.write("study.toml", &STUDY.replace("500ms", "1s"));
    let child = lab
        .cmd()
        .arg("run")
        .arg(&study)
        .args(["--quick", "-q", "--store", &db.url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Once the first run is in the store, the server ends storlab's session.
    let mut admin = postgres::Client::connect(&base, postgres::NoTls).expect("connect");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let begun = db
            .client()
            .query("SELECT 1 FROM runs", &[])
            .map(|r| !r.is_empty())
            .unwrap_or(false);
        if begun {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never began"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ended: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            &[&db.name],
        )
        .expect("terminate")
        .get(0);
    assert!(ended >= 1, "storlab's session was ended");
    let out = child.wait_with_output().expect("wait");
    let text = both(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(text.contains("cannot be reached"), "{text}");
    let folders = run_folders(&lab.study_folder());
    assert_eq!(folders.len(), 2, "the second run ran: {text}");
    for f in &folders {
        assert!(f.join("summary.json").exists(), "{}", f.display());
        assert!(f.join("store-unreachable.txt").exists(), "{}", f.display());
    }
    let rows = list(&lab, &db.url);
    assert!(
        rows.iter().all(|r| r["status"] != "complete"),
        "no run was completed in the store: {rows:#?}"
    );
    let o = lab
        .cmd()
        .args(["results", "push"])
        .arg(lab.study_folder())
        .args(["--store", &db.url])
        .output()
        .expect("push");
    assert!(o.status.success(), "{}", both(&o));
    let rows = list(&lab, &db.url);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r["status"] == "complete"), "{rows:#?}");
}

/// A listener that accepts the connection and never answers (a hung server, a half-open
/// path): connecting gives up after the URL's connect_timeout, and the study runs on as with a
/// store that refuses: every run in its folder with the note, exit 4. Needs no server.
#[test]
fn a_store_that_never_answers_the_connection_is_unreachable_after_connect_timeout() {
    // The kernel completes the handshake into the listener's backlog; nothing reads.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let url = format!(
        "postgres://storlab:hunter2secret@127.0.0.1:{port}/results?sslmode=disable&connect_timeout=2"
    );
    let lab = Lab::new();
    let out = run_study(&lab, &["--store", &url]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains("cannot be reached") && text.contains("no answer within 2 s of connecting"),
        "{text}"
    );
    assert!(!text.contains("hunter2secret"), "{text}");
    let folders = run_folders(&lab.study_folder());
    assert_eq!(folders.len(), 2, "{text}");
    for f in &folders {
        assert!(f.join("summary.json").exists(), "{}", f.display());
        assert!(f.join("store-unreachable.txt").exists(), "{}", f.display());
    }
    drop(silent);
}

/// A TCP relay to `to` whose forwarding stops, both ways and for good, once `frozen` is set:
/// a server that stops answering mid-session (SIGSTOPped, hung) as its client sees it.
fn freezing_relay(to: String, frozen: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u16 {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = std::net::TcpStream::connect(&to) else {
                continue;
            };
            for (mut from, mut into) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let frozen = frozen.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 << 10];
                    while let Ok(n) = from.read(&mut buf) {
                        // Frozen: what arrives is held, never passed on; the sockets stay open.
                        while frozen.load(Ordering::Relaxed) {
                            std::thread::sleep(std::time::Duration::from_millis(50));
                        }
                        if n == 0 || into.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        }
    });
    port
}

/// A store that stops answering in the middle of a study (its server stopped, seen through a
/// relay that stops passing anything on): the statement waiting gives up after
/// STORLAB_STORE_TIMEOUT, the store is unreachable from then on, the study runs on and exits
/// 4, and the push completes it once the store answers again.
#[test]
fn a_store_that_stops_answering_mid_study_is_unreachable_after_its_statement_timeout() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "frozen");
    let (head, _) = db.url.split_once('?').unwrap_or((&db.url, ""));
    let after_at = &head[head.rfind('@').expect("user@host") + 1..];
    let host_port = after_at[..after_at.find('/').expect("/db")].to_string();
    let frozen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = freezing_relay(host_port.clone(), frozen.clone());
    let relayed = db.url.replace(&host_port, &format!("127.0.0.1:{port}"));
    let lab = Lab::new();
    let study = lab.write("study.toml", &STUDY.replace("500ms", "1s"));
    let child = lab
        .cmd()
        .arg("run")
        .arg(&study)
        .args(["--quick", "-q", "--store", &relayed])
        .env("STORLAB_STORE_TIMEOUT", "2")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Once the first run is in the store, the server stops answering.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !db
        .client()
        .query("SELECT 1 FROM runs", &[])
        .is_ok_and(|r| !r.is_empty())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never began"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    frozen.store(true, std::sync::atomic::Ordering::Relaxed);
    let out = child.wait_with_output().expect("wait");
    let text = both(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains("no answer within 2 s to a statement"),
        "{text}"
    );
    let folders = run_folders(&lab.study_folder());
    assert_eq!(folders.len(), 2, "the second run ran: {text}");
    for f in &folders {
        assert!(f.join("summary.json").exists(), "{}", f.display());
        assert!(f.join("store-unreachable.txt").exists(), "{}", f.display());
    }
    let o = lab
        .cmd()
        .args(["results", "push"])
        .arg(lab.study_folder())
        .args(["--store", &db.url])
        .output()
        .expect("push");
    assert!(o.status.success(), "{}", both(&o));
    let rows = list(&lab, &db.url);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert!(rows.iter().all(|r| r["status"] == "complete"), "{rows:#?}");
}

/// A store over TLS, with libpq's `sslmode` and `sslrootcert` (the role `storlab_tls` of
/// scripts/servers.sh may connect over TLS only, so a connection that works was encrypted):
/// `verify-full` against the servers' own CA connects; `require` connects without checking
/// the certificate; `disable` is refused by the server; `verify-full` against the system's
/// roots refuses the certificate the test CA signed.
#[test]
fn a_store_over_tls_is_verified_as_libpq_says() {
    let Some(tls_url) = server("STORLAB_TEST_POSTGRES_TLS_URL") else {
        return;
    };
    let lab = Lab::new();
    let list = |url: &str| {
        lab.cmd()
            .args(["results", "list", "--store", url])
            .output()
            .expect("storlab results list")
    };
    assert!(
        tls_url.contains("sslmode=verify-full&sslrootcert="),
        "{tls_url}"
    );
    let o = list(&tls_url);
    assert!(o.status.success(), "verify-full: {}", both(&o));
    let head = tls_url.split_once('?').expect("a query").0;
    let o = list(&format!("{head}?sslmode=require"));
    assert!(o.status.success(), "require: {}", both(&o));
    let o = list(&format!("{head}?sslmode=disable"));
    assert!(!o.status.success(), "disable was let in: {}", both(&o));
    assert!(both(&o).contains("no encryption"), "{}", both(&o));
    let o = list(&format!("{head}?sslmode=verify-full&sslrootcert=system"));
    assert!(
        !o.status.success(),
        "an unknown CA was trusted: {}",
        both(&o)
    );
    assert!(both(&o).contains("certificate"), "{}", both(&o));
    assert!(!both(&o).contains(&password(&tls_url)), "{}", both(&o));
}

/// mpirun's path, when this build and machine can run MPI (else skipped, or failing when
/// STORLAB_REQUIRE_SERVERS is set).
fn mpirun_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("mpirun"))
            .find(|p| p.is_file())
    });
    let missing = match (&found, cfg!(feature = "mpi")) {
        (Some(_), true) => return found,
        (None, _) => "mpirun is not installed (scripts/setup.sh installs openmpi-bin)",
        (Some(_), false) => "storlab is built without the `mpi` feature (--features mpi)",
    };
    assert!(
        std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
        "{missing}, and STORLAB_REQUIRE_SERVERS is set"
    );
    eprintln!("skipped: {missing}");
    None
}

#[test]
fn under_mpirun_rank_0_alone_writes_to_the_store() {
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let Some(mpirun) = mpirun_or_skip() else {
        return;
    };
    let db = TestDb::new(&base, "mpi");
    let lab = Lab::new();
    let study = lab.write("study.toml", STUDY);
    let out = std::process::Command::new(mpirun)
        .current_dir(lab.path())
        .args(["--allow-run-as-root", "--oversubscribe", "--timeout", "120"])
        .args(["-np", "2", "-x", "STORLAB_RESULTS", "-x", "STORLAB_STORE"])
        .arg(common::bin())
        .arg("run")
        .arg(&study)
        .args(["--quick", "-q"])
        .env("STORLAB_RESULTS", lab.results())
        .env("STORLAB_STORE", &db.url)
        .output()
        .expect("mpirun");
    assert!(out.status.success(), "{}", both(&out));
    // One study (rank 0's), its two runs once each, complete, with the ranks' tables.
    let ids = run_ids(&lab.study_folder());
    let rows = list(&lab, &db.url);
    let got: Vec<&str> = rows
        .iter()
        .map(|r| r["run-id"].as_str().expect("id"))
        .collect();
    assert_eq!(got, ids, "{rows:#?}");
    assert!(rows.iter().all(|r| r["status"] == "complete"), "{rows:#?}");
    let mut c = db.client();
    let summary: String = c
        .query_one("SELECT summary FROM runs WHERE run_id = $1", &[&ids[0]])
        .expect("summary")
        .get(0);
    let summary: serde_json::Value = serde_json::from_str(&summary).expect("json");
    assert_eq!(summary["distributed"]["ranks-total"], 2, "{summary:#}");
}

/// GET `path` from a server at `addr`: (status code, body).
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to storlab serve");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("response");
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers and body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("status line: {head}"));
    (status, body.to_string())
}

#[test]
fn storlab_serve_shows_a_postgres_store_whose_run_folders_are_elsewhere() {
    use std::io::BufRead;
    let Some(base) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let db = TestDb::new(&base, "serve");
    let lab = Lab::new();
    let out = run_study(&lab, &["--store", &db.url]);
    assert!(out.status.success(), "{}", both(&out));
    let ids = run_ids(&lab.study_folder());
    std::fs::remove_dir_all(lab.results()).expect("remove the results");
    let clean = Lab::new();
    let mut child = clean
        .cmd()
        .args(["serve", "--listen", "127.0.0.1:0", "--store", &db.url])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start storlab serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the address line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let pages = [
        "/".to_string(),
        "/?target=null".to_string(),
        format!("/run/{}", ids[0]),
        format!("/compare?run={}&run={}", ids[0], ids[1]),
        "/history?study=pg-store&target=null".to_string(),
    ];
    let answers: Vec<(u16, String)> = pages.iter().map(|p| http_get(&addr, p)).collect();
    let _ = child.kill();
    let _ = child.wait();
    for (page, (status, body)) in pages.iter().zip(&answers) {
        assert_eq!(*status, 200, "{page}: {body}");
        assert!(
            !body.contains(&password(&db.url)),
            "{page} shows the password"
        );
    }
    for id in &ids {
        assert!(answers[0].1.contains(id.as_str()), "the list lacks {id}");
        assert!(
            answers[1].1.contains(id.as_str()),
            "the filtered list lacks {id}"
        );
    }
    // The run's report came from the store's files: its figures, its latency chart.
    assert!(answers[2].1.contains("<svg"), "no chart in the run's page");
    assert!(answers[4].1.contains(&ids[1]), "the history lacks a run");
    assert!(!clean.results().exists(), "serving wrote a results folder");
    // The export of intervals reads the timelines from the store's files too.
    let csv = clean.path().join("intervals.csv");
    let out = clean.run(&[
        "results",
        "export",
        "--format",
        "csv",
        "--kind",
        "intervals",
        "--output",
        csv.to_str().expect("path"),
        "--store",
        &db.url,
    ]);
    assert!(out.status.success(), "{}", both(&out));
    let text = std::fs::read_to_string(&csv).expect("the export");
    for id in &ids {
        assert!(
            text.lines().filter(|l| l.contains(id.as_str())).count() >= 4,
            "{id} has fewer than 4 intervals in the export:\n{text}"
        );
    }
}
