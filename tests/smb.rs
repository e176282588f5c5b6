//! The `smb` target against a real Samba, through the real binary: written data lands in the
//! file (checked on the share's own folder), queue depths 12 and 24 keep that many requests in
//! flight (as the session counted them, not from timing), the test file is created once and
//! then reused (IOmeter's iobw.tst), the password shows nowhere in the results or the report,
//! and a wrong password, an unknown share and a server that is down each fail with an error
//! naming the target. Verified writes read back through SMB are intact, and a block damaged
//! on the share's folder afterwards is found by `storlab verify` from the saved state (the
//! password from STORLAB_SMB_PASSWORD, never from the state). A server that answers every read
//! asynchronously (an interim STATUS_PENDING response first, granting the credits, then the
//! final one) keeps the client's credits flowing: a long run does not stall.
//!
//! The server comes from the environment, as `scripts/fileservers.sh start DIR` writes it to
//! `DIR/env.sh`: STORLAB_SMB_URL (`smb://user:password@host:port/share`) and
//! STORLAB_SMB_SHARE_DIR (that share's folder on this machine). Without them the tests are
//! skipped with a printed reason, unless STORLAB_REQUIRE_SERVERS is set: then they fail.

mod common;
mod faulty_fuse;

use std::path::{Path, PathBuf};

use common::{Lab, root_or_skip, server, text};
use serde_json::Value;

struct Share {
    /// smb://user:password@host:port/share
    url: String,
    password: String,
    dir: PathBuf,
}

fn share() -> Option<Share> {
    let url = server("STORLAB_SMB_URL")?;
    let dir = PathBuf::from(server("STORLAB_SMB_SHARE_DIR")?);
    let userinfo = url
        .trim_start_matches("smb://")
        .split_once('@')
        .map(|(u, _)| u.to_string())
        .unwrap_or_default();
    let password = userinfo
        .split_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_default();
    Some(Share {
        url: url.trim_end_matches('/').to_string(),
        password,
        dir,
    })
}

/// A file name of its own for each test, removed when the test ends.
struct TestFile {
    local: PathBuf,
    name: String,
}

impl TestFile {
    fn new(share: &Share, test: &str) -> TestFile {
        let name = format!("storlab-test-{test}-{}.dat", std::process::id());
        let local = share.dir.join(&name);
        let _ = std::fs::remove_file(&local);
        TestFile { local, name }
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.local);
    }
}

fn study(target: &str, workload: &str, step: &str) -> String {
    format!(
        "name = \"smb-test\"\n[targets.smb]\ntype = \"smb\"\n{target}\n[workloads.w]\nblock-size = \"4KiB\"\n{workload}\n[[steps]]\nname = \"s\"\nworkload = \"w\"\ntargets = [\"smb\"]\n{step}\n"
    )
}

/// Runs a study; returns what storlab printed (stdout, then stderr).
fn run_ok(lab: &Lab, text_of_study: &str) -> String {
    // A name of its own: two runs of one study in the same second share a results folder.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let text_of_study =
        text_of_study.replace("name = \"smb-test\"", &format!("name = \"smb-test-{n}\""));
    let path = lab.write("study.toml", &text_of_study);
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    format!("{stdout}\n{stderr}")
}

fn files_named(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_named(&p, name, found);
        } else if p.file_name().is_some_and(|n| n == name) {
            found.push(p);
        }
    }
}

/// The summary.json of each run of the study whose results folder `stdout` names
/// (`results: PATH`), in run order.
fn summaries_of_runs(lab: &Lab, stdout: &str) -> Vec<Value> {
    let folder = stdout
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap_or_else(|| panic!("no results folder in {stdout}"));
    let mut found = Vec::new();
    files_named(&lab.path().join(folder.trim()), "summary.json", &mut found);
    found.sort();
    found
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

/// The `session-used` of the smb target in each run, in run order.
fn used_of_runs(lab: &Lab, stdout: &str) -> Vec<serde_json::Map<String, Value>> {
    summaries_of_runs(lab, stdout)
        .iter()
        .map(|v| {
            v["targets"][0]["session-used"]
                .as_object()
                .cloned()
                .unwrap_or_else(|| panic!("no session-used in {v}"))
        })
        .collect()
}

fn used<'a>(u: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    u.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{key} missing from {u:?}"))
}

