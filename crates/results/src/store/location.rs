//! Where the results store is: the SQLite file in a results folder (the default), or a
//! PostgreSQL database named by its URL (`--store postgres://...`, `STORLAB_STORE`). A URL's
//! password is never shown: every display of a location is redacted.

use std::path::{Path, PathBuf};

use super::{STORE_FILE, StoreError};

/// A PostgreSQL URL (`postgres://` or `postgresql://`), which may hold a password: shown and
/// debugged redacted only.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl(String);

impl PgUrl {
    /// The URL itself, password included: for connecting only, never for showing.
    pub(super) fn secret_text(&self) -> &str {
        &self.0
    }
}

impl PgUrl {
    /// The URL with its password taken out (`postgres://lab@db:5432/results`), for a command
    /// to paste: the password then comes from PGPASSWORD or the password file, as libpq takes
    /// it. Query parameters other than a password are kept.
    pub fn without_password(&self) -> String {
        let text = &self.0;
        let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
            return crate::redact(text);
        };
        let rest = &text[scheme_end..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(authority_end);
        let authority = match authority.rsplit_once('@') {
            Some((userinfo, host)) => {
                let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
                format!("{user}@{host}")
            }
            None => authority.to_string(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|kv| !kv.starts_with("password="))
                    .collect();
                if kept.is_empty() {
                    path.to_string()
                } else {
                    format!("{path}?{}", kept.join("&"))
                }
            }
            None => tail.to_string(),
        };
        format!("{}{authority}{tail}", &text[..scheme_end])
    }
}

impl std::fmt::Display for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::redact(&self.0))
    }
}

impl std::fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgUrl({self})")
    }
}

/// Where the results store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// An SQLite database file (by default `results.db` in the results folder).
    Sqlite(PathBuf),
    /// A PostgreSQL database a lab shares.
    Postgres(PgUrl),
}

impl StoreLocation {
    /// The SQLite store of a results folder.
    pub fn in_folder(results_dir: &Path) -> StoreLocation {
        StoreLocation::Sqlite(results_dir.join(STORE_FILE))
    }

    /// `--store`'s text: a PostgreSQL URL, an SQLite file (`*.db`) or a results folder
    /// (its `results.db`).
    pub fn parse(text: &str) -> Result<StoreLocation, StoreError> {
        let bad = |detail: String| StoreError::BadLocation {
            location: crate::redact(text),
            detail,
        };
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            // Checked now, so that a mistyped URL is said before anything runs.
            let (tokio_url, _) = super::pg_tls::split(text).map_err(bad)?;
            tokio_url
                .parse::<tokio_postgres::Config>()
                .map_err(|e| bad(crate::redact(&e.to_string())))?;
            return Ok(StoreLocation::Postgres(PgUrl(text.to_string())));
        }
        if text.contains("://") {
            return Err(bad(
                "not a store: give a postgres:// URL, an SQLite file (*.db) or a results folder"
                    .into(),
            ));
        }
        if text.is_empty() {
            return Err(bad("empty".into()));
        }
        let path = PathBuf::from(text);
        if path.extension().is_some_and(|e| e == "db") && !path.is_dir() {
            Ok(StoreLocation::Sqlite(path))
        } else {
            Ok(StoreLocation::in_folder(&path))
        }
    }

    /// `--store` when given, else the SQLite store of the results folder.
    pub fn resolve(store: Option<&str>, results_dir: &Path) -> Result<StoreLocation, StoreError> {
        match store {
            Some(text) => StoreLocation::parse(text),
            None => Ok(StoreLocation::in_folder(results_dir)),
        }
    }

    /// The location as a command should name it: a PostgreSQL URL without its password
    /// ([`PgUrl::without_password`]), a path as it is.
    pub fn for_command(&self) -> String {
        match self {
            StoreLocation::Sqlite(path) => path.display().to_string(),
            StoreLocation::Postgres(url) => url.without_password(),
        }
    }

    /// Whether the store is shared (PostgreSQL) and keeps each run's files.
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreLocation::Postgres(_))
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Sqlite(path) => write!(f, "{}", path.display()),
            StoreLocation::Postgres(url) => write!(f, "{url}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_postgres_and_its_password_is_never_shown() {
        let url = "postgres://lab:s3cret@db.example:5432/results?sslmode=disable";
        let l = StoreLocation::parse(url).expect("url");
        assert!(l.is_shared());
        for shown in [l.to_string(), format!("{l:?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(shown.contains("db.example:5432/results"), "{shown}");
        }
        let StoreLocation::Postgres(u) = &l else {
            panic!("{l:?}")
        };
        assert_eq!(u.secret_text(), url);
        assert!(StoreLocation::parse("postgresql://h/db").is_ok());
    }

    #[test]
    fn a_command_names_a_url_without_its_password() {
        for (url, want) in [
            (
                "postgres://lab:s3cret@db.example:5432/results?sslmode=disable",
                "postgres://lab@db.example:5432/results?sslmode=disable",
            ),
            (
                "postgresql://lab@db/results?password=s3cret&connect_timeout=5",
                "postgresql://lab@db/results?connect_timeout=5",
            ),
            ("postgres://db/results?password=x", "postgres://db/results"),
        ] {
            let l = StoreLocation::parse(url).expect("url");
            assert_eq!(l.for_command(), want);
        }
    }

    #[test]
    fn a_path_is_an_sqlite_file_or_a_results_folder() {
        assert_eq!(
            StoreLocation::parse("lab/index.db").expect("file"),
            StoreLocation::Sqlite(PathBuf::from("lab/index.db"))
        );
        assert_eq!(
            StoreLocation::parse("lab-results").expect("folder"),
            StoreLocation::Sqlite(PathBuf::from("lab-results/results.db"))
        );
        assert_eq!(
            StoreLocation::resolve(None, Path::new("r")).expect("default"),
            StoreLocation::Sqlite(PathBuf::from("r/results.db"))
        );
    }

    #[test]
    fn a_bad_location_is_refused_without_its_password() {
        for text in ["mysql://u:pw@h/db", "", "postgres://u:pw@h:notaport/db"] {
            let e = StoreLocation::parse(text).expect_err(text).to_string();
            assert!(!e.contains(":pw@"), "{e}");
        }
    }
}
