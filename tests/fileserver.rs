//! `studies/fileserver.toml` in quick mode against the test file servers (Samba and
//! NFS-Ganesha from scripts/fileservers.sh): the brief's experiment end to end, 5 clients x 5
//! of the 25 shares over SMB and over NFS, 2 workers per share, every point with its 25 share
//! targets, each of them (and each of its workers) with operations and no error, IOmeter's
//! result file with its ALL, MANAGER (client) and DISK (share) rows, and the report's headline
//! with each server's total, not a column per share, each share's ops in its results tables. Each client
//! runs in a network namespace of its own on the test servers' client LAN: its link's
//! counters show that its targets' bytes crossed it.

mod common;

use common::{Lab, server, text};

#[test]
fn the_file_server_study_runs_25_shares_over_smb_and_nfs_with_iometers_rows() {
    let (Some(smb), Some(nfs)) = (
        server("STORLAB_LAN_SMB_SERVER"),
        server("STORLAB_LAN_NFS_SERVER"),
    ) else {
        return;
    };
    let netns: Vec<String> = (1..=5)
        .map(|c| std::env::var(format!("STORLAB_CLIENT{c}_NETNS")).unwrap())
        .collect();
    let received_before: Vec<u64> = netns.iter().map(|ns| lan_rx_bytes(ns)).collect();
    let study = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/fileserver.toml");
    let lab = Lab::new();
    let mut cmd = lab.cmd();
    for (c, ns) in netns.iter().enumerate() {
        cmd.env(format!("STORLAB_FILESERVER_CLIENT{}_NETNS", c + 1), ns);
    }
    let o = cmd
        // The servers as the client LAN reaches them.
        .env("STORLAB_SMB_SERVER", &smb)
        .env("STORLAB_NFS_SERVER", &nfs)
        // Small test files: 50 of them are created (and filled) on the servers.
        .env("STORLAB_FILESERVER_SIZE", "2MiB")
        .args(["run", study.to_str().unwrap(), "--quick", "--json", "-q"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = runs.as_array().unwrap();
    // 2 protocols x 5 workloads x 2 queue depths.
    assert_eq!(runs.len(), 20);
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let targets = r["targets"].as_array().unwrap();
        assert_eq!(targets.len(), 25, "{}", r["step"]);
        let proto = &r["step"].as_str().unwrap()[..3];
        for t in targets {
            assert_eq!(t["target-type"], proto, "{t}");
            assert_eq!(t["errors"], 0, "{t}");
            // Every share's workers did their share in every point, over SMB as over NFS
            // (each SMB connection's credits are in its session facts if one ever does not).
            assert!(t["ops"].as_u64().unwrap() > 0, "{}: {t}", r["step"]);
            for w in t["workers"].as_array().unwrap() {
                let ops: u64 = w["kinds"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|k| k["ops"].as_u64().unwrap())
                    .sum();
                assert!(
                    ops > 0,
                    "{}: a worker of {} completed nothing: {t}",
                    r["step"],
                    t["name"]
                );
            }
        }
    }
    // What each client's targets read crossed its own link: its namespace's interface
    // received at least those bytes (warm-up, preparation and protocol come on top).
    for (c, ns) in netns.iter().enumerate() {
        let client = format!("client-{}", c + 1);
        let read_bytes: u64 = runs
            .iter()
            .flat_map(|r| r["targets"].as_array().unwrap())
            .filter(|t| t["client"] == client.as_str())
            .map(|t| t["kinds"]["read"]["bytes"].as_u64().unwrap_or(0))
            .sum();
        let received = lan_rx_bytes(ns) - received_before[c];
        assert!(read_bytes > 0, "{client}");
        assert!(
            received >= read_bytes,
            "{client} ({ns}): its link received {received} bytes, its targets read {read_bytes}"
        );
    }
    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    // Each target on a share of its own (the brief's 25), 2 workers on each in every test
    // (the brief's ~1,200 outstanding I/Os: 25 x 2 x 24).
    for run in std::fs::read_dir(&folder).unwrap().flatten() {
        let Ok(plan) = std::fs::read_to_string(run.path().join("plan.json")) else {
            continue;
        };
        let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
        let mut shares: Vec<&str> = plan["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["config"]["url"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .nth(1)
                    .unwrap()
            })
            .collect();
        shares.sort();
        shares.dedup();
        assert_eq!(shares.len(), 25, "{}", run.path().display());
    }
    let csv = std::fs::read_to_string(folder.join("iometer.csv")).unwrap();
    let rows = |kind: &str| {
        csv.lines()
            .filter(|l| l.starts_with(&format!("{kind},")))
            .count()
    };
    assert_eq!(rows("ALL"), 20, "{csv}");
    assert_eq!(rows("MANAGER"), 20 * 5, "{csv}");
    // A WORKER row per worker (2 per share), each followed by its share's DISK row.
    let workers: u64 = runs
        .iter()
        .flat_map(|r| r["targets"].as_array().unwrap())
        .map(|t| t["threads"].as_u64().unwrap())
        .sum();
    assert_eq!(workers, 20 * 25 * 2);
    assert_eq!(rows("WORKER") as u64, workers, "{csv}");
    assert_eq!(rows("DISK") as u64, workers, "{csv}");
    // Each worker's own figures add up to its target's.
    for t in runs.iter().flat_map(|r| r["targets"].as_array().unwrap()) {
        let ws = t["workers"].as_array().unwrap();
        assert_eq!(ws.len() as u64, t["threads"].as_u64().unwrap(), "{t}");
        let ops: u64 = ws
            .iter()
            .flat_map(|w| w["kinds"].as_object().unwrap().values())
            .map(|k| k["ops"].as_u64().unwrap())
            .sum();
        assert_eq!(ops, t["ops"].as_u64().unwrap(), "{t}");
    }
    for c in 1..=5 {
        assert!(csv.contains(&format!("MANAGER,client-{c},")), "{csv}");
    }
    // The report: a line per server, the headline a total per server and test, and no
    // call-out sets one share against another of its server.
    let o = lab
        .cmd()
        .args(["report", folder.to_str().unwrap(), "-o", "report.html"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let html = std::fs::read_to_string(lab.path().join("report.html")).unwrap();
    let tested = html.split("<ul class=\"tested\">").nth(1).unwrap();
    let tested = tested.split("</ul>").next().unwrap();
    assert_eq!(tested.matches("<li>").count(), 2, "{tested}");
    assert!(
        tested.contains("25 smb targets") && tested.contains("25 nfs targets"),
        "{tested}"
    );
    let headline = html.split("id=\"headline\"").nth(1).unwrap();
    let headline = headline.split("</table>").next().unwrap();
    for column in ["smb IOPS", "smb MiB/s", "nfs MB/s", "nfs mean latency"] {
        assert!(headline.contains(column), "{column}: {headline}");
    }
    assert!(!headline.contains("-c1-s1"), "{headline}");
    // Each share's own figures are in the results tables: a row per run, share and operation
    // kind, with its ops.
    for r in runs {
        let run = r["run-index"].as_u64().unwrap();
        for t in r["targets"].as_array().unwrap() {
            for (kind, k) in t["kinds"].as_object().unwrap() {
                let row = format!(
                    "<tr data-run=\"{run}\" data-target=\"{}\" data-op=\"{kind}\">",
                    t["name"].as_str().unwrap()
                );
                let cells = html
                    .split(row.as_str())
                    .nth(1)
                    .unwrap_or_else(|| panic!("no row {row} in the results tables"));
                let ops = cells.split("<td").nth(5).unwrap();
                let want = format!("data-value=\"{}\"", k["ops"]);
                assert!(
                    ops.starts_with(&format!(" class=\"n\" {want}")),
                    "{row}: {ops}"
                );
            }
        }
    }
    assert!(!html.contains("the ops/s of smb-c") && !html.contains("the ops/s of nfs-c"));
    // The brief's published figures beside each server's total: every one found its test.
    let published = html
        .split("id=\"published\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no published figures in the report"));
    let published = published.split("</table>").next().unwrap();
    assert!(!published.contains("not measured here"), "{published}");
    assert_eq!(
        published.matches("1,058,304 ops/s").count(),
        2,
        "{published}"
    );
    assert_eq!(published.matches("10,464 MiB/s").count(), 2, "{published}");
    // The brief's large sequential reads, beside each server's sequential 64 KiB test.
    assert_eq!(published.matches("10,000 MB/s").count(), 2, "{published}");
    common::shot::first_screen(&lab.path().join("report.html"), "brief-fileserver");
    // The password is in no result file.
    let password = smb
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(u, _)| u.split_once(':'))
        .map(|(_, p)| p.to_string())
        .unwrap();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut dirs = vec![folder.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 20 * 3, "{files:?}");
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f) {
            assert!(!text.contains(&password), "{}", f.display());
        }
    }
}

/// Bytes received by the client LAN interface (`lan0`) of namespace `ns`.
fn lan_rx_bytes(ns: &str) -> u64 {
    let o = std::process::Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "lan0"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v[0]["stats64"]["rx"]["bytes"].as_u64().unwrap()
}
