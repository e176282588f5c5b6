//! /proc/self/mountinfo, parsed once for everyone who needs it: the system capture (which
//! filesystem and mount options are under a target) and the guard (is a device mounted).

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// Reads and parses /proc/self/mountinfo.
pub fn read() -> std::io::Result<Vec<MountEntry>> {
    Ok(std::fs::read_to_string("/proc/self/mountinfo")?
        .lines()
        .filter_map(parse_mountinfo_line)
        .collect())
}

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq)]
pub struct MountEntry {
    /// `major:minor` of the filesystem's device.
    pub device_number: String,
    pub mount_point: PathBuf,
    /// Per-mount options (field 6).
    pub mount_options: String,
    pub fs_type: String,
    /// The mount source (a device, or a name such as `tmpfs`).
    pub source: String,
    /// Superblock options (the last field).
    pub super_options: String,
}

/// Decodes the octal escapes (`\040` space, `\011` tab, `\012` newline,
/// `\134` backslash) the kernel uses in mountinfo fields.
pub fn unescape_octal(field: &str) -> Vec<u8> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b.get(i + 1..i + 4) {
            Some(d) if b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)) => {
                out.push(d.iter().fold(0u32, |a, c| a * 8 + u32::from(c - b'0')) as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// Parses one line; None for a line that is not a mount.
pub fn parse_mountinfo_line(line: &str) -> Option<MountEntry> {
    let f: Vec<&str> = line.split(' ').collect();
    let sep = f.iter().position(|x| *x == "-").filter(|s| *s >= 6)?;
    let text = |i: usize| Some(String::from_utf8_lossy(&unescape_octal(f.get(i)?)).into_owned());
    Some(MountEntry {
        device_number: f[2].to_string(),
        mount_point: PathBuf::from(OsString::from_vec(unescape_octal(f[4]))),
        mount_options: f[5].to_string(),
        fs_type: text(sep + 1)?,
        source: text(sep + 2)?,
        super_options: text(sep + 3).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_parsing_and_escapes() {
        assert_eq!(
            unescape_octal(r"/mnt/a\040b\011x\134y\012"),
            b"/mnt/a b\tx\\y\n"
        );
        assert_eq!(unescape_octal(r"/plain\09\04"), b"/plain\\09\\04");
        let line = r"36 35 98:0 /r /mnt/a\040b rw,noatime master:1 - ext3 /dev/r\040t rw,data=x";
        let m = parse_mountinfo_line(line).expect("valid line");
        assert_eq!(m.mount_point, PathBuf::from("/mnt/a b"));
        assert_eq!(
            (m.fs_type.as_str(), m.source.as_str()),
            ("ext3", "/dev/r t")
        );
        assert_eq!(
            (m.mount_options.as_str(), m.super_options.as_str()),
            ("rw,noatime", "rw,data=x")
        );
        assert_eq!(m.device_number, "98:0");
        assert!(parse_mountinfo_line("36 35 98:0 / /x rw").is_none());
    }
}