#[test]
fn written_blocks_land_in_the_file_with_their_offsets_and_bytes() {
    let Some(share) = share() else { return };
    let f = TestFile::new(&share, "write");
    let lab = Lab::new();
    let target = format!("url = \"{}/{}\"\nsize = \"1MiB\"", share.url, f.name);
    // Every byte the pattern: the whole of each block travelled.
    let first = run_ok(
        &lab,
        &study(
            &target,
            "access = \"sequential\"\nread-share = 0.0\nqueue-depth = 12\nwrite-data = \"pattern\"\nwrite-pattern = 165",
            "ops = 256",
        ),
    );
    let bytes = std::fs::read(&f.local).unwrap();
    assert_eq!(bytes.len(), 1 << 20);
    assert!(bytes.iter().all(|&b| b == 165), "a byte is not the pattern");
    // Random data: each block carries its own offset (it went where it was meant to).
    let second = run_ok(
        &lab,
        &study(
            &target,
            "access = \"sequential\"\nread-share = 0.0\nqueue-depth = 12",
            "ops = 256",
        ),
    );
    let bytes = std::fs::read(&f.local).unwrap();
    let mut generations = std::collections::HashSet::new();
    for (i, block) in bytes.chunks(4096).enumerate() {
        let offset = u64::from_le_bytes(block[..8].try_into().unwrap());
        assert_eq!(
            offset,
            i as u64 * 4096,
            "block {i} holds another block's data"
        );
        generations.insert(u64::from_le_bytes(block[8..16].try_into().unwrap()));
    }
    assert_eq!(generations.len(), 256, "every block was written once");
    // Read back through the target: every read succeeds.
    let stdout = run_ok(
        &lab,
        &study(
            &target,
            "access = \"sequential\"\nread-share = 1.0\nqueue-depth = 12",
            "ops = 256",
        ),
    );
    assert!(stdout.contains("read"), "{stdout}");
    let layouts: Vec<String> = [first, second, stdout]
        .iter()
        .map(|out| used(&used_of_runs(&lab, out)[0], "smb.test-file").to_string())
        .collect();
    assert_eq!(layouts[0], "created and filled (1048576 bytes)");
    assert!(layouts[1].starts_with("reused"), "{layouts:?}");
    assert!(layouts[2].starts_with("reused"), "{layouts:?}");
}

#[test]
fn queue_depths_12_and_24_keep_that_many_requests_in_flight() {
    let Some(share) = share() else { return };
    let f = TestFile::new(&share, "qd");
    let lab = Lab::new();
    let target = format!("url = \"{}/{}\"\nsize = \"4MiB\"", share.url, f.name);
    let stdout = run_ok(
        &lab,
        &study(
            &target,
            "read-share = 1.0",
            "ops = 3000\nsweep.queue-depth = [12, 24]",
        ),
    );
    let runs = used_of_runs(&lab, &stdout);
    assert_eq!(runs.len(), 2);
    for (u, qd) in runs.iter().zip(["12", "24"]) {
        assert_eq!(used(u, "smb.max-in-flight-per-session"), qd, "{u:?}");
        assert_eq!(used(u, "smb.max-in-flight-on-connection"), qd, "{u:?}");
        assert!(used(u, "smb.tcp-nodelay").starts_with("yes"), "{u:?}");
        assert_eq!(used(u, "smb.reconnects"), "0");
        assert!(used(u, "smb.dialect").starts_with('3'), "{u:?}");
    }
    // A larger size extends the file.
    let target = format!("url = \"{}/{}\"\nsize = \"5MiB\"", share.url, f.name);
    let stdout = run_ok(&lab, &study(&target, "read-share = 1.0", "ops = 100"));
    let runs = used_of_runs(&lab, &stdout);
    assert_eq!(
        used(&runs[0], "smb.test-file"),
        "extended from 4194304 to 5242880 bytes and filled"
    );
    assert_eq!(std::fs::metadata(&f.local).unwrap().len(), 5 << 20);
}

