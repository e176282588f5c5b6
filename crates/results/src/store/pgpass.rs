//! The password of a PostgreSQL store whose URL gives none, found as libpq finds it: the
//! `PGPASSWORD` environment variable, else the password file (`PGPASSFILE`, default
//! `~/.pgpass`): lines `host:port:database:user:password`, `*` matching anything, `\:` and
//! `\\` escaping, the first matching line winning, ignored (with a warning) when others than
//! its owner may read it. So that no password need be on a command line, where `ps` shows it.

use std::path::{Path, PathBuf};

/// What a password line is matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted<'a> {
    pub host: &'a str,
    pub port: u16,
    pub database: &'a str,
    pub user: &'a str,
}

/// Where the password came from, and the password; None when neither source gives one.
/// `warnings` gets a password file skipped for its permissions.
pub fn find(wanted: &Wanted<'_>, warnings: &mut Vec<String>) -> Option<(String, String)> {
    if let Some(p) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
        return Some(("PGPASSWORD".into(), p.to_string_lossy().into_owned()));
    }
    let file = password_file()?;
    let text = std::fs::read_to_string(&file).ok()?;
    if let Some(w) = too_open(&file) {
        warnings.push(w);
        return None;
    }
    lookup(&text, wanted).map(|p| (file.display().to_string(), p))
}

/// `PGPASSFILE`, else `$HOME/.pgpass`.
fn password_file() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os("PGPASSFILE") {
        return Some(PathBuf::from(f));
    }
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass"))
}

/// A warning when group or others may read the file (libpq ignores it then).
fn too_open(file: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).ok()?.permissions().mode();
    (mode & 0o077 != 0).then(|| {
        format!(
            "password file {} has group or world access (mode {:o}); ignored, as libpq does: chmod 0600 it",
            file.display(),
            mode & 0o777
        )
    })
}

/// The password of the first line of `text` that matches `wanted`.
pub fn lookup(text: &str, wanted: &Wanted<'_>) -> Option<String> {
    let port = wanted.port.to_string();
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .find_map(|line| {
            let fields = split(line);
            let [host, p, db, user, password] = fields.as_slice() else {
                return None;
            };
            let ok = |field: &str, value: &str| field == "*" || field == value;
            (ok(host, wanted.host)
                && ok(p, &port)
                && ok(db, wanted.database)
                && ok(user, wanted.user))
            .then(|| password.clone())
        })
}

/// A line's five fields: `:` separates, `\` escapes the next character.
fn split(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_gives_the_password_with_wildcards_and_escapes() {
        let text = "# a comment\n\
                    otherhost:5432:*:lab:no\n\
                    db.example:*:results:lab:pa\\:ss\\\\word:x\n\
                    *:*:*:*:fallback\n";
        let w = Wanted {
            host: "db.example",
            port: 5433,
            database: "results",
            user: "lab",
        };
        assert_eq!(lookup(text, &w).as_deref(), Some("pa:ss\\word:x"));
        let other = Wanted {
            database: "other",
            ..w.clone()
        };
        assert_eq!(lookup(text, &other).as_deref(), Some("fallback"));
        assert_eq!(lookup("h:1:d:u\n", &w), None, "four fields: no password");
    }
}
