//! What a verify pass found, per target: counts per class and the first offsets of each, as
//! stored in `summary.json` (`targets[].verify`), the results store and the reports.

use serde::{Deserialize, Serialize};

/// Offsets kept per class.
pub const FIRST_OFFSETS: usize = 16;

/// How a block read back compares with its last acknowledged write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerifyClass {
    /// The acknowledged generation (or a newer one whose write was in flight) is there.
    Intact,
    /// An older generation than acknowledged, whose acknowledged write was durable (an fsync
    /// after it completed).
    LostDurable,
    /// An older generation than acknowledged, whose acknowledged write was not yet synced,
    /// after a crash or power-off (POSIX lets a crash lose what was not synced).
    LostUnsynced,
    /// An older generation than acknowledged, whose acknowledged write was not yet synced,
    /// with no crash or power-off before the pass: the storage lost a write it had
    /// acknowledged while it stayed up (POSIX does not allow it).
    LostWhileUp,
    /// The checksum does not match the block's content.
    Torn,
    /// A storlab block of another offset or another target.
    Misplaced,
    /// No storlab header (wrong magic).
    Foreign,
    /// Reading the block failed (an I/O error): nothing could be checked.
    Unreadable,
}

impl VerifyClass {
    pub const ALL: [VerifyClass; 8] = [
        VerifyClass::Intact,
        VerifyClass::LostDurable,
        VerifyClass::LostUnsynced,
        VerifyClass::LostWhileUp,
        VerifyClass::Torn,
        VerifyClass::Misplaced,
        VerifyClass::Foreign,
        VerifyClass::Unreadable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            VerifyClass::Intact => "intact",
            VerifyClass::LostDurable => "lost-durable",
            VerifyClass::LostUnsynced => "lost-unsynced",
            VerifyClass::LostWhileUp => "lost-while-up",
            VerifyClass::Torn => "torn",
            VerifyClass::Misplaced => "misplaced",
            VerifyClass::Foreign => "foreign",
            VerifyClass::Unreadable => "unreadable",
        }
    }
}

/// Count and first offsets of one class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ClassResult {
    pub blocks: u64,
    /// The first offsets found, bytes, in the order read (at most 16).
    pub first_offsets: Vec<u64>,
}

/// What blocks whose write was in flight when the state was left hold (a run that did not
/// end: killed or crashed). The target may hold either generation: both are accepted, and a
/// write torn before its acknowledgement is no acknowledged write lost. Not in the classes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct InFlight {
    pub blocks: u64,
    /// The last acknowledged generation (or, never acknowledged, the content before).
    pub old: u64,
    /// A newer generation: the write landed.
    pub new: u64,
    /// Part of the write landed (the checksum does not match).
    pub torn: u64,
    /// The first offsets of in-flight blocks, bytes (at most 16).
    pub first_offsets: Vec<u64>,
}

/// What an in-flight block was found to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFlightHeld {
    Old,
    New,
    Torn,
}

impl InFlight {
    pub fn add(&mut self, held: InFlightHeld, offset: u64) {
        self.blocks += 1;
        match held {
            InFlightHeld::Old => self.old += 1,
            InFlightHeld::New => self.new += 1,
            InFlightHeld::Torn => self.torn += 1,
        }
        if self.first_offsets.len() < FIRST_OFFSETS {
            self.first_offsets.push(offset);
        }
    }
}

/// Always `block`: tells this report from a key-value one in `targets[].verify` (absent in
/// summaries written before key-value verification).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockKind {
    #[default]
    Block,
}

/// One verify pass over one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct VerifyReport {
    #[serde(default)]
    pub kind: BlockKind,
    pub target: String,
    pub block_bytes: u32,
    /// Blocks with a known generation, read back and classified.
    pub blocks_checked: u64,
    pub intact: ClassResult,
    /// Lost writes: `lost-durable` + `lost-unsynced` + `lost-while-up`.
    pub lost: ClassResult,
    pub lost_durable: ClassResult,
    pub lost_unsynced: ClassResult,
    /// Absent in reports written before the class existed (their unsynced losses are all
    /// `lost-unsynced`).
    #[serde(default)]
    pub lost_while_up: ClassResult,
    pub torn: ClassResult,
    pub misplaced: ClassResult,
    pub foreign: ClassResult,
    pub unreadable: ClassResult,
    /// Intact blocks holding a newer generation than acknowledged (a write in flight landed).
    pub newer_than_acknowledged: u64,
    /// Blocks whose last write failed: their content is unknown, they are not classified.
    pub skipped_failed_writes: u64,
    /// Writes that waited for an earlier write to the same block still in flight.
    pub serialized_writes: u64,
    /// Reading back: bytes read, seconds, MB/s (10^6 bytes). Not part of any latency figure.
    pub bytes_read: u64,
    pub seconds: f64,
    pub rate_bytes: f64,
    /// Where the table was saved (`verify-state`), or the state file verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_file: Option<String>,
    /// The state came from a run that did not end normally (killed, crashed, still running).
    #[serde(default)]
    pub interrupted: bool,
    /// When that state was last synced to its device (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_last_sync: Option<String>,
    /// Blocks whose write was in flight in that state.
    #[serde(default)]
    pub in_flight: InFlight,
    /// The classes of damage the study declared it expects (`verify-expect`: a fault it
    /// injects): found, they are reported but do not fail the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<VerifyClass>,
}