#[test]
fn the_password_shows_nowhere() {
    let Some(share) = share() else { return };
    assert!(
        !share.password.is_empty(),
        "STORLAB_SMB_URL has no password"
    );
    let f = TestFile::new(&share, "redact");
    let lab = Lab::new();
    let target = format!("url = \"{}/{}\"\nsize = \"1MiB\"", share.url, f.name);
    let stdout = run_ok(&lab, &study(&target, "read-share = 1.0", "ops = 100"));
    assert!(!stdout.contains(&share.password));
    let mut studies = Vec::new();
    files_named(&lab.results(), "study.toml", &mut studies);
    studies.sort();
    let folder = studies[0].parent().unwrap().to_str().unwrap().to_string();
    let out = lab.run(&["report", &folder, "--format", "md", "-o", "-"]);
    let (report, stderr) = text(&out);
    assert!(out.status.success(), "{report}\n{stderr}");
    assert!(report.contains("smb"), "{report}");
    assert!(
        !report.contains(&share.password),
        "the report shows the password"
    );
    let mut files = Vec::new();
    for name in ["plan.json", "summary.json", "study.toml", "system.json"] {
        files_named(&lab.results(), name, &mut files);
    }
    assert!(files.len() >= 4, "{files:?}");
    for p in files {
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(
            !t.contains(&share.password),
            "{} shows the password",
            p.display()
        );
    }
}

fn refused(lab: &Lab, url: &str) -> String {
    let path = lab.write(
        "bad.toml",
        &study(
            &format!("url = \"{url}\"\nsize = \"1MiB\""),
            "read-share = 1.0",
            "ops = 10",
        ),
    );
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{url} was accepted: {stdout}");
    assert!(stderr.contains("target `smb`"), "{stderr}");
    stderr
}

#[test]
fn a_wrong_password_an_unknown_share_and_a_server_that_is_down_are_named() {
    let Some(share) = share() else { return };
    let lab = Lab::new();
    let rest = share
        .url
        .split_once('@')
        .map(|(_, r)| r.to_string())
        .unwrap();
    let user = share
        .url
        .trim_start_matches("smb://")
        .split_once(':')
        .map(|(u, _)| u.to_string())
        .unwrap();
    let e = refused(
        &lab,
        &format!("smb://{user}:not-{}@{rest}/f.dat", share.password),
    );
    assert!(e.contains("wrong user name or password"), "{e}");
    assert!(e.contains(":***@"), "{e}");
    let (server, _) = rest.split_once('/').unwrap();
    let e = refused(
        &lab,
        &format!(
            "smb://{user}:{}@{server}/no-such-share/f.dat",
            share.password
        ),
    );
    assert!(e.contains("no share `no-such-share`"), "{e}");
    assert!(!e.contains(&share.password), "{e}");
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = refused(
        &lab,
        &format!(
            "smb://{user}:{}@127.0.0.1:{port}/share1/f.dat",
            share.password
        ),
    );
    assert!(
        e.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{e}"
    );
    assert!(e.contains("is the SMB server running?"), "{e}");
}

#[test]
fn verified_writes_read_back_intact_and_a_damaged_block_is_found_later() {
    let Some(share) = share() else { return };
    let f = TestFile::new(&share, "verify");
    let lab = Lab::new();
    let target = format!("url = \"{}/{}\"\nsize = \"4MiB\"", share.url, f.name);
    let state = lab.path().join("share.vstate");
    let stdout = run_ok(
        &lab,
        &study(
            &target,
            "read-share = 0.3\nqueue-depth = 12\nthreads = 2\nfsync-every = 64\nverify = true\nverify-state = \"share.vstate\"",
            "ops = 4000",
        ),
    );
    let folder = stdout
        .lines()
        .find_map(|l| l.strip_prefix("results: "))
        .unwrap_or_else(|| panic!("no results folder in {stdout}"));
    let mut summaries = Vec::new();
    files_named(
        &lab.path().join(folder.trim()),
        "summary.json",
        &mut summaries,
    );
    assert_eq!(summaries.len(), 1, "{summaries:?}");
    let sum: Value = serde_json::from_slice(&std::fs::read(&summaries[0]).unwrap()).unwrap();
    let t = &sum["targets"][0];
    assert_eq!(t["errors"], 0, "{t:#}");
    let v = &t["verify"];
    let checked = v["blocks-checked"].as_u64().unwrap();
    // About 2800 writes over 1024 blocks: most blocks were written.
    assert!(checked > 500 && checked <= 1024, "{v:#}");
    assert_eq!(v["intact"]["blocks"].as_u64(), Some(checked), "{v:#}");
    assert_eq!(v["lost"]["blocks"], 0, "{v:#}");
    let saved = std::fs::read(&state).unwrap();
    assert!(
        !String::from_utf8_lossy(&saved).contains(&share.password),
        "the state holds the password"
    );

    // Without the password, `storlab verify` says where to give it.
    let o = lab
        .cmd()
        .args(["verify", "share.vstate"])
        .env_remove("STORLAB_SMB_PASSWORD")
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(err.contains("STORLAB_SMB_PASSWORD"), "{err}");
    assert!(err.contains(":***@"), "{err}");
    assert!(!err.contains(&share.password), "{err}");

    // Damage one acknowledged block in the share's folder: read back through Samba, exactly
    // that block is found.
    let first = v["intact"]["first-offsets"][1].as_u64().unwrap();
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&f.local)
            .unwrap();
        file.write_all_at(&[0u8; 4096], first).unwrap();
        file.sync_all().unwrap();
    }
    let o = lab
        .cmd()
        .args(["verify", "share.vstate", "--json"])
        .env("STORLAB_SMB_PASSWORD", &share.password)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(!out.contains(&share.password) && !err.contains(&share.password));
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["blocks-checked"].as_u64(), Some(checked), "{r:#}");
    assert_eq!(r["foreign"]["blocks"], 1, "{r:#}");
    assert_eq!(
        r["foreign"]["first-offsets"][0].as_u64(),
        Some(first),
        "{r:#}"
    );
    assert_eq!(r["intact"]["blocks"].as_u64(), Some(checked - 1), "{r:#}");
    for class in ["lost", "torn", "misplaced", "unreadable"] {
        assert_eq!(r[class]["blocks"], 0, "{class}: {r:#}");
    }
}

