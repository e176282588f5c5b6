//! Bad study files: every error names the file, the line and the key, and says what is expected.

mod common;
#[path = "study_errors/sample.rs"]
mod sample;
#[path = "study_errors/schedule.rs"]
mod schedule;
#[path = "study_errors/target_workloads.rs"]
mod target_workloads;

use storlab_study as study;

const GOOD: &str = r#"name = "t"

[targets.disk]
type = "null"

[workloads.rr]
block-size = "4KiB"
queue-depth = 4

[[steps]]
workload = "rr"
targets = ["disk"]
duration = "1s"
"#;

/// Parses `text` and returns its single error (panics if valid or several).
fn one_error(text: &str) -> study::StudyError {
    let errs = study::parse("bad.toml", text)
        .expect_err("the study should be refused")
        .0;
    assert_eq!(errs.len(), 1, "expected one error, got {errs:?}");
    errs.into_iter().next().unwrap()
}

fn check(text: &str, line: usize, key: &str, says: &str) {
    let e = one_error(text);
    assert_eq!(e.file, "bad.toml");
    assert_eq!(e.line, Some(line), "line of {e}");
    assert_eq!(e.key, key, "key of {e}");
    assert!(
        e.message.contains(says),
        "message of {e} should contain {says:?}"
    );
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("bad.toml:{line}: `{key}`")),
        "{shown}"
    );
}

#[test]
fn the_good_study_is_valid() {
    let plan = study::parse("good.toml", GOOD).unwrap();
    assert_eq!(plan.runs.len(), 1);
}

#[test]
fn toml_syntax_error() {
    let text = GOOD.replace("queue-depth = 4", "queue-depth = = 4");
    let e = one_error(&text);
    assert_eq!(e.line, Some(8));
    assert_eq!(e.key, "workloads.rr.queue-depth");
}

#[test]
fn unknown_top_level_key() {
    check(
        &GOOD.replace("name = \"t\"", "nmae = \"t\""),
        1,
        "nmae",
        "unknown field",
    );
}

#[test]
fn pgbench_workload_errors_name_line_and_key() {
    let pg = |w: &str| {
        GOOD.replace(
            "type = \"null\"",
            "type = \"postgres\"\nurl = \"postgres://u@h/db\"",
        )
        .replace("block-size = \"4KiB\"\nqueue-depth = 4", w)
    };
    // The workload's keys start on line 8 once the target gained its url line.
    check(
        &pg("type = \"pgbench\"\nscript = \"tpcc\""),
        9,
        "workloads.rr.script",
        "tpcb-like, select-only, simple-update",
    );
    check(
        &pg("type = \"pgbench\"\nscale = 0"),
        9,
        "workloads.rr.scale",
        "from 1 to 20000",
    );
    check(
        &pg("type = \"pgbench\"\nclients = 4"),
        9,
        "workloads.rr.clients",
        "unknown key",
    );
    check(
        &pg("type = \"pgbench\"\nscript = \"select-only\"\nverify = true"),
        10,
        "workloads.rr.verify",
        "select-only writes none",
    );
    // A target that keeps no ledger cannot verify pgbench's transactions.
    let null_verify = GOOD.replace(
        "block-size = \"4KiB\"\nqueue-depth = 4",
        "type = \"pgbench\"\nverify = true",
    );
    let e = one_error(&null_verify);
    assert_eq!(e.key, "targets.disk", "{e}");
    assert!(e.message.contains("ledger"), "{e}");
}

#[test]
fn unknown_workload_key() {
    check(
        &GOOD.replace("queue-depth = 4", "queue-dept = 4"),
        8,
        "workloads.rr.queue-dept",
        "unknown field",
    );
}

#[test]
fn bad_size_unit() {
    check(
        &GOOD.replace("\"4KiB\"", "\"4XB\""),
        7,
        "workloads.rr.block-size",
        "invalid size",
    );
}