impl VerifyReport {
    pub fn class(&self, c: VerifyClass) -> &ClassResult {
        match c {
            VerifyClass::Intact => &self.intact,
            VerifyClass::LostDurable => &self.lost_durable,
            VerifyClass::LostUnsynced => &self.lost_unsynced,
            VerifyClass::LostWhileUp => &self.lost_while_up,
            VerifyClass::Torn => &self.torn,
            VerifyClass::Misplaced => &self.misplaced,
            VerifyClass::Foreign => &self.foreign,
            VerifyClass::Unreadable => &self.unreadable,
        }
    }

    fn class_mut(&mut self, c: VerifyClass) -> &mut ClassResult {
        match c {
            VerifyClass::Intact => &mut self.intact,
            VerifyClass::LostDurable => &mut self.lost_durable,
            VerifyClass::LostUnsynced => &mut self.lost_unsynced,
            VerifyClass::LostWhileUp => &mut self.lost_while_up,
            VerifyClass::Torn => &mut self.torn,
            VerifyClass::Misplaced => &mut self.misplaced,
            VerifyClass::Foreign => &mut self.foreign,
            VerifyClass::Unreadable => &mut self.unreadable,
        }
    }

    /// Counts one block.
    pub fn add(&mut self, c: VerifyClass, offset: u64) {
        self.blocks_checked += 1;
        let note = |r: &mut ClassResult| {
            r.blocks += 1;
            if r.first_offsets.len() < FIRST_OFFSETS {
                r.first_offsets.push(offset);
            }
        };
        note(self.class_mut(c));
        if matches!(
            c,
            VerifyClass::LostDurable | VerifyClass::LostUnsynced | VerifyClass::LostWhileUp
        ) {
            note(&mut self.lost);
        }
    }

    /// Blocks not intact.
    pub fn damaged(&self) -> u64 {
        self.blocks_checked - self.intact.blocks
    }

    /// No crash or power-off came before the pass: the writes lost before their sync were
    /// lost while the storage stayed up (`lost-while-up`), not to a crash.
    pub fn no_crash_before(&mut self) {
        let unsynced = std::mem::take(&mut self.lost_unsynced);
        self.lost_while_up.blocks += unsynced.blocks;
        let room = FIRST_OFFSETS.saturating_sub(self.lost_while_up.first_offsets.len());
        self.lost_while_up
            .first_offsets
            .extend(unsynced.first_offsets.into_iter().take(room));
    }

    /// Damaged blocks of the classes the study did not declare it expects.
    pub fn unexpected_damage(&self) -> u64 {
        VerifyClass::ALL[1..]
            .iter()
            .filter(|c| !self.expected.contains(c))
            .map(|c| self.class(*c).blocks)
            .sum()
    }

