//! Checks of a study against what its runs will meet, made at `check` time rather than when a
//! run starts: a path no file can have (a NUL byte in it) and a target region too small to
//! hold one block of the workload; and where an access-spec line's key is written, for
//! errors that name it.

use std::path::Path;

use storlab_targets::TargetConfig;
use storlab_workload::Workload;

/// Why `path` cannot name a file, if it cannot.
pub(super) fn path_problem(path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().contains(&0).then(|| {
        format!(
            "the path {:?} holds a NUL byte, which no file name can hold",
            path.display().to_string()
        )
    })
}

/// Why target `t` has no room for one block of `w` (the workload named `workload_name`),
/// with the target key to blame: the target's own rule ([`storlab_targets::Target::region_problem`]).
pub(super) fn region_problem(
    t: &TargetConfig,
    w: &Workload,
    workload_name: &str,
) -> Option<(&'static str, String)> {
    let block = w.as_block()?.block_size;
    t.region_problem(block, workload_name)
}

impl super::Source<'_> {
    /// The line of `key` in workload `name` (its table at `span`): `access-spec[N].KEY` is
    /// found in the N-th `[[workloads.NAME.access-spec]]` table, `access-spec` at the first;
    /// an inline `access-spec = [...]` and every other key in the workload's own table.
    pub(super) fn locate_workload_key(
        &self,
        span: &std::ops::Range<usize>,
        name: &str,
        key: &str,
    ) -> Option<std::ops::Range<usize>> {
        let (n, tail) = match key.strip_prefix("access-spec") {
            Some("") => (1, ""),
            Some(rest) => match rest
                .strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .and_then(|(n, t)| Some((n.parse::<usize>().ok()?, t)))
            {
                Some((n, tail)) => (n, tail.trim_start_matches('.')),
                None => return self.locate_in(span, key),
            },
            None => return self.locate_in(span, key),
        };
        let header = format!("workloads.{name}.access-spec");
        let mut seen = 0;
        let mut pos = 0;
        for line in self.text.split_inclusive('\n') {
            let t = line.trim();
            if let Some(inner) = t.strip_prefix("[[") {
                let inner = inner
                    .split("]]")
                    .next()
                    .unwrap_or("")
                    .replace([' ', '"'], "");
                if inner == header {
                    seen += 1;
                    if seen == n {
                        return self.locate_in(&(pos..pos + line.len()), tail);
                    }
                }
            }
            pos += line.len();
        }
        self.locate_in(span, "access-spec")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_is_no_path() {
        assert!(path_problem(Path::new("data/x.dat")).is_none());
        let bad = path_problem(Path::new("data/x\0.dat")).unwrap();
        assert!(bad.contains("NUL"), "{bad}");
    }
}
