//! Signals by name or number, as event files give them (`TERM`, `SIGKILL`, `9`).

use serde::Serialize;

/// A signal by number, with the name it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Signal {
    pub number: i32,
    pub name: &'static str,
}

pub(super) const SIGNALS: [(&str, i32); 12] = [
    ("TERM", libc::SIGTERM),
    ("KILL", libc::SIGKILL),
    ("INT", libc::SIGINT),
    ("HUP", libc::SIGHUP),
    ("QUIT", libc::SIGQUIT),
    ("USR1", libc::SIGUSR1),
    ("USR2", libc::SIGUSR2),
    ("STOP", libc::SIGSTOP),
    ("CONT", libc::SIGCONT),
    ("ABRT", libc::SIGABRT),
    ("ALRM", libc::SIGALRM),
    ("PIPE", libc::SIGPIPE),
];

impl Signal {
    pub const TERM: Signal = Signal {
        number: libc::SIGTERM,
        name: "TERM",
    };
    pub const KILL: Signal = Signal {
        number: libc::SIGKILL,
        name: "KILL",
    };
    pub const STOP: Signal = Signal {
        number: libc::SIGSTOP,
        name: "STOP",
    };
    pub const CONT: Signal = Signal {
        number: libc::SIGCONT,
        name: "CONT",
    };

    /// `TERM`, `SIGTERM` or `15`.
    pub fn parse(text: &str) -> Option<Signal> {
        let t = text.trim().to_ascii_uppercase();
        let t = t.strip_prefix("SIG").unwrap_or(&t);
        if let Ok(n) = t.parse::<i32>() {
            return SIGNALS
                .iter()
                .find(|(_, v)| *v == n)
                .map(|(name, number)| Signal {
                    number: *number,
                    name,
                });
        }
        SIGNALS
            .iter()
            .find(|(name, _)| *name == t)
            .map(|(name, number)| Signal {
                number: *number,
                name,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_name_and_number() {
        assert_eq!(Signal::parse("kill"), Some(Signal::KILL));
        assert_eq!(Signal::parse("SIGTERM"), Some(Signal::TERM));
        assert_eq!(Signal::parse("19").map(|s| s.name), Some("STOP"));
        assert_eq!(Signal::parse("NOPE"), None);
    }
}