    /// A plain-text table: class, blocks, first offsets.
    pub fn text_table(&self) -> String {
        let mut s = format!(
            "verify {}: {} blocks of {} bytes checked in {:.2} s ({:.1} MB/s): {}\n",
            self.target,
            self.blocks_checked,
            self.block_bytes,
            self.seconds,
            self.rate_bytes / 1e6,
            if self.damaged() == 0 {
                "all intact".to_string()
            } else {
                format!("{} damaged", self.damaged())
            }
        );
        s.push_str(&format!(
            "  {:<14} {:>10}  first offsets (bytes)\n",
            "class", "blocks"
        ));
        for c in VerifyClass::ALL {
            let r = self.class(c);
            let offs: Vec<String> = r.first_offsets.iter().map(|o| o.to_string()).collect();
            s.push_str(&format!(
                "  {:<14} {:>10}  {}\n",
                c.name(),
                r.blocks,
                if c == VerifyClass::Intact {
                    String::new()
                } else {
                    offs.join(" ")
                }
            ));
        }
        s.push_str(&format!(
            "  newer than acknowledged: {}; not checked (last write failed): {}; writes serialized behind one to the same block: {}\n",
            self.newer_than_acknowledged, self.skipped_failed_writes, self.serialized_writes
        ));
        if self.interrupted {
            let f = &self.in_flight;
            s.push_str(&format!(
                "  state left by an interrupted run (it did not end normally; last synced {}): {} writes were in flight, accepted and not counted above: {} hold the old generation, {} the new, {} torn\n",
                self.state_last_sync.as_deref().unwrap_or("never"),
                f.blocks,
                f.old,
                f.new,
                f.torn
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Summaries written before key-value verification have no `kind`: they read as block
    /// reports; key-value ones read as such.
    #[test]
    fn both_kinds_read_back_from_json() {
        let mut b = VerifyReport::default();
        b.add(VerifyClass::Torn, 4096);
        let mut old = serde_json::to_value(&b).unwrap();
        assert_eq!(old["kind"], "block");
        old.as_object_mut().unwrap().remove("kind");
        let back: Verified = serde_json::from_value(old).unwrap();
        assert_eq!(back, Verified::Block(b));
        let mut kv = crate::kv::KvVerifyReport::default();
        kv.add(crate::kv::KvClass::Lost, "user1");
        let back: Verified = serde_json::from_value(serde_json::to_value(&kv).unwrap()).unwrap();
        assert_eq!(back.kind(), "key-value");
        assert_eq!(back.class_rows()[1], ("lost", 1, "user1".to_string()));
    }

    /// Without a crash, writes lost before their sync are `lost-while-up`; only the classes
    /// the study did not declare count as unexpected damage.
    #[test]
    fn unsynced_losses_without_a_crash_are_lost_while_up_and_only_undeclared_damage_counts() {
        let mut r = VerifyReport::default();
        r.add(VerifyClass::LostWhileUp, 0);
        for i in 1..=20 {
            r.add(VerifyClass::LostUnsynced, i * 4096);
        }
        r.add(VerifyClass::Torn, 1 << 20);
        r.add(VerifyClass::Intact, 2 << 20);
        r.no_crash_before();
        assert_eq!(r.lost_unsynced, ClassResult::default());
        assert_eq!(r.lost_while_up.blocks, 21);
        assert_eq!(r.lost_while_up.first_offsets.len(), FIRST_OFFSETS);
        assert_eq!(r.lost_while_up.first_offsets[..2], [0, 4096]);
        assert_eq!(r.lost.blocks, 21, "lost is unchanged");
        assert_eq!((r.damaged(), r.unexpected_damage()), (22, 22));
        r.expected = vec![VerifyClass::LostWhileUp];
        assert_eq!(r.unexpected_damage(), 1, "the torn block");
        r.expected.push(VerifyClass::Torn);
        assert_eq!(Verified::Block(r).unexpected_damage(), 0);
        let mut kv = crate::kv::KvVerifyReport::default();
        kv.add(crate::kv::KvClass::Missing, "user1");
        kv.add(crate::kv::KvClass::Intact, "user2");
        kv.expected = vec![crate::kv::KvClass::Lost];
        assert_eq!(kv.unexpected_damage(), 1);
        kv.expected.push(crate::kv::KvClass::Missing);
        assert_eq!(kv.unexpected_damage(), 0);
    }

    #[test]
    fn lost_blocks_count_in_their_kind_and_in_lost_and_offsets_stop_at_16() {
        let mut r = VerifyReport::default();
        for i in 0..20 {
            r.add(VerifyClass::LostUnsynced, i * 4096);
        }
        r.add(VerifyClass::LostDurable, 1 << 20);
        r.add(VerifyClass::Intact, 0);
        assert_eq!(r.lost.blocks, 21);
        assert_eq!(r.lost_unsynced.blocks, 20);
        assert_eq!(r.lost_unsynced.first_offsets.len(), FIRST_OFFSETS);
        assert_eq!(r.lost_durable.first_offsets, vec![1 << 20]);
        assert_eq!(r.damaged(), 21);
        assert!(r.text_table().contains("21 damaged"));
    }
}

/// A verify pass of either kind, as `targets[].verify` holds it (told apart by `kind`).
/// One per target and run, never on a hot path: the block report's size is no cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
pub enum Verified {
    KeyValue(crate::kv::KvVerifyReport),
    Block(VerifyReport),
}

impl Verified {
    /// `block` or `key-value`.
    pub fn kind(&self) -> &'static str {
        match self {
            Verified::KeyValue(_) => "key-value",
            Verified::Block(_) => "block",
        }
    }

    pub fn target(&self) -> &str {
        match self {
            Verified::KeyValue(r) => &r.target,
            Verified::Block(r) => &r.target,
        }
    }

    /// Blocks or keys not intact.
    pub fn damaged(&self) -> u64 {
        match self {
            Verified::KeyValue(r) => r.damaged(),
            Verified::Block(r) => r.damaged(),
        }
    }

    /// Blocks or keys damaged in a class the study did not declare it expects
    /// (`verify-expect`): a failure of the run.
    pub fn unexpected_damage(&self) -> u64 {
        match self {
            Verified::KeyValue(r) => r.unexpected_damage(),
            Verified::Block(r) => r.unexpected_damage(),
        }
    }

    pub fn text_table(&self) -> String {
        match self {
            Verified::KeyValue(r) => r.text_table(),
            Verified::Block(r) => r.text_table(),
        }
    }

    /// Per class: its name, blocks or keys, and the first offsets or keys (space-separated),
    /// as the results store keeps them.
    pub fn class_rows(&self) -> Vec<(&'static str, u64, String)> {
        match self {
            Verified::KeyValue(r) => crate::kv::KvClass::ALL
                .iter()
                .map(|c| {
                    let x = r.class(*c);
                    (c.name(), x.keys, x.first_keys.join(" "))
                })
                .collect(),
            Verified::Block(r) => VerifyClass::ALL
                .iter()
                .map(|c| {
                    let x = r.class(*c);
                    let offs: Vec<String> = x.first_offsets.iter().map(|o| o.to_string()).collect();
                    (c.name(), x.blocks, offs.join(" "))
                })
                .collect(),
        }
    }
}
