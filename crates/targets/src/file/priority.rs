//! I/O priorities of the file target (ioprio(2)): `priority`, the worker thread's priority
//! for every I/O it issues (fio's `prioclass` and `prio`, set with `ioprio_set` as fio sets
//! them), and `command-priority`, a priority that a drawn share of io-uring operations carry
//! in their submission entry (fio's `cmdprio_percentage`, `cmdprio_class`, `cmdprio`), per
//! direction and transfer size when its rules say so (fio's `cmdprio_bssplit`).

use serde::{Deserialize, Serialize};

use storlab_model::OptionError;
use storlab_model::units::Bytes;

/// ioprio(2)'s classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorityClass {
    /// IOPRIO_CLASS_RT: served first (needs CAP_SYS_ADMIN or CAP_SYS_NICE).
    Realtime,
    /// IOPRIO_CLASS_BE: the default class.
    #[default]
    BestEffort,
    /// IOPRIO_CLASS_IDLE: served when nothing else waits (the level is ignored).
    Idle,
}

impl PriorityClass {
    fn number(self) -> u16 {
        match self {
            PriorityClass::Realtime => 1,
            PriorityClass::BestEffort => 2,
            PriorityClass::Idle => 3,
        }
    }
}

/// `priority = { class = "idle" }`: a class and its level (0 the highest, 7 the lowest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct IoPriority {
    #[serde(default)]
    pub class: PriorityClass,
    #[serde(default)]
    pub level: u8,
}

impl IoPriority {
    /// ioprio(2)'s value: `class << 13 | level`.
    pub fn value(self) -> u16 {
        self.class.number() << 13 | u16::from(self.level)
    }

    fn check(self, key: &str) -> Result<(), OptionError> {
        if self.level > 7 {
            return Err(OptionError {
                key: key.into(),
                message: format!("{key}: level from 0 (highest) to 7, got {}", self.level),
            });
        }
        Ok(())
    }
}

/// The operations a command priority is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    Read,
    Write,
}

/// One rule of `command-priority`: `{ percent = 20, class = "realtime", level = 0 }` for
/// every io-uring read and write, or with `direction = "read" | "write"` and `size = "64KiB"`
/// for the operations of that direction and transfer size only (fio's `cmdprio_bssplit`).
/// Each operation is drawn to carry the priority with `percent` percent. Rules for the same
/// direction and size are alternatives: their percents add up to at most 100, and a drawn
/// share takes the first rule's priority, the next share the second's, and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CommandPriority {
    pub percent: u8,
    /// Default realtime, as fio's `cmdprio_class`.
    #[serde(default = "realtime")]
    pub class: PriorityClass,
    #[serde(default)]
    pub level: u8,
    /// Reads or writes only (default both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Operations of this transfer size only (default every size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Bytes>,
}

fn realtime() -> PriorityClass {
    PriorityClass::Realtime
}

/// `command-priority`: one rule (a table) or several (an array of tables).
pub fn one_or_many<'de, D>(d: D) -> Result<Option<Vec<CommandPriority>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::Error;
    match toml::Value::deserialize(d)? {
        toml::Value::Array(a) => a
            .into_iter()
            .map(|v| v.try_into().map_err(D::Error::custom))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        v => v.try_into().map(|c| Some(vec![c])).map_err(D::Error::custom),
    }
}

fn option_error(message: String) -> OptionError {
    OptionError {
        key: "command-priority".into(),
        message: format!("command-priority: {message}"),
    }
}

/// Checks `priority` and `command-priority`.
pub fn check(
    priority: Option<IoPriority>,
    command: Option<&[CommandPriority]>,
) -> Result<(), OptionError> {
    if let Some(p) = priority {
        p.check("priority")?;
    }
    for c in command.unwrap_or_default() {
        IoPriority {
            class: c.class,
            level: c.level,
        }
        .check("command-priority")?;
        if c.percent == 0 || c.percent > 100 {
            return Err(option_error(format!(
                "percent from 1 to 100, got {}",
                c.percent
            )));
        }
    }
    CommandDraw::rules(command.unwrap_or_default()).map(|_| ())
}

