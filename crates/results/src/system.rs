//! Capture of the system under test (host, OS, CPU, memory and the storage
//! stack behind every benchmark target) for the full-disclosure part of results.
//! Everything is best effort: what cannot be read is left as `None` or empty,
//! so `capture` never fails.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ffi::{CStr, CString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use storlab_model::units::format_bytes;
use storlab_targets::mountinfo::{MountEntry, parse_mountinfo_line};

/// Everything storlab discloses about the machine a benchmark ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SystemInfo {
    pub captured_at_utc: String,
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub architecture: Option<String>,
    pub storlab_version: String,
    pub storlab_git_commit: Option<String>,
    pub cpu: CpuInfo,
    pub memory_total_bytes: Option<u64>,
    pub memory_available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub targets: Vec<TargetStorage>,
    /// The storlab command line that made the run (credentials redacted); set by the runner.
    #[serde(default)]
    pub command_line: Option<String>,
    /// The software behind each target as reported when it was opened (a database server's
    /// and client library's versions; storlab itself for the built-in targets).
    #[serde(default)]
    pub target_software: Vec<TargetSoftware>,
}

/// The software one target runs on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TargetSoftware {
    pub target: String,
    pub target_type: String,
    /// What is versioned: `storlab built-in`, a server, a client library.
    pub software: String,
    pub version: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CpuInfo {
    pub model_name: Option<String>,
    pub sockets: Option<u32>,
    pub physical_cores: Option<u32>,
    pub logical_cpus: Option<u32>,
    pub smt_active: Option<bool>,
    pub frequency_governor: Option<String>,
    pub max_frequency_mhz: Option<u64>,
}

