//! Reading one `[[steps.events]]` table: its keys by type (strings, booleans, durations,
//! commands, processes), each action's own keys, and every problem with file, line and key.

use std::ops::Range;
use std::path::PathBuf;

use super::*;
use crate::signal::SIGNALS;
use crate::{Source, StudyError, expand_env};
use storlab_model::units::{Dur, parse_duration};

pub(super) struct EventReader<'a, 'b> {
    pub(super) src: &'a Source<'a>,
    pub(super) key: &'a str,
    pub(super) span: &'a Range<usize>,
    pub(super) table: &'a toml::Table,
    pub(super) errors: &'b mut Vec<StudyError>,
}

impl EventReader<'_, '_> {
    fn err(&mut self, key: &str, message: impl Into<String>) {
        let at = if key.is_empty() {
            Some(self.span.clone())
        } else {
            self.src.locate_in(self.span, key)
        };
        let full = if key.is_empty() {
            self.key.to_string()
        } else {
            format!("{}.{key}", self.key)
        };
        self.errors.push(self.src.error(at, full, message));
    }

    fn string(&mut self, key: &str) -> Option<String> {
        match self.table.get(key)? {
            toml::Value::String(s) => match expand_env(s) {
                Ok(s) => Some(s),
                Err(m) => {
                    self.err(key, m);
                    None
                }
            },
            _ => {
                self.err(key, format!("`{key}` is a string"));
                None
            }
        }
    }

    fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.table.get(key)? {
            toml::Value::Boolean(b) => Some(*b),
            _ => {
                self.err(key, format!("`{key}` is true or false"));
                None
            }
        }
    }

    fn duration(&mut self, key: &str) -> Option<Dur> {
        let text = match self.table.get(key)? {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) if *i >= 0 => i.to_string(),
            toml::Value::Float(f) if *f >= 0.0 => f.to_string(),
            _ => {
                self.err(
                    key,
                    format!("`{key}` is a duration, e.g. \"5s\" or \"250ms\""),
                );
                return None;
            }
        };
        match parse_duration(&text) {
            Ok(d) => Some(Dur(d)),
            Err(m) => {
                self.err(key, m);
                None
            }
        }
    }

    fn command(&mut self) -> Option<Vec<String>> {
        if !self.table.contains_key("command") {
            self.err(
                "",
                "missing `command`: an argv array, e.g. command = [\"xfs_io\", \"-x\", \"-c\", \"shutdown\", \"/mnt/x\"] (no shell unless you write [\"sh\", \"-c\", \"...\"])",
            );
            return None;
        }
        self.argv("command")
    }

    /// The argv array at `key` (present), each element's `${VAR}` expanded.
    fn argv(&mut self, key: &str) -> Option<Vec<String>> {
        let items = match self.table.get(key) {
            Some(toml::Value::Array(a)) => a.clone(),
            _ => {
                self.err(
                    key,
                    format!(
                        "`{key}` is an argv array of strings, e.g. [\"sh\", \"-c\", \"echo hi\"]"
                    ),
                );
                return None;
            }
        };
        let mut argv = Vec::new();
        for item in &items {
            let Some(s) = item.as_str() else {
                self.err(key, format!("every element of `{key}` is a string"));
                return None;
            };
            match expand_env(s) {
                Ok(s) => argv.push(s),
                Err(m) => {
                    self.err(key, m);
                    return None;
                }
            }
        }
        if argv.first().is_none_or(|p| p.is_empty()) {
            self.err(key, format!("`{key}` names a program first"));
            return None;
        }
        Some(argv)
    }

    fn process(&mut self, kept: &KeptProcesses, started: &[(String, bool)]) -> Option<ProcessRef> {
        let pid_file = self.string("pid-file");
        let process = self.string("process");
        match (pid_file, process) {
            (Some(_), Some(_)) => {
                self.err("process", "give one of `pid-file` and `process`, not both");
                None
            }
            (Some(p), None) if p.is_empty() => {
                self.err("pid-file", "`pid-file` is empty");
                None
            }
            (Some(p), None) => Some(ProcessRef::PidFile(PathBuf::from(p))),
            (None, Some(name)) => {
                if started.iter().any(|(n, _)| *n == name) || kept.0.contains(&name) {
                    Some(ProcessRef::Process(name))
                } else {
                    let mut known: Vec<String> = started.iter().map(|(n, _)| n.clone()).collect();
                    known.extend(kept.0.iter().cloned());
                    self.err(
                        "process",
                        format!(
                            "no earlier `start` event is named `{name}` (a process is named by the `name` of a `start` event earlier in this step, or of an earlier step's with keep = true; known: {}). storlab never matches process names on the machine",
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    );
                    None
                }
            }
            (None, None) => {
                self.err(
                    "",
                    "missing the process: `pid-file = \"/path\"` or `process = \"NAME\"` (the name of an earlier `start` event)",
                );
                None
            }
        }
    }

    pub(super) fn event(
        &mut self,
        position: usize,
        duration: Option<Dur>,
        kept: &KeptProcesses,
        started: &[(String, bool)],
    ) -> Option<EventPlan> {
        self.check_known_keys();
        let action = self.action_name()?;
        self.check_action_keys(&action);
        let name = self
            .string("name")
            .unwrap_or_else(|| format!("{action}-{position}"));
        if name.is_empty() {
            self.err("name", "`name` is empty");
        }
        let trigger = if action == "sample" {
            self.whole_step()
        } else {
            self.trigger(duration)
        };
        let action = self.action(&action, kept, started);
        let on_failure = self.on_failure(trigger.as_ref());
        let action = action?;
        let recovery = self.recovery(&action, trigger.as_ref());
        Some(EventPlan {
            name,
            trigger: trigger?,
            action,
            on_failure,
            recovery,
        })
    }

    /// Every key is one that some event takes.
    fn check_known_keys(&mut self) {
        for k in self.table.keys() {
            if !KEYS.contains(&k.as_str()) {
                let k = k.clone();
                self.err(
                    &k,
                    format!("unknown key `{k}`: expected one of {}", KEYS.join(", ")),
                );
            }
        }
    }

    /// `action`, one of [`ACTIONS`].
    fn action_name(&mut self) -> Option<String> {
        match self.table.get("action") {
            None => {
                self.err(
                    "",
                    format!("missing `action`: one of {}", ACTIONS.join(", ")),
                );
                None
            }
            Some(toml::Value::String(a)) if ACTIONS.contains(&a.as_str()) => Some(a.clone()),
            Some(other) => {
                let shown = other.as_str().map_or(other.to_string(), str::to_string);
                self.err(
                    "action",
                    format!(
                        "unknown action `{shown}`: expected one of {}",
                        ACTIONS.join(", ")
                    ),
                );
                None
            }
        }
    }

    /// Every known key is common to all events or one that `action` takes.
    fn check_action_keys(&mut self, action: &str) {
        let common = [
            "name",
            "action",
            "at",
            "after-ops",
            "before-step",
            "after-step",
            "on-failure",
            "recovery",
            "baseline",
            "recovered-within",
            "settle",
        ];
        for k in self.table.keys() {
            if KEYS.contains(&k.as_str())
                && !common.contains(&k.as_str())
                && !action_keys(action).contains(&k.as_str())
            {
                let k = k.clone();
                let takes: Vec<&str> = ACTIONS
                    .iter()
                    .copied()
                    .filter(|a| action_keys(a).contains(&k.as_str()))
                    .collect();
                self.err(
                    &k,
                    format!(
                        "`{k}` does not apply to `{action}` events (it is for {})",
                        takes.join(", ")
                    ),
                );
            }
        }
    }

    /// When the event runs: exactly one of `at` (within the step's `duration`), `after-ops`,
    /// `before-step` and `after-step`.
    fn trigger(&mut self, duration: Option<Dur>) -> Option<Trigger> {
        let at = self.duration("at");
        let after_ops = match self.table.get("after-ops") {
            None => None,
            Some(toml::Value::Integer(n)) if *n > 0 => Some(*n as u64),
            Some(_) => {
                self.err("after-ops", "`after-ops` is a number of operations above 0");
                None
            }
        };
        // A flag counts when true (`before-step = false` says nothing).
        let before_step = self.boolean("before-step").unwrap_or(false);
        let after_step = self.boolean("after-step").unwrap_or(false);
        let given: Vec<&str> = [
            ("at", self.table.contains_key("at")),
            ("after-ops", self.table.contains_key("after-ops")),
            ("before-step", before_step),
            ("after-step", after_step),
        ]
        .into_iter()
        .filter_map(|(k, g)| g.then_some(k))
        .collect();
        match given.len() {
            0 => {
                self.err(
                    "",
                    "missing when the event runs: `at = \"5s\"` (from the start of measurement), `after-ops = N` (operations completed by the step's workers), `before-step = true` or `after-step = true` (once its workers have stopped)",
                );
                None
            }
            1 => match (at, after_ops) {
                (Some(at), _) => {
                    if let Some(d) = duration.filter(|d| at.0 >= d.0) {
                        self.err(
                            "at",
                            format!(
                                "at {at} is past the step's end: its duration is {d} (measurement runs from 0 to {d})"
                            ),
                        );
                    }
                    Some(Trigger::At(at))
                }
                (None, Some(n)) => Some(Trigger::AfterOps(n)),
                _ if before_step => Some(Trigger::BeforeStep),
                _ if after_step => Some(Trigger::AfterStep),
                _ => None,
            },
            _ => {
                self.err(
                    given[1],
                    format!(
                        "give one of `at`, `after-ops`, `before-step` and `after-step`, not several (here: {})",
                        given.join(", ")
                    ),
                );
                None
            }
        }
    }

    /// A `sample` event's trigger: it runs through the whole step, so every trigger key is
    /// refused (`before-step = false` too: it says nothing a sample event could mean).
    fn whole_step(&mut self) -> Option<Trigger> {
        let given: Vec<&str> = ["at", "after-ops", "before-step", "after-step"]
            .into_iter()
            .filter(|k| self.table.contains_key(*k))
            .collect();
        for k in &given {
            self.err(
                k,
                format!(
                    "a `sample` event takes no `{k}`: it runs through the whole step, its command started with the step's load (the warm-up's start, else the measurement's) and stopped when the step ends"
                ),
            );
        }
        given.is_empty().then_some(Trigger::WholeStep)
    }

    /// The action `action` with its own keys.
    fn action(
        &mut self,
        action: &str,
        kept: &KeptProcesses,
        started: &[(String, bool)],
    ) -> Option<Action> {
        match action {
            "exec" => {
                let command = self.command();
                let timeout = self.duration("timeout").unwrap_or(Dur(DEFAULT_TIMEOUT));
                self.positive("timeout", timeout);
                command.map(|command| Action::Exec { command, timeout })
            }
            "start" => {
                let command = self.command();
                let keep = self.boolean("keep").unwrap_or(false);
                command.map(|command| Action::Start { command, keep })
            }
            "wait-for" => self.wait_for(),
            "kill" => self.kill(kept, started),
            "power-off" => self.power_off(),
            "stop" => self
                .process(kept, started)
                .map(|process| Action::Stop { process }),
            "verify" => self.verify(),
            "sample" => self.command().map(|command| Action::Sample { command }),
            _ => self
                .process(kept, started)
                .map(|process| Action::Cont { process }),
        }
    }

    /// `wait-for`: a command run every `poll` until it succeeds or `timeout` passes.
    fn wait_for(&mut self) -> Option<Action> {
        let command = self.command();
        let timeout = self.duration("timeout").unwrap_or(Dur(DEFAULT_TIMEOUT));
        let poll = self.duration("poll").unwrap_or(Dur(DEFAULT_POLL));
        self.positive("timeout", timeout);
        self.positive("poll", poll);
        let outlive_step = self.boolean("outlive-step").unwrap_or(false);
        command.map(|command| Action::WaitFor {
            command,
            poll,
            timeout,
            outlive_step,
        })
    }

    /// `kill`: a `signal` (TERM unless given) to a process.
    fn kill(&mut self, kept: &KeptProcesses, started: &[(String, bool)]) -> Option<Action> {
        let signal = match self.string("signal") {
            None => Some(Signal::TERM),
            Some(s) => {
                let sig = Signal::parse(&s);
                if sig.is_none() {
                    let names: Vec<&str> = SIGNALS.iter().map(|(n, _)| *n).collect();
                    self.err(
                        "signal",
                        format!(
                            "unknown signal `{s}`: expected one of {} (or its number)",
                            names.join(", ")
                        ),
                    );
                }
                sig
            }
        };
        let process = self.process(kept, started);
        match (process, signal) {
            (Some(process), Some(signal)) => Some(Action::Kill { process, signal }),
            _ => None,
        }
    }

    /// `verify`: the saved verify `state` to check.
    fn verify(&mut self) -> Option<Action> {
        match self.string("state") {
            Some(s) if !s.is_empty() => Some(Action::Verify {
                state: std::path::PathBuf::from(s),
            }),
            Some(_) => {
                self.err("state", "`state` is the path of a saved verify state");
                None
            }
            None => {
                if !self.table.contains_key("state") {
                    self.err(
                        "",
                        "missing `state`: the file an earlier run saved with `verify-state = \"PATH\"`",
                    );
                }
                None
            }
        }
    }

    /// `on-failure`: stop-step (the default), stop-study (also spelled `stop`) or continue;
    /// for an `after-step` event, whose step is over, continue (the default) or stop-study;
    /// for a `sample` event (a monitor beside the load), continue unless written.
    fn on_failure(&mut self, trigger: Option<&Trigger>) -> OnFailure {
        let after_step = trigger == Some(&Trigger::AfterStep);
        let default = if after_step || trigger == Some(&Trigger::WholeStep) {
            OnFailure::Continue
        } else {
            OnFailure::StopStep
        };
        let Some(text) = self.string("on-failure") else {
            return default;
        };
        match OnFailure::parse(&text) {
            Some(OnFailure::StopStep) if after_step => {
                self.err(
                    "on-failure",
                    "an after-step event runs once its step is over, which leaves no step to stop: on-failure is continue (the default here: the failure is a warning) or stop-study",
                );
                default
            }
            Some(f) => f,
            None => {
                self.err(
                    "on-failure",
                    format!(
                        "unknown on-failure `{text}`: expected stop-step (the default: the step stops, the study goes on), stop-study (also spelled stop) or continue"
                    ),
                );
                default
            }
        }
    }

    /// Recovery metrics of the event: `recovery`, `baseline`, `settle`, `recovered-within`.
    fn recovery(&mut self, action: &Action, trigger: Option<&Trigger>) -> Option<RecoveryPlan> {
        // A fault during measurement gets recovery metrics by default; one before the step
        // (making an array, starting a server) has no throughput before it to compare with,
        // one after it none after it.
        let recovery_default = matches!(
            action,
            Action::Kill { .. }
                | Action::Stop { .. }
                | Action::Exec { .. }
                | Action::PowerOff { .. }
        ) && trigger.is_none_or(Trigger::in_measurement);
        let recovery_on = self.boolean("recovery").unwrap_or(recovery_default);
        if recovery_on && matches!(action, Action::Sample { .. }) {
            self.err(
                "recovery",
                "recovery is measured around a fault: a sample event only reads what the system reports, through the whole step",
            );
            return None;
        }
        if recovery_on && trigger == Some(&Trigger::AfterStep) {
            self.err(
                "recovery",
                "recovery is measured from the throughput after the event: an after-step event runs once the step's workers have stopped",
            );
            return None;
        }
        let baseline = self.duration("baseline");
        let settle = self.duration("settle");
        let within = match self.table.get("recovered-within") {
            None => None,
            Some(v) => match v.as_float().or(v.as_integer().map(|i| i as f64)) {
                Some(f) if f > 0.0 && f < 1.0 => Some(f),
                _ => {
                    self.err(
                        "recovered-within",
                        "`recovered-within` is a share of the baseline between 0 and 1, e.g. 0.05 (5%)",
                    );
                    None
                }
            },
        };
        if !recovery_on {
            for k in ["baseline", "settle", "recovered-within"] {
                if self.table.contains_key(k) {
                    self.err(
                        k,
                        format!(
                            "`{k}` has no effect: recovery is off for this event (recovery = true turns it on)"
                        ),
                    );
                }
            }
        }
        if let Some(b) = baseline {
            self.positive("baseline", b);
        }
        recovery_on.then(|| RecoveryPlan {
            baseline: baseline.unwrap_or(Dur(DEFAULT_BASELINE)),
            recovered_within: within.unwrap_or(DEFAULT_RECOVERED_WITHIN),
            settle: settle.unwrap_or(Dur(DEFAULT_SETTLE)),
        })
    }

    /// `netns = "NAME"` and/or `pid-files = ["/path", ...]`. Whether the namespace exists is
    /// a question for the run (a study may create it in a `before-step` event).
    fn power_off(&mut self) -> Option<Action> {
        let netns = self.string("netns");
        if let Some(n) = &netns
            && (n.is_empty() || n == "." || n == ".." || n.contains('/') || n.contains('\0'))
        {
            self.err(
                "netns",
                format!("`{n}` is not a network namespace name (as `ip netns` names them: no `/`, not empty)"),
            );
            return None;
        }
        let mut pid_files = Vec::new();
        match self.table.get("pid-files") {
            None => {}
            Some(toml::Value::Array(items)) if !items.is_empty() => {
                for item in items {
                    match item.as_str().map(expand_env) {
                        Some(Ok(p)) if !p.is_empty() => pid_files.push(PathBuf::from(p)),
                        Some(Err(m)) => {
                            self.err("pid-files", m);
                            return None;
                        }
                        _ => {
                            self.err(
                                "pid-files",
                                "every element of `pid-files` is the path of a pid file",
                            );
                            return None;
                        }
                    }
                }
            }
            Some(_) => {
                self.err(
                    "pid-files",
                    "`pid-files` is a non-empty array of pid file paths, e.g. [\"/run/node1/postmaster.pid\"]",
                );
                return None;
            }
        }
        let netns_command = if self.table.contains_key("netns-command") {
            if self.table.contains_key("netns") {
                self.err(
                    "netns-command",
                    "give `netns` (a namespace known beforehand) or `netns-command` (a command that names it when the event fires), not both",
                );
                return None;
            }
            self.argv("netns-command")?
        } else {
            Vec::new()
        };
        if netns.is_none() && netns_command.is_empty() && pid_files.is_empty() {
            if !self.table.contains_key("netns") {
                self.err(
                    "",
                    "missing what to power off: `netns = \"NAME\"` (every process in that network namespace is killed and its interfaces set down), `netns-command = [...]` (a command that prints that name when the event fires) and/or `pid-files = [\"/path\"]`",
                );
            }
            return None;
        }
        Some(Action::PowerOff {
            netns,
            netns_command,
            pid_files,
        })
    }

    fn positive(&mut self, key: &str, d: Dur) {
        if d.0.is_zero() && self.table.contains_key(key) {
            self.err(key, format!("`{key}` must be above 0"));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{OnFailure, Trigger};

    const STUDY: &str = "name = \"t\"\n\n[targets.disk]\ntype = \"null\"\n\n[workloads.rr]\nblock-size = \"4KiB\"\n\n[[steps]]\nworkload = \"rr\"\ntargets = [\"disk\"]\nduration = \"1s\"\n\n[[steps.events]]\naction = \"exec\"\nat = \"0.5s\"\ncommand = [\"true\"]\n";

    /// The event's `on-failure` with `line` added to STUDY's event table.
    fn on_failure(line: &str) -> Result<OnFailure, crate::StudyErrors> {
        let plan = crate::parse("s.toml", &format!("{STUDY}{line}"))?;
        Ok(plan.runs[0].events[0].on_failure)
    }

    #[test]
    fn on_failure_is_stop_step_unless_written() {
        assert_eq!(on_failure("").unwrap(), OnFailure::StopStep);
        let read = |v: &str| on_failure(&format!("on-failure = \"{v}\"\n")).unwrap();
        assert_eq!(read("stop-step"), OnFailure::StopStep);
        assert_eq!(read("stop-study"), OnFailure::StopStudy);
        assert_eq!(read("continue"), OnFailure::Continue);
        // The spelling from before the scopes keeps its meaning: the study stops.
        assert_eq!(read("stop"), OnFailure::StopStudy);
    }

    #[test]
    fn an_unknown_on_failure_names_file_line_and_key() {
        let errs = on_failure("on-failure = \"retry\"\n").unwrap_err().0;
        assert_eq!(errs.len(), 1, "{errs:?}");
        let e = &errs[0];
        assert_eq!(e.file, "s.toml");
        assert_eq!(e.line, Some(18));
        assert_eq!(e.key, "steps[1].events[1].on-failure");
        assert!(
            e.message.contains("unknown on-failure `retry`"),
            "{}",
            e.message
        );
        assert!(e.message.contains("stop-study"), "{}", e.message);
        let errs = on_failure("on-failure = true\n").unwrap_err().0;
        assert_eq!(errs[0].key, "steps[1].events[1].on-failure");
    }

    /// STUDY's step with `events` as its event tables.
    fn events(events: &str) -> Result<Vec<crate::events::EventPlan>, Vec<crate::StudyError>> {
        let head = &STUDY[..STUDY.find("[[steps.events]]").unwrap()];
        crate::parse("s.toml", &format!("{head}{events}"))
            .map(|mut p| p.runs.remove(0).events)
            .map_err(|e| e.0)
    }

    const AFTER: &str =
        "[[steps.events]]\naction = \"exec\"\nafter-step = true\ncommand = [\"true\"]\n";

    #[test]
    fn after_step_runs_once_the_workers_stopped_its_failure_a_warning() {
        let e = events(AFTER).unwrap();
        assert_eq!(e[0].trigger, Trigger::AfterStep);
        assert!(!e[0].trigger.in_measurement());
        // No step left to stop, no throughput after it to recover.
        assert_eq!(e[0].on_failure, OnFailure::Continue);
        assert_eq!(e[0].recovery, None);
        let e = events(&format!("{AFTER}on-failure = \"stop-study\"\n")).unwrap();
        assert_eq!(e[0].on_failure, OnFailure::StopStudy);
        // `after-step = false` says nothing: the event still needs a trigger.
        let errs = events(
            "[[steps.events]]\naction = \"exec\"\nafter-step = false\ncommand = [\"true\"]\n",
        )
        .unwrap_err();
        assert!(
            errs[0].message.contains("missing when the event runs"),
            "{errs:?}"
        );
    }

    #[test]
    fn after_step_is_refused_with_file_line_and_key() {
        let one = |extra: &str| {
            let errs = events(&format!("{AFTER}{extra}")).unwrap_err();
            assert_eq!(errs.len(), 1, "{errs:?}");
            errs.into_iter().next().unwrap()
        };
        let e = one("at = \"0.5s\"\n");
        assert_eq!((e.file.as_str(), e.line), ("s.toml", Some(16)));
        assert_eq!(e.key, "steps[1].events[1].after-step");
        assert!(
            e.message.contains("not several (here: at, after-step)"),
            "{}",
            e.message
        );
        let e = one("on-failure = \"stop-step\"\n");
        assert_eq!(
            (e.key.as_str(), e.line),
            ("steps[1].events[1].on-failure", Some(18))
        );
        assert!(
            e.message.contains("leaves no step to stop"),
            "{}",
            e.message
        );
        let e = one("recovery = true\n");
        assert_eq!(e.key, "steps[1].events[1].recovery");
        // Events run in the order written: a timed event after an after-step one is refused.
        let errs = events(&format!(
            "{AFTER}[[steps.events]]\naction = \"exec\"\nat = \"0.5s\"\ncommand = [\"true\"]\n"
        ))
        .unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].key, "steps[1].events[2].at");
        assert_eq!(errs[0].line, Some(20));
        assert!(
            errs[0].message.contains("come after its timed"),
            "{}",
            errs[0].message
        );
        // ...and after-step after a timed one is fine.
        let timed = "[[steps.events]]\naction = \"exec\"\nat = \"0.5s\"\ncommand = [\"true\"]\n";
        assert_eq!(events(&format!("{timed}{AFTER}")).unwrap().len(), 2);
    }

    const SAMPLE: &str = "[[steps.events]]\nname = \"use\"\naction = \"sample\"\ncommand = [\"sh\", \"-c\", \"echo sample a 1 x\"]\n";

    #[test]
    fn a_sample_event_runs_through_the_step_and_its_failure_is_a_warning() {
        let e = events(SAMPLE).unwrap();
        assert_eq!(e[0].trigger, Trigger::WholeStep);
        assert!(!e[0].trigger.in_measurement());
        assert_eq!(e[0].on_failure, OnFailure::Continue);
        assert_eq!(e[0].recovery, None);
        assert!(
            matches!(&e[0].action, crate::events::Action::Sample { command } if command[0] == "sh")
        );
        let e = events(&format!("{SAMPLE}on-failure = \"stop-step\"\n")).unwrap();
        assert_eq!(e[0].on_failure, OnFailure::StopStep);
        // Beside the others in any order: after an after-step event too.
        assert_eq!(events(&format!("{AFTER}{SAMPLE}")).unwrap().len(), 2);
    }

    #[test]
    fn a_sample_event_refuses_triggers_and_recovery_with_file_line_and_key() {
        for (line, key) in [
            ("at = \"0.5s\"\n", "at"),
            ("before-step = true\n", "before-step"),
            ("after-step = false\n", "after-step"),
            ("after-ops = 10\n", "after-ops"),
        ] {
            let errs = events(&format!("{SAMPLE}{line}")).unwrap_err();
            assert_eq!(errs.len(), 1, "{errs:?}");
            assert_eq!(errs[0].key, format!("steps[1].events[1].{key}"));
            assert_eq!(errs[0].line, Some(18));
            assert!(
                errs[0].message.contains("runs through the whole step"),
                "{}",
                errs[0].message
            );
        }
        let errs = events(&format!("{SAMPLE}recovery = true\n")).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].key, "steps[1].events[1].recovery");
        let errs = events("[[steps.events]]\naction = \"sample\"\n").unwrap_err();
        assert!(errs[0].message.contains("missing `command`"), "{errs:?}");
    }

    #[test]
    fn on_failure_is_stored_by_its_kebab_name() {
        let stored = serde_json::to_string(&OnFailure::StopStep).unwrap();
        assert_eq!(stored, "\"stop-step\"");
        let old: OnFailure = serde_json::from_str("\"stop\"").unwrap();
        assert_eq!(old, OnFailure::StopStudy);
        assert_eq!(OnFailure::StopStudy.name(), "stop-study");
    }
}
