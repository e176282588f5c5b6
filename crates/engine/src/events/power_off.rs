//! The `power-off` event: a node lost at once, as a power failure. Its network namespace's
//! interfaces go down first (nothing its dying processes' sockets send gets out), then SIGKILL
//! goes to the processes of the named pid files and to every process in the namespace, until
//! none is left.
//!
//! storlab only kills what the study names: the processes of its pid files and those in its
//! namespace (found as `ip netns pids` finds them: /proc/PID/ns/net is that namespace). Before
//! anything is done, the namespace must exist (`/run/netns/NAME`, where `ip netns` keeps
//! them), must be neither the host's (pid 1's) nor storlab's own, and each pid file must name a
//! live process (inside the namespace when one is named); otherwise nothing is touched.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::linux::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::process::read_pid_file;

/// Where `ip netns` keeps named network namespaces.
pub const NETNS_DIR: &str = "/run/netns";
/// How long the namespace's processes have to be gone after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// Runs a power-off's `netns-command` and takes the first non-empty line it prints as the
/// namespace: (namespace, how it was named). A command that fails or names nothing fails the
/// event.
pub fn netns_named_by(argv: &[String]) -> Result<(String, String), String> {
    let shown = argv.join(" ");
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("`{shown}` (netns-command) did not start: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "`{shown}` (netns-command) failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let ns = stdout
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .ok_or_else(|| format!("`{shown}` (netns-command) printed no namespace"))?;
    if ns.contains('/') || ns == "." || ns == ".." {
        return Err(format!(
            "`{shown}` (netns-command) printed `{ns}`, not a network namespace name"
        ));
    }
    Ok((
        ns.to_string(),
        format!("namespace `{ns}` named by `{shown}`"),
    ))
}

/// What a power-off did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoweredOff {
    /// Interfaces of the namespace that were up and were set down.
    pub interfaces_down: Vec<String>,
    /// Processes SIGKILL was sent to (each counted once).
    pub killed: Vec<i32>,
}

impl PoweredOff {
    pub fn describe(&self, netns: Option<&str>, pid_files: &[PathBuf]) -> String {
        let mut parts = Vec::new();
        if let Some(ns) = netns {
            parts.push(format!(
                "network namespace `{ns}`: {} set down",
                if self.interfaces_down.is_empty() {
                    "no interface was up, none".to_string()
                } else {
                    self.interfaces_down.join(", ")
                }
            ));
        }
        if !pid_files.is_empty() {
            let shown: Vec<String> = pid_files.iter().map(|p| p.display().to_string()).collect();
            parts.push(format!("pid files {}", shown.join(", ")));
        }
        let mut pids = self.killed.clone();
        pids.sort_unstable();
        let list: Vec<String> = pids.iter().map(i32::to_string).collect();
        format!(
            "powered off ({}): SIGKILL to {} processes (pids {})",
            parts.join("; "),
            pids.len(),
            list.join(" ")
        )
    }
}

/// The identity (device, inode) of a network namespace file.
fn ns_id(path: &Path) -> std::io::Result<(u64, u64)> {
    let m = std::fs::metadata(path)?;
    Ok((m.st_dev(), m.st_ino()))
}

/// Processes (thread group ids) whose network namespace is `id`, storlab itself excepted.
fn pids_in(id: (u64, u64)) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        // A process that exits meanwhile, or a zombie (its namespaces released), is skipped.
        .filter(|&pid| ns_id(Path::new(&format!("/proc/{pid}/ns/net"))).ok() == Some(id))
        .collect()
}

/// A process that exists and is not a zombie (a killed process its parent has not reaped).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn sigkill(pid: i32) -> bool {
    // SAFETY: kill has no memory effects; the pid was checked against the study's names.
    unsafe { libc::kill(pid, libc::SIGKILL) == 0 }
}

/// Sets every interface of the namespace at `path` that is up down, from a thread that joins
/// the namespace (only that thread's network namespace changes; it ends afterwards).
fn interfaces_down(path: &Path) -> Result<Vec<String>, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let shown = path.display().to_string();
    std::thread::Builder::new()
        .name("storlab-power-off".into())
        .spawn(move || -> Result<Vec<String>, String> {
            // SAFETY: setns on this thread only, with a descriptor we own.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(format!(
                    "entering the network namespace {shown} (needs root): {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: a datagram socket in the namespace just joined, closed below.
            let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
            if sock < 0 {
                return Err(format!("socket: {}", std::io::Error::last_os_error()));
            }
            let result = down_all(sock);
            // SAFETY: our socket.
            unsafe { libc::close(sock) };
            result
        })
        .map_err(|e| format!("starting the power-off thread: {e}"))?
        .join()
        .map_err(|_| "the power-off thread panicked".to_string())?
}

