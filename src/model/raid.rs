//! A RAID array's geometry as a study declares it: its level (0, 1, 5, 6, 10 or N+M erasure
//! coding), its members and the target that is the array. The study checks it; the results'
//! efficiency table computes the theoretical figures from it.

use serde::{Deserialize, Serialize};

/// A RAID level, as a study's `[raid] level` gives it: 0, 1, 5, 6, 10 or `"N+M"` (N data and
/// M parity strips per stripe, erasure coding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    Raid0,
    Raid1,
    Raid5,
    Raid6,
    Raid10,
    Erasure { data: u32, parity: u32 },
}

impl Level {
    /// Parses `6`, `"6"`, `"raid6"` or `"8+2"`.
    pub fn parse(text: &str) -> Result<Level, String> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_prefix("raid").unwrap_or(&t).trim();
        if let Some((d, p)) = t.split_once('+') {
            let parse = |s: &str| s.trim().parse::<u32>().ok().filter(|n| *n > 0);
            return match (parse(d), parse(p)) {
                (Some(data), Some(parity)) => Ok(Level::Erasure { data, parity }),
                _ => Err(format!(
                    "`{text}`: N+M needs two whole numbers above 0, e.g. \"8+2\""
                )),
            };
        }
        match t {
            "0" => Ok(Level::Raid0),
            "1" => Ok(Level::Raid1),
            "5" => Ok(Level::Raid5),
            "6" => Ok(Level::Raid6),
            "10" => Ok(Level::Raid10),
            _ => Err(format!(
                "`{text}` is not a RAID level storlab computes; expected 0, 1, 5, 6, 10 or \"N+M\" \
                 (data+parity strips, e.g. \"8+2\")"
            )),
        }
    }

    pub fn name(self) -> String {
        match self {
            Level::Raid0 => "RAID 0".into(),
            Level::Raid1 => "RAID 1".into(),
            Level::Raid5 => "RAID 5".into(),
            Level::Raid6 => "RAID 6".into(),
            Level::Raid10 => "RAID 10".into(),
            Level::Erasure { data, parity } => format!("{data}+{parity} erasure coding"),
        }
    }

    /// Why `members` devices cannot form this level, if they cannot.
    pub fn check_members(self, members: usize) -> Result<(), String> {
        let (least, even) = match self {
            Level::Raid0 => (1, false),
            Level::Raid1 => (2, false),
            Level::Raid5 => (3, false),
            Level::Raid6 => (4, false),
            Level::Raid10 => (4, true),
            Level::Erasure { data, parity } => {
                let n = (data + parity) as usize;
                return if n == members {
                    Ok(())
                } else {
                    Err(format!(
                        "{} needs {n} members, and {members} are named",
                        self.name()
                    ))
                };
            }
        };
        if members < least {
            return Err(format!(
                "{} needs at least {least} members, and {members} are named",
                self.name()
            ));
        }
        if even && !members.is_multiple_of(2) {
            return Err(format!(
                "{} needs an even number of members, and {members} are named",
                self.name()
            ));
        }
        Ok(())
    }

    /// The share of the members' sequential write bandwidth that is data, of `members`.
    pub fn data_share(self, members: usize) -> f64 {
        let n = members as f64;
        match self {
            Level::Raid0 => 1.0,
            Level::Raid1 => 1.0 / n,
            Level::Raid10 => 0.5,
            Level::Raid5 => (n - 1.0) / n,
            Level::Raid6 => (n - 2.0) / n,
            Level::Erasure { data, parity } => data as f64 / (data + parity) as f64,
        }
    }

    /// Member reads and writes of one small (sub-stripe) write, read-modify-write.
    pub fn small_write_ios(self, members: usize) -> (f64, f64) {
        match self {
            Level::Raid0 => (0.0, 1.0),
            Level::Raid1 => (0.0, members as f64),
            Level::Raid10 => (0.0, 2.0),
            Level::Raid5 => (2.0, 2.0),
            Level::Raid6 => (3.0, 3.0),
            Level::Erasure { parity, .. } => (parity as f64 + 1.0, parity as f64 + 1.0),
        }
    }

    /// The brief's divisor of the raw random-write rate.
    pub fn brief_write_divisor(self, members: usize) -> f64 {
        match self {
            Level::Raid0 => 1.0,
            Level::Raid1 => members as f64,
            Level::Raid10 => 2.0,
            Level::Raid5 | Level::Raid6 => 4.0,
            Level::Erasure { parity, .. } => 2.0 * (parity as f64 + 1.0),
        }
    }
}

/// An array's geometry and where the study measures it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Geometry {
    pub level: Level,
    /// The member targets, driven all at once for the raw figures.
    pub members: Vec<String>,
    /// The target that is the array (a file on it, or its block device).
    pub array: String,
    /// The strip (chunk) size, as declared: disclosed, not used in the computation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_bytes: Option<u64>,
}
