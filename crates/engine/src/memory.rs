//! The client's memory, as MLPerf Storage's dataset rule counts it: the dataset must be at
//! least five times the memory the client could cache it in. That is the host's memory, or
//! less when storlab runs in a control group with a memory limit (its page cache counts
//! against the limit, cgroup v1 and v2 alike). Read once per training run, off the measured
//! path; what cannot be read is left out, never guessed.

use std::fs;
use std::path::{Path, PathBuf};

use storlab_model::training::{ClientMemory, MemoryBound};
use storlab_results::system::meminfo_bytes;
use storlab_targets::mountinfo::{self, MountEntry};

/// This process's memory: the host's `MemTotal`, lowered by any memory limit of its control
/// groups (v2 `memory.max` of its group and each ancestor; v1 `hierarchical_memory_limit`).
/// None when `/proc/meminfo` cannot be read.
pub fn client_memory() -> Option<ClientMemory> {
    let meminfo = fs::read_to_string("/proc/meminfo").ok()?;
    let host = meminfo_bytes(&meminfo, "MemTotal")?;
    let cgroups = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = mountinfo::read().unwrap_or_default();
    let limit = cgroup_limits(&cgroups, &mounts, |p| fs::read_to_string(p).ok())
        .into_iter()
        .min();
    Some(bounded(host, limit))
}

/// The lower of the host's memory and a control group's limit, and which it was.
fn bounded(host_bytes: u64, limit_bytes: Option<u64>) -> ClientMemory {
    match limit_bytes {
        Some(l) if l < host_bytes => ClientMemory {
            bytes: l,
            bound: MemoryBound::Cgroup,
        },
        _ => ClientMemory {
            bytes: host_bytes,
            bound: MemoryBound::Host,
        },
    }
}

/// Every numeric memory limit that applies to the process whose `/proc/PID/cgroup` is
/// `cgroups`, found through the cgroup mounts in `mounts`, reading files with `read`.
fn cgroup_limits(
    cgroups: &str,
    mounts: &[MountEntry],
    read: impl Fn(&Path) -> Option<String>,
) -> Vec<u64> {
    let mut limits = Vec::new();
    for line in cgroups.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if id == "0" && controllers.is_empty() {
            let Some(m) = mounts.iter().find(|m| m.fs_type == "cgroup2") else {
                continue;
            };
            // memory.max of the group and of each ancestor below the mount's root.
            let mut dir: PathBuf = m.mount_point.join(rel);
            loop {
                if let Some(n) = read(&dir.join("memory.max")).and_then(|t| t.trim().parse().ok()) {
                    limits.push(n);
                }
                if dir == m.mount_point || !dir.pop() {
                    break;
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let Some(m) = mounts.iter().find(|m| {
                m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "memory")
            }) else {
                continue;
            };
            let stat = read(&m.mount_point.join(rel).join("memory.stat")).unwrap_or_default();
            if let Some(n) = stat
                .lines()
                .find_map(|l| l.strip_prefix("hierarchical_memory_limit "))
                .and_then(|v| v.trim().parse().ok())
            {
                limits.push(n);
            }
        }
    }
    limits
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn mount(line: &str) -> MountEntry {
        mountinfo::parse_mountinfo_line(line).expect("a mountinfo line")
    }

    #[test]
    fn a_limit_below_the_host_bounds_the_client() {
        assert_eq!(bounded(8 << 30, Some(2 << 30)).bound, MemoryBound::Cgroup);
        assert_eq!(bounded(8 << 30, Some(2 << 30)).bytes, 2 << 30);
        // v1's "unlimited" (a huge number) and no limit at all leave the host's memory.
        let unlimited = bounded(8 << 30, Some(9_223_372_036_854_771_712));
        assert_eq!(
            (unlimited.bytes, unlimited.bound),
            (8 << 30, MemoryBound::Host)
        );
        assert_eq!(bounded(8 << 30, None).bound, MemoryBound::Host);
    }

    #[test]
    fn v2_limits_of_the_group_and_its_ancestors_are_found() {
        let mounts = [mount(
            "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
        )];
        let files: HashMap<&str, &str> = [
            ("/sys/fs/cgroup/unified/a/b/memory.max", "max\n"),
            ("/sys/fs/cgroup/unified/a/memory.max", "4294967296\n"),
        ]
        .into();
        let read = |p: &Path| files.get(p.to_str()?).map(|s| s.to_string());
        assert_eq!(
            cgroup_limits("0::/a/b\n", &mounts, read),
            vec![4_294_967_296]
        );
    }

    #[test]
    fn v1_memory_controller_gives_its_hierarchical_limit() {
        let mounts = [
            mount("32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu"),
            mount("35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory"),
        ];
        let files: HashMap<&str, &str> = [(
            "/sys/fs/cgroup/memory/job/memory.stat",
            "cache 0\nhierarchical_memory_limit 3221225472\n",
        )]
        .into();
        let read = |p: &Path| files.get(p.to_str()?).map(|s| s.to_string());
        let cgroups = "4:memory:/job\n1:cpu:/\n0::/\n";
        assert_eq!(cgroup_limits(cgroups, &mounts, read), vec![3_221_225_472]);
    }
}
