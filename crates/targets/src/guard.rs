//! Safety guard run before storlab writes to a raw block device, so that a
//! user's data is never destroyed by accident: devices in use (mounted, swap,
//! held by md/LVM/dm) are always refused, and devices carrying a filesystem,
//! volume or partition table are refused unless named in `--allow-destroy`.

use super::mountinfo::{MountEntry, parse_mountinfo_line, unescape_octal};
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why storlab refuses to write to a device.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(
        "refusing to write to {}: {mounted_device} is mounted on {mount_point}. Unmount it first \
         (umount {mount_point}); --allow-destroy does not override this",
        .device.display()
    )]
    Mounted {
        device: PathBuf,
        mounted_device: String,
        mount_point: String,
    },
    #[error(
        "refusing to write to {}: {swap_device} is in use as swap. Disable it first \
         (swapoff {swap_device}); --allow-destroy does not override this",
        .device.display()
    )]
    Swap {
        device: PathBuf,
        swap_device: String,
    },
    #[error(
        "refusing to write to {}: it is in use by {} (device-mapper, LVM, md RAID or bcache). \
         Stop or deactivate those first (e.g. vgchange -an, dmsetup remove, mdadm --stop); \
         --allow-destroy does not override this",
        .device.display(), .holders.join(", ")
    )]
    Held {
        device: PathBuf,
        holders: Vec<String>,
    },
    #[error(
        "refusing to write to {}: it holds {}. If you really mean to destroy its contents, \
         pass --allow-destroy {}",
        .device.display(), describe_found(.found), .device.display()
    )]
    HasData { device: PathBuf, found: Vec<String> },
    #[error("cannot check {} before writing to it: {context}: {source}", .device.display())]
    Io {
        device: PathBuf,
        context: String,
        #[source]
        source: std::io::Error,
    },
}

/// How many bytes from the start of the device are inspected for signatures.
pub const PROBE_BYTES: usize = 128 * 1024;

