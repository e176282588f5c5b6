//! Nothing lost (issue 28, parts 1 to 3): several storlab processes on one results store keep
//! every run; a results disk that fills up stops the study with the file named and the run
//! marked `incomplete`, never a complete run with a file missing; a damaged index says so and
//! `storlab results reindex` rebuilds it from the run folders.
//!
//! The full-disk test mounts a small tmpfs: it needs root (skipped with the reason printed,
//! failing when STORLAB_REQUIRE_ROOT is set).

mod common;

use std::path::{Path, PathBuf};

use common::{Lab, root_or_skip};

/// A one-step null study: two runs (queue depth 1 and 4), a second each, in 10 ms intervals
/// (so that its run files, not the results index, take most of a small disk).
const STUDY: &str = r#"
name = "tiny"
interval = "10ms"
[targets.null]
type = "null"
[workloads.w]
access = "random"
block-size = "4KiB"
[[steps]]
name = "s"
workload = "w"
targets = ["null"]
warmup = "0s"
duration = "1s"
sweep.queue-depth = [1, 4]
"#;

/// What storlab printed, stdout then stderr.
fn both(o: &std::process::Output) -> String {
    let (out, err) = common::text(o);
    out + &err
}

/// The files every complete run folder holds.
const RUN_FILES: [&str; 6] = [
    "study.toml",
    "plan.json",
    "system.json",
    "timeline.csv",
    "histograms.hlog",
    "summary.json",
];

fn list(lab: &Lab, results: &Path) -> Vec<serde_json::Value> {
    let out = lab
        .cmd()
        .env("STORLAB_RESULTS", results)
        .args(["results", "list", "--json"])
        .output()
        .expect("list");
    assert!(out.status.success(), "{}", both(&out));
    serde_json::from_slice(&out.stdout).expect("json list")
}

fn missing_files(run_folder: &Path) -> Vec<&'static str> {
    RUN_FILES
        .iter()
        .copied()
        .filter(|f| {
            std::fs::metadata(run_folder.join(f))
                .map(|m| m.len() == 0)
                .unwrap_or(true)
        })
        .collect()
}

