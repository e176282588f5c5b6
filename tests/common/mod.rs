//! Helpers shared by the integration tests: run the real storlab binary in a temp folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod shot;
pub mod tls;

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_storlab"))
}

/// A temp folder holding a study file and the results store.
pub struct Lab {
    pub dir: tempfile::TempDir,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn results(&self) -> PathBuf {
        self.dir.path().join("results")
    }

    /// The one study folder under `results/` (files beside it, such as the results index, are
    /// not study folders).
    pub fn study_folder(&self) -> PathBuf {
        let dirs: Vec<PathBuf> = std::fs::read_dir(self.results())
            .expect("a results folder")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        assert_eq!(dirs.len(), 1, "one study folder expected: {dirs:?}");
        dirs[0].clone()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).expect("write study");
        p
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(bin());
        c.current_dir(self.dir.path())
            .env("STORLAB_RESULTS", self.results());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run storlab")
    }
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether a test that needs root (loop devices, filesystems) can run: true as root. Not
/// root: with STORLAB_REQUIRE_ROOT set (the test command sets it) the test fails; without,
/// it is skipped with `why` printed.
pub fn root_or_skip(why: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(
        std::env::var_os("STORLAB_REQUIRE_ROOT").is_none(),
        "this test needs root ({why}) and STORLAB_REQUIRE_ROOT is set"
    );
    eprintln!("SKIPPED: needs root ({why})");
    false
}

/// The server URL from `var`, or None (skipping, with the reason printed) when it is not set
/// and STORLAB_REQUIRE_SERVERS is not set either; with it set, a missing server fails.
pub fn server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
                "{var} is not set and STORLAB_REQUIRE_SERVERS is: start the servers with scripts/servers.sh start DIR and source DIR/env.sh"
            );
            eprintln!("skipped: {var} is not set (scripts/servers.sh start DIR; . DIR/env.sh)");
            None
        }
    }
}

/// YCSB-style `[READ], Return=OK, 10` lines as ("[READ], Return=OK", 10.0).
pub fn figures(stdout: &str) -> std::collections::HashMap<String, f64> {
    stdout
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(", ")?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// A figure as a count (0 when absent).
pub fn get(f: &std::collections::HashMap<String, f64>, k: &str) -> u64 {
    f.get(k).copied().unwrap_or(0.0) as u64
}

/// Every file under `dir`, folders walked down.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Debian's fio (the peer) run with `args` in `dir`, which must succeed; None when fio is not
/// installed and the servers are not required (the test command installs it, and
/// `STORLAB_REQUIRE_SERVERS` makes a missing fio a failure).
pub fn peer_fio(dir: &Path, args: &[&str]) -> Option<Output> {
    let o = match Command::new("fio").args(args).current_dir(dir).output() {
        Ok(o) => o,
        Err(e) => {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
                "fio: {e} (STORLAB_REQUIRE_SERVERS is set)"
            );
            eprintln!("skipped: fio not found ({e})");
            return None;
        }
    };
    assert!(o.status.success(), "fio {args:?}: {}", text(&o).1);
    Some(o)
}

/// The summaries of the lab's runs (every `summary.json` under its results), in run order.
pub fn summaries(lab: &Lab) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = walk(&lab.results())
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "summary.json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}
