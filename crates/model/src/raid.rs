//! A RAID array's geometry as a study declares it: its level (0, 1, 5, 6, 10 or N+M erasure
//! coding), its members, its strip size, the target that is the array and how the array's
//! load is set. The study checks it; the results' efficiency table computes the theoretical
//! figures from it ([`Level::sequential_write`], [`Level::small_write_ios`]).

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

    /// Members that hold data in each stripe: all but the parity (RAID 5: one, RAID 6: two,
    /// N+M: M), all for RAID 0, one copy's for mirrors (RAID 1: one, RAID 10: half).
    pub fn data_members(self, members: usize) -> usize {
        match self {
            Level::Raid0 => members,
            Level::Raid1 => 1,
            Level::Raid10 => members / 2,
            Level::Raid5 => members.saturating_sub(1),
            Level::Raid6 => members.saturating_sub(2),
            Level::Erasure { data, .. } => data as usize,
        }
    }

    /// The level keeps parity that a write smaller than a stripe must read back (RAID 5, 6,
    /// N+M); mirrors and RAID 0 write every block as it comes.
    pub fn has_parity(self) -> bool {
        matches!(self, Level::Raid5 | Level::Raid6 | Level::Erasure { .. })
    }

    /// How sequential writes of `write_bytes` each reach the members, given the strip size
    /// (`None`: not declared, full stripes assumed, as the brief's rule does):
    ///
    /// - full stripe: a write of at least one stripe (strip x data members) computes its
    ///   parity from the data it carries and reads nothing: the array writes data at
    ///   (members' write bandwidth) x data share = raw x (N-P)/N;
    /// - read-modify-write: a smaller write on a parity level reads the old data and parity
    ///   and writes the new ([`Level::small_write_ios`]: RAID 5 2 reads + 2 writes, RAID 6
    ///   3 + 3), each as large as the write, so one byte of data costs R bytes read and W
    ///   bytes written on the members: the array writes 1 / (R / raw_read + W / raw_write)
    ///   bytes per second, at the members' sequential read and write bandwidths.
    ///
    /// An array that gathers consecutive small writes into full stripes in a cache (md's
    /// stripe cache, a controller's write-back cache) can beat the read-modify-write figure.
    pub fn sequential_write(
        self,
        members: usize,
        strip_bytes: Option<u64>,
        write_bytes: u64,
    ) -> SequentialWrite {
        let stripe_bytes = strip_bytes.map(|s| s * self.data_members(members) as u64);
        match stripe_bytes {
            Some(stripe) if self.has_parity() && write_bytes < stripe => {
                let (reads, writes) = self.small_write_ios(members);
                SequentialWrite::ReadModifyWrite {
                    stripe_bytes: stripe,
                    reads,
                    writes,
                }
            }
            _ => SequentialWrite::FullStripe {
                stripe_bytes,
                data_share: self.data_share(members),
            },
        }
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

/// How sequential writes reach the members ([`Level::sequential_write`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SequentialWrite {
    /// Whole stripes (or no parity): data at the members' write bandwidth x `data_share`.
    /// `stripe_bytes` is None when the strip size is not declared.
    FullStripe {
        stripe_bytes: Option<u64>,
        data_share: f64,
    },
    /// Each write reads `reads` and writes `writes` member blocks of its own size.
    ReadModifyWrite {
        stripe_bytes: u64,
        reads: f64,
        writes: f64,
    },
}

impl SequentialWrite {
    /// Data bytes per second the array writes, from the members' sequential read and write
    /// bandwidths together (bytes per second); NaN when a read-modify-write needs a read
    /// bandwidth that was not measured.
    pub fn rate_bytes(self, raw_read_bytes: Option<f64>, raw_write_bytes: f64) -> f64 {
        match self {
            SequentialWrite::FullStripe { data_share, .. } => raw_write_bytes * data_share,
            SequentialWrite::ReadModifyWrite { reads, writes, .. } => match raw_read_bytes {
                Some(r) if r > 0.0 && raw_write_bytes > 0.0 => {
                    1.0 / (reads / r + writes / raw_write_bytes)
                }
                _ => f64::NAN,
            },
        }
    }

    /// The rule, for the table and the report's note on the theoretical column.
    pub fn rule(self, write_bytes: u64) -> String {
        let size = crate::units::format_bytes(write_bytes);
        match self {
            SequentialWrite::FullStripe {
                stripe_bytes: Some(stripe),
                data_share,
            } => format!(
                "{size} writes >= stripe {}: full-stripe, sum x {data_share:.3} (data share)",
                crate::units::format_bytes(stripe)
            ),
            SequentialWrite::FullStripe {
                stripe_bytes: None,
                data_share,
            } => format!(
                "sum x {data_share:.3} (data share; strip or write size unknown: full stripes \
                 assumed)"
            ),
            SequentialWrite::ReadModifyWrite {
                stripe_bytes,
                reads,
                writes,
            } => format!(
                "{size} writes < stripe {}: read-modify-write, 1 / ({reads} / seq read sum + \
                 {writes} / seq write sum)",
                crate::units::format_bytes(stripe_bytes)
            ),
        }
    }
}

/// How the array's load (threads and queue depth) is set, `[raid] array-load`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArrayLoad {
    /// The default: each run on the array keeps as many operations in flight as the raw run
    /// of its pattern kept on all members together: threads = the members' threads summed,
    /// at the members' queue depth. A run that sweeps `threads` or `queue-depth` keeps its
    /// own.
    #[default]
    Equal,
    /// The array runs its workload's threads and queue depth as written (the report warns
    /// where they differ from the members' total).
    AsWritten,
}

