//! A file server in reports, as IOmeter's file-server briefs show one: the total of its shares
//! per access specification (IOPS, MB/s and MiB/s, mean latency), one row per test and a
//! column group per server or protocol, never a column per share. The shares of one server
//! (targets of a type whose registry row has `file_server`, on the same server, from every
//! client) are replicas of one system ([`storlab_results::comparison::systems`]): added up,
//! described in one line, and compared only with other servers.

use super::Row;
use crate::model::Group;
use storlab_results::comparison::SystemPoint;
use storlab_results::comparison::systems::{SystemKey, file_server_key, system_name};
use storlab_results::stored::StoredRun;

/// The headline rows of a step whose targets are all file-server shares: per parameter value
/// and server, the total of its shares: IOPS, bytes/s (shown as MB/s and MiB/s) and the mean
/// latency over all their operations. None for any other step (or a rate schedule's).
pub fn headline_rows(g: &Group, runs: &[StoredRun]) -> Option<Vec<Row>> {
    let scheduled = g.runs.iter().any(|&i| runs[i].summary.schedule.is_some());
    let all_shares = g
        .systems
        .iter()
        .flat_map(|at| &at.systems)
        .all(|(s, w)| s.file_server && is_block(w.as_ref()));
    if scheduled || g.systems.is_empty() || !all_shares {
        return None;
    }
    let mut rows = Vec::new();
    for at in &g.systems {
        for (s, workload) in &at.systems {
            let mut test = match workload {
                Some(w) => super::block_label(w),
                None => format!("{}{}", g.step, g.at(&at.x)),
            };
            if !at.others.is_empty() {
                test = format!("{test} ({})", at.others);
            }
            rows.push(Row {
                step: g.step.clone(),
                test,
                target: s.system.clone(),
                values: total_values(s),
                previous: None,
            });
        }
    }
    Some(rows)
}

/// IOPS, bytes/s (for MB/s), bytes/s (for MiB/s), mean latency: a server's total.
fn total_values(s: &SystemPoint) -> Vec<Option<f64>> {
    vec![
        Some(s.rate_ops),
        Some(s.rate_bytes),
        Some(s.rate_bytes),
        s.mean_latency_ns,
    ]
}

fn is_block(w: Option<&serde_json::Value>) -> bool {
    w.and_then(|w| w.get("type"))
        .and_then(|t| t.as_str())
        .is_none_or(|t| t == "block")
}

/// One server's shares, as "what was tested" says them in one line.
struct Server {
    key: SystemKey,
    targets: Vec<String>,
    shares: Vec<String>,
    clients: Vec<String>,
    software: Vec<String>,
}

/// The file servers of the runs, one sentence each: (server name, sentence), and the names of
/// the targets they cover (said in those sentences, not one by one).
pub fn tested_sentences(runs: &[StoredRun]) -> (Vec<(String, String)>, Vec<String>) {
    let mut servers: Vec<Server> = Vec::new();
    for r in runs {
        for (i, t) in r.summary.targets.iter().enumerate() {
            let cfg = r.target_config_json(i);
            let Some(key) = file_server_key(&t.target_type, cfg) else {
                continue;
            };
            let si = match servers.iter().position(|s| s.key == key) {
                Some(si) => si,
                None => {
                    servers.push(Server {
                        key,
                        targets: Vec::new(),
                        shares: Vec::new(),
                        clients: Vec::new(),
                        software: Vec::new(),
                    });
                    servers.len() - 1
                }
            };
            let s = &mut servers[si];
            let share = cfg
                .and_then(|c| c.get("url"))
                .and_then(|u| u.as_str())
                .and_then(share_of_url);
            add(&mut s.targets, Some(t.name.clone()));
            add(&mut s.shares, share);
            add(
                &mut s.clients,
                Some(t.client.clone()).filter(|c| !c.is_empty()),
            );
            for x in r
                .system
                .iter()
                .flat_map(|sys| &sys.target_software)
                .filter(|x| x.target == t.name)
            {
                add(
                    &mut s.software,
                    Some(format!("{} {}", x.software, x.version)),
                );
            }
        }
    }
    let keys: Vec<SystemKey> = servers.iter().map(|s| s.key.clone()).collect();
    let covered = servers.iter().flat_map(|s| s.targets.clone()).collect();
    let sentences = servers
        .iter()
        .map(|s| (system_name(&s.key, &keys), sentence(s)))
        .collect();
    (sentences, covered)
}

