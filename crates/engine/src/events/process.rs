//! Processes for events: a command run to its end with a timeout and the first KiB of its
//! output kept, a command started in the background (its output to a log file), signals sent
//! by pid, and the processes a study started, stopped when their step ends.
//!
//! Every command runs in a process group of its own, so that a timeout or the end of a step
//! stops what it started too (`sh -c` children). Each group is recorded while it runs (see
//! `started`), so that storlab's keeper stops it should storlab end without stopping it. storlab only ever signals processes it
//! started or whose pid file the study names; it never looks processes up by name.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of a command's stdout and of its stderr kept in the results.
pub const OUTPUT_BYTES: usize = 4096;
/// How long a started process has to exit after SIGTERM when its step ends, before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How a command run to its end finished.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Exited(ExitStatus),
    /// Ran past its timeout: killed.
    TimedOut,
    /// The step ended first: killed.
    CutOff,
    /// Could not start.
    NotStarted(String),
}

/// A command run to its end.
#[derive(Debug, Clone)]
pub struct Ran {
    pub finish: Finish,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn exit_code(&self) -> Option<i32> {
        match &self.finish {
            Finish::Exited(s) => s.code(),
            _ => None,
        }
    }

    pub fn succeeded(&self) -> bool {
        matches!(&self.finish, Finish::Exited(s) if s.success())
    }
}

/// Describes an exit status: `exit code 3`, `killed by signal 9`.
pub fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => status.to_string(),
    }
}

