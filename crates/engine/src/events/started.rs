//! No orphans: every process a study's events start is torn down on every exit of storlab,
//! its own SIGKILL included.
//!
//! storlab records each process group it starts (its leader's pid, that pid's start time from
//! `/proc/PID/stat` field 22, the command) in `RESULTS/.started-HOST-PID.json` and removes the
//! entry once it has stopped and reaped the process. A keeper process (storlab itself run as
//! `storlab __keeper FILE`, in a process group of its own, deaf to SIGINT, SIGTERM and SIGHUP)
//! holds the read end of a pipe whose write end only storlab holds: the pipe's end is
//! storlab's end, however it came. The keeper then stops every group the file still lists
//! (SIGTERM, SIGKILL after [`KEEPER_GRACE`]) and removes the file. The pipe carries no data,
//! so storlab never writes to a pipe whose reader may be gone (no SIGPIPE), and the file is
//! the one account of what is running. Should the keeper die too, the next `storlab run` in
//! the same results folder finds the file of a storlab that is no longer alive, reports it and
//! cleans it up the same way.
//!
//! A process is signalled only while its pid still has the start time recorded: a pid reused
//! by an unrelated process is never touched. Processes are never looked up by name.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How long a group the keeper (or the next run) stops has after SIGTERM before SIGKILL.
pub const KEEPER_GRACE: Duration = Duration::from_secs(3);
/// The hidden subcommand that runs the keeper.
pub const KEEPER_COMMAND: &str = "__keeper";

/// One process group storlab started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Entry {
    /// The group, led by `pid`.
    pub pgid: i32,
    pub pid: i32,
    /// `/proc/PID/stat` field 22: clock ticks after boot when the process started.
    pub start_time_ticks: u64,
    pub command: Vec<String>,
}

impl Entry {
    /// Whether `pid` is still the process storlab started (same start time).
    pub fn still_ours(&self) -> bool {
        start_time_ticks(self.pid) == Some(self.start_time_ticks)
    }
}

/// What a results folder's `.started-HOST-PID.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct StartedFile {
    pub storlab_pid: i32,
    pub storlab_start_time_ticks: u64,
    pub host: String,
    pub started: Vec<Entry>,
}

/// `/proc/PID/stat` field 22 (the process's start time, ticks after boot), or None when there
/// is no such process. The command name (field 2) may hold spaces and parentheses: the fields
/// after it are read from its last `)`.
pub fn start_time_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name: field 22 is the 20th.
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

/// The registry of the running storlab, when [`install`] set one up (not in unit tests).
static REGISTRY: Mutex<Option<(PathBuf, StartedFile)>> = Mutex::new(None);

fn write_file(path: &Path, file: &StartedFile) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(file)?)?;
    std::fs::rename(&tmp, path)
}

/// Records a process group just started (led by `pid`); an error is the caller's to report
/// (the process then runs unrecorded: the caller stops it).
pub fn register(pid: i32, command: &[String]) -> Result<(), String> {
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let Some((path, file)) = reg.as_mut() else {
        return Ok(());
    };
    let Some(start_time_ticks) = start_time_ticks(pid) else {
        // Already ended (and reaped): nothing left to record.
        return Ok(());
    };
    file.started.push(Entry {
        pgid: pid,
        pid,
        start_time_ticks,
        command: command.to_vec(),
    });
    write_file(path, file).map_err(|e| {
        format!(
            "recording the started process {pid} in {}: {e}",
            path.display()
        )
    })
}

/// Forgets a process group storlab has stopped and reaped.
pub fn unregister(pid: i32) {
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((path, file)) = reg.as_mut() {
        let before = file.started.len();
        file.started.retain(|e| e.pid != pid);
        if file.started.len() != before
            && let Err(e) = write_file(path, file)
        {
            eprintln!(
                "warning: updating the started processes in {}: {e}",
                path.display()
            );
        }
    }
}

/// Whether the leader of `e` still runs as the process storlab started (not a zombie
/// waiting to be reaped).
fn leader_running(e: &Entry) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", e.pid)) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    parse_start_time(&stat) == Some(e.start_time_ticks) && !matches!(state, Some("Z" | "X"))
}