/// A row's workload pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    SequentialRead,
    SequentialWrite,
    RandomRead,
    RandomWrite,
}

impl Pattern {
    pub fn label(self) -> &'static str {
        match self {
            Pattern::SequentialRead => "Sequential read",
            Pattern::SequentialWrite => "Sequential write",
            Pattern::RandomRead => "Random read",
            Pattern::RandomWrite => "Random write",
        }
    }

    pub fn is_read(self) -> bool {
        matches!(self, Pattern::SequentialRead | Pattern::RandomRead)
    }

    /// Sequential rows compare bandwidth; random rows operations.
    pub fn in_bytes(self) -> bool {
        matches!(self, Pattern::SequentialRead | Pattern::SequentialWrite)
    }

    /// The pattern of a block workload (its stored JSON): sequential or random, all reads or
    /// all writes. Anything else has no rule.
    pub fn of_workload(w: &serde_json::Value) -> Option<Pattern> {
        if w.get("type").and_then(|t| t.as_str()).unwrap_or("block") != "block" {
            return None;
        }
        let sequential = w.get("access").and_then(|a| a.as_str()) == Some("sequential");
        let read_share = w.get("read-share").and_then(|r| r.as_f64()).unwrap_or(1.0);
        Pattern::of(sequential, read_share)
    }

    /// The pattern of sequential or random access at `read_share`: all reads or all writes.
    pub fn of(sequential: bool, read_share: f64) -> Option<Pattern> {
        match (sequential, read_share) {
            (true, 1.0) => Some(Pattern::SequentialRead),
            (true, 0.0) => Some(Pattern::SequentialWrite),
            (false, 1.0) => Some(Pattern::RandomRead),
            (false, 0.0) => Some(Pattern::RandomWrite),
            _ => None,
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
    /// The strip (chunk) size: what one member holds of a stripe. Sequential writes smaller
    /// than a stripe (strip x data members) are read-modify-write in the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_bytes: Option<u64>,
    /// How the array's threads and queue depth are set.
    #[serde(default)]
    pub array_load: ArrayLoad,
    /// Targets that reach the array through a server (its filesystem exported over NFS by
    /// the node that owns the array): their runs with events are node failovers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exports: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;

    #[test]
    fn a_raid6_write_of_a_full_stripe_writes_the_data_share() {
        // 8 members, 128 KiB strip: a stripe holds 6 x 128 KiB = 768 KiB of data.
        let at_stripe = Level::Raid6.sequential_write(8, Some(128 * KIB), 768 * KIB);
        assert_eq!(
            at_stripe,
            SequentialWrite::FullStripe {
                stripe_bytes: Some(768 * KIB),
                data_share: 0.75
            }
        );
        // The brief's figures: 86 GB/s raw writes, 64.5 GB/s theoretical.
        assert!((at_stripe.rate_bytes(Some(228e9), 86e9) - 64.5e9).abs() < 1.0);
        assert!(at_stripe.rule(768 * KIB).contains("full-stripe"));
    }

    #[test]
    fn a_raid6_write_below_a_stripe_is_read_modify_write() {
        let below = Level::Raid6.sequential_write(8, Some(128 * KIB), 768 * KIB - 4 * KIB);
        assert_eq!(
            below,
            SequentialWrite::ReadModifyWrite {
                stripe_bytes: 768 * KIB,
                reads: 3.0,
                writes: 3.0
            }
        );
        // 3 reads at 228 GB/s + 3 writes at 86 GB/s per data byte.
        let want = 1.0 / (3.0 / 228e9 + 3.0 / 86e9);
        assert!((below.rate_bytes(Some(228e9), 86e9) - want).abs() < 1.0);
        assert!(below.rate_bytes(Some(228e9), 86e9) < 86e9 * 0.75 / 2.0);
        // Without the members' read bandwidth, no figure.
        assert!(below.rate_bytes(None, 86e9).is_nan());
        assert!(below.rule(764 * KIB).contains("read-modify-write"));
    }

    #[test]
    fn a_raid5_write_below_a_stripe_costs_two_reads_and_two_writes() {
        // 4 members, 64 KiB strip: 192 KiB stripe.
        assert!(matches!(
            Level::Raid5.sequential_write(4, Some(64 * KIB), 192 * KIB),
            SequentialWrite::FullStripe { .. }
        ));
        let small = Level::Raid5.sequential_write(4, Some(64 * KIB), 128 * KIB);
        assert_eq!(
            small,
            SequentialWrite::ReadModifyWrite {
                stripe_bytes: 192 * KIB,
                reads: 2.0,
                writes: 2.0
            }
        );
        assert!((small.rate_bytes(Some(400.0), 400.0) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn levels_without_parity_and_undeclared_strips_write_full_stripes() {
        for level in [Level::Raid0, Level::Raid1, Level::Raid10] {
            assert!(matches!(
                level.sequential_write(4, Some(64 * KIB), 4 * KIB),
                SequentialWrite::FullStripe { .. }
            ));
        }
        let undeclared = Level::Raid6.sequential_write(6, None, 4 * KIB);
        assert_eq!(
            undeclared,
            SequentialWrite::FullStripe {
                stripe_bytes: None,
                data_share: 4.0 / 6.0
            }
        );
        assert!(undeclared.rule(4 * KIB).contains("full stripes assumed"));
        assert_eq!(Level::Erasure { data: 8, parity: 2 }.data_members(10), 8);
    }
}
