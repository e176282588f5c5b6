//! The destructive-device guard, end to end: a loop device carrying an ext4 filesystem is
//! refused for writes unless `--allow-destroy` names it; reads are allowed.

mod common;

use std::process::Command;

use common::{Lab, root_or_skip, text};

struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

fn study(dev: &str, read_share: f64) -> String {
    format!(
        r#"
[targets.dev]
type = "file"
path = "{dev}"
direct = true

[workloads.w]
read-share = {read_share}
queue-depth = 4

[[steps]]
workload = "w"
targets = ["dev"]
ops = 2000
"#
    )
}

#[test]
fn loop_device_with_a_filesystem_is_refused_unless_named() {
    if !root_or_skip("loop devices") {
        return;
    }
    assert!(
        Command::new("losetup").arg("--version").output().is_ok(),
        "losetup is missing: scripts/setup.sh installs util-linux"
    );
    let lab = Lab::new();
    let img = lab.path().join("disk.img");
    std::fs::write(&img, vec![0u8; 32 << 20]).unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show", img.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "losetup: {}", text(&out).1);
    let dev = Loop(text(&out).0.trim().to_string());

    // A blank device may be written.
    let blank = lab.write("blank.toml", &study(&dev.0, 0.0));
    let out = lab.run(&["run", blank.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "blank device: {}", text(&out).1);

    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev.0])
        .output()
        .unwrap();
    assert!(mkfs.status.success(), "mkfs: {}", text(&mkfs).1);

    let writes = lab.write("w.toml", &study(&dev.0, 0.5));
    let out = lab.run(&["run", writes.to_str().unwrap(), "-q"]);
    let (_, err) = text(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("refusing to write")
            && err.contains("ext4")
            && err.contains(&format!("--allow-destroy {}", dev.0)),
        "{err}"
    );
    // The filesystem is intact.
    let fsck = Command::new("e2fsck")
        .args(["-n", &dev.0])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "fsck after refusal: {}",
        text(&fsck).0
    );

    // Naming another device does not help.
    let out = lab.run(&[
        "run",
        writes.to_str().unwrap(),
        "-q",
        "--allow-destroy",
        "/dev/loop-none",
    ]);
    assert!(!out.status.success());

    // Reads are allowed without the flag.
    let reads = lab.write("r.toml", &study(&dev.0, 1.0));
    let out = lab.run(&["run", reads.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "reads: {}", text(&out).1);

    // Naming the device allows the writes.
    let out = lab.run(&[
        "run",
        writes.to_str().unwrap(),
        "-q",
        "--allow-destroy",
        &dev.0,
    ]);
    assert!(out.status.success(), "allowed: {}", text(&out).1);
}
