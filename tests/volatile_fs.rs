//! `storlab volatile-fs`, the stand-ins' volatile write cache, run as a user runs it: a file
//! served through the mount keeps what was fsynced when the process is killed (a power loss)
//! and loses what was not; SIGTERM writes everything through and unmounts; bad arguments are
//! refused naming the argument.
//!
//! Needs root and /dev/fuse (mount(2) of FUSE): skipped with the reason printed otherwise,
//! unless STORLAB_REQUIRE_ROOT is set (then it fails).

mod common;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Lab, root_or_skip, text};

const PAGE: u64 = 4096;

/// A running `storlab volatile-fs` serving `backing` as `m0` at `mount`.
struct Served {
    child: Child,
    mount: PathBuf,
}

impl Served {
    fn start(lab: &Lab, backing: &Path) -> Option<Served> {
        if !root_or_skip("mounting a FUSE filesystem") {
            return None;
        }
        if !Path::new("/dev/fuse").exists() {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_ROOT").is_none(),
                "no /dev/fuse and STORLAB_REQUIRE_ROOT is set"
            );
            eprintln!("SKIPPED: no /dev/fuse");
            return None;
        }
        let mount = lab.path().join("mnt");
        std::fs::create_dir_all(&mount).unwrap();
        let ready = lab.path().join("ready");
        let child = Command::new(common::bin())
            .args(["volatile-fs", "--mount"])
            .arg(&mount)
            .arg("--ready-file")
            .arg(&ready)
            .arg(format!("m0={}", backing.display()))
            .stderr(Stdio::piped())
            .spawn()
            .expect("start volatile-fs");
        let served = Served { child, mount };
        let until = Instant::now() + Duration::from_secs(20);
        while !ready.exists() {
            assert!(
                Instant::now() < until,
                "volatile-fs did not get ready in 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(served)
    }

    fn file(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.mount.join("m0"))
            .expect("open the served file")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A killed daemon leaves its mount behind, answering nothing.
        let _ = Command::new("umount").arg("-l").arg(&self.mount).output();
    }
}

fn backing(lab: &Lab, pages: u64) -> PathBuf {
    let path = lab.path().join("backing.img");
    let fill: Vec<u8> = (0..pages * PAGE).map(|i| (i / PAGE) as u8 | 0x80).collect();
    std::fs::write(&path, fill).unwrap();
    path
}

fn page_of(path: &Path, page: u64) -> Vec<u8> {
    let mut b = vec![0u8; PAGE as usize];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut b, page * PAGE)
        .unwrap();
    b
}

#[test]
fn a_kill_loses_exactly_what_was_not_fsynced() {
    let lab = Lab::new();
    let img = backing(&lab, 8);
    let Some(mut served) = Served::start(&lab, &img) else {
        return;
    };
    let f = served.file();
    f.write_all_at(&[b'S'; PAGE as usize], 0).unwrap();
    f.sync_all().unwrap();
    f.write_all_at(&[b'U'; PAGE as usize], 3 * PAGE).unwrap();
    // The node sees its own write.
    let mut b = vec![0u8; PAGE as usize];
    f.read_exact_at(&mut b, 3 * PAGE).unwrap();
    assert!(b.iter().all(|&x| x == b'U'));
    // Not on the backing before the power loss either.
    assert!(page_of(&img, 3).iter().all(|&x| x == 0x83));
    drop(f);
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    assert!(
        page_of(&img, 0).iter().all(|&x| x == b'S'),
        "the synced write"
    );
    assert!(
        page_of(&img, 3).iter().all(|&x| x == 0x83),
        "the unsynced write is gone, the page as before"
    );
}

#[test]
fn sigterm_writes_everything_through_and_unmounts() {
    let lab = Lab::new();
    let img = backing(&lab, 8);
    let Some(mut served) = Served::start(&lab, &img) else {
        return;
    };
    let f = served.file();
    // A write across two pages, not aligned, never fsynced.
    f.write_all_at(&[b'C'; 5000], 2 * PAGE + 100).unwrap();
    drop(f);
    // SAFETY: signalling our own child.
    assert_eq!(
        unsafe { libc::kill(served.child.id() as i32, libc::SIGTERM) },
        0
    );
    let out = wait_for_exit(&mut served.child);
    assert!(out.0.success(), "{}", out.1);
    assert!(out.1.contains("written through and synced"), "{}", out.1);
    assert!(out.1.contains("stopped cleanly: 1 writes"), "{}", out.1);
    let (p2, p3) = (page_of(&img, 2), page_of(&img, 3));
    assert!(p2[..100].iter().all(|&x| x == 0x82) && p2[100..].iter().all(|&x| x == b'C'));
    let rest = 5000 - (PAGE as usize - 100);
    assert!(p3[..rest].iter().all(|&x| x == b'C') && p3[rest..].iter().all(|&x| x == 0x83));
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains(&*served.mount.to_string_lossy()),
        "still mounted: {mounts}"
    );
}

/// The child's exit status and stderr, once it has exited.
fn wait_for_exit(child: &mut Child) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let status = child.wait().unwrap();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    (status, err)
}

#[test]
fn bad_members_are_refused_naming_the_argument() {
    let lab = Lab::new();
    let o = lab.run(&["volatile-fs", "--mount", "/nonexistent", "m0"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`m0`: a member is NAME=PATH"), "{err}");
    let o = lab.run(&[
        "volatile-fs",
        "--mount",
        "/nonexistent",
        "m0=/nonexistent/member.img",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("member `m0` (/nonexistent/member.img): No such file"),
        "{err}"
    );
}