#[test]
fn read_share_out_of_range() {
    check(
        &GOOD.replace("queue-depth = 4", "read-share = 1.5"),
        8,
        "workloads.rr.read-share",
        "fraction",
    );
}

#[test]
fn unknown_target_type() {
    check(
        &GOOD.replace("type = \"null\"", "type = \"nvme\""),
        4,
        "targets.disk.type",
        "unknown target type `nvme`",
    );
}

#[test]
fn missing_target_type() {
    check(
        &GOOD.replace("type = \"null\"\n", ""),
        3,
        "targets.disk",
        "missing `type`",
    );
}

#[test]
fn unknown_target_option() {
    check(
        &GOOD.replace("type = \"null\"", "type = \"null\"\nspeed = 3"),
        5,
        "targets.disk.speed",
        "unknown field",
    );
}

#[test]
fn step_names_a_missing_workload() {
    check(
        &GOOD.replace("workload = \"rr\"", "workload = \"rw\""),
        11,
        "steps[1].workload",
        "no workload named `rw`",
    );
}

#[test]
fn step_names_a_missing_target() {
    check(
        &GOOD.replace("targets = [\"disk\"]", "targets = [\"disk\", \"ssd\"]"),
        12,
        "steps[1].targets",
        "no target named `ssd`",
    );
}

#[test]
fn step_without_a_bound() {
    check(
        &GOOD.replace("duration = \"1s\"\n", ""),
        10,
        "steps[1]",
        "needs a bound",
    );
}

#[test]
fn bad_duration() {
    check(
        &GOOD.replace("\"1s\"", "\"soon\""),
        13,
        "steps.duration",
        "invalid duration",
    );
}

#[test]
fn sweep_of_an_unknown_parameter() {
    let text = format!("{GOOD}sweep.depth = [1, 2]\n");
    check(
        &text,
        14,
        "steps[1].sweep.depth",
        "not a workload parameter",
    );
}

#[test]
fn bad_value_inside_a_sweep_points_at_the_value() {
    let text = format!("{GOOD}sweep.queue-depth = [\n  1,\n  0,\n]\n");
    check(
        &text,
        16,
        "steps[1].sweep.queue-depth",
        "queue-depth must be",
    );
}

#[test]
fn psync_with_queue_depth_above_one() {
    let text = GOOD.replace(
        "type = \"null\"",
        "type = \"file\"\npath = \"x.dat\"\nsize = \"1MiB\"\nengine = \"psync\"",
    );
    check(&text, 11, "targets.disk", "queue-depth must be 1");
}

#[test]
fn direct_io_with_unaligned_blocks() {
    let text = GOOD
        .replace(
            "type = \"null\"",
            "type = \"file\"\npath = \"x.dat\"\nsize = \"1MiB\"\ndirect = true",
        )
        .replace("\"4KiB\"", "1000");
    check(&text, 10, "targets.disk", "multiples of 512");
}

#[test]
fn no_steps_at_all() {
    let text = &GOOD[..GOOD.find("[[steps]]").unwrap()];
    let e = one_error(text);
    assert_eq!(e.key, "steps");
    assert!(e.message.contains("no [[steps]]"));
}

#[test]
fn several_problems_are_all_reported() {
    let text = GOOD
        .replace("queue-depth = 4", "queue-depth = 0")
        .replace("type = \"null\"", "type = \"nul\"");
    let errs = study::parse("bad.toml", &text).unwrap_err().0;
    assert!(errs.len() >= 2, "{errs:?}");
}

#[test]
fn the_binary_reports_file_line_and_key_and_exits_2() {
    let lab = common::Lab::new();
    let study = lab.write(
        "bad.toml",
        &GOOD.replace("queue-depth = 4", "queue-depth = \"deep\""),
    );
    let out = lab.run(&["check", study.to_str().unwrap()]);
    let (_, err) = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.toml:8: `workloads.rr.queue-depth`"),
        "{err}"
    );
    let good = lab.write("good.toml", GOOD);
    let out = lab.run(&["check", good.to_str().unwrap()]);
    assert!(out.status.success());
}

