//! The real binary with the `file` target's io_uring options: `hipri` (polled completions) is
//! refused, naming the target and the option, on a device without poll queues, and never
//! hangs; `sqthread-poll` runs (or is refused by name where the kernel says no).

mod common;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{Lab, text};

/// Runs storlab, killing it (and failing) if it takes longer than `limit`.
fn run_bounded(lab: &Lab, args: &[&str], limit: Duration) -> Output {
    let mut child = lab
        .cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storlab");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait for storlab").is_some() {
            return child.wait_with_output().expect("read storlab's output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("read storlab's output");
            panic!("storlab did not finish within {limit:?}: {}", text(&out).1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn study(options: &str) -> String {
    format!(
        r#"
[targets.disk]
type = "file"
path = "d.dat"
size = "8MiB"
engine = "io-uring"
direct = true
{options}

[workloads.rr]
access = "random"
block-size = "4KiB"
read-share = 1.0
queue-depth = 8

[[steps]]
workload = "rr"
targets = ["disk"]
ops = 2000
warmup = "0s"
"#
    )
}

/// The poll state of the device holding `dir` (queue/io_poll), if it has a block queue.
fn io_poll_of(dir: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let sys = format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev));
    ["queue/io_poll", "../queue/io_poll"]
        .iter()
        .find_map(|p| std::fs::read_to_string(format!("{sys}/{p}")).ok())
        .map(|s| s.trim().to_string())
}

#[test]
fn hipri_is_refused_by_name_on_a_device_without_poll_queues() {
    let lab = Lab::new();
    if io_poll_of(lab.path()).as_deref() == Some("1") {
        eprintln!("skipped: the test folder's device has poll queues, so hipri is accepted there");
        return;
    }
    let s = lab.write("s.toml", &study("hipri = true"));
    let out = run_bounded(
        &lab,
        &["run", s.to_str().unwrap(), "-q"],
        Duration::from_secs(60),
    );
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "hipri was accepted: {stderr}");
    assert!(
        stderr.contains("`disk`") && stderr.contains("hipri"),
        "the error names neither the target nor the option: {stderr}"
    );
}

#[test]
fn hipri_needs_direct_and_io_uring() {
    let lab = Lab::new();
    let buffered = study("hipri = true").replace("direct = true", "direct = false");
    let psync = study("hipri = true").replace("engine = \"io-uring\"", "engine = \"psync\"");
    for text_of_study in [buffered, psync] {
        let s = lab.write("s.toml", &text_of_study);
        let out = lab.run(&["run", s.to_str().unwrap(), "-q"]);
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{text_of_study}");
        assert!(stderr.contains("hipri"), "{stderr}");
    }
}

#[test]
fn sqthread_poll_runs_or_is_refused_by_name() {
    let lab = Lab::new();
    let s = lab.write(
        "s.toml",
        &study("sqthread-poll = true\nsqthread-idle = \"10ms\""),
    );
    let out = run_bounded(
        &lab,
        &["run", s.to_str().unwrap(), "--json", "-q"],
        Duration::from_secs(60),
    );
    let (stdout, stderr) = text(&out);
    if out.status.success() {
        let runs: serde_json::Value = serde_json::from_str(&stdout).expect("JSON runs");
        assert_eq!(runs[0]["total"]["ops"], 2000, "{stdout}");
        assert_eq!(runs[0]["total"]["errors"], 0, "{stdout}");
    } else {
        assert!(
            stderr.contains("`disk`") && stderr.contains("sqthread-poll"),
            "{stderr}"
        );
    }
}