/// Sends SIGTERM (and SIGCONT, for a stopped group) to each entry still ours, SIGKILL to the
/// group once its leader has ended or `grace` has passed (what else the group holds goes
/// with it). Returns one line per entry saying what was done.
pub fn stop_entries(entries: &[Entry], grace: Duration) -> Vec<String> {
    let signal = |pgid: i32, sig: i32| {
        // SAFETY: kill has no memory effects; the group is one storlab started (checked).
        unsafe { libc::kill(-pgid, sig) };
    };
    let mut lines = Vec::new();
    let mut signalled = Vec::new();
    for e in entries {
        if e.still_ours() {
            signal(e.pgid, libc::SIGTERM);
            signal(e.pgid, libc::SIGCONT);
            signalled.push(e);
        } else {
            lines.push(format!(
                "process group {} (`{}`): had ended (pid {} is gone or now another process's)",
                e.pgid,
                e.command.join(" "),
                e.pid
            ));
        }
    }
    let start = Instant::now();
    while signalled.iter().any(|e| leader_running(e)) && start.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(20));
    }
    for e in signalled {
        let how = if leader_running(e) {
            format!(
                "did not stop within {} s of SIGTERM: killed",
                grace.as_secs()
            )
        } else {
            "stopped with SIGTERM".to_string()
        };
        // The pid cannot have been reused while the group exists: what is left of it goes.
        if e.still_ours() {
            signal(e.pgid, libc::SIGKILL);
        }
        lines.push(format!(
            "process group {} (`{}`): {how}",
            e.pgid,
            e.command.join(" ")
        ));
    }
    lines
}

/// The keeper (`storlab __keeper FILE`): waits for the end of its stdin (storlab's end), then
/// stops what `file` still lists and removes it. Returns the exit code.
pub fn keep(file: &Path) -> i32 {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
        // SAFETY: ignoring a signal is always sound.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
    let mut stdin = std::io::stdin();
    let mut buf = [0u8; 64];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let Ok(text) = std::fs::read_to_string(file) else {
        return 0;
    };
    if let Ok(f) = serde_json::from_str::<StartedFile>(&text) {
        stop_entries(&f.started, KEEPER_GRACE);
    }
    let _ = std::fs::remove_file(file);
    0
}

