//! The systems of a sweep point. Targets that are replicas of one system, the shares of one
//! file server driven from every client (a target type whose registry row has
//! `file_server`), count as one system, their figures added as IOmeter's `ALL` row adds its
//! disks': IOPS and bytes per second summed, the mean latency over all their operations
//! (their merged histograms' mean, the same as their means weighted by operations), the p99
//! of their merged histograms (none when one of them has no readable histogram: percentiles
//! are never averaged). Every other target is a system of its own, with its own figures.
//! Call-outs set systems against each other, never replicas of one system.

use serde::{Deserialize, Serialize};

use super::uncertainty::Group;
use super::{Measured, TargetPoint, Uncertainty};
use storlab_record::summary::LatencySummary;

/// What makes targets replicas of one system: a file-server target type and its server.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SystemKey {
    pub target_type: String,
    /// `smb://host:port`; None when the stored configuration does not say.
    pub server: Option<String>,
}

/// A file-server target's system (its type and server); None for a target that is a system
/// of its own.
pub fn file_server_key(target_type: &str, config: Option<&serde_json::Value>) -> Option<SystemKey> {
    let server_of = storlab_targets::find_type(target_type)?.file_server?;
    Some(SystemKey {
        target_type: target_type.to_string(),
        server: config.and_then(server_of),
    })
}

/// A file server's name among `all` the file servers of the results: its type (`smb`) when
/// they have one server of that type, else the type and the server's address
/// (`smb 10.0.0.1:445`).
pub fn system_name(key: &SystemKey, all: &[SystemKey]) -> String {
    let mut servers: Vec<&Option<String>> = all
        .iter()
        .filter(|k| k.target_type == key.target_type)
        .map(|k| &k.server)
        .collect();
    servers.sort();
    servers.dedup();
    match &key.server {
        Some(s) if servers.len() > 1 => {
            let host = s.split_once("://").map_or(s.as_str(), |(_, h)| h);
            format!("{} {host}", key.target_type)
        }
        _ => key.target_type.clone(),
    }
}

/// One system at one sweep point: its targets' figures added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SystemPoint {
    /// The file server's name ([`system_name`]), or the target's own name.
    pub system: String,
    /// Its targets (the shares), in the point's order.
    pub targets: Vec<String>,
    /// The distinct clients its targets ran from (none recorded: empty).
    pub clients: Vec<String>,
    /// Replicas of one file server (its targets added), not a target of its own.
    pub file_server: bool,
    pub rate_ops: f64,
    pub rate_bytes: f64,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Service latency over all its operations; None without any.
    pub mean_latency_ns: Option<f64>,
    /// From its targets' merged histograms; None without any operation, or when a target's
    /// histograms could not be read.
    pub p99_latency_ns: Option<u64>,
    /// How sure its figures are: its target's, for a system of one target; for a file
    /// server's shares, from their groups added group by group (the same repetitions, or
    /// the same stretches of one run); None without histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<super::Uncertainty>,
    /// Its first target's position among the point's targets (for its workload).
    #[serde(skip)]
    pub first: usize,
}

/// The systems of a point's targets, in order of first appearance. `measured` are the
/// targets' merged service-latency histograms (None: not read) and groups; `name` names a
/// file server.
pub fn of_targets(
    targets: &[TargetPoint],
    measured: &[Measured],
    name: &dyn Fn(&SystemKey) -> String,
) -> Vec<SystemPoint> {
    // Per system: its key (None: a target of its own) and its members' positions.
    let mut groups: Vec<(Option<SystemKey>, Vec<usize>)> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        match file_server_key(&t.target_type, t.config.as_ref()) {
            Some(k) => match groups.iter_mut().find(|g| g.0.as_ref() == Some(&k)) {
                Some(g) => g.1.push(i),
                None => groups.push((Some(k), vec![i])),
            },
            None => groups.push((None, vec![i])),
        }
    }
    groups
        .into_iter()
        .map(|(key, members)| {
            let system = match &key {
                Some(k) => name(k),
                None => targets[members[0]].target.clone(),
            };
            added(system, key.is_some(), &members, targets, measured)
        })
        .collect()
}