/// `["ext4 filesystem", "GPT partition table"]` -> "an ext4 filesystem and a GPT partition table".
fn describe_found(found: &[String]) -> String {
    let items: Vec<String> = found
        .iter()
        .map(|f| {
            let an = ["ext", "XFS", "LVM", "ISO", "NTFS", "exFAT"];
            match f {
                f if f.starts_with(|c: char| c.is_ascii_digit()) => f.clone(),
                f if an.iter().any(|p| f.starts_with(p)) => format!("an {f}"),
                f => format!("a {f}"),
            }
        })
        .collect();
    match items.split_last() {
        None => "data".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// True if `path` (following symlinks) is a block device.
pub fn is_block_device(path: impl AsRef<Path>) -> bool {
    fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

fn has(buf: &[u8], offset: usize, magic: &[u8]) -> bool {
    buf.get(offset..offset + magic.len()) == Some(magic)
}

fn le32(buf: &[u8], offset: usize) -> u32 {
    buf.get(offset..offset + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// bcache superblock magic, 24 bytes into the superblock at 4 KiB.
const BCACHE_MAGIC: [u8; 16] = [
    0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81,
];

/// Signatures that are a fixed magic at a fixed offset.
const FIXED_MAGICS: [(usize, &[u8], &str); 8] = [
    (0, b"XFSB", "XFS filesystem"),
    (65600, b"_BHRfS_M", "Btrfs filesystem"),
    (0, b"LUKS\xba\xbe", "LUKS encrypted volume"),
    (4096 + 24, &BCACHE_MAGIC, "bcache device"),
    (32769, b"CD001", "ISO 9660 filesystem"),
    (512, b"EFI PART", "GPT partition table"),
    (3, b"NTFS    ", "NTFS filesystem"),
    (3, b"EXFAT   ", "exFAT filesystem"),
];

/// Recognizes filesystem, volume and partition-table signatures in the first
/// bytes of a device (pass at least [`PROBE_BYTES`] for full coverage).
pub fn detect_signatures(first_bytes: &[u8]) -> Vec<&'static str> {
    let b = first_bytes;
    let mut found = Vec::new();
    if has(b, 1080, &[0x53, 0xEF]) {
        let (compat, incompat, ro_compat) = (le32(b, 1116), le32(b, 1120), le32(b, 1124));
        // Features beyond what ext3 supports mean ext4 (same rule as blkid).
        found.push(if incompat & !0x16 != 0 || ro_compat & !0x7 != 0 {
            "ext4 filesystem"
        } else if compat & 0x4 != 0 {
            "ext3 filesystem"
        } else {
            "ext2 filesystem"
        });
    }
    found.extend(
        FIXED_MAGICS
            .iter()
            .filter(|m| has(b, m.0, m.1))
            .map(|m| m.2),
    );
    // The swap signature ends at the end of the first page (page size varies).
    let swap = |page: usize| has(b, page - 10, b"SWAPSPACE2") || has(b, page - 10, b"SWAP-SPACE");
    if [4096, 8192, 16384, 65536].into_iter().any(swap) {
        found.push("swap area");
    }
    if (0..4).any(|sector| has(b, sector * 512, b"LABELONE")) {
        found.push("LVM2 physical volume");
    }
    let boot_sector = has(b, 510, &[0x55, 0xAA]);
    let fat = boot_sector && (has(b, 54, b"FAT") || has(b, 82, b"FAT"));
    if fat {
        found.push("FAT filesystem");
    }
    // FAT/NTFS/exFAT boot code and GPT's protective MBR are not DOS tables.
    if boot_sector
        && !fat
        && !has(b, 3, b"NTFS")
        && !has(b, 3, b"EXFAT")
        && !has(b, 512, b"EFI PART")
    {
        let entries: Vec<&[u8]> = (0..4)
            .filter_map(|i| b.get(446 + 16 * i..462 + 16 * i))
            .collect();
        let flags_valid = entries.iter().all(|e| e[0] == 0 || e[0] == 0x80);
        if flags_valid && entries.iter().any(|e| e[4] != 0) {
            found.push("DOS/MBR partition table");
        }
    }
    found
}

/// Decodes the `\ooo` octal escapes of mountinfo and /proc/swaps.
fn unescape(field: &str) -> String {
    String::from_utf8_lossy(&unescape_octal(field)).into_owned()
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Sorted entry names of a directory (empty if unreadable).
fn dir_names(path: impl AsRef<Path>) -> Vec<String> {
    let entries = fs::read_dir(path).into_iter().flatten().flatten();
    let mut names: Vec<String> = entries
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn devno_of(dev: u64) -> String {
    format!("{}:{}", libc::major(dev), libc::minor(dev))
}

/// The target device with its partitions and everything stacked on top.
struct Stack {
    /// (kernel name, major:minor) of the device, its partitions and holders.
    related: Vec<(String, String)>,
    holders: Vec<String>,
    partitions: Vec<String>,
}

impl Stack {
    fn new(device: &Path, devno: String) -> Self {
        let sys = fs::canonicalize(format!("/sys/dev/block/{devno}")).ok();
        let Some(name) = sys.as_ref().and_then(|s| s.file_name()) else {
            // No sysfs: only the device itself can be matched.
            let name = device.file_name().unwrap_or_default().to_string_lossy();
            let related = vec![(name.into_owned(), devno)];
            return Self {
                related,
                holders: Vec::new(),
                partitions: Vec::new(),
            };
        };
        let name = name.to_string_lossy().into_owned();
        let sys = Path::new("/sys/class/block").join(&name);
        let partitions = dir_names(&sys)
            .into_iter()
            .filter(|n| sys.join(n).join("partition").exists())
            .collect();
        let mut stack = Self {
            related: Vec::new(),
            holders: Vec::new(),
            partitions,
        };
        for n in std::iter::once(&name).chain(&stack.partitions.clone()) {
            stack.add_with_holders(n, 0);
        }
        stack
    }

    /// Adds `name` and, recursively, the devices holding it (dm, md, bcache).
    fn add_with_holders(&mut self, name: &str, depth: u32) {
        if depth > 8 || self.related.iter().any(|r| r.0 == name) {
            return;
        }
        let sys = Path::new("/sys/class/block").join(name);
        let devno = read_trim(sys.join("dev")).unwrap_or_default();
        self.related.push((name.to_string(), devno));
        for h in dir_names(sys.join("holders")) {
            if !self.holders.contains(&h) {
                self.holders.push(h.clone());
            }
            self.add_with_holders(&h, depth + 1);
        }
    }

    /// The related device a mount or swap `source` (with `devno`, if known) uses.
    fn used_by(&self, source: &str, devno: &str) -> Option<String> {
        let by_number = self
            .related
            .iter()
            .find(|r| !r.1.is_empty() && r.1 == devno);
        let by_name = || {
            self.related
                .iter()
                .find(|r| source == format!("/dev/{}", r.0))
        };
        if let Some((name, _)) = by_number.or_else(by_name) {
            return Some(format!("/dev/{name}"));
        }
        let meta = Some(source)
            .filter(|s| s.starts_with('/'))
            .and_then(|s| fs::metadata(s).ok());
        let meta = meta.filter(|m| m.file_type().is_block_device())?;
        let rdev = devno_of(meta.rdev());
        self.related
            .iter()
            .any(|r| r.1 == rdev)
            .then(|| source.to_string())
    }

    /// Refuses if anything in the stack is mounted, used as swap or held.
    fn check_unused(&self, device: &Path) -> Result<(), GuardError> {
        let device = device.to_path_buf();
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").map_err(|source| {
            let context = "reading /proc/self/mountinfo".into();
            GuardError::Io {
                device: device.clone(),
                context,
                source,
            }
        })?;
        let mounts: Vec<MountEntry> = mountinfo.lines().filter_map(parse_mountinfo_line).collect();
        for m in &mounts {
            if let Some(mounted_device) = self.used_by(&m.source, &m.device_number) {
                let mount_point = m.mount_point.display().to_string();
                return Err(GuardError::Mounted {
                    device,
                    mounted_device,
                    mount_point,
                });
            }
        }
        // A mounted multi-device btrfs shows only one member as mount source.
        for fs_uuid in dir_names("/sys/fs/btrfs") {
            let members = dir_names(Path::new("/sys/fs/btrfs").join(&fs_uuid).join("devices"));
            let Some((name, _)) = self.related.iter().find(|r| members.contains(&r.0)) else {
                continue;
            };
            let is_member =
                |m: &&MountEntry| members.iter().any(|n| m.source == format!("/dev/{n}"));
            let mount = mounts
                .iter()
                .filter(|m| m.fs_type == "btrfs")
                .find(is_member);
            let mount_point = mount.map_or(format!("(btrfs {fs_uuid})"), |m| {
                m.mount_point.display().to_string()
            });
            let mounted_device = format!("/dev/{name}");
            return Err(GuardError::Mounted {
                device,
                mounted_device,
                mount_point,
            });
        }
        let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
        for line in swaps.lines().skip(1) {
            let source = unescape(line.split_whitespace().next().unwrap_or_default());
            if let Some(swap_device) = self.used_by(&source, "") {
                return Err(GuardError::Swap {
                    device,
                    swap_device,
                });
            }
        }
        match self.holders.is_empty() {
            true => Ok(()),
            false => Err(GuardError::Held {
                device,
                holders: self.holders.clone(),
            }),
        }
    }
}

/// Checks that storlab may write to `device`. Not a block device: `Ok(())`.
pub fn check_writable_device(device: &Path, allow_destroy: &[PathBuf]) -> Result<(), GuardError> {
    let meta = match fs::metadata(device) {
        Ok(m) if m.file_type().is_block_device() => m,
        _ => return Ok(()),
    };
    let stack = Stack::new(device, devno_of(meta.rdev()));
    stack.check_unused(device)?;
    let io = |context: &str| {
        let (device, context) = (device.to_path_buf(), context.to_string());
        move |source| GuardError::Io {
            device,
            context,
            source,
        }
    };
    let mut buf = Vec::with_capacity(PROBE_BYTES);
    File::open(device)
        .and_then(|f| f.take(PROBE_BYTES as u64).read_to_end(&mut buf))
        .map_err(io("reading its first 128 KiB"))?;
    let mut found: Vec<String> = detect_signatures(&buf)
        .into_iter()
        .map(Into::into)
        .collect();
    let parts = &stack.partitions;
    if !parts.is_empty() {
        found.push(format!(
            "{} partition(s) ({})",
            parts.len(),
            parts.join(", ")
        ));
    }
    if found.is_empty() {
        return Ok(());
    }
    let canonical = fs::canonicalize(device).map_err(io("resolving its path"))?;
    let same = |a: &PathBuf| fs::canonicalize(a).is_ok_and(|a| a == canonical);
    match allow_destroy.iter().any(same) {
        true => Ok(()),
        false => Err(GuardError::HasData {
            device: device.into(),
            found,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Signatures found in a zeroed probe buffer with `parts` written into it.
    fn sig(parts: &[(usize, &[u8])]) -> Vec<&'static str> {
        let mut b = vec![0u8; PROBE_BYTES];
        for (off, bytes) in parts {
            b[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        detect_signatures(&b)
    }

    const BOOT: (usize, &[u8]) = (510, &[0x55, 0xAA]);
    const EXT: (usize, &[u8]) = (1080, &[0x53, 0xEF]);
    const MBR: (usize, &[u8]) = (
        446,
        &[
            0x80, 1, 1, 0, 0x83, 0xfe, 0xff, 0xff, 0, 8, 0, 0, 0, 0, 1, 0,
        ],
    );

    #[test]
    fn detects_each_format() {
        assert_eq!(
            sig(&[EXT, (1120, &0x40u32.to_le_bytes())]),
            ["ext4 filesystem"]
        );
        assert_eq!(
            sig(&[EXT, (1116, &0x4u32.to_le_bytes())]),
            ["ext3 filesystem"]
        );
        assert_eq!(sig(&[EXT]), ["ext2 filesystem"]);
        assert_eq!(sig(&[(0, b"XFSB")]), ["XFS filesystem"]);
        assert_eq!(sig(&[(65600, b"_BHRfS_M")]), ["Btrfs filesystem"]);
        assert_eq!(sig(&[(4086, b"SWAPSPACE2")]), ["swap area"]);
        assert_eq!(sig(&[(4086, b"SWAP-SPACE")]), ["swap area"]);
        assert_eq!(sig(&[(65526, b"SWAPSPACE2")]), ["swap area"]);
        assert_eq!(sig(&[(0, b"LUKS\xba\xbe")]), ["LUKS encrypted volume"]);
        assert_eq!(sig(&[(512, b"LABELONE")]), ["LVM2 physical volume"]);
        assert_eq!(sig(&[(1536, b"LABELONE")]), ["LVM2 physical volume"]);
        assert_eq!(sig(&[(4120, &BCACHE_MAGIC)]), ["bcache device"]);
        assert_eq!(sig(&[(32769, b"CD001")]), ["ISO 9660 filesystem"]);
        assert_eq!(sig(&[MBR, BOOT]), ["DOS/MBR partition table"]);
        assert_eq!(
            sig(&[MBR, BOOT, (512, b"EFI PART")]),
            ["GPT partition table"]
        );
        let fat32 = [(3, &b"mkfs.fat"[..]), (82, b"FAT32   "), MBR, BOOT];
        assert_eq!(sig(&fat32), ["FAT filesystem"]);
        assert_eq!(sig(&[(54, b"FAT16   "), BOOT]), ["FAT filesystem"]);
        assert_eq!(sig(&[(3, b"NTFS    "), BOOT]), ["NTFS filesystem"]);
        assert_eq!(sig(&[(3, b"EXFAT   "), BOOT]), ["exFAT filesystem"]);
        let both = ["XFS filesystem", "GPT partition table"];
        assert_eq!(sig(&[(0, b"XFSB"), (512, b"EFI PART")]), both);
    }

    #[test]
    fn blank_or_incomplete_buffers_have_no_signature() {
        assert!(sig(&[]).is_empty());
        assert!(detect_signatures(&[]).is_empty());
        assert!(detect_signatures(&[0xff; 600]).is_empty());
        assert!(detect_signatures(&[0x55; 1081]).is_empty());
        assert!(sig(&[BOOT]).is_empty(), "boot signature without partitions");
        let bad_flag = [0x12, 0, 0, 0, 0x83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(sig(&[(446, &bad_flag), BOOT]).is_empty());
    }

    #[test]
    fn messages_tell_what_to_do() {
        let found = vec!["ext4 filesystem".into()];
        let e = GuardError::HasData {
            device: "/dev/loop3".into(),
            found,
        };
        let expected = "refusing to write to /dev/loop3: it holds an ext4 filesystem. If you really \
                        mean to destroy its contents, pass --allow-destroy /dev/loop3";
        assert_eq!(e.to_string(), expected);
        let found = [
            "GPT partition table",
            "2 partition(s) (a1, a2)",
            "XFS filesystem",
        ];
        let expected = "a GPT partition table, 2 partition(s) (a1, a2) and an XFS filesystem";
        assert_eq!(describe_found(&found.map(String::from)), expected);
        let (device, mounted_device) = ("/dev/sdb".into(), "/dev/sdb1".into());
        let e = GuardError::Mounted {
            device,
            mounted_device,
            mount_point: "/mnt".into(),
        };
        assert!(
            e.to_string()
                .contains("/dev/sdb1 is mounted on /mnt. Unmount it first")
        );
        assert_eq!(unescape(r"/mnt/a\040b\134"), r"/mnt/a b\");
        let m = parse_mountinfo_line(r"36 35 7:3 / /mnt/a\040b rw shared:1 - ext4 /dev/loop3 rw");
        let m = m.expect("parses");
        assert_eq!(
            (m.device_number, m.mount_point, m.source),
            ("7:3".into(), "/mnt/a b".into(), "/dev/loop3".into())
        );
    }

    #[test]
    fn non_block_paths_pass() {
        let f = tempfile::NamedTempFile::new().expect("tempfile");
        fs::write(f.path(), b"XFSB").expect("write");
        assert!(!is_block_device(f.path()));
        assert!(check_writable_device(f.path(), &[]).is_ok());
        assert!(check_writable_device(Path::new("/nonexistent/storlab"), &[]).is_ok());
    }

    fn run(cmd: &str, args: &[&Path]) -> Result<String, String> {
        let out = Command::new(cmd).args(args).output();
        let out = out.map_err(|e| format!("{cmd}: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
            false => Err(format!("{cmd} {args:?} failed: {stderr}")),
        }
    }

    /// Loop device attached for the test; unmounts and detaches it on drop.
    struct LoopDev {
        dev: PathBuf,
        mounted_on: Option<PathBuf>,
    }

    impl Drop for LoopDev {
        fn drop(&mut self) {
            let umount = self.mounted_on.take().map(|m| run("umount", &[&m]));
            let detach = run("losetup", &[Path::new("-d"), &self.dev]);
            for e in [umount.unwrap_or(Ok(String::new())), detach] {
                if let Err(e) = e {
                    eprintln!("cleanup failed: {e}");
                }
            }
        }
    }

    fn expect_err(r: Result<(), GuardError>, what: &str) -> GuardError {
        match r {
            Err(e) => e,
            Ok(()) => panic!("expected {what}, got Ok"),
        }
    }

    #[test]
    fn loop_device_lifecycle() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return eprintln!("skipping loop-device test: not running as root");
        }
        if run("losetup", &[Path::new("--version")]).is_err() {
            return eprintln!("skipping loop-device test: losetup is not available");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let img = dir.path().join("disk.img");
        File::create(&img)
            .and_then(|f| f.set_len(64 << 20))
            .expect("create image");
        let find = [Path::new("--find"), Path::new("--show"), &img];
        let dev = PathBuf::from(run("losetup", &find).expect("losetup --find"));
        let mut lo = LoopDev {
            dev: dev.clone(),
            mounted_on: None,
        };
        assert!(is_block_device(&dev));
        check_writable_device(&dev, &[]).expect("blank loop device must pass");

        run("mkfs.ext4", &[Path::new("-q"), &dev]).expect("mkfs.ext4");
        let e = expect_err(check_writable_device(&dev, &[]), "HasData");
        let GuardError::HasData { found, .. } = &e else {
            panic!("expected HasData: {e}")
        };
        assert_eq!(found, &["ext4 filesystem"]);
        let allow_msg = format!("pass --allow-destroy {}", dev.display());
        assert!(e.to_string().ends_with(&allow_msg), "{e}");
        check_writable_device(&dev, std::slice::from_ref(&dev)).expect("allowed device must pass");
        let link = dir.path().join("link-to-dev");
        std::os::unix::fs::symlink(&dev, &link).expect("symlink");
        check_writable_device(&dev, &["/dev/null".into(), link]).expect("allowed via symlink");
        let others = ["/dev/null".into(), img.clone(), dir.path().join("missing")];
        let e = expect_err(check_writable_device(&dev, &others), "HasData");
        assert!(matches!(e, GuardError::HasData { .. }), "{e}");

        let mnt = dir.path().join("mnt");
        fs::create_dir(&mnt).expect("mkdir");
        run("mount", &[&dev, &mnt]).expect("mount");
        lo.mounted_on = Some(mnt.clone());
        let e = expect_err(
            check_writable_device(&dev, std::slice::from_ref(&dev)),
            "Mounted",
        );
        let GuardError::Mounted { mount_point, .. } = &e else {
            panic!("expected Mounted: {e}")
        };
        assert_eq!(
            Path::new(mount_point),
            fs::canonicalize(&mnt).expect("canonicalize")
        );
        assert!(e.to_string().contains("Unmount it first"), "{e}");
    }
}