/// `25 smb targets (smb-c1-s1 … smb-c5-s25), a file on each of 25 shares (share1 … share25)
/// of smb://127.0.0.1:445, from 5 clients (client-1 … client-5): added up in the headline.`
fn sentence(s: &Server) -> String {
    let kind = &s.key.target_type;
    let mut out = format!(
        "{} {kind} target{} ({})",
        s.targets.len(),
        if s.targets.len() == 1 { "" } else { "s" },
        range(&s.targets)
    );
    if !s.shares.is_empty() {
        out.push_str(&format!(
            ", files on {} share{} ({})",
            s.shares.len(),
            if s.shares.len() == 1 { "" } else { "s" },
            range(&s.shares)
        ));
    }
    match &s.key.server {
        Some(server) => out.push_str(&format!(" of {server}")),
        None => out.push_str(&format!(" of one {kind} server")),
    }
    if !s.clients.is_empty() {
        out.push_str(&format!(
            ", from {} client{} ({})",
            s.clients.len(),
            if s.clients.len() == 1 { "" } else { "s" },
            range(&s.clients)
        ));
    }
    out.push_str(": replicas of one server, added up in the headline");
    if !s.software.is_empty() {
        out.push_str(&format!("; software: {}", s.software.join(", ")));
    }
    out.push('.');
    out
}

/// Adds an item not yet in the list.
fn add(list: &mut Vec<String>, item: Option<String>) {
    if let Some(item) = item.filter(|i| !list.contains(i)) {
        list.push(item);
    }
}

/// `a, b, c`, or `first … last` for more than four.
fn range(items: &[String]) -> String {
    match items {
        [first, .., last] if items.len() > 4 => format!("{first} … {last}"),
        _ => items.join(", "),
    }
}

