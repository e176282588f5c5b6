//! Build script: records storlab's git commit (with `-dirty` when the work tree has changes)
//! as `STORLAB_GIT_COMMIT`, which `src/main.rs` hands to the library for the disclosure in every
//! run's `system.json`. Outside a git checkout (a source tarball) the variable is simply not set.
//!
//! It lives in the thin binary's package, so a new commit or an edited source file reruns it and
//! rebuilds only this package, not the layers below.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Reruns this script when a file that exists changes (a watched file that does not exist
/// reruns every build).
fn watch_if_there(path: &str) {
    if std::path::Path::new(path).exists() {
        println!("cargo:rerun-if-changed={path}");
    }
}

fn main() {
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // What changes the commit: HEAD (a checkout), the checked-out branch's own ref (a
        // commit on it), refs packed. Only that branch: a commit on another branch or in another
        // worktree does not touch this checkout. Not `.git/index`: `git status` below rewrites
        // it, so watching it rebuilt storlab on every build.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch_if_there(&format!("{common}/{branch}"));
            }
            watch_if_there(&format!("{common}/packed-refs"));
        }
        // What changes the work tree's state (a source file edited).
        for path in ["src", "crates", "Cargo.toml", "Cargo.lock", "build.rs"] {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    if let Some(commit) = git(&["rev-parse", "HEAD"]) {
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        let suffix = if dirty { "-dirty" } else { "" };
        println!("cargo:rustc-env=STORLAB_GIT_COMMIT={commit}{suffix}");
    }
}