/// Samba answers a read that takes it more than 0.5 ms with an interim response (STATUS_PENDING,
/// asynchronous) that grants the request's credits, and the final response then grants none.
/// A client that counts only the final responses' credits (the smb crate 0.12.1 did) loses one
/// credit per such read and stalls once they are gone: every request then waits for a credit
/// and none is sent (a loaded server saw it after about 1,200 reads). Here every read is slow:
/// the share `mount` of the test servers gets a FUSE file whose reads take 1 ms each, one at a
/// time; 2,000 reads at queue depth 12 must all succeed, nearly each with its interim response.
#[test]
fn a_server_answering_every_read_asynchronously_keeps_the_credits_flowing() {
    let Some(server_url) = server("STORLAB_SMB_SERVER") else {
        return;
    };
    let Some(dir) = server("STORLAB_SMB_MOUNT_SHARE_DIR") else {
        return;
    };
    if !root_or_skip("mounting a FUSE filesystem") {
        return;
    }
    let mounted = match faulty_fuse::mount_at(
        Path::new(&dir),
        None,
        4 << 20,
        Default::default(),
        std::time::Duration::from_millis(1),
    ) {
        Ok(m) => m,
        Err(why) => {
            assert!(
                std::env::var_os("STORLAB_REQUIRE_ROOT").is_none(),
                "FUSE unavailable ({why}) and STORLAB_REQUIRE_ROOT is set"
            );
            eprintln!("SKIPPED: FUSE unavailable: {why}");
            return;
        }
    };
    let lab = Lab::new();
    // A short timeout: a stalled request fails the test in seconds, not minutes.
    let target = format!(
        "url = \"{}/mount/data\"\ntimeout = \"5s\"",
        server_url.trim_end_matches('/')
    );
    let stdout = run_ok(
        &lab,
        &study(
            &target,
            "read-share = 1.0\nqueue-depth = 12",
            "ops = 2000\nstop-on-error = true",
        ),
    );
    let runs = used_of_runs(&lab, &stdout);
    let summaries = summaries_of_runs(&lab, &stdout);
    let t = &summaries[0]["targets"][0];
    assert_eq!(t["errors"], 0, "{t}");
    assert_eq!(t["ops"], 2000, "{t}");
    let interim = used(&runs[0], "smb.interim-responses");
    let count: u64 = interim.split(' ').next().unwrap().parse().unwrap();
    assert!(count >= 1000, "only {count} interim responses: {interim}");
    // The interim responses' credits counted on the wire too: at the end the connection still
    // holds at least a queue depth's worth (granted, with the first one, less charged).
    let credits = used(&runs[0], "smb.credits");
    let number = |word: &str| -> i64 {
        let before = credits.split(&format!(" {word}")).next().unwrap();
        before.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let held = 1 + number("granted") - number("charged");
    assert!(held >= 12, "{held} credits held at the end: {credits}");
    assert!(mounted.state.lock().unwrap().reads >= 2000);
}
