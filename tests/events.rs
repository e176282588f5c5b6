//! Events in a step, run by the real binary: commands that fail stop the step and the study
//! goes on to fail at its end (`stop-step`), stop the study (`stop-study`) or neither
//! (`continue`), counted triggers, commands after the step (`after-step`), and a Redis server that the study starts
//! itself, kills mid-run and starts again, with the errors of the outage counted and the
//! recovery measured from the stored timeline.
//!
//! The Redis test needs `redis-server` and `redis-cli`; without them it is skipped with a
//! printed reason, unless STORLAB_REQUIRE_SERVERS is set: then it fails.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Lab, text};

/// The folder of the (only) study run.
fn study_folder(lab: &Lab) -> std::path::PathBuf {
    std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("study folder")
}

/// The summary of the study's first run.
fn first_summary(lab: &Lab) -> serde_json::Value {
    let text = std::fs::read_to_string(study_folder(lab).join("run-001/summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn study_events(s: &serde_json::Value) -> Vec<&serde_json::Value> {
    s["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("name").is_some())
        .collect()
}

const NULL_STUDY: &str = r#"name = "events"
interval = "100ms"

[targets.null]
type = "null"

[workloads.w]
block-size = "4KiB"
rate-ops = 20000

[[steps]]
workload = "w"
targets = ["null"]
duration = "1s"
"#;

#[test]
fn a_failing_command_stops_the_step_with_a_clear_error() {
    let lab = Lab::new();
    let study = lab.write(
        "s.toml",
        &format!(
            "{NULL_STUDY}\n[[steps.events]]\nname = \"breaks\"\naction = \"exec\"\nat = \"0.2s\"\ncommand = [\"sh\", \"-c\", \"echo going down; exit 3\"]\n\n[[steps.events]]\nname = \"later\"\naction = \"exec\"\nat = \"0.5s\"\ncommand = [\"true\"]\n"
        ),
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("event `breaks` (exec) failed") && stderr.contains("exit code 3"),
        "{stderr}"
    );
    let s = first_summary(&lab);
    assert_eq!(s["status"], "partial", "{s}");
    // By name: a skipped event is placed at the end of measurement, which on a loaded machine
    // can come before the start of the event that failed.
    let ev = study_events(&s);
    assert_eq!(ev.len(), 2, "{s}");
    let named = |n: &str| {
        *ev.iter()
            .find(|e| e["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {s}"))
    };
    let breaks = named("breaks");
    assert_eq!(breaks["status"], "failed");
    assert_eq!(breaks["exit-code"], 3);
    assert_eq!(breaks["stdout"], "going down\n");
    assert!(breaks["start-ns"].as_i64().unwrap() >= 200_000_000, "{s}");
    assert_eq!(named("later")["status"], "skipped", "{s}");
}

/// Two steps of 0.5 s: the first has an event failing at 0.1 s with `on_failure` (None: the
/// default), the second none.
fn two_steps(on_failure: Option<&str>) -> String {
    let step = |events: &str| {
        format!(
            "\n[[steps]]\nworkload = \"w\"\ntargets = [\"null\"]\nduration = \"0.5s\"\n{events}"
        )
    };
    let line = on_failure.map_or(String::new(), |v| format!("on-failure = \"{v}\"\n"));
    let head = NULL_STUDY.split("\n[[steps]]").next().unwrap();
    format!(
        "{head}{}{}",
        step(&format!(
            "\n[[steps.events]]\nname = \"breaks\"\naction = \"exec\"\nat = \"0.1s\"\ncommand = [\"sh\", \"-c\", \"exit 4\"]\n{line}"
        )),
        step("")
    )
}

#[test]
fn a_failure_with_stop_step_stops_its_step_and_the_study_goes_on_then_fails() {
    for on_failure in [None, Some("stop-step")] {
        let lab = Lab::new();
        let study = lab.write("s.toml", &two_steps(on_failure));
        let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{on_failure:?}: {stderr}");
        let folder = study_folder(&lab);
        assert!(folder.join("run-001/summary.json").exists(), "{stderr}");
        assert!(
            folder.join("run-002/summary.json").exists(),
            "the next step ran: {stderr}"
        );
        assert!(
            stderr.contains("step `")
                && stderr.contains("was stopped by its failing event `breaks`"),
            "{stderr}"
        );
        assert!(stderr.contains("exit code 4"), "{stderr}");
        let s = first_summary(&lab);
        assert_eq!(s["status"], "partial", "{s}");
        let breaks = study_events(&s)[0];
        assert_eq!(breaks["on-failure"], "stop-step", "{s}");
        assert!(
            s["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains(
                    "stopped by its failing event `breaks` (on-failure = \"stop-step\")"
                )),
            "{s}"
        );
        let second: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(folder.join("run-002/summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(second["status"], "complete", "{second}");
        let db = rusqlite::Connection::open(lab.results().join("results.db")).unwrap();
        let stored: String = db
            .query_row(
                "SELECT on_failure FROM events WHERE name = 'breaks'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(stored, "stop-step");
    }
}

#[test]
fn a_failure_with_stop_study_or_stop_ends_the_study() {
    for on_failure in ["stop-study", "stop"] {
        let lab = Lab::new();
        let study = lab.write("s.toml", &two_steps(Some(on_failure)));
        let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{on_failure}: {stderr}");
        assert!(stderr.contains("event `breaks` (exec) failed"), "{stderr}");
        let folder = study_folder(&lab);
        assert!(folder.join("run-001/summary.json").exists(), "{stderr}");
        assert!(
            !folder.join("run-002").exists(),
            "{on_failure}: the next step did not run"
        );
        assert_eq!(
            study_events(&first_summary(&lab))[0]["on-failure"],
            "stop-study"
        );
    }
}

#[test]
fn on_failure_continue_records_and_goes_on_and_after_ops_triggers() {
    let lab = Lab::new();
    let marker = lab.path().join("ran-after-ops");
    let study = lab.write(
        "s.toml",
        &format!(
            "{NULL_STUDY}\n[[steps.events]]\naction = \"exec\"\nat = \"0.1s\"\ncommand = [\"false\"]\non-failure = \"continue\"\n\n[[steps.events]]\nname = \"counted\"\naction = \"exec\"\nafter-ops = 5000\nrecovery = false\ncommand = [\"touch\", \"{}\"]\n\n[[steps.events]]\nname = \"never\"\naction = \"exec\"\nafter-ops = 1000000000\ncommand = [\"true\"]\n",
            marker.display()
        ),
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "--json", "-q"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(marker.exists(), "the after-ops event ran");
    let s = first_summary(&lab);
    assert_eq!(s["status"], "complete", "{s}");
    let ev = study_events(&s);
    let status: Vec<&str> = ev.iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["failed", "ok", "not-reached"], "{s}");
    assert_eq!(ev[0]["name"], "exec-1");
    // 5,000 operations at 20,000 ops/s: not before measurement started.
    assert!(ev[1]["start-ns"].as_i64().unwrap() > 0, "{s}");
    assert!(
        s["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("`never` (exec) not-reached")),
        "{s}"
    );
}

fn have(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_redis_killed_and_restarted_by_the_study_gives_counted_errors_and_recovery() {
    if !have("redis-server") || !have("redis-cli") {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "redis-server or redis-cli is not installed and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!(
            "skipped: redis-server or redis-cli is not installed (scripts/servers.sh install)"
        );
        return;
    }
    let lab = Lab::new();
    let port = free_port();
    let dir = lab.path().display().to_string();
    let server = format!(
        "[\"redis-server\", \"--port\", \"{port}\", \"--bind\", \"127.0.0.1\", \"--save\", \"\", \"--appendonly\", \"no\", \"--dir\", \"{dir}\"]"
    );
    let study = format!(
        r#"name = "redis-kill"
interval = "100ms"

[targets.redis]
type = "redis"
port = {port}
timeout = "1s"

[workloads.a]
type = "ycsb"
phase = "run"
workload-file = "{workloads}/workloada"
record-count = 1000
operation-count = 1000000000
threads = 2
rate-ops = 2000

[[steps]]
workload = "a"
targets = ["redis"]
duration = "3s"

[[steps.events]]
name = "redis"
action = "start"
before-step = true
command = {server}

[[steps.events]]
name = "redis-up"
action = "wait-for"
before-step = true
command = ["redis-cli", "-p", "{port}", "ping"]
timeout = "10s"

[[steps.events]]
name = "crash"
action = "kill"
signal = "KILL"
process = "redis"
at = "1s"
settle = "0.5s"

[[steps.events]]
name = "redis-again"
action = "start"
at = "1.5s"
command = {server}
"#,
        workloads = repo().join("workloads").display()
    );
    let path = lab.write("redis-kill.toml", &study);
    let out = lab.run(&["run", path.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("events (seconds from the start of measurement)"),
        "{stdout}"
    );
    assert!(stdout.contains("recovery (resolution"), "{stdout}");

    let s = first_summary(&lab);
    assert_eq!(s["status"], "complete", "{s}");
    let ev = study_events(&s);
    let names: Vec<&str> = ev.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["redis", "redis-up", "crash", "redis-again"], "{s}");
    assert!(ev.iter().all(|e| e["status"] == "ok"), "{s}");
    let ns = |i: usize, k: &str| ev[i][k].as_i64().unwrap();
    // Before the step: before measurement; the kill not before its time; the restart after.
    assert!(ns(0, "start-ns") < 0 && ns(1, "end-ns") < 0, "{s}");
    assert!(ns(2, "start-ns") >= 1_000_000_000, "{s}");
    assert!(ns(3, "start-ns") >= 1_500_000_000 && ns(3, "start-ns") > ns(2, "end-ns"));
    assert_eq!(
        ev[2]["pid"], ev[0]["pid"],
        "the kill went to the process the study started"
    );

    // The outage cost counted connection errors, not a crash.
    assert!(s["total"]["errors"].as_u64().unwrap() > 0, "{s}");
    let kinds = &s["targets"][0]["kinds"];
    let connection: u64 = ["read", "update"]
        .iter()
        .filter_map(|k| kinds[k]["errors-by-kind"]["connection"].as_u64())
        .sum();
    assert!(connection > 0, "{s}");

    let rec = &s["recovery"][0];
    assert_eq!(rec["event"], "crash", "{s}");
    assert!(rec["outage-seconds"].as_f64().unwrap() > 0.0, "{s}");
    assert!(rec["baseline-rate-ops"].as_f64().unwrap() > 0.0, "{s}");
    assert!(
        rec["errors-during-outage"]["connection"].as_u64().unwrap() > 0,
        "{s}"
    );
    // Redis came back: operations succeeded after the outage.
    assert!(
        rec["time-to-first-success-seconds"].as_f64().is_some(),
        "{s}"
    );

    // The restarted server was stopped when the step ended.
    let pid = ev[3]["pid"].as_i64().unwrap() as i32;
    // SAFETY: signal 0 only checks whether the process exists.
    assert_ne!(unsafe { libc::kill(pid, 0) }, 0, "pid {pid} still running");

    // The results store holds the events and the recovery.
    let db = rusqlite::Connection::open(lab.results().join("results.db")).unwrap();
    let n: i64 = db
        .query_row("SELECT count(*) FROM events WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 4);
    let outage: f64 = db
        .query_row(
            "SELECT outage_seconds FROM recovery WHERE event = 'crash'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(outage > 0.0);

    // The report shows them: a table of events, marks and the shaded recovery.
    let report = lab.path().join("r.html");
    let out = lab.run(&[
        "report",
        study_folder(&lab).to_str().unwrap(),
        "-o",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out).1);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("<table class=\"events\">"), "events table");
    assert!(
        html.contains("<table class=\"recovery\">"),
        "recovery table"
    );
    assert!(
        html.contains("crash (kill)"),
        "the kill marked on the timeline"
    );
    assert!(
        html.contains("class=\"recovery\" data-from="),
        "the recovery shaded"
    );
}

/// A network namespace of the test's own, with a veth link to the host, removed when dropped.
struct Netns {
    name: String,
    veth: String,
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "pids", &self.name])
            .output()
            .map(|o| {
                for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            });
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .status();
    }
}

fn ip_brief(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn power_off_kills_every_process_of_a_namespace_and_sets_its_link_down() {
    if !common::root_or_skip("network namespaces") {
        return;
    }
    let lab = Lab::new();
    let tag = format!("{:x}", std::process::id() & 0x00ff_ffff);
    let ns = Netns {
        name: format!("storlab-t-{tag}"),
        veth: format!("slt{tag}"),
    };
    let pid_file = lab.path().join("sleep.pid");
    let outside = lab.path().join("outside.pid");
    // Made by the study itself (before-step exec): the namespace, a veth link up on both
    // ends, two processes inside (one with a pid file), one outside with a pid file.
    let make = format!(
        "set -e; ip netns add {n}; ip link add {v} type veth peer name {v}p; ip link set {v}p netns {n}; \
         ip -n {n} link set {v}p up; ip -n {n} link set lo up; ip link set {v} up; \
         ip netns exec {n} setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {p}; \
         ip netns exec {n} setsid sleep 301 </dev/null >/dev/null 2>&1 & \
         setsid sleep 302 </dev/null >/dev/null 2>&1 & echo $! > {o}; sleep 0.2",
        n = ns.name,
        v = ns.veth,
        p = pid_file.display(),
        o = outside.display(),
    );
    let study = |power_off: &str| {
        format!(
            "{NULL_STUDY}\n[[steps.events]]\naction = \"exec\"\nbefore-step = true\ncommand = [\"sh\", \"-c\", \"{}\"]\n\n[[steps.events]]\nname = \"node-lost\"\naction = \"power-off\"\nat = \"0.3s\"\n{power_off}\n",
            make.replace('"', "\\\"")
        )
    };

    // A pid file naming a process outside the namespace: refused, nothing touched.
    let s = lab.write(
        "refused.toml",
        &study(&format!(
            "netns = \"{}\"\npid-files = [\"{}\"]",
            ns.name,
            outside.display()
        )),
    );
    let out = lab.run(&["run", s.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("event `node-lost` (power-off) failed")
            && stderr.contains("not in network namespace"),
        "{stderr}"
    );
    let alive = |f: &Path| {
        let pid: i32 = std::fs::read_to_string(f).unwrap().trim().parse().unwrap();
        (pid, storlab_engine::events::power_off::alive(pid))
    };
    assert!(alive(&pid_file).1, "nothing killed when refused");
    assert!(alive(&outside).1, "nothing killed when refused");
    let pids = ip_brief(&["netns", "pids", &ns.name]);
    assert_eq!(
        pids.lines().count(),
        2,
        "both still in the namespace: {pids}"
    );
    assert!(ip_brief(&["-n", &ns.name, "-br", "link"]).contains("UP"));
    drop(ns);
    let ns = Netns {
        name: format!("storlab-t-{tag}"),
        veth: format!("slt{tag}"),
    };
    let _ = Command::new("kill")
        .args(["-KILL", &alive(&outside).0.to_string()])
        .status();

    // The namespace and its pid file: every process killed, the link down.
    let lab = Lab::new();
    let s = lab.write(
        "s.toml",
        &study(&format!(
            "netns = \"{}\"\npid-files = [\"{}\"]",
            ns.name,
            pid_file.display()
        )),
    );
    let out = lab.run(&["run", s.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let sum = first_summary(&lab);
    let ev = study_events(&sum);
    let off = ev.iter().find(|e| e["name"] == "node-lost").unwrap();
    assert_eq!(off["status"], "ok", "{off}");
    assert_eq!(off["kind"], "power-off", "{off}");
    assert_eq!(off["pids-killed"], 2, "{off}");
    assert!(off["start-ns"].as_i64().unwrap() >= 300_000_000, "{off}");
    let detail = off["detail"].as_str().unwrap();
    assert!(detail.contains("SIGKILL to 2 processes"), "{detail}");
    assert!(!alive(&pid_file).1, "the pid file's process was killed");
    assert_eq!(
        ip_brief(&["netns", "pids", &ns.name]).trim(),
        "",
        "no process left"
    );
    let inside = ip_brief(&["-n", &ns.name, "-br", "link"]);
    for line in inside.lines() {
        assert!(line.split_whitespace().nth(1) == Some("DOWN"), "{inside}");
    }
    let host_end = ip_brief(&["link", "show", &ns.veth]);
    assert!(host_end.contains("NO-CARRIER"), "{host_end}");

    // A namespace that does not exist at run time: a run error naming it.
    let lab = Lab::new();
    let s = lab.write(
        "missing.toml",
        &format!(
            "{NULL_STUDY}\n[[steps.events]]\nname = \"node-lost\"\naction = \"power-off\"\nat = \"0.3s\"\nnetns = \"storlab-t-{tag}-none\"\n"
        ),
    );
    let out = lab.run(&["run", s.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "network namespace `storlab-t-{tag}-none` does not exist"
        )),
        "{stderr}"
    );
}

/// A `wait-for` still waiting when the load ends is cut off, unless it has `outlive-step`:
/// then it goes on until its command succeeds (after the 1 s step here: a file written at
/// 1.5 s), and its result says that it outlived the step.
#[test]
fn a_wait_for_with_outlive_step_goes_on_after_the_load() {
    let lab = Lab::new();
    let flag = lab.path().join("ready");
    let study = |outlive: bool| {
        format!(
            "{NULL_STUDY}\n[[steps.events]]\nname = \"writer\"\naction = \"start\"\nat = \"0.1s\"\ncommand = [\"sh\", \"-c\", \"sleep 1.4; touch {flag}\"]\n\n[[steps.events]]\nname = \"ready\"\naction = \"wait-for\"\nat = \"0.2s\"\ncommand = [\"test\", \"-e\", \"{flag}\"]\npoll = \"50ms\"\ntimeout = \"20s\"\noutlive-step = {outlive}\non-failure = \"continue\"\n",
            flag = flag.display()
        )
    };
    let cut = Lab::new();
    let path = cut.write("cut.toml", &study(false));
    let out = cut.run(&["run", path.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let s = first_summary(&cut);
    let ready = study_events(&s)
        .into_iter()
        .find(|e| e["name"] == "ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "cut-off", "{ready}");

    std::fs::remove_file(&flag).ok();
    let path = lab.write("outlive.toml", &study(true));
    let out = lab.run(&["run", path.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{:?}", text(&out));
    let s = first_summary(&lab);
    let ready = study_events(&s)
        .into_iter()
        .find(|e| e["name"] == "ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "ok", "{ready}");
    assert!(
        ready["detail"]
            .as_str()
            .unwrap()
            .contains("after the step's load had ended"),
        "{ready}"
    );
    assert!(
        ready["duration-seconds"].as_f64().unwrap() >= 1.0,
        "{ready}"
    );
}

/// A study whose `start` event (before the step) runs a TCP listener on `port`, then 20 s of
/// load.
fn listener_study(port: u16) -> String {
    let head = NULL_STUDY.replace("duration = \"1s\"", "duration = \"20s\"");
    format!(
        "{head}\n[[steps.events]]\nname = \"server\"\naction = \"start\"\nbefore-step = true\ncommand = [\"python3\", \"-c\", \"import socket, time\\ns = socket.socket()\\ns.bind(('127.0.0.1', {port}))\\ns.listen()\\ntime.sleep(60)\"]\n"
    )
}

fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

#[test]
fn a_sigkilled_storlab_leaves_no_process_behind() {
    if !have("python3") {
        assert!(
            std::env::var_os("STORLAB_REQUIRE_SERVERS").is_none(),
            "python3 is not installed and STORLAB_REQUIRE_SERVERS is set"
        );
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let lab = Lab::new();
    let port = free_port();
    let study = lab.write("s.toml", &listener_study(port));
    let mut storlab = lab
        .cmd()
        .args(["run", study.to_str().unwrap(), "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !listening(port) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the study's server never listened on {port}"
        );
        assert!(storlab.try_wait().unwrap().is_none(), "storlab ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    storlab.kill().unwrap(); // SIGKILL: storlab stops nothing itself.
    storlab.wait().unwrap();
    let killed = std::time::Instant::now();
    while listening(port) {
        assert!(
            killed.elapsed() < std::time::Duration::from_secs(2),
            "port {port} still held 2 s after storlab was SIGKILLed: its server was left behind"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The keeper removes the account of what was started once it has stopped it.
    while std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(".started-"))
    {
        assert!(killed.elapsed() < std::time::Duration::from_secs(10));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_leftover_of_a_dead_storlab_is_reported_and_stopped_by_the_next_run() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use storlab_engine::events::started::{Entry, StartedFile, start_time_ticks};
    let lab = Lab::new();
    std::fs::create_dir_all(lab.results()).unwrap();
    let mut left = Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = left.id() as i32;
    // The storlab that started it is no longer alive: a process that ended and was reaped.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id() as i32;
    dead.wait().unwrap();
    let host = storlab_study::local_host_name();
    let file = lab
        .results()
        .join(format!(".started-{host}-{dead_pid}.json"));
    let record = StartedFile {
        storlab_pid: dead_pid,
        storlab_start_time_ticks: 1,
        host,
        started: vec![Entry {
            pgid: pid,
            pid,
            start_time_ticks: start_time_ticks(pid).unwrap(),
            command: vec!["sleep".into(), "30".into()],
        }],
    };
    std::fs::write(&file, serde_json::to_vec(&record).unwrap()).unwrap();
    let study = lab.write("s.toml", NULL_STUDY);
    let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "left behind by storlab pid {dead_pid} (no longer running): process group {pid} (`sleep 30`): stopped with SIGTERM"
        )),
        "{stderr}"
    );
    assert_eq!(left.wait().unwrap().signal(), Some(libc::SIGTERM));
    assert!(!file.exists());
    let s = first_summary(&lab);
    assert!(
        s["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains(&format!("left behind by storlab pid {dead_pid}"))),
        "{s}"
    );
}

/// `after-step` events run in order once the step's measurement has ended and its workers
/// have stopped: a command that writes a file ran (its output stored with the run's events),
/// its start is after the end of measurement, and one that fails is a warning (its default
/// `on-failure` is `continue`): the run is complete and the study succeeds.
#[test]
fn after_step_events_run_once_the_workers_stopped() {
    let lab = Lab::new();
    let marker = lab.path().join("after-step-ran");
    let study = lab.write(
        "s.toml",
        &format!(
            "{NULL_STUDY}\n[[steps.events]]\nname = \"during\"\naction = \"exec\"\nat = \"0.2s\"\nrecovery = false\ncommand = [\"sh\", \"-c\", \"echo during > {m}\"]\n\n[[steps.events]]\nname = \"post\"\naction = \"exec\"\nafter-step = true\ncommand = [\"sh\", \"-c\", \"echo after >> {m}; echo post-said\"]\n\n[[steps.events]]\nname = \"post-fails\"\naction = \"exec\"\nafter-step = true\ncommand = [\"sh\", \"-c\", \"exit 4\"]\n",
            m = marker.display()
        ),
    );
    let out = lab.run(&["run", study.to_str().unwrap(), "-q"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "during\nafter\n");
    let s = first_summary(&lab);
    assert_eq!(s["status"], "complete", "{s}");
    let ev = study_events(&s);
    let named = |n: &str| *ev.iter().find(|e| e["name"] == n).unwrap();
    let post = named("post");
    assert_eq!(post["status"], "ok", "{post}");
    assert!(
        post["stdout"].as_str().unwrap().contains("post-said"),
        "{post}"
    );
    // The step measured 1 s: the event started after it, once the workers had stopped.
    let measured_ns = (s["measured-seconds"].as_f64().unwrap() * 1e9) as i64;
    assert!(measured_ns >= 900_000_000, "{s}");
    assert!(post["start-ns"].as_i64().unwrap() >= measured_ns, "{s}");
    assert!(
        post["start-ns"].as_i64().unwrap() > named("during")["end-ns"].as_i64().unwrap(),
        "{s}"
    );
    let fails = named("post-fails");
    assert_eq!(fails["status"], "failed", "{fails}");
    assert_eq!(fails["exit-code"], 4, "{fails}");
    assert_eq!(fails["on-failure"], "continue", "{fails}");
    assert!(
        s["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("`post-fails` (exec) failed")),
        "{s}"
    );
}