#[test]
fn nul_byte_in_a_file_target_path() {
    let text = GOOD.replace(
        "type = \"null\"",
        "type = \"file\"\npath = \"data/x\\u0000.dat\"\nsize = \"1MiB\"",
    );
    check(&text, 5, "targets.disk.path", "NUL byte");
}

#[test]
fn nul_byte_in_a_rocksdb_path() {
    let text = r#"[targets.db]
type = "rocksdb"
path = "db\u0000"

[workloads.fill]
type = "db-bench"
benchmark = "fillrandom"

[[steps]]
workload = "fill"
targets = ["db"]
ops = 10
"#;
    check(text, 3, "targets.db.path", "NUL byte");
}

#[test]
fn file_region_smaller_than_one_block() {
    let text = GOOD.replace(
        "type = \"null\"",
        "type = \"file\"\npath = \"x.dat\"\nsize = \"1KiB\"",
    );
    check(&text, 6, "targets.disk.size", "smaller than one block");
    // Each swept block size that does not fit is named.
    let text = format!(
        "{}sweep.block-size = [\"512\", \"4KiB\", \"8KiB\"]\n",
        GOOD.replace(
            "type = \"null\"",
            "type = \"file\"\npath = \"x.dat\"\nsize = \"1KiB\"",
        )
    );
    let errs = study::parse("bad.toml", &text).unwrap_err().0;
    assert_eq!(errs.len(), 2, "{errs:?}");
}

#[test]
fn null_region_smaller_than_one_block() {
    let text = GOOD.replace("type = \"null\"", "type = \"null\"\nsize = 4000");
    check(&text, 5, "targets.disk.size", "smaller than one block");
}

#[test]
fn existing_file_region_after_its_offset_smaller_than_one_block() {
    let lab = common::Lab::new();
    let data = lab.write("small.dat", &"x".repeat(10_000));
    let text = GOOD.replace(
        "type = \"null\"",
        &format!(
            "type = \"file\"\npath = \"{}\"\noffset = 8192",
            data.display()
        ),
    );
    check(&text, 5, "targets.disk.path", "less than one block");
    // Without the offset, the file holds two blocks.
    let fits = text.replace("offset = 8192", "offset = 0");
    assert!(study::parse("good.toml", &fits).is_ok());
}

/// Runs storlab with `args`, killing it after `limit`: returns its exit code and stderr.
fn run_bounded(lab: &common::Lab, args: &[&str], limit: std::time::Duration) -> (i32, String) {
    use std::io::Read;
    let mut child = lab
        .cmd()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start storlab");
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for storlab") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("storlab {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    (status.code().unwrap_or(-1), err)
}

fn values(n: usize, f: impl Fn(usize) -> String) -> String {
    (0..n).map(f).collect::<Vec<_>>().join(", ")
}

#[test]
fn a_plan_of_a_million_runs_is_refused_at_once_with_its_size() {
    // 100 queue depths x 100 thread counts x 101 read shares = 1,010,000 runs of 1 s.
    let text = format!(
        "{GOOD}sweep.queue-depth = [{}]\nsweep.threads = [{}]\nsweep.read-share = [{}]\n",
        values(100, |i| (i + 1).to_string()),
        values(100, |i| (i + 1).to_string()),
        values(101, |i| format!("{:.2}", i as f64 / 100.0)),
    );
    let lab = common::Lab::new();
    let study = lab.write("huge.toml", &text);
    let limit = std::time::Duration::from_secs(20);
    for command in ["check", "plan", "run"] {
        let (code, err) = run_bounded(&lab, &[command, study.to_str().unwrap()], limit);
        assert_eq!(code, 2, "{command}: {err}");
        assert!(err.contains("huge.toml:10: `steps[1]`"), "{command}: {err}");
        assert!(err.contains("1,010,000 runs"), "{command}: {err}");
        assert!(
            err.contains("100 queue-depth values x 100 threads values x 101 read-share values"),
            "{command}: {err}"
        );
        assert!(err.contains("11 days 16 hours"), "{command}: {err}");
        assert!(err.contains("--allow-large-plan"), "{command}: {err}");
    }
}

#[test]
fn allow_large_plan_goes_on() {
    // 120 x 100 = 12,000 runs: above the limit, small enough to expand in a test.
    let text = format!(
        "{GOOD}sweep.queue-depth = [{}]\nsweep.threads = [{}]\n",
        values(120, |i| (i + 1).to_string()),
        values(100, |i| (i + 1).to_string()),
    );
    let e = one_error(&text);
    assert!(e.message.contains("12,000 runs"), "{e}");
    let lab = common::Lab::new();
    let study = lab.write("large.toml", &text);
    let out = lab.run(&["check", "--allow-large-plan", study.to_str().unwrap()]);
    let (stdout, stderr) = common::text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("valid, 12000 runs"), "{stdout}");
}