/// The members' figures added.
fn added(
    system: String,
    file_server: bool,
    members: &[usize],
    targets: &[TargetPoint],
    measured: &[Measured],
) -> SystemPoint {
    let ts: Vec<&TargetPoint> = members.iter().map(|&i| &targets[i]).collect();
    let mut clients: Vec<String> = Vec::new();
    for t in ts.iter().filter(|t| !t.client.is_empty()) {
        if !clients.contains(&t.client) {
            clients.push(t.client.clone());
        }
    }
    let ops: u64 = ts.iter().map(|t| t.ops).sum();
    // Weighted by what each mean is over: the latencies its histogram counted.
    let weight = |t: &TargetPoint| t.service_latency.count as f64;
    let counted: f64 = ts.iter().map(|t| weight(t)).sum();
    let mean_latency_ns = (ops > 0 && counted > 0.0).then(|| {
        ts.iter()
            .map(|t| t.mean_latency_ns * weight(t))
            .sum::<f64>()
            / counted
    });
    let p99_latency_ns = match ts.as_slice() {
        _ if ops == 0 => None,
        [one] => Some(one.p99_latency_ns),
        _ => merged_p99(members, targets, measured),
    };
    SystemPoint {
        system,
        targets: ts.iter().map(|t| t.target.clone()).collect(),
        clients,
        file_server,
        rate_ops: ts.iter().map(|t| t.rate_ops).sum(),
        rate_bytes: ts.iter().map(|t| t.rate_bytes).sum(),
        ops,
        bytes: ts.iter().map(|t| t.bytes).sum(),
        errors: ts.iter().map(|t| t.errors).sum(),
        mean_latency_ns,
        p99_latency_ns,
        uncertainty: match ts.as_slice() {
            [one] => one.uncertainty.clone(),
            _ => added_uncertainty(members, measured),
        },
        first: members[0],
    }
}

/// The interval of the members added: their groups added group by group (each member's
/// groups are the same repetitions, or the same stretches of the one run they ran in
/// together, and their measured time is the same: it is counted once). None when a member
/// has no groups or theirs differ in kind or number.
fn added_uncertainty(members: &[usize], measured: &[Measured]) -> Option<Uncertainty> {
    let mut all = members
        .iter()
        .map(|&i| measured.get(i).and_then(|m| m.groups.as_ref()));
    let (from, first) = all.next()??;
    let mut sum: Vec<Group> = first.clone();
    for m in all {
        let (other_from, groups) = m?;
        if other_from != from || groups.len() != sum.len() {
            return None;
        }
        for (s, g) in sum.iter_mut().zip(groups) {
            s.latency.add(&g.latency);
            s.seconds = s.seconds.max(g.seconds);
            s.clock_step_ns = s.clock_step_ns.max(g.clock_step_ns);
        }
    }
    Uncertainty::of_groups(*from, &sum)
}

/// The p99 of the members' histograms added; None when one that measured has none.
fn merged_p99(members: &[usize], targets: &[TargetPoint], measured: &[Measured]) -> Option<u64> {
    let mut sum = storlab_record::new_histogram::<u64>();
    for &i in members {
        match measured.get(i).and_then(|m| m.histogram.as_ref()) {
            Some(h) => sum.add(h).ok()?,
            None if targets[i].ops == 0 => {}
            None => return None,
        }
    }
    Some(LatencySummary::from_histogram(&sum).p99_ns)
}

