//! Verified writes on a plain file (`verify = true`): an honest run reports every block
//! intact, and blocks damaged after the run are found by `storlab verify` from the saved
//! table, each with its class and offset.

mod common;

use common::{Lab, text};
use std::os::unix::fs::FileExt;

fn study(lab: &Lab, engine: &str, qd: u32, threads: u32) -> std::path::PathBuf {
    lab.write(
        "verify.toml",
        &format!(
            r#"
name = "verify"
[targets.f]
type = "file"
path = "data.bin"
size = "4MiB"
engine = "{engine}"
[workloads.w]
read-share = 0.2
block-size = "4KiB"
queue-depth = {qd}
threads = {threads}
fsync-every = 16
verify = true
verify-state = "state/f.vstate"
[[steps]]
workload = "w"
targets = ["f"]
ops = 6000
"#
        ),
    )
}

fn verify_object(lab: &Lab) -> serde_json::Value {
    let mut found = None;
    for e in common::walk(&lab.results()) {
        if e.file_name().and_then(|n| n.to_str()) == Some("summary.json") {
            let s: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&e).unwrap()).unwrap();
            found = Some(s["targets"][0]["verify"].clone());
        }
    }
    found.expect("a summary.json")
}

#[test]
fn an_honest_run_reports_every_block_intact_with_both_engines() {
    for (engine, qd, threads) in [("io-uring", 16, 2), ("psync", 1, 3)] {
        let lab = Lab::new();
        let s = study(&lab, engine, qd, threads);
        let o = lab.run(&["run", s.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{engine}: {out}{err}");
        let v = verify_object(&lab);
        let checked = v["blocks-checked"].as_u64().unwrap();
        // 4 MiB of 4 KiB blocks, about 4800 writes: most blocks were written.
        assert!(checked > 500 && checked <= 1024, "{engine}: {v}");
        assert_eq!(
            v["intact"]["blocks"].as_u64(),
            Some(checked),
            "{engine}: {v}"
        );
        for class in ["lost", "torn", "misplaced", "foreign", "unreadable"] {
            assert_eq!(
                v[class]["blocks"].as_u64(),
                Some(0),
                "{engine} {class}: {v}"
            );
        }
        assert!(
            err.contains("all intact") || out.contains("all intact"),
            "{out}{err}"
        );
        // The saved table verifies the same, later.
        let o = lab.run(&["verify", "state/f.vstate", "--json"]);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{out}{err}");
        let again: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(again["intact"]["blocks"].as_u64(), Some(checked));
    }
}

#[test]
fn damage_after_the_run_is_found_from_the_saved_state_with_class_and_offset() {
    let lab = Lab::new();
    let s = study(&lab, "io-uring", 8, 1);
    let o = lab.run(&["run", s.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", text(&o));
    let v = verify_object(&lab);
    let intact: Vec<u64> = v["intact"]["first-offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert!(intact.len() >= 4, "{v}");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(lab.path().join("data.bin"))
        .unwrap();
    let (torn, foreign, misplaced, from) = (intact[0], intact[1], intact[2], intact[3]);
    // A tear: one byte of the second half changed.
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, torn + 3000).unwrap();
    f.write_all_at(&[b[0] ^ 0xff], torn + 3000).unwrap();
    // Foreign: zeros.
    f.write_all_at(&[0u8; 4096], foreign).unwrap();
    // Misplaced: another block's content.
    let mut other = vec![0u8; 4096];
    f.read_exact_at(&mut other, from).unwrap();
    f.write_all_at(&other, misplaced).unwrap();
    f.sync_all().unwrap();
    let o = lab.run(&["verify", "state/f.vstate", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    let offsets = |class: &str| -> Vec<u64> {
        r[class]["first-offsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    assert_eq!(offsets("torn"), vec![torn]);
    assert_eq!(offsets("foreign"), vec![foreign]);
    assert_eq!(offsets("misplaced"), vec![misplaced]);
    assert_eq!(r["lost"]["blocks"].as_u64(), Some(0));
    assert_eq!(
        r["intact"]["blocks"].as_u64().unwrap() + 3,
        r["blocks-checked"].as_u64().unwrap()
    );
}

#[test]
fn verify_on_a_target_that_cannot_read_back_is_refused_by_check() {
    let lab = Lab::new();
    let s = lab.write(
        "v.toml",
        r#"
name = "v"
[targets.n]
type = "null"
[workloads.w]
read-share = 0.0
verify = true
[[steps]]
workload = "w"
targets = ["n"]
ops = 10
"#,
    );
    let o = lab.run(&["check", s.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        err.contains("verify") && err.contains("cannot read written blocks back"),
        "{err}"
    );
}

/// A `verify` event checks a state saved by an earlier step: all intact before anything is
/// done to the file, then a block zeroed by an `exec` event is found (foreign, at its offset),
/// and the event fails (here with on-failure = "continue", so the step goes on). A `verify`
/// event without `state` is a `check` error naming the key.
#[test]
fn a_verify_event_in_a_later_step_finds_damage_done_by_an_earlier_event() {
    let lab = Lab::new();
    let s = lab.write(
        "steps.toml",
        r#"
name = "verify-steps"
[targets.f]
type = "file"
path = "data.bin"
size = "1MiB"
[workloads.fill]
access = "sequential"
read-share = 0.0
block-size = "4KiB"
verify = true
verify-state = "fill.vstate"
[workloads.read]
read-share = 1.0
block-size = "4KiB"
[[steps]]
name = "fill"
workload = "fill"
targets = ["f"]
ops = 256
[[steps]]
name = "check-again"
workload = "read"
targets = ["f"]
ops = 100
[[steps.events]]
name = "before-damage"
action = "verify"
before-step = true
state = "fill.vstate"
[[steps.events]]
name = "damage"
action = "exec"
before-step = true
command = ["dd", "if=/dev/zero", "of=data.bin", "bs=4096", "count=1", "seek=5", "conv=notrunc,fsync", "status=none"]
[[steps.events]]
name = "after-damage"
action = "verify"
before-step = true
state = "fill.vstate"
on-failure = "continue"
"#,
    );
    let o = lab.run(&["run", s.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let summary = common::walk(&lab.results())
        .into_iter()
        .filter(|p| p.ends_with("run-002/summary.json"))
        .map(|p| serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p).unwrap()))
        .next()
        .expect("run 2")
        .unwrap();
    let event = |name: &str| {
        summary["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no event {name}: {summary:#}"))
            .clone()
    };
    let before = event("before-damage");
    assert_eq!(before["status"], "ok", "{before:#}");
    assert_eq!(before["verify"]["blocks-checked"], 256, "{before:#}");
    assert_eq!(before["verify"]["intact"]["blocks"], 256, "{before:#}");
    let after = event("after-damage");
    assert_eq!(after["status"], "failed", "{after:#}");
    assert_eq!(after["verify"]["foreign"]["blocks"], 1, "{after:#}");
    assert_eq!(
        after["verify"]["foreign"]["first-offsets"],
        serde_json::json!([5 * 4096]),
        "{after:#}"
    );
    assert_eq!(after["verify"]["intact"]["blocks"], 255, "{after:#}");
    assert!(
        summary["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("after-damage")),
        "{summary:#}"
    );

    let bad = lab.write(
        "bad.toml",
        &std::fs::read_to_string(&s)
            .unwrap()
            .replace("state = \"fill.vstate\"\non-failure", "on-failure"),
    );
    let o = lab.run(&["check", bad.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("bad.toml") && err.contains("missing `state`"),
        "{err}"
    );
}

/// The verify state survives storlab (issue 28, part 6): a run SIGKILLed in the middle leaves
/// its table in the mapped file at `verify-state`, and `storlab verify` on it finds every
/// acknowledged write (the file's page cache survived), says the state came from an
/// interrupted run and counts the writes that were in flight apart.
#[test]
fn a_state_left_by_a_sigkill_mid_run_verifies_with_no_lost_write() {
    let lab = Lab::new();
    let s = lab.write(
        "kill.toml",
        &std::fs::read_to_string(study(&lab, "io-uring", 16, 2))
            .unwrap()
            .replace("ops = 6000", "warmup = \"0s\"\nduration = \"60s\""),
    );
    let mut child = lab
        .cmd()
        .args(["run", s.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the table holds acknowledged writes of most blocks (its entries are the
    // file's last 1024 u64s). An entry is set when its write begins, so up to 32 of those seen
    // (two workers at queue depth 16) may be in flight, not acknowledged, at the kill: wait for
    // 500 more than that, so that more than 500 are acknowledged (under load the kill came with
    // 518 set and 28 in flight: 490 checked).
    let state = lab.path().join("state/f.vstate");
    let waited = std::time::Instant::now();
    loop {
        let written = std::fs::read(&state).ok().map_or(0, |b| {
            b[b.len().saturating_sub(8192)..]
                .chunks(8)
                .filter(|w| w.iter().any(|&x| x != 0))
                .count()
        });
        if written > 500 + 32 {
            break;
        }
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(30),
            "the run wrote {written} blocks"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let o = lab.run(&["verify", "state/f.vstate", "--json"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(r["lost"]["blocks"].as_u64(), Some(0), "{r}");
    let checked = r["blocks-checked"].as_u64().unwrap();
    assert!(checked > 500, "{r}");
    assert_eq!(r["intact"]["blocks"].as_u64(), Some(checked), "{r}");
    // Two workers at queue depth 16: writes were in flight at the kill.
    let in_flight = r["in-flight"]["blocks"].as_u64().unwrap();
    assert!(in_flight > 0 && in_flight <= 32, "{r}");
    let o = lab.run(&["verify", "state/f.vstate"]);
    let (out, _) = text(&o);
    assert!(
        out.contains("interrupted run")
            && out.contains(&format!("{in_flight} writes were in flight")),
        "{out}"
    );
}