#[test]
fn errors_print_their_cause_once() {
    let lab = common::Lab::new();
    let out = lab.run(&["check", "missing.toml"]);
    let (_, err) = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");

    // A target path under a regular file: the run fails reading its metadata.
    lab.write("not-a-folder", "");
    let text = GOOD.replace(
        "type = \"null\"",
        "type = \"file\"\npath = \"not-a-folder/x.dat\"\nsize = \"1MiB\"",
    );
    let study = lab.write("bad-path.toml", &text);
    let out = lab.run(&["run", "-q", study.to_str().unwrap()]);
    let (_, err) = common::text(&out);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    assert_eq!(err.matches("not-a-folder/x.dat").count(), 1, "{err}");
}

/// GOOD with one `[[steps.events]]` table: its header on line 15, `lines` from line 16.
fn with_event(lines: &str) -> String {
    format!("{GOOD}\n[[steps.events]]\n{lines}")
}

#[test]
fn a_valid_event_is_in_the_plan() {
    let plan = study::parse(
        "good.toml",
        &with_event("name = \"boom\"\nat = \"0.5s\"\naction = \"exec\"\ncommand = [\"true\"]\n"),
    )
    .unwrap();
    let e = &plan.runs[0].events[0];
    assert_eq!(e.name, "boom");
    assert!(e.recovery.is_some(), "exec measures recovery by default");
}

#[test]
fn event_with_an_unknown_action() {
    check(
        &with_event("at = \"0.5s\"\naction = \"reboot\"\n"),
        17,
        "steps[1].events[1].action",
        "unknown action `reboot`",
    );
}

#[test]
fn event_at_past_the_steps_end() {
    check(
        &with_event("action = \"exec\"\ncommand = [\"true\"]\nat = \"5s\"\n"),
        18,
        "steps[1].events[1].at",
        "past the step's end",
    );
}

#[test]
fn event_without_a_command() {
    check(
        &with_event("action = \"exec\"\nat = \"0.5s\"\n"),
        15,
        "steps[1].events[1]",
        "missing `command`",
    );
}

#[test]
fn event_with_both_at_and_after_ops() {
    check(
        &with_event("action = \"exec\"\ncommand = [\"true\"]\nat = \"0.5s\"\nafter-ops = 1000\n"),
        19,
        "steps[1].events[1].after-ops",
        "not several",
    );
}

#[test]
fn event_with_neither_at_nor_after_ops() {
    check(
        &with_event("action = \"exec\"\ncommand = [\"true\"]\n"),
        15,
        "steps[1].events[1]",
        "missing when the event runs",
    );
}

#[test]
fn event_with_an_unknown_key() {
    check(
        &with_event("action = \"exec\"\ncommand = [\"true\"]\nat = \"0.5s\"\nretries = 3\n"),
        19,
        "steps[1].events[1].retries",
        "unknown key `retries`",
    );
}