/// Every interface of the calling thread's namespace, through `sock`: those up are set down.
fn down_all(sock: libc::c_int) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    // SAFETY: if_nameindex returns an array ended by a zero entry, freed below.
    let list = unsafe { libc::if_nameindex() };
    if list.is_null() {
        return Err(format!(
            "listing interfaces: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut i = 0;
    loop {
        // SAFETY: within the array, up to its zero entry.
        let entry = unsafe { &*list.add(i) };
        if entry.if_index == 0 || entry.if_name.is_null() {
            break;
        }
        // SAFETY: a NUL-terminated name from if_nameindex.
        names.push(unsafe { std::ffi::CStr::from_ptr(entry.if_name) }.to_owned());
        i += 1;
    }
    // SAFETY: the array if_nameindex returned.
    unsafe { libc::if_freenameindex(list) };
    let mut down = Vec::new();
    for name in names {
        // SAFETY: an all-zero ifreq is valid; the name fits (IFNAMSIZ includes the NUL).
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        let bytes = name.as_bytes_with_nul();
        if bytes.len() > req.ifr_name.len() {
            continue;
        }
        for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        let shown = name.to_string_lossy().into_owned();
        // SAFETY: SIOCGIFFLAGS fills ifr_flags of a valid ifreq.
        if unsafe { libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) } != 0 {
            return Err(format!(
                "reading the flags of {shown}: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: ifr_flags was just written by the kernel.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        if flags & libc::IFF_UP as libc::c_short == 0 {
            continue;
        }
        req.ifr_ifru.ifru_flags = flags & !(libc::IFF_UP as libc::c_short);
        // SAFETY: SIOCSIFFLAGS reads a valid ifreq.
        if unsafe { libc::ioctl(sock, libc::SIOCSIFFLAGS, &req) } != 0 {
            return Err(format!(
                "setting {shown} down: {}",
                std::io::Error::last_os_error()
            ));
        }
        down.push(shown);
    }
    Ok(down)
}

/// Powers off: checks everything first (nothing is touched when a check fails), then sets the
/// namespace's interfaces down, then kills.
pub fn power_off(netns: Option<&str>, pid_files: &[PathBuf]) -> Result<PoweredOff, String> {
    let ns = match netns {
        None => None,
        Some(name) => {
            let path = Path::new(NETNS_DIR).join(name);
            let id = ns_id(&path).map_err(|e| {
                format!(
                    "network namespace `{name}` does not exist ({}: {e}); nothing was powered off",
                    path.display()
                )
            })?;
            if ns_id(Path::new("/proc/1/ns/net")).ok() == Some(id) {
                return Err(format!(
                    "network namespace `{name}` is the host's own (pid 1's): refused, nothing was powered off"
                ));
            }
            if ns_id(Path::new("/proc/self/ns/net")).ok() == Some(id) {
                return Err(format!(
                    "network namespace `{name}` is storlab's own: refused, nothing was powered off"
                ));
            }
            Some((name, path, id))
        }
    };
    let mut named = Vec::new();
    for f in pid_files {
        let pid = read_pid_file(f)?;
        if !alive(pid) {
            return Err(format!(
                "pid file {} names pid {pid}, which is not running; nothing was powered off",
                f.display()
            ));
        }
        if let Some((name, _, id)) = &ns
            && ns_id(Path::new(&format!("/proc/{pid}/ns/net"))).ok() != Some(*id)
        {
            return Err(format!(
                "pid file {} names pid {pid}, which is not in network namespace `{name}`: refused, nothing was powered off",
                f.display()
            ));
        }
        named.push(pid);
    }

    let mut out = PoweredOff::default();
    if let Some((_, path, _)) = &ns {
        out.interfaces_down = interfaces_down(path)?;
    }
    for pid in named {
        if sigkill(pid) && !out.killed.contains(&pid) {
            out.killed.push(pid);
        }
    }
    if let Some((name, _, id)) = ns {
        // Until a scan finds nobody: a process forked between a scan and its kill is found by
        // the next scan.
        let start = Instant::now();
        loop {
            let left = pids_in(id);
            if left.is_empty() {
                break;
            }
            if start.elapsed() > KILL_WAIT {
                return Err(format!(
                    "{} processes in network namespace `{name}` survive SIGKILL after {} s: {left:?}",
                    left.len(),
                    KILL_WAIT.as_secs()
                ));
            }
            for pid in left {
                if sigkill(pid) && !out.killed.contains(&pid) {
                    out.killed.push(pid);
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_namespace_is_refused_and_nothing_is_touched() {
        let e = power_off(Some("storlab-no-such-namespace"), &[]).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn a_pid_file_of_no_running_process_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.pid");
        // Pid 2^22 + 1 is above Linux's largest pid.
        std::fs::write(&f, "4194305\n").unwrap();
        let e = power_off(None, &[f]).unwrap_err();
        assert!(e.contains("not running"), "{e}");
    }

    #[test]
    fn a_pid_file_names_a_process_that_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let f = dir.path().join("sleep.pid");
        std::fs::write(&f, format!("{}\n", child.id())).unwrap();
        let done = power_off(None, std::slice::from_ref(&f)).unwrap();
        assert_eq!(done.killed, vec![child.id() as i32]);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(done.describe(None, &[f]).contains("SIGKILL to 1 processes"));
    }

    #[test]
    fn the_description_counts_and_lists() {
        let p = PoweredOff {
            interfaces_down: vec!["eth0".into(), "lo".into()],
            killed: vec![30, 12],
        };
        assert_eq!(
            p.describe(Some("n1"), &[]),
            "powered off (network namespace `n1`: eth0, lo set down): SIGKILL to 2 processes (pids 12 30)"
        );
    }
}
