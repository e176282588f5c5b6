//! I/O priorities of the file target (ioprio(2)): `priority`, the worker thread's priority
//! for every I/O it issues (fio's `prioclass` and `prio`, set with `ioprio_set` as fio sets
//! them), and `command-priority`, a priority that a drawn share of io-uring operations carry
//! in their submission entry (fio's `cmdprio_percentage`, `cmdprio_class`, `cmdprio`).

use serde::{Deserialize, Serialize};

use storlab_model::OptionError;

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

/// `command-priority = { percent = 20, class = "realtime", level = 0 }`: io-uring
/// operations that carry this priority, each drawn with `percent` percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CommandPriority {
    pub percent: u8,
    /// Default realtime, as fio's `cmdprio_class`.
    #[serde(default = "realtime")]
    pub class: PriorityClass,
    #[serde(default)]
    pub level: u8,
}

fn realtime() -> PriorityClass {
    PriorityClass::Realtime
}

/// Checks `priority` and `command-priority`.
pub fn check(
    priority: Option<IoPriority>,
    command: Option<CommandPriority>,
) -> Result<(), OptionError> {
    if let Some(p) = priority {
        p.check("priority")?;
    }
    if let Some(c) = command {
        IoPriority {
            class: c.class,
            level: c.level,
        }
        .check("command-priority")?;
        if c.percent == 0 || c.percent > 100 {
            return Err(OptionError {
                key: "command-priority".into(),
                message: format!("command-priority: percent from 1 to 100, got {}", c.percent),
            });
        }
    }
    Ok(())
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

/// The draw of which operations carry the command priority: a seeded splitmix64 stream.
#[derive(Debug, Clone, Copy)]
pub struct CommandDraw {
    state: u64,
    /// An operation carries `value` when a draw is below this.
    below: u64,
    value: u16,
}

impl CommandDraw {
    pub fn new(c: CommandPriority, seed: u64) -> CommandDraw {
        let value = IoPriority {
            class: c.class,
            level: c.level,
        }
        .value();
        let below = if c.percent >= 100 {
            u64::MAX
        } else {
            (u64::MAX / 100) * u64::from(c.percent)
        };
        CommandDraw {
            state: seed,
            below,
            value,
        }
    }

    /// The next operation's priority: the command priority, or 0 (the thread's own).
    #[inline]
    pub fn next_priority(&mut self) -> u16 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        if storlab_model::seed::splitmix64(self.state) < self.below {
            self.value
        } else {
            0
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

    #[test]
    fn the_draw_gives_the_percent_asked() {
        let c = CommandPriority {
            percent: 20,
            class: PriorityClass::Realtime,
            level: 0,
        };
        let mut d = CommandDraw::new(c, 7);
        let high = (0..100_000).filter(|_| d.next_priority() == 1 << 13).count();
        assert!((19_000..21_000).contains(&high), "{high}");
        assert!(check(None, Some(CommandPriority { percent: 0, ..c })).is_err());
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