/// The storage behind one benchmark target path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct TargetStorage {
    /// The path exactly as given.
    pub path: String,
    /// Canonical form; for a path that does not exist yet, the canonical
    /// nearest existing ancestor joined with the missing components.
    pub canonical_path: Option<String>,
    /// Set when the path does not exist: the ancestor that was inspected.
    pub existing_ancestor: Option<String>,
    pub is_block_device: bool,
    /// `None` for a block device target (or when not found in mountinfo).
    pub filesystem: Option<FilesystemInfo>,
    pub block_devices: Vec<BlockDeviceInfo>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct FilesystemInfo {
    pub mount_point: String,
    pub fs_type: String,
    pub mount_source: String,
    /// Per-mount options (field 6 of mountinfo).
    pub mount_options: String,
    /// Superblock options (last field of mountinfo).
    pub super_options: String,
    /// `major:minor` as reported by mountinfo.
    pub device_number: String,
    pub total_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// Free bytes available to unprivileged users.
    pub available_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct BlockDeviceInfo {
    /// Kernel name, e.g. `vda`, `loop3`, `nvme0n1p1`, `dm-0`.
    pub name: String,
    pub device_number: String,
    pub sysfs_path: Option<String>,
    /// The whole disk this is a partition of (`None` if not a partition).
    pub whole_disk: Option<String>,
    /// Device-mapper name (`dm/name`), for dm devices.
    pub dm_name: Option<String>,
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    pub logical_block_size_bytes: Option<u64>,
    pub physical_block_size_bytes: Option<u64>,
    pub scheduler: Option<String>,
    pub nr_requests: Option<u64>,
    /// Hardware (blk-mq) queues of the device.
    #[serde(default)]
    pub hw_queues: Option<u32>,
    pub model: Option<String>,
    pub vendor: Option<String>,
    pub firmware_rev: Option<String>,
    pub serial: Option<String>,
    pub loop_backing_file: Option<String>,
}

/// The commit the running binary was built from, set once at start by the binary
/// ([`set_git_commit`]): the build script that reads it lives in the thin binary's package, so
/// a commit rebuilds that package alone.
static GIT_COMMIT: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();

/// Records the commit the binary was built from (None outside a git checkout). The first call
/// wins.
pub fn set_git_commit(commit: Option<&'static str>) {
    let _ = GIT_COMMIT.set(commit);
}

/// This machine's host name (uname's nodename), if it can be read.
pub fn hostname() -> Option<String> {
    uname().and_then(|[hostname, ..]| hostname)
}

/// Captures the system description, inspecting the storage of each target.
pub fn capture(target_paths: &[PathBuf]) -> SystemInfo {
    let uts = uname().unwrap_or_default();
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mounts: Vec<MountEntry> = fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(parse_mountinfo_line)
        .collect();
    let [hostname, kernel_release, kernel_version, architecture] = uts;
    SystemInfo {
        captured_at_utc: rfc3339_utc(SystemTime::now()),
        hostname,
        os: os_pretty_name(),
        kernel_release,
        kernel_version,
        architecture,
        storlab_version: env!("CARGO_PKG_VERSION").to_string(),
        storlab_git_commit: GIT_COMMIT.get().copied().flatten().map(str::to_string),
        cpu: cpu_info(),
        memory_total_bytes: meminfo_bytes(&meminfo, "MemTotal"),
        memory_available_bytes: meminfo_bytes(&meminfo, "MemAvailable"),
        swap_total_bytes: meminfo_bytes(&meminfo, "SwapTotal"),
        targets: target_paths.iter().map(|p| target(p, &mounts)).collect(),
        command_line: None,
        target_software: Vec::new(),
    }
}

/// `[nodename, release, version, machine]` from uname(2).
fn uname() -> Option<[Option<String>; 4]> {
    // SAFETY: utsname is plain old data; an all-zero value is valid.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let f = |f: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates every field within its array.
        Some(
            unsafe { CStr::from_ptr(f.as_ptr()) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    Some([f(&u.nodename), f(&u.release), f(&u.version), f(&u.machine)])
}

fn os_pretty_name() -> Option<String> {
    let text = fs::read_to_string("/etc/os-release")
        .or_else(|_| fs::read_to_string("/usr/lib/os-release"))
        .ok()?;
    let value = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(value.trim().trim_matches(['"', '\'']).to_string())
}

/// The value of `key` in `/proc/meminfo`'s text, bytes (its `kB` converted).
pub fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    let rest = meminfo
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?;
    let mut words = rest.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    Some(if words.next() == Some("kB") {
        value * 1024
    } else {
        value
    })
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    let s = fs::read_to_string(path).ok()?;
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

fn read_u64(path: impl AsRef<Path>) -> Option<u64> {
    read_trim(path)?.parse().ok()
}

/// Paths of the entries of a directory (empty if unreadable).
fn entries(dir: impl AsRef<Path>) -> Vec<PathBuf> {
    let list = fs::read_dir(dir).into_iter().flatten().flatten();
    list.map(|e| e.path()).collect()
}

fn lossy(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn cpu_info() -> CpuInfo {
    const CPU: &str = "/sys/devices/system/cpu";
    let text = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let fields: Vec<_> = text.lines().filter_map(|l| l.split_once(':')).collect();
    let key = |k: &str, want: &str| k.trim() == want;
    let logical = fields.iter().filter(|(k, _)| key(k, "processor")).count();
    let model_name = fields.iter().find(|(k, _)| key(k, "model name"));
    // Topology from sysfs: one (package, core) pair per online logical CPU.
    let (mut sockets, mut cores) = (BTreeSet::new(), BTreeSet::new());
    for topo in entries(CPU).into_iter().map(|d| d.join("topology")) {
        if let Some(pkg) = read_trim(topo.join("physical_package_id")) {
            cores.insert((pkg.clone(), read_trim(topo.join("core_id"))));
            sockets.insert(pkg);
        }
    }
    let count = |n: usize| u32::try_from(n).ok().filter(|n| *n > 0);
    let max_khz = read_u64(format!("{CPU}/cpu0/cpufreq/cpuinfo_max_freq"));
    CpuInfo {
        model_name: model_name.map(|(_, v)| v.trim().to_string()),
        sockets: count(sockets.len()),
        physical_cores: count(cores.len()),
        logical_cpus: count(logical),
        smt_active: read_trim(format!("{CPU}/smt/active")).map(|s| s == "1"),
        frequency_governor: read_trim(format!("{CPU}/cpu0/cpufreq/scaling_governor")),
        max_frequency_mhz: max_khz.map(|khz| khz / 1000),
    }
}

/// The mount whose mount point is the longest prefix of `path`; on a tie the
/// later (upper) mount wins.
fn find_mount<'a>(mounts: &'a [MountEntry], path: &Path) -> Option<&'a MountEntry> {
    let depth = |m: &MountEntry| m.mount_point.components().count();
    let candidates = mounts.iter().filter(|m| path.starts_with(&m.mount_point));
    candidates.fold(None, |best, m| match best {
        Some(b) if depth(b) > depth(m) => Some(b),
        _ => Some(m),
    })
}

/// Canonicalizes `path`, or if it does not exist its nearest existing
/// ancestor: returns (canonical path, the ancestor when one was needed).
fn resolve(path: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    if let Ok(c) = fs::canonicalize(path) {
        return Some((c, None));
    }
    let mut tail = Vec::new();
    let mut cur = path;
    loop {
        tail.push(cur.file_name()?);
        cur = cur.parent()?;
        let dir = if cur.as_os_str().is_empty() {
            Path::new(".")
        } else {
            cur
        };
        if let Ok(ancestor) = fs::canonicalize(dir) {
            let full = tail
                .iter()
                .rev()
                .fold(ancestor.clone(), |acc, c| acc.join(c));
            return Some((full, Some(ancestor)));
        }
    }
}

/// (total, free, available to unprivileged users) bytes of a filesystem.
fn statvfs_bytes(path: &Path) -> Option<(u64, u64, u64)> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; an all-zero value is valid.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated string and `s` is writable.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let size = s.f_frsize as u64;
    Some((
        s.f_blocks as u64 * size,
        s.f_bfree as u64 * size,
        s.f_bavail as u64 * size,
    ))
}

fn devno(dev: u64) -> String {
    format!("{}:{}", libc::major(dev), libc::minor(dev))
}

fn target(path: &Path, mounts: &[MountEntry]) -> TargetStorage {
    let resolved = resolve(path);
    let (canonical, ancestor) = resolved.map_or((None, None), |(c, a)| (Some(c), a));
    let inspected = ancestor.clone().or_else(|| canonical.clone());
    let meta = inspected.as_ref().and_then(|p| fs::metadata(p).ok());
    let is_block = meta
        .as_ref()
        .is_some_and(|m| m.file_type().is_block_device());
    let mut devices = Devices::default();
    let mut filesystem = None;
    if let (Some(inspected), Some(meta)) = (&inspected, &meta) {
        if is_block {
            devices.add(&devno(meta.rdev()), 0);
        } else {
            let mount = find_mount(mounts, inspected);
            filesystem = mount.map(|m| filesystem_info(m, inspected));
            devices.add_for_filesystem(meta.dev(), mount);
        }
    }
    TargetStorage {
        path: lossy(path),
        canonical_path: canonical.as_deref().map(lossy),
        existing_ancestor: ancestor.as_deref().map(lossy),
        is_block_device: is_block,
        filesystem,
        block_devices: devices.list,
    }
}

fn filesystem_info(m: &MountEntry, path: &Path) -> FilesystemInfo {
    let stats = statvfs_bytes(path);
    FilesystemInfo {
        mount_point: lossy(&m.mount_point),
        fs_type: m.fs_type.clone(),
        mount_source: m.source.clone(),
        mount_options: m.mount_options.clone(),
        super_options: m.super_options.clone(),
        device_number: m.device_number.clone(),
        total_bytes: stats.map(|s| s.0),
        free_bytes: stats.map(|s| s.1),
        available_bytes: stats.map(|s| s.2),
    }
}

/// Block devices found so far, without duplicates.
#[derive(Default)]
struct Devices {
    list: Vec<BlockDeviceInfo>,
    seen: BTreeSet<String>,
}

impl Devices {
    /// Adds the devices behind a filesystem whose `st_dev` is `dev`.
    fn add_for_filesystem(&mut self, dev: u64, mount: Option<&MountEntry>) {
        if libc::major(dev) != 0 {
            return self.add(&devno(dev), 0);
        }
        // Anonymous device (btrfs, overlayfs, tmpfs...): use the mount source.
        let Some(m) = mount.filter(|m| m.source.starts_with("/dev/")) else {
            return;
        };
        let source = fs::metadata(&m.source).ok();
        if let Some(s) = source.filter(|s| s.file_type().is_block_device()) {
            self.add(&devno(s.rdev()), 0);
        }
        if m.fs_type != "btrfs" {
            return;
        }
        // Every member of the btrfs filesystem that holds a device found so far.
        for fsdir in entries("/sys/fs/btrfs") {
            let members = entries(fsdir.join("devices"));
            let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned());
            let known = |p: &PathBuf| self.list.iter().any(|d| Some(&d.name) == name(p).as_ref());
            if members.iter().any(known) {
                for member in members {
                    if let Some(d) = read_trim(member.join("dev")) {
                        self.add(&d, 0);
                    }
                }
                return;
            }
        }
    }

    /// Adds block device `maj:min` and, recursively, the devices it is
    /// built on (`slaves/`, e.g. under device-mapper or md).
    fn add(&mut self, devno: &str, depth: u32) {
        if depth > 8 || !self.seen.insert(devno.to_string()) {
            return;
        }
        let Ok(sys) = fs::canonicalize(format!("/sys/dev/block/{devno}")) else {
            return;
        };
        let is_partition = sys.join("partition").exists();
        let disk = sys
            .parent()
            .filter(|_| is_partition)
            .unwrap_or(&sys)
            .to_path_buf();
        self.list.push(block_device_info(&sys, &disk, devno));
        for slave in entries(disk.join("slaves")) {
            if let Some(d) = read_trim(slave.join("dev")) {
                self.add(&d, depth + 1);
            }
        }
    }
}