/// Whether some system of the points holds several targets (replicas added).
pub fn has_replicas(systems: &[SystemPoint]) -> bool {
    systems.iter().any(|s| s.targets.len() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::compare_all;
    use crate::fixtures::summary;
    use crate::histograms::tests::log_of;
    use crate::summary::{KindResult, RunSummary};

    /// A run of (name, type, client, ops/s, latency ns) targets, each measured one second,
    /// every read at the one latency.
    fn run(index: usize, step: &str, targets: &[(&str, &str, &str, f64, u64)]) -> RunSummary {
        let named: Vec<(&str, f64, u64)> = targets.iter().map(|t| (t.0, t.3, t.4)).collect();
        let mut s = summary(index, step, &[("queue-depth", "12")], &named);
        for (r, (_, kind, client, rate, ns)) in s.targets.iter_mut().zip(targets) {
            r.target_type = kind.to_string();
            r.client = client.to_string();
            r.service_latency.count = *rate as u64;
            r.service_latency.mean_ns = *ns as f64;
            r.kinds.insert(
                "read".into(),
                KindResult {
                    ops: *rate as u64,
                    ..Default::default()
                },
            );
        }
        s
    }

    /// Two clients x two shares of one SMB server, then the same server beside an NFS
    /// server: the shares add up (IOPS, MB/s, mean over all operations, p99 of the merged
    /// histograms) and only the servers are set against each other.
    #[test]
    fn replicas_of_one_file_server_add_up_and_are_never_compared() {
        let shares = [
            ("smb-c1-s1", "smb", "client-1", 100.0, 1_000_000),
            ("smb-c1-s2", "smb", "client-1", 900.0, 2_000_000),
            ("smb-c2-s3", "smb", "client-2", 300.0, 1_000_000),
            ("smb-c2-s4", "smb", "client-2", 700.0, 3_000_000),
        ];
        let nfs = [
            ("nfs-c1-s1", "nfs", "client-1", 250.0, 4_000_000),
            ("nfs-c2-s2", "nfs", "client-2", 250.0, 8_000_000),
        ];
        let both: Vec<_> = shares.iter().chain(&nfs).copied().collect();
        let mut runs = [run(1, "smb-only", &shares), run(2, "smb-and-nfs", &both)];
        // Ten measured seconds, a tenth of each target's operations in each.
        runs.iter_mut().for_each(|r| r.measured_seconds = 10.0);
        let logs: Vec<Vec<u8>> = runs
            .iter()
            .map(|r| {
                let tags: Vec<(String, Vec<(u64, u64)>)> = r
                    .targets
                    .iter()
                    .map(|t| {
                        let ns = t.service_latency.mean_ns as u64;
                        (format!("{}.read", t.name), vec![(ns, t.ops / 10)])
                    })
                    .collect();
                type Values<'a> = &'a [(u64, u64)];
                let intervals: Vec<(i64, &str, Values)> = (0..10)
                    .flat_map(|second| {
                        tags.iter()
                            .map(move |(tag, v)| (second, tag.as_str(), v.as_slice()))
                    })
                    .collect();
                log_of(&intervals)
            })
            .collect();
        let figures = crate::comparison::tests::figures_of(&runs, &logs);
        let steps = compare_all(&figures);
        // One server's shares: one system, its total; nothing to call out.
        let p = &steps[0].points[0];
        assert_eq!(p.targets.len(), 4);
        assert_eq!(p.systems.len(), 1);
        let smb = &p.systems[0];
        assert_eq!(smb.system, "smb");
        assert_eq!(smb.targets.len(), 4);
        assert_eq!(smb.clients, ["client-1", "client-2"]);
        assert_eq!((smb.rate_ops, smb.ops), (2000.0, 2000));
        assert_eq!(smb.rate_bytes, 2000.0 * 4096.0);
        // (100 x 1 + 900 x 2 + 300 x 1 + 700 x 3) / 2000 ms: not the mean of the means (1.75),
        // within the histograms' precision.
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v / want - 1.0).abs() < 1e-3);
        assert!(near(smb.mean_latency_ns, 2_150_000.0), "{smb:?}");
        // The merged histograms' p99 (3 ms, the 1,980th of 2,000), not a mean of p99s.
        assert_eq!(smb.p99_latency_ns.map(|p| p / 1000), Some(3000));
        assert_eq!(steps[0].largest_ops_ratio, None, "shares are not compared");
        assert_eq!(steps[0].largest_p99_improvement, None);
        // Two servers: SMB's total against NFS's.
        let r = steps[1].largest_ops_ratio.as_ref().unwrap();
        // Every second alike: no spread, so the ratio is sure; the shares' groups added.
        assert_eq!(
            r.text,
            "smb: 4.0x the ops/s of nfs at queue-depth=12 (95% CI 4.0-4.0x; within-run noise only)"
        );
        let smb = &steps[1].points[0].systems[0];
        assert_eq!(smb.uncertainty.as_ref().map(|u| u.groups), Some(10));
        let p99 = steps[1].largest_p99_improvement.as_ref().unwrap();
        assert_eq!((p99.best.as_str(), p99.worst.as_str()), ("smb", "nfs"));
        let nfs = &steps[1].points[0].systems[1];
        assert!(near(nfs.mean_latency_ns, 6e6), "{nfs:?}");
    }

    #[test]
    fn a_file_servers_name_is_its_type_unless_two_servers_share_it() {
        let key = |t: &str, s: Option<&str>| SystemKey {
            target_type: t.into(),
            server: s.map(str::to_string),
        };
        let smb = key("smb", Some("smb://10.0.0.1:445"));
        let nfs = key("nfs", Some("nfs://10.0.0.2"));
        assert_eq!(system_name(&smb, &[smb.clone(), nfs.clone()]), "smb");
        let other = key("smb", Some("smb://10.0.0.3:445"));
        assert_eq!(
            system_name(&smb, &[smb.clone(), other.clone(), nfs]),
            "smb 10.0.0.1:445"
        );
        // The server from the stored configuration: no user, password, share or file.
        let cfg = serde_json::json!({"type": "smb",
            "url": "smb://storlab:***@127.0.0.1:54445/share1/iobw.tst"});
        assert_eq!(
            file_server_key("smb", Some(&cfg)),
            Some(key("smb", Some("smb://127.0.0.1:54445")))
        );
        let cfg = serde_json::json!({"url": "nfs://10.213.0.2/export3/iobw.tst?version=4"});
        assert_eq!(
            file_server_key("nfs", Some(&cfg)).and_then(|k| k.server),
            Some("nfs://10.213.0.2".into())
        );
        // A file or a database is a system of its own.
        assert_eq!(file_server_key("file", Some(&cfg)), None);
    }
}
