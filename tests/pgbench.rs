//! pgbench's transactions against the test PostgreSQL (`scripts/servers.sh start DIR`,
//! `. DIR/env.sh`): the real binary initializes pgbench's tables at scale 1 (in a schema of
//! the test's own), runs the tpcb-like script with the lost-transaction ledger and the
//! select-only script for a second each, and the database then passes the balance check
//! pgbench users know: sum of abalance = sum of bbalance = sum of tbalance = sum of history's
//! delta, with one history row per acknowledged transaction and none lost. Without the server
//! the test is skipped with a printed reason, unless STORLAB_REQUIRE_SERVERS is set: then it
//! fails.

mod common;

use std::process::Command;

use common::{Lab, server, text};

/// Runs SQL through psql and returns its unaligned output.
fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([
            "-X",
            "-q",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .output()
        .expect("run psql (postgresql-client)");
    assert!(out.status.success(), "psql {sql}: {}", text(&out).1);
    text(&out).0.trim().to_string()
}

fn json_runs(stdout: &str) -> Vec<serde_json::Value> {
    let start = stdout.find('[').expect("JSON output");
    let end = stdout.rfind(']').expect("JSON output") + 1;
    serde_json::from_str(&stdout[start..end]).expect("JSON runs")
}

#[test]
fn tpcb_like_and_select_only_keep_pgbenchs_balances_and_lose_nothing() {
    let Some(url) = server("STORLAB_TEST_POSTGRES_URL") else {
        return;
    };
    let schema = format!("pgbench_test_{}", std::process::id());
    psql(&url, &format!("CREATE SCHEMA {schema}"));
    let sep = if url.contains('?') { '&' } else { '?' };
    let in_schema = format!("{url}{sep}options=-c%20search_path%3D{schema}");
    let lab = Lab::new();
    let study = lab.write(
        "pgbench.toml",
        &format!(
            r#"name = "pgbench-test"
[targets.pg]
type = "postgres"
url = "{in_schema}"

[workloads.tpcb]
type = "pgbench"
script = "tpcb-like"
scale = 1
threads = 2
verify = true

[workloads.select]
type = "pgbench"
script = "select-only"
scale = 1
threads = 2

[[steps]]
workload = "tpcb"
targets = ["pg"]
duration = "1s"

[[steps]]
workload = "select"
targets = ["pg"]
duration = "1s"
"#
        ),
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "--json", "-q"]);
    let (stdout, stderr) = text(&out);
    let cleanup = || psql(&url, &format!("DROP SCHEMA {schema} CASCADE"));
    if !out.status.success() {
        cleanup();
        panic!("{stdout}\n{stderr}");
    }
    let runs = json_runs(&stdout);
    assert_eq!(runs.len(), 2);
    for r in &runs {
        assert_eq!(r["status"], "complete", "{r}");
        assert_eq!(r["targets"][0]["errors"], 0, "{r}");
        assert!(r["targets"][0]["ops"].as_u64().unwrap() > 0, "{r}");
    }
    let (tpcb, select) = (&runs[0]["targets"][0], &runs[1]["targets"][0]);
    assert!(
        tpcb["kinds"]["tpcb-like"]["ops"].as_u64().unwrap() > 0,
        "{tpcb}"
    );
    assert!(
        select["kinds"]["select-only"]["ops"].as_u64().unwrap() > 0,
        "{select}"
    );
    // Created once at scale 1, then reused, and each run says so.
    let db = |t: &serde_json::Value| t["session-used"]["pgbench.database"].to_string();
    assert!(
        db(tpcb).contains("created") && db(tpcb).contains("scale 1"),
        "{tpcb}"
    );
    assert!(db(select).contains("reused"), "{select}");

    // pgbench's consistency check, read straight from the database.
    let sums = psql(
        &in_schema,
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(bbalance) FROM pgbench_branches), \
         (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(delta) FROM pgbench_history), \
         (SELECT count(*) FROM pgbench_history), (SELECT count(*) FROM pgbench_accounts)",
    );
    cleanup();
    let f: Vec<i64> = sums.split('|').map(|x| x.parse().unwrap()).collect();
    assert_eq!(f[5], 100_000, "scale 1: 100,000 accounts");
    assert!(f[4] > 0, "history rows: {sums}");
    assert!(
        f[0] == f[1] && f[1] == f[2] && f[2] == f[3],
        "balances differ (accounts|branches|tellers|history delta|rows): {sums}"
    );

    // The ledger: every acknowledged transaction's history row is there, and every history
    // row is one of them (no warm-up: the run's transactions are the rows).
    let v = &tpcb["verify"];
    assert_eq!(v["kind"], "key-value", "{v}");
    assert_eq!(v["missing"]["keys"], 0, "{v}");
    assert_eq!(v["corrupt"]["keys"], 0, "{v}");
    let checked = v["keys-checked"].as_u64().unwrap();
    assert_eq!(v["intact"]["keys"].as_u64().unwrap(), checked, "{v}");
    assert_eq!(
        checked as i64, f[4],
        "acknowledged transactions vs history rows: {v}"
    );
    assert!(checked >= tpcb["ops"].as_u64().unwrap(), "{v} {tpcb}");
}
