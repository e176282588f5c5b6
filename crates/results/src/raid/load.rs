//! The outstanding I/O of each side of a row: how many targets, threads and queue depth the
//! stored workloads ran, and the operations they kept in flight together, so that a reader
//! sees whether the array was driven as hard as its members were (the efficiency compares
//! like with like only then).

use serde::{Deserialize, Serialize};

use super::super::comparison::TargetPoint;

/// What one side of a row kept in flight, from its targets' stored workloads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Load {
    /// Targets driven at once: the members, or the array.
    pub targets: usize,
    /// Threads on all of them together.
    pub threads: u64,
    /// Threads per target, when every target ran as many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads_per_target: Option<u64>,
    /// Each thread's queue depth, when every target's is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u64>,
    /// Operations in flight on all of them together: threads x queue depth, summed.
    pub in_flight: u64,
    /// Bytes per operation, when every target's is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_bytes: Option<u64>,
}

fn field(t: &TargetPoint, key: &str) -> Option<u64> {
    t.workload.as_ref()?.get(key)?.as_u64()
}

fn common(values: &[Option<u64>]) -> Option<u64> {
    let first = (*values.first()?)?;
    values.iter().all(|v| *v == Some(first)).then_some(first)
}

impl Load {
    /// The load of `targets` together; a workload that does not say (an old result) counts
    /// one thread at queue depth 1.
    pub fn of(targets: &[&TargetPoint]) -> Load {
        let threads: Vec<Option<u64>> = targets.iter().map(|t| field(t, "threads")).collect();
        let depths: Vec<Option<u64>> = targets.iter().map(|t| field(t, "queue-depth")).collect();
        let blocks: Vec<Option<u64>> = targets.iter().map(|t| field(t, "block-size")).collect();
        Load {
            targets: targets.len(),
            threads: threads.iter().map(|t| t.unwrap_or(1)).sum(),
            threads_per_target: common(&threads),
            queue_depth: common(&depths),
            in_flight: threads
                .iter()
                .zip(&depths)
                .map(|(t, d)| t.unwrap_or(1) * d.unwrap_or(1))
                .sum(),
            block_bytes: common(&blocks),
        }
    }

    /// E.g. `6 members x 1 thread x QD 32 = 192 in flight`, `6 threads x QD 32 = 192 in
    /// flight` (one target).
    pub fn text(&self, what: &str) -> String {
        let plural = |n: u64, one: &str| {
            if n == 1 {
                format!("{n} {one}")
            } else {
                format!("{n} {one}s")
            }
        };
        let qd = self
            .queue_depth
            .map(|q| format!(" x QD {q}"))
            .unwrap_or_else(|| " at unequal queue depths".into());
        let threads = match (self.targets, self.threads_per_target) {
            (1, _) => plural(self.threads, "thread"),
            (n, Some(per)) => format!("{} x {}", plural(n as u64, what), plural(per, "thread")),
            (n, None) => format!(
                "{} ({} in all)",
                plural(n as u64, what),
                plural(self.threads, "thread")
            ),
        };
        format!("{threads}{qd} = {} in flight", self.in_flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_spells_out_targets_threads_and_queue_depth() {
        let raw = Load {
            targets: 6,
            threads: 6,
            threads_per_target: Some(1),
            queue_depth: Some(32),
            in_flight: 192,
            block_bytes: Some(4096),
        };
        assert_eq!(
            raw.text("member"),
            "6 members x 1 thread x QD 32 = 192 in flight"
        );
        let array = Load {
            targets: 1,
            threads: 6,
            threads_per_target: Some(6),
            queue_depth: Some(32),
            in_flight: 192,
            block_bytes: Some(4096),
        };
        assert_eq!(array.text("array"), "6 threads x QD 32 = 192 in flight");
    }
}