/// One rule for one direction, its percent the running sum of its group's.
#[derive(Debug, Clone, Copy)]
struct Rule {
    write: bool,
    size: Option<u64>,
    upto: u8,
    value: u16,
}

/// The draw of which operations carry a command priority, and which: a seeded splitmix64
/// stream, one draw in [0, 100) per operation (fio's `rand_between(0, 99)`), checked against
/// the rules of the operation's direction and size.
#[derive(Debug, Clone)]
pub struct CommandDraw {
    state: u64,
    rules: Vec<Rule>,
}

impl CommandDraw {
    /// The rules per direction, each group's percents summed; refused when a group's go
    /// above 100, or when a direction has rules both with and without a size.
    fn rules(command: &[CommandPriority]) -> Result<Vec<Rule>, OptionError> {
        let mut rules: Vec<Rule> = Vec::new();
        for c in command {
            let value = IoPriority {
                class: c.class,
                level: c.level,
            }
            .value();
            for write in [false, true] {
                if c.direction.is_some_and(|d| (d == Direction::Write) != write) {
                    continue;
                }
                let size = c.size.map(|b| b.0);
                let same = |r: &&Rule| r.write == write && r.size == size;
                let before = rules.iter().filter(same).map(|r| r.upto).max().unwrap_or(0);
                if rules
                    .iter()
                    .any(|r| r.write == write && r.size.is_some() != size.is_some())
                {
                    return Err(option_error(
                        "a direction's rules give a size each, or none does".into(),
                    ));
                }
                let upto = u16::from(before) + u16::from(c.percent);
                if upto > 100 {
                    return Err(option_error(format!(
                        "the percents of one direction and size add up to {upto}, above 100"
                    )));
                }
                let rule = Rule {
                    write,
                    size,
                    upto: upto as u8,
                    value,
                };
                // Each group's rules stay together, in the order given.
                match rules.iter().rposition(|r| r.write == write && r.size == size) {
                    Some(i) => rules.insert(i + 1, rule),
                    None => rules.push(rule),
                }
            }
        }
        Ok(rules)
    }

    /// The draw for `command` (already checked), from `seed`.
    pub fn new(command: &[CommandPriority], seed: u64) -> CommandDraw {
        CommandDraw {
            state: seed,
            rules: CommandDraw::rules(command).unwrap_or_default(),
        }
    }

    /// The priority of the next operation, a write or not of `len` bytes: a command
    /// priority, or 0 (the thread's own).
    #[inline]
    pub fn next_priority(&mut self, write: bool, len: u64) -> u16 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let drawn = ((u128::from(storlab_model::seed::splitmix64(self.state)) * 100) >> 64) as u8;
        for r in &self.rules {
            if r.write == write && r.size.is_none_or(|s| s == len) && drawn < r.upto {
                return r.value;
            }
        }
        0
    }
}

const IOPRIO_WHO_PROCESS: libc::c_int = 1;

/// The calling thread's priority set to `p` for as long as the guard lives (then the one it
/// had), as fio's `ioprio_set(IOPRIO_WHO_PROCESS, 0, ...)` before a job's I/O.
pub struct ThreadPriority {
    before: libc::c_long,
}

impl ThreadPriority {
    pub fn set(p: IoPriority) -> std::io::Result<ThreadPriority> {
        // SAFETY: ioprio_get and ioprio_set take integers; who = 0 is the calling thread.
        let before = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
        if before < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: as above.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioprio_set,
                IOPRIO_WHO_PROCESS,
                0,
                libc::c_int::from(p.value()),
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(ThreadPriority { before })
    }

    /// The calling thread's priority now.
    pub fn current() -> std::io::Result<u16> {
        // SAFETY: as in `set`.
        let r = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(r as u16)
    }
}

