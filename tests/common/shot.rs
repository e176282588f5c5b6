//! The first screen of a study's HTML report in headless Chromium, saved as a test artifact
//! (`<target dir>/artifacts/<name>.png`): each reference brief's test keeps a picture of the
//! report a user of that study sees first (its headline and the published figures beside).
//! Without `/usr/bin/chromium` it says so and saves nothing, unless STORLAB_REQUIRE_CHROMIUM
//! is set (as scripts/test.sh does): then it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

/// `<target dir>/artifacts`.
pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts dir");
    dir
}

/// Saves the first screen (1280 x 1000) of `page` as `artifacts/<name>.png`; returns its path,
/// or None when Chromium is missing (and not required).
pub fn first_screen(page: &Path, name: &str) -> Option<PathBuf> {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_CHROMIUM").is_none(),
            "{CHROMIUM} is missing and STORLAB_REQUIRE_CHROMIUM is set"
        );
        eprintln!("SKIPPED screenshot: {CHROMIUM} is missing");
        return None;
    }
    let shot = artifacts().join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().expect("profile dir");
    let out = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=3000",
            "--window-size=1280,1000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.len() > 10_000 && &png[1..4] == b"PNG",
        "{} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
    Some(shot)
}