pub(super) fn command(argv: &[String]) -> Command {
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).stdin(Stdio::null()).process_group(0);
    c
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_BYTES`] (so that the child never
/// blocks on a full pipe).
fn keep_first<R: Read + Send + 'static>(pipe: Option<R>) -> Option<JoinHandle<String>> {
    let mut pipe = pipe?;
    std::thread::Builder::new()
        .name("storlab-event-output".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            let mut more = false;
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let room = OUTPUT_BYTES.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                        more |= n > room;
                    }
                }
            }
            let mut text = String::from_utf8_lossy(&kept).into_owned();
            if more {
                text.push_str("\n[... more output not kept]");
            }
            text
        })
        .ok()
}

/// The log file of a process an event starts (its folder made), opened to append.
pub(super) fn open_log(log: &Path) -> Result<std::fs::File, String> {
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{}: {e}", log.display()))
}

/// Sends `signal` to the process group led by `pid`.
pub(super) fn signal_group(pid: i32, signal: i32) {
    // SAFETY: kill has no memory effects; a negative pid names the group storlab created.
    unsafe { libc::kill(-pid, signal) };
}

/// Runs `argv` to its end, at most `timeout`; `cut_off` is asked every few milliseconds
/// whether the step has ended (the command is then killed).
pub fn run_to_end(argv: &[String], timeout: Duration, cut_off: &dyn Fn() -> bool) -> Ran {
    let mut child = match command(argv)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                finish: Finish::NotStarted(format!("cannot run `{}`: {e}", argv[0])),
                stdout: String::new(),
                stderr: String::new(),
            };
        }
    };
    let pid = child.id() as i32;
    if let Err(m) = super::started::register(pid, argv) {
        signal_group(pid, libc::SIGKILL);
        let _ = child.wait();
        return Ran {
            finish: Finish::NotStarted(m),
            stdout: String::new(),
            stderr: String::new(),
        };
    }
    let out = keep_first(child.stdout.take());
    let err = keep_first(child.stderr.take());
    let start = Instant::now();
    let finish = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Finish::Exited(status),
            Ok(None) => {}
            Err(e) => break Finish::NotStarted(format!("waiting for `{}`: {e}", argv[0])),
        }
        let stop = if start.elapsed() >= timeout {
            Some(Finish::TimedOut)
        } else if cut_off() {
            Some(Finish::CutOff)
        } else {
            None
        };
        if let Some(why) = stop {
            signal_group(child.id() as i32, libc::SIGKILL);
            let _ = child.wait();
            break why;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    super::started::unregister(pid);
    // A process the command left in the background may hold its output open: its pid may be
    // reused once the command is reaped, so it is not signalled; its output is not waited for
    // past a second.
    let waited = Instant::now();
    let text = |h: Option<JoinHandle<String>>| {
        let h = h?;
        while !h.is_finished() && waited.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if h.is_finished() {
            h.join().ok()
        } else {
            Some("[output not read: a process the command left running holds it open]".into())
        }
    };
    let (stdout, stderr) = (text(out).unwrap_or_default(), text(err).unwrap_or_default());
    Ran {
        finish,
        stdout,
        stderr,
    }
}

/// A process a `start` event started.
struct Started {
    child: Child,
    keep: bool,
    log: PathBuf,
}

/// The processes a study started, by the name of their `start` event.
#[derive(Default)]
pub struct Processes {
    started: BTreeMap<String, Started>,
}

/// What stopping a started process did, for the run's events.
pub struct Stopped {
    pub name: String,
    pub pid: i32,
    pub how: String,
}

impl Processes {
    /// Starts `argv` in the background as `name`, its output appended to `log`. Refused when
    /// a process of that name is still running.
    pub fn start(
        &mut self,
        name: &str,
        argv: &[String],
        keep: bool,
        log: &Path,
    ) -> Result<i32, String> {
        self.reap();
        if let Some(old) = self.started.get_mut(name)
            && old.child.try_wait().ok().flatten().is_none()
        {
            return Err(format!(
                "a process named `{name}` (pid {}) that the study started is still running",
                old.child.id()
            ));
        }
        let file = open_log(log)?;
        let file2 = file
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = command(argv)
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(file2))
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", argv[0]))?;
        let pid = child.id() as i32;
        if let Err(m) = super::started::register(pid, argv) {
            let mut child = child;
            signal_group(pid, libc::SIGKILL);
            let _ = child.wait();
            return Err(m);
        }
        self.started.insert(
            name.to_string(),
            Started {
                child,
                keep,
                log: log.to_path_buf(),
            },
        );
        Ok(pid)
    }

    /// Collects the exit status of every started process that has ended (a killed server),
    /// so that none stays a zombie until the step ends: a soak that kills a server every few
    /// minutes kept one per kill.
    fn reap(&mut self) {
        for p in self.started.values_mut() {
            let _ = p.child.try_wait();
        }
    }

    /// The pid of the running process started as `name`, or why there is none.
    pub fn pid_of(&mut self, name: &str) -> Result<i32, String> {
        let Some(p) = self.started.get_mut(name) else {
            return Err(format!(
                "no process named `{name}` was started (its `start` event did not run or failed)"
            ));
        };
        match p.child.try_wait() {
            Ok(None) => Ok(p.child.id() as i32),
            Ok(Some(status)) => Err(format!(
                "the process `{name}` (pid {}) has already ended: {} (its output: {})",
                p.child.id(),
                describe(&status),
                p.log.display()
            )),
            Err(e) => Err(format!("process `{name}`: {e}")),
        }
    }

    /// Stops every process started without `keep` (all of them with `all`): SIGTERM to its
    /// group, SIGKILL after [`STOP_GRACE`]; processes that had ended are reaped.
    pub fn stop(&mut self, all: bool) -> Vec<Stopped> {
        let names: Vec<String> = self
            .started
            .iter()
            .filter(|(_, p)| all || !p.keep)
            .map(|(n, _)| n.clone())
            .collect();
        let mut out = Vec::new();
        for name in names {
            let Some(mut p) = self.started.remove(&name) else {
                continue;
            };
            let pid = p.child.id() as i32;
            let how = match p.child.try_wait() {
                Ok(Some(status)) => format!("had ended: {}", describe(&status)),
                _ => {
                    // A stopped process (a `stop` event) must run to act on SIGTERM.
                    signal_group(pid, libc::SIGTERM);
                    signal_group(pid, libc::SIGCONT);
                    let start = Instant::now();
                    loop {
                        match p.child.try_wait() {
                            Ok(Some(status)) => {
                                break format!("stopped with SIGTERM: {}", describe(&status));
                            }
                            Ok(None) if start.elapsed() < STOP_GRACE => {
                                std::thread::sleep(Duration::from_millis(10));
                            }
                            _ => {
                                signal_group(pid, libc::SIGKILL);
                                let status = p.child.wait();
                                break format!(
                                    "did not stop within {} s of SIGTERM: killed ({})",
                                    STOP_GRACE.as_secs(),
                                    status.map(|s| describe(&s)).unwrap_or_default()
                                );
                            }
                        }
                    }
                }
            };
            super::started::unregister(pid);
            out.push(Stopped { name, pid, how });
        }
        out
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        self.stop(true);
    }
}

/// Reads a pid from a pid file.
pub fn read_pid_file(path: &Path) -> Result<i32, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("pid file {}: {e}", path.display()))?;
    match text.split_whitespace().next().map(str::parse::<i32>) {
        Some(Ok(pid)) if pid > 1 => Ok(pid),
        _ => Err(format!(
            "pid file {} does not hold a process id: {:?}",
            path.display(),
            text.chars().take(40).collect::<String>()
        )),
    }
}

/// Sends `signal` to `pid`.
pub fn send_signal(pid: i32, signal: i32) -> Result<(), String> {
    // SAFETY: kill has no memory effects.
    let r = unsafe { libc::kill(pid, signal) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "signal to pid {pid}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_command_runs_to_its_end_with_its_output_kept() {
        let r = run_to_end(
            &argv(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(10),
            &|| false,
        );
        assert_eq!(r.exit_code(), Some(3));
        assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("out\n", "err\n"));
        let big = run_to_end(
            &argv(&["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x"]),
            Duration::from_secs(10),
            &|| false,
        );
        assert!(big.succeeded());
        assert!(
            big.stdout.len() < OUTPUT_BYTES + 100,
            "{}",
            big.stdout.len()
        );
        assert!(big.stdout.ends_with("[... more output not kept]"));
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let start = Instant::now();
        let r = run_to_end(
            &argv(&["sh", "-c", "sleep 30 & sleep 30"]),
            Duration::from_millis(200),
            &|| false,
        );
        assert_eq!(r.finish, Finish::TimedOut);
        // The background sleep held the pipes: they closed, so it was killed too.
        assert!(start.elapsed() < Duration::from_secs(10));
        let missing = run_to_end(
            &argv(&["/nonexistent/cmd"]),
            Duration::from_secs(1),
            &|| false,
        );
        assert!(matches!(missing.finish, Finish::NotStarted(_)));
    }

    /// The process state letter of `pid` (`Z`: a zombie), None once it is gone.
    fn state_of(pid: i32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(") ")?.1.chars().next()
    }

    #[test]
    fn a_killed_process_is_reaped_when_the_next_one_starts() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Processes::default();
        let log = dir.path().join("s.log");
        let first = p.start("a", &argv(&["sleep", "30"]), false, &log).unwrap();
        send_signal(first, libc::SIGKILL).unwrap();
        let start = Instant::now();
        while state_of(first) != Some('Z') && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(state_of(first), Some('Z'));
        p.start("b", &argv(&["sleep", "30"]), false, &log).unwrap();
        assert_eq!(state_of(first), None, "pid {first} still a zombie");
        p.stop(true);
    }

    #[test]
    fn started_processes_are_named_signalled_and_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Processes::default();
        let pid = p
            .start(
                "s",
                &argv(&["sleep", "30"]),
                false,
                &dir.path().join("s.log"),
            )
            .unwrap();
        assert_eq!(p.pid_of("s"), Ok(pid));
        assert!(
            p.start(
                "s",
                &argv(&["sleep", "30"]),
                false,
                &dir.path().join("s.log")
            )
            .is_err()
        );
        assert!(p.pid_of("other").is_err());
        send_signal(pid, libc::SIGKILL).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let e = p.pid_of("s").unwrap_err();
        assert!(e.contains("already ended"), "{e}");
        let kept = p
            .start(
                "k",
                &argv(&["sleep", "30"]),
                true,
                &dir.path().join("k.log"),
            )
            .unwrap();
        let stopped = p.stop(false);
        assert_eq!(stopped.len(), 1, "only the one without keep");
        assert!(stopped[0].how.contains("had ended"), "{}", stopped[0].how);
        assert_eq!(p.pid_of("k"), Ok(kept));
        let stopped = p.stop(true);
        assert!(stopped[0].how.contains("SIGTERM"), "{}", stopped[0].how);
        assert!(send_signal(kept, 0).is_err(), "reaped");
    }

    #[test]
    fn pid_files_are_read_strictly() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.pid");
        assert!(read_pid_file(&f).is_err());
        std::fs::write(&f, "1234\n").unwrap();
        assert_eq!(read_pid_file(&f), Ok(1234));
        std::fs::write(&f, "abc").unwrap();
        assert!(read_pid_file(&f).is_err());
    }
}
