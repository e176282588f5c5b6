//! What a key-value verify pass found, per target: keys per class and the first keys of each,
//! as stored in `summary.json` (`targets[].verify`, with `kind = "key-value"`), the results
//! store and the reports.

use serde::{Deserialize, Serialize};

/// Keys kept per class.
pub const FIRST_KEYS: usize = 16;

/// How a key read back compares with its last acknowledged write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KvClass {
    /// A write that was not overtaken is there (the last acknowledged one, or one in flight
    /// with it).
    Intact,
    /// An older write than the store acknowledged after it: a lost update.
    Lost,
    /// The key is not there.
    Missing,
    /// A stamped field whose checksum, key or format does not match.
    Corrupt,
    /// Reading the key failed: nothing could be checked.
    Unreadable,
}

impl KvClass {
    pub const ALL: [KvClass; 5] = [
        KvClass::Intact,
        KvClass::Lost,
        KvClass::Missing,
        KvClass::Corrupt,
        KvClass::Unreadable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            KvClass::Intact => "intact",
            KvClass::Lost => "lost",
            KvClass::Missing => "missing",
            KvClass::Corrupt => "corrupt",
            KvClass::Unreadable => "unreadable",
        }
    }
}

/// Count and first keys of one class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct KeyClassResult {
    pub keys: u64,
    /// The first keys found, in the order read (at most 16).
    pub first_keys: Vec<String>,
}

/// Always `key-value`: tells this report from a block one in `targets[].verify`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyValueKind {
    #[default]
    KeyValue,
}

/// One key-value verify pass over one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct KvVerifyReport {
    pub kind: KeyValueKind,
    pub target: String,
    /// Keys with an acknowledged write (for a ledger: acknowledged transactions), counted from
    /// storlab's own table, whether or not the pass could check them.
    #[serde(default)]
    pub keys_acknowledged: u64,
    /// Keys with an acknowledged write, read back and classified.
    pub keys_checked: u64,
    pub intact: KeyClassResult,
    pub lost: KeyClassResult,
    pub missing: KeyClassResult,
    pub corrupt: KeyClassResult,
    pub unreadable: KeyClassResult,
    /// Intact keys holding a newer write than the last acknowledged one (one in flight with
    /// it, or one that failed and landed).
    pub newer_than_acknowledged: u64,
    /// Keys checked with a failed write (it may or may not have landed; see docs/verified-writes.md).
    pub keys_with_failed_writes: u64,
    /// Writes not tracked (a key outside the table, or written over 4 billion times).
    pub untracked_writes: u64,
    /// Reading back: seconds and keys per second. Not part of any latency figure.
    pub seconds: f64,
    pub rate_keys: f64,
    /// Where the table was saved (`verify-state`), or the state file verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_file: Option<String>,
    /// The classes of damage the study declared it expects (`verify-expect`: a fault it
    /// injects, as a Redis Cluster's asynchronous replication losing a master): found, they
    /// are reported but do not fail the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<KvClass>,
}

impl KvVerifyReport {
    pub fn class(&self, c: KvClass) -> &KeyClassResult {
        match c {
            KvClass::Intact => &self.intact,
            KvClass::Lost => &self.lost,
            KvClass::Missing => &self.missing,
            KvClass::Corrupt => &self.corrupt,
            KvClass::Unreadable => &self.unreadable,
        }
    }

    fn class_mut(&mut self, c: KvClass) -> &mut KeyClassResult {
        match c {
            KvClass::Intact => &mut self.intact,
            KvClass::Lost => &mut self.lost,
            KvClass::Missing => &mut self.missing,
            KvClass::Corrupt => &mut self.corrupt,
            KvClass::Unreadable => &mut self.unreadable,
        }
    }

    /// Counts one key.
    pub fn add(&mut self, c: KvClass, key: &str) {
        self.keys_checked += 1;
        let r = self.class_mut(c);
        r.keys += 1;
        if r.first_keys.len() < FIRST_KEYS {
            r.first_keys.push(key.to_string());
        }
    }

    /// Acknowledged writes not found: keys holding an older write than acknowledged (`lost`)
    /// or gone (`missing`).
    pub fn lost_writes(&self) -> u64 {
        self.lost.keys + self.missing.keys
    }

    /// Keys not intact.
    pub fn damaged(&self) -> u64 {
        self.keys_checked - self.intact.keys
    }

    /// Damaged keys of the classes the study did not declare it expects.
    pub fn unexpected_damage(&self) -> u64 {
        KvClass::ALL[1..]
            .iter()
            .filter(|c| !self.expected.contains(c))
            .map(|c| self.class(*c).keys)
            .sum()
    }

    /// A plain-text table: class, keys, first keys.
    pub fn text_table(&self) -> String {
        let mut s = format!(
            "verify {}: {} keys checked in {:.2} s ({:.0} keys/s): {}\n",
            self.target,
            self.keys_checked,
            self.seconds,
            self.rate_keys,
            if self.damaged() == 0 {
                "all intact".to_string()
            } else {
                format!("{} damaged", self.damaged())
            }
        );
        s.push_str(&format!(
            "  acknowledged {} keys, checked {}, lost writes {} (older write {}, missing {})\n",
            self.keys_acknowledged,
            self.keys_checked,
            self.lost_writes(),
            self.lost.keys,
            self.missing.keys
        ));
        s.push_str(&format!("  {:<14} {:>10}  first keys\n", "class", "keys"));
        for c in KvClass::ALL {
            let r = self.class(c);
            s.push_str(&format!(
                "  {:<14} {:>10}  {}\n",
                c.name(),
                r.keys,
                if c == KvClass::Intact {
                    String::new()
                } else {
                    r.first_keys.join(" ")
                }
            ));
        }
        s.push_str(&format!(
            "  newer than acknowledged: {}; keys with a failed write: {}; writes not tracked: {}\n",
            self.newer_than_acknowledged, self.keys_with_failed_writes, self.untracked_writes
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_count_in_their_class_and_first_keys_stop_at_16() {
        let mut r = KvVerifyReport::default();
        for i in 0..20 {
            r.add(KvClass::Missing, &format!("user{i}"));
        }
        r.add(KvClass::Intact, "user99");
        assert_eq!(r.missing.keys, 20);
        assert_eq!(r.missing.first_keys.len(), FIRST_KEYS);
        assert_eq!(r.missing.first_keys[0], "user0");
        assert_eq!(r.damaged(), 20);
        assert!(r.text_table().contains("20 damaged"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["kind"], "key-value");
        assert_eq!(json["missing"]["keys"], 20);
    }
}