#[test]
fn event_naming_no_earlier_start() {
    check(
        &with_event("action = \"kill\"\nat = \"0.5s\"\nprocess = \"redis\"\n"),
        18,
        "steps[1].events[1].process",
        "no earlier `start` event is named `redis`",
    );
    // Named by a start event that comes later: still refused (events run in order).
    let text = format!(
        "{}\n[[steps.events]]\nname = \"redis\"\naction = \"start\"\nat = \"0.8s\"\ncommand = [\"sleep\", \"9\"]\n",
        with_event("action = \"kill\"\nat = \"0.5s\"\nprocess = \"redis\"\n")
    );
    check(
        &text,
        18,
        "steps[1].events[1].process",
        "no earlier `start` event",
    );
}

#[test]
fn a_process_started_earlier_can_be_named() {
    let text = format!(
        "{}\n[[steps.events]]\naction = \"kill\"\nsignal = \"KILL\"\nat = \"0.5s\"\nprocess = \"redis\"\n",
        with_event(
            "name = \"redis\"\naction = \"start\"\nbefore-step = true\ncommand = [\"sleep\", \"9\"]\n"
        )
    );
    let plan = study::parse("good.toml", &text).unwrap();
    assert_eq!(plan.runs[0].events.len(), 2);
}

#[test]
fn event_key_of_another_action() {
    check(
        &with_event("action = \"exec\"\ncommand = [\"true\"]\nat = \"0.5s\"\nsignal = \"KILL\"\n"),
        19,
        "steps[1].events[1].signal",
        "does not apply to `exec` events",
    );
}

#[test]
fn event_with_a_bad_signal() {
    check(
        &with_event(
            "action = \"kill\"\npid-file = \"/run/x.pid\"\nat = \"0.5s\"\nsignal = \"NOPE\"\n",
        ),
        19,
        "steps[1].events[1].signal",
        "unknown signal `NOPE`",
    );
}

/// A study with IOmeter's access specification in workload `oltp` (`lines` appended).
fn with_spec(lines: &str) -> String {
    format!(
        "name = \"t\"\n\n[targets.disk]\ntype = \"null\"\n\n[workloads.oltp]\nqueue-depth = 12\n{lines}\n[[steps]]\nworkload = \"oltp\"\ntargets = [\"disk\"]\nduration = \"1s\"\n"
    )
}

const LINE_A: &str =
    "[[workloads.oltp.access-spec]]\nspec-share = 0.6\nblock-size = \"64KiB\"\nread-share = 0.67\n";
const LINE_B: &str = "[[workloads.oltp.access-spec]]\nspec-share = 0.4\nblock-size = \"8KiB\"\nread-share = 1.0\nrandom-share = 0.0\n";

#[test]
fn access_spec_shares_must_add_up_to_one() {
    let text = with_spec(&format!("{LINE_A}{}", LINE_B.replace("0.4", "0.3")));
    check(
        &text,
        8,
        "workloads.oltp.access-spec",
        "must add up to 1.0; they add up to 0.9 (0.6 + 0.3)",
    );
}

#[test]
fn access_spec_line_key_points_at_its_line() {
    let text = with_spec(&format!(
        "{LINE_A}{}",
        LINE_B.replace("read-share = 1.0", "read-share = 67")
    ));
    check(
        &text,
        15,
        "workloads.oltp.access-spec[2].read-share",
        "fraction from 0.0 to 1.0",
    );
}

#[test]
fn access_spec_replaces_the_workloads_own_block_size() {
    let text = with_spec(&format!("block-size = \"4KiB\"\n{LINE_A}"))
        .replace("spec-share = 0.6", "spec-share = 1.0");
    check(
        &text,
        8,
        "workloads.oltp.block-size",
        "give block-size in each of its lines",
    );
}

#[test]
fn client_is_a_string() {
    check(
        &GOOD.replace("type = \"null\"", "type = \"null\"\nclient = 3"),
        5,
        "targets.disk.client",
        "`client` is a non-empty string",
    );
}