/// Describes block device `sys` (a sysfs directory); `disk` is its whole
/// disk (itself unless it is a partition), which holds `queue/` and `device/`.
fn block_device_info(sys: &Path, disk: &Path, devno: &str) -> BlockDeviceInfo {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let (queue, dev) = (disk.join("queue"), disk.join("device"));
    let disk_name = name(disk).unwrap_or_default();
    // NVMe namespaces: identity also lives on the controller (nvme0n1 -> nvme0).
    let ctrl = disk_name.strip_prefix("nvme").map(|r| {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        Path::new("/sys/class/nvme").join(&disk_name[..4 + digits])
    });
    let ident = |attr: &str| {
        let from_ctrl = || ctrl.as_ref().and_then(|c| read_trim(c.join(attr)));
        read_trim(dev.join(attr)).or_else(from_ctrl)
    };
    BlockDeviceInfo {
        name: name(sys).unwrap_or_default(),
        device_number: devno.to_string(),
        sysfs_path: Some(lossy(sys)),
        whole_disk: Some(disk_name.clone()).filter(|d| Some(d) != name(sys).as_ref()),
        dm_name: read_trim(disk.join("dm/name")),
        size_bytes: read_u64(sys.join("size")).map(|s| s * 512),
        rotational: read_trim(queue.join("rotational")).map(|r| r == "1"),
        logical_block_size_bytes: read_u64(queue.join("logical_block_size")),
        physical_block_size_bytes: read_u64(queue.join("physical_block_size")),
        scheduler: read_trim(queue.join("scheduler")).map(|s| selected_scheduler(&s)),
        nr_requests: read_u64(queue.join("nr_requests")),
        hw_queues: u32::try_from(entries(disk.join("mq")).len())
            .ok()
            .filter(|n| *n > 0),
        model: ident("model"),
        vendor: read_trim(dev.join("vendor")),
        firmware_rev: ident("firmware_rev"),
        serial: ident("serial"),
        loop_backing_file: read_trim(disk.join("loop/backing_file")),
    }
}