/// What [`install`] set up: dropping it (at storlab's normal end) removes the file once it
/// lists nothing and lets the keeper go.
pub struct Installed {
    keeper: Option<(Child, ChildStdin)>,
    /// Leftovers of earlier storlab processes found and cleaned, one line each.
    pub leftovers: Vec<String>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let taken = REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((path, file)) = taken
            && file.started.is_empty()
        {
            let _ = std::fs::remove_file(&path);
        }
        if let Some((mut child, stdin)) = self.keeper.take() {
            // The pipe's end: the keeper stops what the file still lists, if anything.
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// Sets up the account of started processes in `results_dir` for this storlab: cleans the
/// leftovers of storlab processes of this host that are no longer alive, starts the keeper
/// (`keeper_program __keeper FILE`; None: no keeper) and records from now on.
pub fn install(results_dir: &Path, keeper_program: Option<&Path>) -> Result<Installed, String> {
    std::fs::create_dir_all(results_dir).map_err(|e| format!("{}: {e}", results_dir.display()))?;
    let host = storlab_study::local_host_name();
    let leftovers = clean_leftovers(results_dir, &host);
    let me = std::process::id() as i32;
    let path = results_dir.join(format!(".started-{host}-{me}.json"));
    let file = StartedFile {
        storlab_pid: me,
        storlab_start_time_ticks: start_time_ticks(me).unwrap_or(0),
        host,
        started: Vec::new(),
    };
    write_file(&path, &file).map_err(|e| format!("{}: {e}", path.display()))?;
    let keeper = match keeper_program {
        Some(program) => {
            use std::os::unix::process::CommandExt;
            let spawned = Command::new(program)
                .arg(KEEPER_COMMAND)
                .arg(&path)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn();
            match spawned {
                Ok(mut child) => child.stdin.take().map(|s| (child, s)),
                Err(e) => {
                    // The study can still run: what it starts is stopped on every exit but
                    // storlab's own SIGKILL, and then by the next run.
                    eprintln!(
                        "warning: cannot start the keeper `{}` ({e}): should storlab be killed, the processes the study started are stopped by the next `storlab run` with this results folder",
                        program.display()
                    );
                    None
                }
            }
        }
        None => None,
    };
    *REGISTRY.lock().unwrap_or_else(|e| e.into_inner()) = Some((path, file));
    Ok(Installed { keeper, leftovers })
}

/// Finds `.started-HOST-*.json` files of storlab processes that are no longer alive, stops
/// what they list that is still theirs and removes them. One line per leftover.
fn clean_leftovers(results_dir: &Path, host: &str) -> Vec<String> {
    let prefix = format!(".started-{host}-");
    let mut lines = Vec::new();
    let Ok(dir) = std::fs::read_dir(results_dir) else {
        return lines;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&prefix) || !name.ends_with(".json") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        let Ok(f) = serde_json::from_str::<StartedFile>(&text) else {
            continue;
        };
        if start_time_ticks(f.storlab_pid) == Some(f.storlab_start_time_ticks) {
            continue; // That storlab is still running: its processes are its own.
        }
        for line in stop_entries(&f.started, KEEPER_GRACE) {
            lines.push(format!(
                "left behind by storlab pid {} (no longer running): {line}",
                f.storlab_pid
            ));
        }
        let _ = std::fs::remove_file(entry.path());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_field_22_after_the_name() {
        let stat = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 12345 67";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time("4242 (x) S 1"), None);
    }

    #[test]
    fn a_pid_is_ours_only_while_its_start_time_matches() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        let ticks = start_time_ticks(pid).expect("a running process has a start time");
        let ours = Entry {
            pgid: pid,
            pid,
            start_time_ticks: ticks,
            command: vec!["sleep".into(), "30".into()],
        };
        assert!(ours.still_ours());
        // The same pid with another start time is a reused pid: never ours.
        let reused = Entry {
            start_time_ticks: ticks + 1,
            ..ours.clone()
        };
        assert!(!reused.still_ours());
        // Not signalled: the check says it had ended, and the sleep still runs.
        let lines = stop_entries(std::slice::from_ref(&reused), Duration::from_millis(50));
        assert!(lines[0].contains("had ended"), "{lines:?}");
        assert!(child.try_wait().unwrap().is_none());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!ours.still_ours(), "reaped: gone");
    }

    #[test]
    fn a_leftover_of_a_dead_storlab_is_stopped_and_its_file_removed() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let mut server = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = server.id() as i32;
        // A storlab that is no longer alive: a process that has ended and been reaped.
        let mut gone = Command::new("true").spawn().unwrap();
        let gone_pid = gone.id() as i32;
        gone.wait().unwrap();
        let host = storlab_study::local_host_name();
        let path = dir.path().join(format!(".started-{host}-{gone_pid}.json"));
        let file = StartedFile {
            storlab_pid: gone_pid,
            storlab_start_time_ticks: 1,
            host: host.clone(),
            started: vec![Entry {
                pgid: pid,
                pid,
                start_time_ticks: start_time_ticks(pid).unwrap(),
                command: vec!["sleep".into(), "30".into()],
            }],
        };
        write_file(&path, &file).unwrap();
        let lines = clean_leftovers(dir.path(), &host);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("stopped with SIGTERM"), "{lines:?}");
        assert!(
            lines[0].contains(&format!("storlab pid {gone_pid}")),
            "{lines:?}"
        );
        let status = server.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGTERM)
        );
        assert!(!path.exists());
        // The file of a storlab still alive (this test) is left alone.
        let me = std::process::id() as i32;
        let mine = dir.path().join(format!(".started-{host}-{me}.json"));
        let alive = StartedFile {
            storlab_pid: me,
            storlab_start_time_ticks: start_time_ticks(me).unwrap(),
            ..file
        };
        write_file(&mine, &alive).unwrap();
        assert!(clean_leftovers(dir.path(), &host).is_empty());
        assert!(mine.exists());
    }
}