/// Cycling outstanding I/Os (IOmeter's 1 to 32, doubling) is a sweep of `queue-depth`: one
/// run per value, each with the whole access specification; `client` goes into the plan.
#[test]
fn cycling_outstanding_ios_is_a_queue_depth_sweep() {
    let text = with_spec(&format!("{LINE_A}{LINE_B}"))
        .replace("type = \"null\"", "type = \"null\"\nclient = \"client-1\"")
        .replace(
            "duration = \"1s\"",
            "duration = \"1s\"\nsweep.queue-depth = [1, 2, 4, 8, 16, 32]",
        );
    let plan = study::parse("good.toml", &text).unwrap();
    let depths: Vec<u32> = plan
        .runs
        .iter()
        .map(|r| r.targets[0].workload.queue_depth())
        .collect();
    assert_eq!(depths, vec![1, 2, 4, 8, 16, 32]);
    for r in &plan.runs {
        let t = &r.targets[0];
        assert_eq!(t.client, "client-1");
        let w = t.workload.as_block().unwrap();
        assert_eq!(w.access_spec.len(), 2);
        // Sessions' buffers hold the largest transfer.
        assert_eq!(t.workload.block_bytes(), 64 << 10);
    }
    let default_client = study::parse("good.toml", GOOD).unwrap();
    assert_eq!(
        default_client.runs[0].targets[0].client,
        study::local_host_name()
    );
}

/// `[clients.NAME]`: its namespace goes into the plan of every target that names the client.
const CLIENT: &str = "[clients.c1]\nnetns = \"storlab-cl-1\"\n\n[targets.disk]";

#[test]
fn a_clients_namespace_goes_to_its_targets() {
    let text = GOOD
        .replace("[targets.disk]", CLIENT)
        .replace("type = \"null\"", "type = \"null\"\nclient = \"c1\"");
    let plan = study::parse("good.toml", &text).unwrap();
    assert_eq!(
        plan.runs[0].targets[0].netns.as_deref(),
        Some(std::path::Path::new("/run/netns/storlab-cl-1"))
    );
    // An empty `netns` (`${VAR:-}` unset) is this machine's own network.
    let none = text.replace("\"storlab-cl-1\"", "\"\"");
    assert_eq!(
        study::parse("good.toml", &none).unwrap().runs[0].targets[0].netns,
        None
    );
}

#[test]
fn a_clients_netns_is_a_name_or_an_absolute_path() {
    let text = GOOD
        .replace("[targets.disk]", CLIENT)
        .replace("type = \"null\"", "type = \"null\"\nclient = \"c1\"");
    check(
        &text.replace("\"storlab-cl-1\"", "\"run/netns/x\""),
        4,
        "clients.c1.netns",
        "neither a namespace name nor an absolute path",
    );
    check(
        &text.replace("\"storlab-cl-1\"", "7"),
        4,
        "clients.c1.netns",
        "`netns` is a string",
    );
    check(
        &text.replace("netns = ", "namespace = "),
        4,
        "clients.c1.namespace",
        "unknown key `namespace` of a client",
    );
}

#[test]
fn a_client_no_target_names_is_refused() {
    check(
        &GOOD.replace("[targets.disk]", CLIENT),
        3,
        "clients.c1",
        "no target names client `c1`",
    );
}

#[test]
fn power_off_names_what_to_power_off() {
    check(
        &with_event("action = \"power-off\"\nat = \"0.5s\"\n"),
        15,
        "steps[1].events[1]",
        "missing what to power off",
    );
}

#[test]
fn power_off_with_a_bad_namespace_name() {
    check(
        &with_event("action = \"power-off\"\nat = \"0.5s\"\nnetns = \"../etc\"\n"),
        18,
        "steps[1].events[1].netns",
        "not a network namespace name",
    );
}