/// `mq-deadline [none] kyber` -> `none`.
fn selected_scheduler(s: &str) -> String {
    let selected = s
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'));
    selected.unwrap_or(s).to_string()
}

/// Formats a time as RFC 3339 in UTC with second precision.
fn rfc3339_utc(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (sod / 3600, sod % 3600 / 60, sod % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// `Some("label value")` for a known value.
fn lab<T: std::fmt::Display>(label: &str, v: Option<T>) -> Option<String> {
    v.map(|v| format!("{label} {v}"))
}

fn bullet(title: &str, parts: Vec<Option<String>>) -> String {
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    match parts.is_empty() {
        true => format!("- **{title}**\n"),
        false => format!("- **{title}**: {}\n", parts.join(", ")),
    }
}

/// Renders a short human-readable disclosure as a Markdown bullet list.
pub fn to_markdown(info: &SystemInfo) -> String {
    let (c, i) = (&info.cpu, info);
    let smt = c.smt_active.map(|a| if a { "on" } else { "off" });
    let version = i.kernel_version.as_ref().map(|v| format!(" ({v})"));
    let kernel = i
        .kernel_release
        .clone()
        .map(|r| r + &version.unwrap_or_default());
    let storlab = vec![
        Some(i.storlab_version.clone()),
        lab("commit", i.storlab_git_commit.as_ref()),
        lab("captured", Some(&i.captured_at_utc)),
    ];
    let host = vec![
        i.hostname.clone(),
        i.os.clone(),
        lab("kernel", kernel),
        i.architecture.clone(),
    ];
    let cpu = vec![
        c.model_name.clone(),
        lab("sockets", c.sockets),
        lab("physical cores", c.physical_cores),
        lab("logical CPUs", c.logical_cpus),
        lab("SMT", smt),
        lab("governor", c.frequency_governor.as_ref()),
        c.max_frequency_mhz.map(|m| format!("max {m} MHz")),
    ];
    let memory = vec![
        lab("total", i.memory_total_bytes.map(format_bytes)),
        lab("available", i.memory_available_bytes.map(format_bytes)),
        lab("swap", i.swap_total_bytes.map(format_bytes)),
    ];
    let mut s = bullet("storlab", storlab) + &bullet("Host", host);
    if let Some(c) = &i.command_line {
        s += &format!("- **Command line**: `{}`\n", crate::redact(c));
    }
    s += &(bullet("CPU", cpu) + &bullet("Memory", memory));
    for t in &i.targets {
        let target = vec![
            lab(
                "canonical",
                t.canonical_path.as_ref().filter(|c| **c != t.path),
            ),
            lab(
                "does not exist yet, inspected",
                t.existing_ancestor.as_ref(),
            ),
            t.is_block_device.then(|| "raw block device".to_string()),
        ];
        s += &bullet(&format!("Target `{}`", t.path), target);
        if let Some(f) = &t.filesystem {
            let fs = vec![
                Some(f.fs_type.clone()),
                lab("from", Some(format!("`{}`", f.mount_source))),
                lab("on", Some(format!("`{}`", f.mount_point))),
                lab("options", Some(format!("`{}`", f.mount_options))),
                lab("super options", Some(format!("`{}`", f.super_options))),
                f.available_bytes
                    .map(|a| format!("{} available", format_bytes(a))),
                f.total_bytes.map(|a| format!("{} total", format_bytes(a))),
            ];
            s += &format!("  {}", bullet("Filesystem", fs));
        }
        for d in &t.block_devices {
            let rotational = d
                .rotational
                .map(|r| if r { "rotational" } else { "non-rotational" });
            let dev = vec![
                d.size_bytes.map(format_bytes),
                lab("partition of", d.whole_disk.as_ref()),
                lab("dm", d.dm_name.as_ref()),
                rotational.map(str::to_string),
                lab("logical block bytes", d.logical_block_size_bytes),
                lab("physical block bytes", d.physical_block_size_bytes),
                lab("scheduler", d.scheduler.as_ref()),
                lab("nr_requests", d.nr_requests),
                lab("hardware queues", d.hw_queues),
                lab("vendor", d.vendor.as_ref()),
                lab("model", d.model.as_ref()),
                lab("firmware", d.firmware_rev.as_ref()),
                lab("serial", d.serial.as_ref()),
                lab(
                    "backing file",
                    d.loop_backing_file.as_ref().map(|b| format!("`{b}`")),
                ),
            ];
            let title = format!("Device {} ({})", d.name, d.device_number);
            s += &format!("  {}", bullet(&title, dev));
        }
    }
    for t in &i.target_software {
        s += &format!(
            "- **Software of `{}`** ({}): {} {}\n",
            t.target, t.target_type, t.software, t.version
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_mount_wins() {
        let lines = [
            "1 0 8:1 / / rw - ext4 /dev/sda1 rw",
            "2 1 8:2 / /data rw - xfs /dev/sda2 rw",
            "3 1 8:3 / /data2 rw - xfs /dev/sda3 rw",
            "4 2 8:4 / /data rw - btrfs /dev/sda4 rw",
        ];
        let mounts: Vec<_> = lines
            .iter()
            .filter_map(|l| parse_mountinfo_line(l))
            .collect();
        let src = |p: &str| find_mount(&mounts, Path::new(p)).map(|m| m.source.as_str());
        assert_eq!(src("/data/x/y"), Some("/dev/sda4"));
        assert_eq!(src("/data2"), Some("/dev/sda3"));
        assert_eq!(src("/datax/f"), Some("/dev/sda1"));
    }

    #[test]
    fn small_formatters_and_parsers() {
        let at = |s: u64| rfc3339_utc(UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(selected_scheduler("mq-deadline [none] kyber"), "none");
        let meminfo = "MemTotal:  2048 kB\nSwapTotal: 0 kB\n";
        assert_eq!(meminfo_bytes(meminfo, "MemTotal"), Some(2_097_152));
        assert_eq!(meminfo_bytes(meminfo, "MemFree"), None);
    }

    #[test]
    fn capture_temp_file_finds_filesystem() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("data.bin");
        fs::write(&file, b"x").expect("write");
        let info = capture(&[file.clone(), dir.path().join("not/yet/there")]);
        let t = &info.targets[0];
        assert!(!t.is_block_device && t.existing_ancestor.is_none());
        let f = t.filesystem.as_ref().expect("filesystem found");
        assert!(!f.fs_type.is_empty() && !f.mount_point.is_empty());
        assert!(f.total_bytes.is_some_and(|b| b > 0));
        let canon = fs::canonicalize(&file).expect("canonicalize");
        assert!(canon.starts_with(&f.mount_point));
        let dir_canon = fs::canonicalize(dir.path()).expect("canonicalize");
        let m = &info.targets[1];
        assert_eq!(m.existing_ancestor.as_deref(), dir_canon.to_str());
        let full = dir_canon.join("not/yet/there");
        assert_eq!(m.canonical_path.as_deref(), full.to_str());
        assert_eq!(
            m.filesystem.as_ref().map(|f| &f.mount_point),
            Some(&f.mount_point)
        );
        assert!(info.cpu.logical_cpus.is_some_and(|n| n > 0));
        assert!(info.memory_total_bytes.is_some_and(|n| n > 0));
        assert!(to_markdown(&info).contains(&format!("**Filesystem**: {}", f.fs_type)));
    }

    fn assert_kebab_keys(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Object(map) => map.iter().fold(0, |n, (k, child)| {
                assert!(
                    k.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
                    "key {k}"
                );
                n + 1 + assert_kebab_keys(child)
            }),
            serde_json::Value::Array(items) => items.iter().map(assert_kebab_keys).sum(),
            _ => 0,
        }
    }

    #[test]
    fn json_keys_are_kebab_case() {
        let mut info = capture(&[std::env::temp_dir()]);
        info.targets[0]
            .block_devices
            .push(BlockDeviceInfo::default());
        let json = serde_json::to_value(&info).expect("serialize");
        assert!(json.get("memory-total-bytes").is_some());
        assert!(
            json["targets"][0]["filesystem"]
                .get("mount-point")
                .is_some()
        );
        assert!(
            json["targets"][0]["block-devices"][0]
                .get("size-bytes")
                .is_some()
        );
        assert!(assert_kebab_keys(&json) > 60);
        let back: SystemInfo = serde_json::from_value(json).expect("deserialize");
        assert_eq!(back.storlab_version, info.storlab_version);
    }
}
