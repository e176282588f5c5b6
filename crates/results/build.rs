//! Build script: records storlab's git commit (with `-dirty` when the work tree has changes)
//! as `STORLAB_GIT_COMMIT`, for the disclosure in every run's `system.json`. Outside a git
//! checkout (a source tarball) the variable is simply not set.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // What changes the commit (HEAD, a branch moved, refs packed) or the work tree's
        // state (a source file edited). Not `.git/index`: `git status` below rewrites it, so
        // watching it rebuilt storlab on every build.
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            println!("cargo:rerun-if-changed={common}/refs/heads");
            // Only if it is there: a watched file that does not exist reruns every build.
            let packed = format!("{common}/packed-refs");
            if std::path::Path::new(&packed).exists() {
                println!("cargo:rerun-if-changed={packed}");
            }
        }
        for path in [
            "../../src",
            "../../crates",
            "../../Cargo.toml",
            "../../Cargo.lock",
            "build.rs",
        ] {
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