#[test]
fn power_off_with_bad_pid_files() {
    check(
        &with_event("action = \"power-off\"\nat = \"0.5s\"\npid-files = \"/run/x.pid\"\n"),
        18,
        "steps[1].events[1].pid-files",
        "non-empty array of pid file paths",
    );
    check(
        &with_event("action = \"power-off\"\nat = \"0.5s\"\npid-files = [\"/run/x.pid\", 3]\n"),
        18,
        "steps[1].events[1].pid-files",
        "every element of `pid-files`",
    );
}

#[test]
fn power_off_takes_a_namespace_or_a_command_naming_it_not_both() {
    check(
        &with_event(
            "action = \"power-off\"\nat = \"0.5s\"\nnetns = \"n1\"\nnetns-command = [\"echo\", \"n2\"]\n",
        ),
        19,
        "steps[1].events[1].netns-command",
        "give `netns` (a namespace known beforehand) or `netns-command`",
    );
    check(
        &with_event("action = \"power-off\"\nat = \"0.5s\"\nnetns-command = \"echo n2\"\n"),
        18,
        "steps[1].events[1].netns-command",
        "`netns-command` is an argv array of strings",
    );
}

#[test]
fn power_off_keys_belong_to_power_off() {
    check(
        &with_event(
            "action = \"kill\"\nat = \"0.5s\"\npid-file = \"/run/x.pid\"\nnetns = \"n1\"\n",
        ),
        19,
        "steps[1].events[1].netns",
        "does not apply to `kill` events (it is for power-off)",
    );
}

#[test]
fn a_valid_power_off_is_in_the_plan_with_recovery() {
    let plan = study::parse(
        "good.toml",
        &with_event(
            "name = \"lose-node\"\naction = \"power-off\"\nat = \"0.5s\"\nnetns = \"node1\"\npid-files = [\"/run/a.pid\", \"/run/b.pid\"]\n",
        ),
    )
    .unwrap();
    let e = &plan.runs[0].events[0];
    assert_eq!(e.action.name(), "power-off");
    assert!(
        e.recovery.is_some(),
        "a power-off measures recovery by default"
    );
    match &e.action {
        study::events::Action::PowerOff {
            netns,
            netns_command,
            pid_files,
        } => {
            assert_eq!(netns.as_deref(), Some("node1"));
            assert!(netns_command.is_empty());
            assert_eq!(pid_files.len(), 2);
        }
        other => panic!("{other:?}"),
    }
}

/// A block workload's `cpus` and `cpus-policy`: a CPU list of CPUs this process may run on,
/// a policy storlab knows, and a policy only with a list.
#[test]
fn workload_cpus() {
    let with =
        |lines: &str| GOOD.replace("queue-depth = 4\n", &format!("queue-depth = 4\n{lines}"));
    let plan = study::parse("good.toml", &with("cpus = 0\ncpus-policy = \"split\"\n")).unwrap();
    let w = plan.runs[0].targets[0].workload.as_block().unwrap();
    assert_eq!(w.cpus.as_ref().map(|c| c.to_string()).as_deref(), Some("0"));
    assert_eq!(w.cpus_policy, storlab_model::cpus::CpuPolicy::Split);
    // CPU 1023 can be named in a set, but this machine does not have it.
    check(
        &with("cpus = \"0,1023\"\n"),
        9,
        "workloads.rr.cpus",
        "CPU 1023 of cpus = \"0,1023\" is not one this process may run on: it may run on CPUs 0",
    );
    check(
        &with("cpus = \"0,1022-1023\"\n"),
        9,
        "workloads.rr.cpus",
        "CPUs 1022, 1023 of cpus = \"0,1022,1023\" are not ones this process may run on",
    );
    check(
        &with("cpus = \"0-x\"\n"),
        9,
        "workloads.rr.cpus",
        "is not a CPU list",
    );
    check(
        &with("cpus-policy = \"split\"\n"),
        9,
        "workloads.rr.cpus-policy",
        "give cpus too",
    );
    check(
        &with("cpus = \"0\"\ncpus-policy = \"spread\"\n"),
        10,
        "workloads.rr.cpus-policy",
        "spread",
    );
}