impl Drop for ThreadPriority {
    fn drop(&mut self) {
        // SAFETY: as in `set`; restoring the value ioprio_get gave.
        unsafe {
            libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, self.before);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_ioprios() {
        let idle = IoPriority {
            class: PriorityClass::Idle,
            level: 0,
        };
        assert_eq!(idle.value(), 3 << 13);
        let be7 = IoPriority {
            class: PriorityClass::BestEffort,
            level: 7,
        };
        assert_eq!(be7.value(), 2 << 13 | 7);
        assert!(check(Some(IoPriority { level: 8, ..be7 }), None).is_err());
    }

    fn rule(percent: u8, class: PriorityClass, level: u8) -> CommandPriority {
        CommandPriority {
            percent,
            class,
            level,
            direction: None,
            size: None,
        }
    }

    #[test]
    fn the_draw_gives_the_percent_asked() {
        let c = rule(20, PriorityClass::Realtime, 0);
        let mut d = CommandDraw::new(&[c], 7);
        for write in [false, true] {
            let high = (0..100_000)
                .filter(|_| d.next_priority(write, 4096) == 1 << 13)
                .count();
            assert!((19_000..21_000).contains(&high), "{high}");
        }
        assert!(check(None, Some(&[CommandPriority { percent: 0, ..c }])).is_err());
    }

    #[test]
    fn rules_by_size_and_direction_share_their_draw_as_fio_cmdprio_bssplit() {
        // fio's cmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0.
        let k64 = Some(Bytes(65536));
        let read = Some(Direction::Read);
        let rules = [
            CommandPriority {
                direction: read,
                size: k64,
                ..rule(25, PriorityClass::Realtime, 1)
            },
            CommandPriority {
                direction: read,
                size: k64,
                ..rule(75, PriorityClass::Idle, 2)
            },
        ];
        check(None, Some(&rules)).unwrap();
        let mut d = CommandDraw::new(&rules, 3);
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..100_000 {
            *seen.entry(d.next_priority(false, 65536)).or_insert(0u32) += 1;
            // Other sizes and the writes carry none.
            assert_eq!(d.next_priority(false, 1 << 20), 0);
            assert_eq!(d.next_priority(true, 65536), 0);
        }
        assert_eq!(seen.len(), 2, "{seen:?}");
        let rt1 = seen[&(1 << 13 | 1)];
        assert!((24_000..26_000).contains(&rt1), "{seen:?}");
        assert_eq!(seen[&(3 << 13 | 2)], 100_000 - rt1);
        // Above 100 for one size, or sized and unsized rules for one direction: refused.
        let over = [rules[1], rules[1]];
        assert!(check(None, Some(&over)).unwrap_err().message.contains("150"));
        let mixed = [rules[0], rule(10, PriorityClass::Realtime, 0)];
        assert!(check(None, Some(&mixed)).is_err());
    }

    #[test]
    fn one_rule_or_several_are_read() {
        #[derive(Deserialize)]
        struct T {
            #[serde(deserialize_with = "one_or_many")]
            c: Option<Vec<CommandPriority>>,
        }
        let one: T = toml::from_str("c = { percent = 20 }").unwrap();
        assert_eq!(one.c.unwrap(), [rule(20, PriorityClass::Realtime, 0)]);
        let many: T = toml::from_str(
            "c = [{ percent = 20, size = \"4KiB\", direction = \"write\" }, { percent = 5, size = 8192, class = \"idle\" }]",
        )
        .unwrap();
        assert_eq!(many.c.unwrap().len(), 2);
        let bad = toml::from_str::<T>("c = { percent = 20, colour = 1 }");
        assert!(bad.err().unwrap().to_string().contains("colour"));
    }

    #[test]
    fn a_thread_priority_is_set_and_restored() {
        let before = ThreadPriority::current().unwrap();
        let idle = IoPriority {
            class: PriorityClass::Idle,
            level: 0,
        };
        {
            let _g = ThreadPriority::set(idle).unwrap();
            assert_eq!(ThreadPriority::current().unwrap(), idle.value());
        }
        assert_eq!(ThreadPriority::current().unwrap(), before);
    }
}
