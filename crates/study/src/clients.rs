//! Client hosts (`[clients.NAME]`): what a target's `client` names (IOmeter's manager). A
//! client may run in a network namespace of its own, `netns = "NAME"` (a name under
//! `/run/netns`, as `ip netns` makes them) or `netns = "/path/to/ns"`, so that its traffic
//! crosses a veth link as a real client's crosses its NIC. The run enters that namespace on
//! every thread that opens the client's connections (see `targets::netns`). A target may name a
//! client that has no table, and `netns` may be empty (`"${VAR:-}"`): that client runs on
//! this machine's own network.
//!
//! In a distributed run (under mpirun) a client may be pinned: `rank = N` runs the workers of
//! every target naming it on MPI rank N, `host = "NAME"` on the ranks running on that host
//! (split evenly among them); an unpinned target's workers are split evenly over every rank.

use std::collections::BTreeMap;
use std::path::PathBuf;

use toml::Spanned;

use super::{Source, StudyError, expand_env};

/// Where `ip netns` keeps named network namespaces.
pub const NETNS_DIR: &str = "/run/netns";

/// A declared client, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// The namespace file its threads enter.
    pub netns: Option<PathBuf>,
    /// Where its targets' workers run in a distributed run.
    pub pin: Pin,
    /// Its table in the study text.
    pub span: std::ops::Range<usize>,
}

/// Where a client's workers run in a distributed run: on one MPI rank, on the ranks of one
/// host, or (neither) split over every rank.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Pin {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Pin {
    pub fn is_none(&self) -> bool {
        self.rank.is_none() && self.host.is_none()
    }
}

/// The namespace file a `netns` value names: a bare name is under [`NETNS_DIR`]; a path must
/// be absolute; an empty value (`"${VAR:-}"` with VAR unset) is none: this machine's own
/// network.
pub fn netns_path(value: &str) -> Result<Option<PathBuf>, String> {
    let v = value.trim();
    if v.is_empty() {
        return Ok(None);
    }
    if v.starts_with('/') {
        return Ok(Some(PathBuf::from(v)));
    }
    if v.contains('/') || v == "." || v == ".." {
        return Err(format!(
            "`{v}` is neither a namespace name nor an absolute path: give a name (as `ip netns list` shows it) or a path such as /proc/PID/ns/net"
        ));
    }
    Ok(Some(PathBuf::from(NETNS_DIR).join(v)))
}

/// Validates the study's `[clients.NAME]` tables.
pub(super) fn parse(
    raw: &BTreeMap<String, Spanned<toml::Table>>,
    src: &Source,
    errors: &mut Vec<StudyError>,
) -> BTreeMap<String, Client> {
    let mut out = BTreeMap::new();
    for (name, table) in raw {
        let span = table.span();
        let mut client = Client {
            netns: None,
            pin: Pin::default(),
            span: span.clone(),
        };
        let mut ok = true;
        for (key, value) in table.get_ref() {
            let at = src.locate_in(&span, key);
            let full = format!("clients.{name}.{key}");
            match (key.as_str(), value) {
                ("netns", toml::Value::String(text)) => {
                    match expand_env(text).and_then(|v| netns_path(&v)) {
                        Ok(path) => client.netns = path,
                        Err(message) => {
                            errors.push(src.error(at, full, message));
                            ok = false;
                        }
                    }
                }
                ("netns", _) => {
                    errors.push(src.error(
                        at,
                        full,
                        "`netns` is a string: a namespace name or an absolute path",
                    ));
                    ok = false;
                }
                ("rank", toml::Value::Integer(n)) if *n >= 0 && *n <= u32::MAX as i64 => {
                    client.pin.rank = Some(*n as u32);
                }
                ("rank", _) => {
                    errors.push(src.error(
                        at,
                        full,
                        "`rank` is the MPI rank (0, 1, ...) that runs this client's workers",
                    ));
                    ok = false;
                }
                ("host", toml::Value::String(text)) => match expand_env(text) {
                    Ok(h) if !h.trim().is_empty() => client.pin.host = Some(h.trim().to_string()),
                    Ok(_) => {
                        errors.push(src.error(
                            at,
                            full,
                            "`host` names the host (as MPI reports its processor name) whose ranks run this client's workers",
                        ));
                        ok = false;
                    }
                    Err(message) => {
                        errors.push(src.error(at, full, message));
                        ok = false;
                    }
                },
                ("host", _) => {
                    errors.push(src.error(at, full, "`host` is a string naming a host"));
                    ok = false;
                }
                _ => {
                    errors.push(src.error(
                        at,
                        full,
                        format!(
                            "unknown key `{key}` of a client: expected `netns`, `rank` or `host`"
                        ),
                    ));
                    ok = false;
                }
            }
        }
        if client.pin.rank.is_some() && client.pin.host.is_some() {
            errors.push(src.error(
                Some(span.clone()),
                format!("clients.{name}"),
                "give `rank` or `host`, not both",
            ));
            ok = false;
        }
        if ok {
            out.insert(name.clone(), client);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_under_run_netns_and_a_path_stays() {
        assert_eq!(
            netns_path("storlab-cl-1").unwrap(),
            Some(PathBuf::from("/run/netns/storlab-cl-1"))
        );
        assert_eq!(
            netns_path("/proc/42/ns/net").unwrap(),
            Some(PathBuf::from("/proc/42/ns/net"))
        );
        assert!(netns_path("a/b").unwrap_err().contains("absolute path"));
        assert!(netns_path("..").is_err());
        assert_eq!(netns_path(" ").unwrap(), None);
    }
}