/// The share (export) of a file URL: its path's first segment.
fn share_of_url(url: &str) -> Option<String> {
    let (_, rest) = url.split_once("://")?;
    let path = rest.split('?').next()?;
    let share = path.split('/').nth(1)?;
    (!share.is_empty()).then(|| share.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_results::summary::TargetResult;

    /// One step's run on a file server: per share (name, client, share, IOPS, mean ns), 64 KiB
    /// reads for one second.
    fn run(
        index: usize,
        kind: &str,
        server: &str,
        shares: &[(&str, &str, &str, f64, f64)],
    ) -> StoredRun {
        let step = format!("{kind}-rand-read-64k");
        let mut s = storlab_results::fixtures::summary(index, &step, &[], &[]);
        s.targets = shares
            .iter()
            .map(|(name, client, _, iops, mean_ns)| {
                let mut t = TargetResult {
                    name: name.to_string(),
                    target_type: kind.into(),
                    client: client.to_string(),
                    workload_type: storlab_model::op::ResultKind::Block,
                    ops: *iops as u64,
                    rate_ops: *iops,
                    bytes: *iops as u64 * 65536,
                    rate_bytes: iops * 65536.0,
                    ..Default::default()
                };
                t.service_latency.count = t.ops;
                t.service_latency.mean_ns = *mean_ns;
                t
            })
            .collect();
        let targets: Vec<serde_json::Value> = shares
            .iter()
            .map(|(_, _, share, _, _)| {
                serde_json::json!({
                "config": {"type": kind, "url": format!("{server}/{share}/iobw.tst")},
                "workload": {"type": "block", "access": "random", "block-size": 65536,
                    "read-share": 1.0, "queue-depth": 24, "threads": 2}})
            })
            .collect();
        StoredRun {
            folder: std::path::PathBuf::from("/nonexistent"),
            summary: s,
            system: None,
            study_text: None,
            plan: Some(serde_json::json!({ "targets": targets })),
            timeline: Default::default(),
            samples: Vec::new(),
            from_store: None,
        }
    }

    /// Two clients x two shares over SMB, two shares over NFS: the headline is a row per test
    /// with each server's total, "what was tested" a line per server, and no share is
    /// called out against another share of its server.
    #[test]
    fn a_file_servers_shares_are_one_total_and_one_line() {
        let smb = "smb://storlab:***@10.0.0.1:445";
        let runs = [
            run(
                1,
                "smb",
                smb,
                &[
                    ("smb-c1-s1", "client-1", "share1", 100.0, 1e6),
                    ("smb-c1-s2", "client-1", "share2", 900.0, 2e6),
                    ("smb-c2-s3", "client-2", "share3", 300.0, 1e6),
                    ("smb-c2-s4", "client-2", "share4", 700.0, 3e6),
                ],
            ),
            run(
                2,
                "nfs",
                "nfs://10.0.0.2",
                &[
                    ("nfs-c1-s1", "client-1", "export1", 160.0, 4e6),
                    ("nfs-c2-s2", "client-2", "export2", 0.0, 0.0),
                ],
            ),
        ];
        let h = crate::headline::of_runs(&runs);
        let tables = h.tables();
        assert_eq!(tables.len(), 1);
        let (title, t) = &tables[0];
        assert_eq!(*title, "File server");
        let columns: Vec<&str> = t.columns.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            columns,
            [
                "test",
                "smb IOPS",
                "smb MB/s",
                "smb MiB/s",
                "smb mean latency",
                "nfs IOPS",
                "nfs MB/s",
                "nfs MiB/s",
                "nfs mean latency"
            ]
        );
        assert_eq!(t.rows.len(), 1);
        let shown: Vec<&str> = t.rows[0].cells.iter().map(|c| c.shown.as_str()).collect();
        // 2,000 IOPS x 64 KiB = 131.1 MB/s = 125.0 MiB/s; the mean over all 2,000 reads
        // (2.15 ms), not the mean of the four means (1.75 ms). NFS: one share read nothing.
        assert_eq!(
            shown,
            [
                "random 64KiB read, QD 24, 2 threads",
                "2,000",
                "131.1",
                "125.0",
                "2.15 ms",
                "160",
                "10.5",
                "10.0",
                "4.00 ms"
            ]
        );
        let tested = crate::tested::sentences(&runs);
        let names: Vec<&str> = tested.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["smb", "nfs"]);
        assert_eq!(
            tested[0].1,
            "4 smb targets (smb-c1-s1, smb-c1-s2, smb-c2-s3, smb-c2-s4), files on 4 shares (share1, share2, share3, share4) of smb://10.0.0.1:445, from 2 clients (client-1, client-2): replicas of one server, added up in the headline."
        );
        let figures: Vec<_> = runs
            .iter()
            .map(storlab_results::comparison::RunFigures::of_stored)
            .collect();
        let groups = crate::model::group_runs(&figures);
        assert!(
            groups.iter().all(|g| g.callouts.is_empty()),
            "{:?}",
            groups[0].callouts
        );
    }

    #[test]
    fn shares_and_ranges_read_short() {
        assert_eq!(
            share_of_url("smb://u:***@h:445/share7/iobw.tst").as_deref(),
            Some("share7")
        );
        assert_eq!(
            share_of_url("nfs://10.0.0.2/export2/f?version=4").as_deref(),
            Some("export2")
        );
        let names: Vec<String> = (1..=25).map(|i| format!("share{i}")).collect();
        assert_eq!(range(&names), "share1 … share25");
        assert_eq!(range(&names[..3]), "share1, share2, share3");
    }
}