fn study_folders(results: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(results)
        .expect("results")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn eight_storlabs_started_together_keep_every_run() {
    let lab = Lab::new();
    let study = lab.write("tiny.toml", STUDY);
    let children: Vec<_> = (0..8)
        .map(|_| {
            lab.cmd()
                .args(["run"])
                .arg(&study)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn storlab")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().expect("wait");
        assert!(out.status.success(), "{}", both(&out));
    }
    let folders = study_folders(&lab.results());
    assert_eq!(
        folders.len(),
        8,
        "one study folder per storlab: {folders:?}"
    );
    for f in &folders {
        for run in ["run-001", "run-002"] {
            let missing = missing_files(&f.join(run));
            assert!(
                missing.is_empty(),
                "{}/{run} lacks {missing:?}",
                f.display()
            );
        }
    }
    let rows = list(&lab, &lab.results());
    assert_eq!(rows.len(), 16, "8 x 2 runs listed: {rows:#?}");
    assert!(rows.iter().all(|r| r["status"] == "complete"), "{rows:#?}");
    let ids: std::collections::BTreeSet<_> = rows.iter().map(|r| r["run-id"].to_string()).collect();
    assert_eq!(ids.len(), 16, "run ids are unique");
}

/// Mounts a tmpfs of `kib` KiB at `dir`; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, kib: u64) -> Tmpfs {
        std::fs::create_dir_all(dir).expect("mkdir");
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("mount");
        assert!(st.success(), "mount tmpfs");
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The results disk fills up mid-run (an event fills it): the study exits non-zero naming
/// the file it could not write, the run is `incomplete` in the store with what is missing,
/// what was written is kept, and no temporary file is left. A study started on a disk
/// already full fails the same way, naming its file.
#[test]
fn a_full_results_disk_stops_the_study_and_marks_the_run_incomplete() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let lab = Lab::new();
    let mount = lab.path().join("small");
    let _fs = Tmpfs::mount(&mount, 1024);
    let fill = mount.join("fill");
    let study = lab.write(
        "fills.toml",
        &format!(
            r#"{STUDY}
[[steps.events]]
name = "fill-the-disk"
action = "exec"
at = "0.4s"
on-failure = "continue"
command = ["sh", "-c", "cat /dev/zero > {} 2>/dev/null; true"]
"#,
            fill.display()
        ),
    );
    let results = mount.join("results");
    let out = lab
        .cmd()
        .env("STORLAB_RESULTS", &results)
        .arg("run")
        .arg(&study)
        .output()
        .expect("run");
    let said = both(&out);
    assert!(!out.status.success(), "a full disk is an error: {said}");
    let rows = list(&lab, &results);
    assert_eq!(
        rows.len(),
        1,
        "the study stops at the run that failed: {rows:#?}"
    );
    let row = &rows[0];
    assert_eq!(row["status"], "incomplete", "{row:#?}");
    let folder = PathBuf::from(row["folder"].as_str().expect("folder"));
    let note = row["note"].as_str().expect("what is missing");
    // The collector streams two files at once: whichever meets the full disk first.
    let file = ["timeline.csv", "histograms.hlog"]
        .into_iter()
        .find(|f| note.contains(&format!("{}/{f}", folder.display())))
        .unwrap_or_else(|| panic!("the note names a streamed file of the run: {note}"));
    assert!(note.contains("No space left on device"), "{note}");
    assert!(
        said.contains(&format!("writing results file {}/{file}", folder.display()))
            && said.contains("No space left on device"),
        "the message names the file: {said}"
    );
    // What was written before is kept.
    for f in ["study.toml", "plan.json", "system.json"] {
        assert!(folder.join(f).exists(), "{f} kept");
    }
    let leftovers: Vec<_> = common::walk(&mount)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");

    // Already full (storlab's journal, removed at its exit, left some room: filled too).
    let _ = std::fs::write(mount.join("fill-2"), vec![0u8; 1 << 20]);
    let tiny = lab.write("tiny.toml", STUDY);
    let out = lab
        .cmd()
        .env("STORLAB_RESULTS", &results)
        .arg("run")
        .arg(&tiny)
        .output()
        .expect("run");
    let said = both(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("No space left on device") || said.contains("the disk is full"),
        "{said}"
    );
    std::fs::remove_file(&fill).expect("room to read the store");
    assert!(
        !list(&lab, &results)
            .iter()
            .any(|r| r["status"] == "complete"),
        "nothing is complete on a full disk"
    );
}

/// A filesystem that fails with EIO mid-run: the study folder is a bind mount of a small XFS
/// (made by a before-step event, the XFS over a loop device), which an event shuts down
/// (`xfs_io -x -c shutdown`: EIO on everything) while the run writes its timeline. The index
/// beside it stays writable: the run is `incomplete` with the EIO named.
#[test]
fn a_results_filesystem_failing_with_eio_names_the_file_and_marks_the_run_incomplete() {
    if !root_or_skip("mounting an XFS over a loop device") {
        return;
    }
    let lab = Lab::new();
    let img = lab.path().join("xfs.img");
    let xfs = lab.path().join("xfs");
    std::fs::create_dir_all(&xfs).expect("mkdir");
    let sh = |cmd: &str| {
        std::process::Command::new("sh")
            .args(["-c", cmd])
            .status()
            .is_ok_and(|s| s.success())
    };
    assert!(sh(&format!(
        "truncate -s 300M {0} && mkfs.xfs -q -f {0}",
        img.display()
    )));
    assert!(sh(&format!(
        "mount -o loop {} {}",
        img.display(),
        xfs.display()
    )));
    let results = lab.results();
    let study = lab.write(
        "eio.toml",
        &format!(
            r#"{}
[[steps.events]]
name = "study-folder-on-xfs"
action = "exec"
before-step = true
command = ["sh", "-c", "mount --bind {xfs} $(ls -d {results}/tiny-*)"]

[[steps.events]]
name = "xfs-fails"
action = "exec"
at = "0.4s"
on-failure = "continue"
command = ["xfs_io", "-x", "-c", "shutdown", "{xfs}"]
"#,
            STUDY,
            xfs = xfs.display(),
            results = results.display()
        ),
    );
    let out = lab.cmd().arg("run").arg(&study).output().expect("run");
    let said = both(&out);
    let rows = list(&lab, &results);
    // Unmount before asserting: the bind mount, then the XFS itself.
    // (The study folder is named from the store: a stat of the dead XFS fails.)
    let bound: Vec<PathBuf> = rows
        .iter()
        .filter_map(|r| Some(PathBuf::from(r["folder"].as_str()?).parent()?.to_path_buf()))
        .collect();
    for m in bound.iter().chain([&xfs]) {
        let st = std::process::Command::new("umount")
            .arg(m)
            .output()
            .expect("umount");
        assert!(st.status.success(), "umount {}: {}", m.display(), both(&st));
    }
    assert!(!out.status.success(), "EIO is an error: {said}");
    assert!(
        said.contains("Input/output error") && said.contains("/run-001/"),
        "the message names the file: {said}"
    );
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["status"], "incomplete", "{rows:#?}");
    let note = rows[0]["note"].as_str().expect("note");
    assert!(note.contains("Input/output error"), "{note}");
}

#[test]
fn a_damaged_index_names_reindex_which_rebuilds_it_from_the_folders() {
    let lab = Lab::new();
    let study = lab.write("tiny.toml", STUDY);
    for _ in 0..2 {
        let out = lab.run(&["run", &study.to_string_lossy()]);
        assert!(out.status.success(), "{}", both(&out));
    }
    let before = list(&lab, &lab.results());
    assert_eq!(before.len(), 4);
    let folders = study_folders(&lab.results());
    // One run lost its summary: it comes back as incomplete.
    std::fs::remove_file(folders[1].join("run-002").join("summary.json")).expect("rm");
    let db = lab.results().join("results.db");
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::write(&db, "not a database, just bytes that once were one").expect("damage");
    let out = lab.run(&["results", "list"]);
    assert!(!out.status.success());
    assert!(
        both(&out).contains("storlab results reindex"),
        "the error names the command: {}",
        both(&out)
    );
    let out = lab.run(&["results", "reindex"]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(
        both(&out).contains("3 runs, 1 incomplete"),
        "{}",
        both(&out)
    );
    let after = list(&lab, &lab.results());
    let ids = |rows: &[serde_json::Value]| -> Vec<String> {
        let mut v: Vec<String> = rows.iter().map(|r| r["run-id"].to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&after), ids(&before), "the same runs, by id");
    let lost = after
        .iter()
        .find(|r| r["status"] == "incomplete")
        .expect("one incomplete");
    assert!(
        lost["folder"]
            .as_str()
            .expect("folder")
            .ends_with("run-002")
    );
    for r in after.iter().filter(|r| r["status"] == "complete") {
        let b = before
            .iter()
            .find(|b| b["run-id"] == r["run-id"])
            .expect("same");
        assert_eq!(b["rate-ops"], r["rate-ops"], "the summary is the folder's");
    }
    // The old index is kept, not deleted.
    assert!(
        std::fs::read_dir(lab.results())
            .expect("list")
            .flatten()
            .any(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with("results.db.replaced-"))
    );
}
