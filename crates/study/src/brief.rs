//! The study behind `storlab brief`: characterizes the storage under a folder with sequential
//! 1 MiB reads and writes and 4 KiB random reads and writes at queue depths 1 and 32, O_DIRECT
//! where the filesystem allows it; then a short key-value profile of a real engine on the same
//! folder: embedded RocksDB loaded with fillrandom (4 KB values), then readrandom and
//! readwhilewriting at 1, 4 and 16 threads. It is written out as an ordinary study file, so
//! the brief's results folder holds a study anyone can run again.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Whether the filesystem under `dir` accepts O_DIRECT.
pub fn direct_supported(dir: &Path) -> bool {
    let probe = dir.join(".storlab-direct-probe");
    let ok = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&probe)
        .is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// The brief's study text for a data file at `file` and a RocksDB database at `kv_dir`.
pub fn study_text(file: &Path, kv_dir: &Path, quick: bool, direct: bool) -> String {
    let note = if direct {
        ", O_DIRECT"
    } else {
        ", buffered (the filesystem refused O_DIRECT)"
    };
    format!(
        r#"# Written by `storlab brief`: the storage characterization it ran. Run it again with
#   storlab run study.toml
name = "brief"
description = "Storage characterization: sequential 1 MiB read and write, 4 KiB random read and write at queue depths 1 and 32{note}; then embedded RocksDB (4 KB values): fillrandom, readrandom and readwhilewriting at 1, 4 and 16 threads"

"#
    ) + &storage_part(file, quick, direct)
        + &key_value_part(kv_dir, quick)
}

/// The storage characterization: the data file, sequential and random workloads, their steps.
fn storage_part(file: &Path, quick: bool, direct: bool) -> String {
    let (size, warmup, duration) = if quick {
        ("128MiB", "500ms", "4s")
    } else {
        ("1GiB", "3s", "20s")
    };
    let path = toml::Value::String(file.display().to_string());
    format!(
        r#"[targets.data]
type = "file"
path = {path}
size = "{size}"
engine = "io-uring"
direct = {direct}
remove-after = true

[workloads.seq-write]
access = "sequential"
block-size = "1MiB"
read-share = 0.0
queue-depth = 8

[workloads.seq-read]
access = "sequential"
block-size = "1MiB"
read-share = 1.0
queue-depth = 8

[workloads.rand-read]
access = "random"
block-size = "4KiB"
read-share = 1.0

[workloads.rand-write]
access = "random"
block-size = "4KiB"
read-share = 0.0

[[steps]]
workload = "seq-write"
targets = ["data"]
warmup = "{warmup}"
duration = "{duration}"

[[steps]]
workload = "seq-read"
targets = ["data"]
warmup = "{warmup}"
duration = "{duration}"

[[steps]]
workload = "rand-read"
targets = ["data"]
warmup = "{warmup}"
duration = "{duration}"
sweep.queue-depth = [1, 32]

[[steps]]
workload = "rand-write"
targets = ["data"]
warmup = "{warmup}"
duration = "{duration}"
sweep.queue-depth = [1, 32]

"#
    )
}

/// The key-value profile: embedded RocksDB loaded, then read alone and while writing.
fn key_value_part(kv_dir: &Path, quick: bool) -> String {
    // Keys (4 KB values), warm-up and duration per run.
    let (kv_num, kv_warmup, kv_duration) = if quick {
        (20_000, "300ms", "2s")
    } else {
        (250_000, "2s", "10s")
    };
    let kv_path = toml::Value::String(kv_dir.display().to_string());
    format!(
        r#"# A real engine on the same storage: embedded RocksDB with db_bench's benchmarks.
[targets.kv]
type = "rocksdb"
path = {kv_path}
compression = "none"
remove-after = true

[workloads.kv-fill]
type = "db-bench"
benchmark = "fillrandom"
num = {kv_num}
value-size = 4096

[workloads.kv-readrandom]
type = "db-bench"
benchmark = "readrandom"
num = {kv_num}
value-size = 4096

[workloads.kv-readwhilewriting]
type = "db-bench"
benchmark = "readwhilewriting"
num = {kv_num}
value-size = 4096
writer-rate-bytes = "4MiB"

[[steps]]
workload = "kv-fill"
targets = ["kv"]
ops = {kv_num}

[[steps]]
workload = "kv-readrandom"
targets = ["kv"]
warmup = "{kv_warmup}"
duration = "{kv_duration}"
sweep.threads = [1, 4, 16]

[[steps]]
workload = "kv-readwhilewriting"
targets = ["kv"]
warmup = "{kv_warmup}"
duration = "{kv_duration}"
sweep.threads = [1, 4, 16]
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brief_study_is_a_valid_plan_of_storage_and_key_value_runs() {
        let text = study_text(
            Path::new("/tmp/x/data.bin"),
            Path::new("/tmp/x/kv"),
            true,
            true,
        );
        let plan = crate::parse("brief.toml", &text).unwrap();
        assert_eq!(plan.runs.len(), 13);
        let qds: Vec<u32> = plan.runs[..6]
            .iter()
            .map(|r| r.targets[0].workload.queue_depth())
            .collect();
        assert_eq!(qds, vec![8, 8, 1, 32, 1, 32]);
        let kv: Vec<(String, u32)> = plan.runs[6..]
            .iter()
            .map(|r| (r.step.clone(), r.targets[0].workload.threads()))
            .collect();
        assert_eq!(kv[0], ("kv-fill".to_string(), 1));
        assert_eq!(
            kv[1..4].iter().map(|k| k.1).collect::<Vec<_>>(),
            vec![1, 4, 16]
        );
        assert_eq!(kv[6].0, "kv-readwhilewriting");
    }
}
