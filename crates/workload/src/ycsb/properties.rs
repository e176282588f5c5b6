//! YCSB property files (`-P file`) and overrides (`-p name=value`): a subset of Java's
//! `.properties` format, with the file and line of every value kept for error messages.
//!
//! Supported: `name=value` and `name:value` lines, surrounding whitespace trimmed (Java keeps
//! trailing whitespace in values; YCSB's parsers mostly do not accept it, so it is dropped),
//! comment lines starting with `#` or `!`, blank lines, and a trailing `\` continuing a line.
//! Not supported: backslash escapes inside names or values (kept literally) and `name value`
//! lines without a separator (an error).
//!
//! As in YCSB, a `-p` override wins over any file whatever the order given; among files, the
//! later one wins. Readers *claim* the properties they understand ([`Properties::claim`]): the
//! core workload claims its own, a database binding claims `mongodb.url` or `redis.host`, and
//! what nobody claimed is reported by name, file and line ([`Properties::unclaimed`]).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a property's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A property file, 1-based line (the first line of a continued line).
    File { path: PathBuf, line: u32 },
    /// The `index`-th `-p` override (0-based) on the command line.
    Override { index: u32 },
    /// A key of a study's `type = "ycsb"` workload table.
    Study { key: String },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Override { index } => write!(f, "-p override #{}", index + 1),
            Origin::Study { key } => write!(f, "study key `{key}`"),
        }
    }
}

/// One property's final value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    pub name: String,
    pub value: String,
    pub origin: Origin,
}

impl fmt::Display for Property {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}={}", self.origin, self.name, self.value)
    }
}

/// A property file or override that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PropertyError {
    #[error("cannot read property file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: expected `name=value`, found {text:?}", path.display())]
    Syntax {
        path: PathBuf,
        line: u32,
        text: String,
    },
    #[error("-p override {text:?}: expected `name=value`")]
    Override { text: String },
}

#[derive(Debug, Clone)]
struct Entry {
    property: Property,
    claimed: bool,
}

/// YCSB properties gathered from files and overrides.
#[derive(Debug, Clone, Default)]
pub struct Properties {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    overrides: u32,
}

impl Properties {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a property file (`-P path`); its values replace earlier files' but not overrides.
    pub fn load_file(&mut self, path: &Path) -> Result<(), PropertyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PropertyError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.parse_str(&text, path)
    }

    /// Parses property file text; `path` is only used to say where values came from.
    pub fn parse_str(&mut self, text: &str, path: &Path) -> Result<(), PropertyError> {
        let mut logical = String::new();
        let mut start_line = 0u32;
        for (number, raw) in text.lines().enumerate() {
            let number = number as u32 + 1;
            if logical.is_empty() {
                start_line = number;
            }
            let line = raw.trim_start();
            if logical.is_empty() && (line.starts_with('#') || line.starts_with('!')) {
                continue;
            }
            // An odd number of trailing backslashes continues the line.
            let trailing = line.len() - line.trim_end_matches('\\').len();
            if trailing % 2 == 1 {
                logical.push_str(&line[..line.len() - 1]);
                continue;
            }
            logical.push_str(line);
            let complete = std::mem::take(&mut logical);
            self.parse_line(&complete, path, start_line)?;
        }
        if !logical.is_empty() {
            self.parse_line(&logical, path, start_line)?;
        }
        Ok(())
    }

    fn parse_line(&mut self, line: &str, path: &Path, number: u32) -> Result<(), PropertyError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(());
        }
        let Some((name, value)) = split_name_value(line) else {
            return Err(PropertyError::Syntax {
                path: path.to_owned(),
                line: number,
                text: line.to_owned(),
            });
        };
        let origin = Origin::File {
            path: path.to_owned(),
            line: number,
        };
        if let Some(&i) = self.index.get(name)
            && matches!(self.entries[i].property.origin, Origin::Override { .. })
        {
            return Ok(());
        }
        self.set(name, value, origin);
        Ok(())
    }

    /// Applies a `-p name=value` override; it wins over every file, loaded before or after.
    pub fn set_override(&mut self, text: &str) -> Result<(), PropertyError> {
        let Some((name, value)) = split_name_value(text.trim()) else {
            return Err(PropertyError::Override {
                text: text.to_owned(),
            });
        };
        let origin = Origin::Override {
            index: self.overrides,
        };
        self.overrides += 1;
        self.set(name, value, origin);
        Ok(())
    }

    /// Sets a value, replacing any earlier one.
    pub fn set(&mut self, name: &str, value: &str, origin: Origin) {
        let property = Property {
            name: name.to_owned(),
            value: value.to_owned(),
            origin,
        };
        match self.index.get(name) {
            Some(&i) => self.entries[i].property = property,
            None => {
                self.index.insert(name.to_owned(), self.entries.len());
                self.entries.push(Entry {
                    property,
                    claimed: false,
                });
            }
        }
    }

    /// The property, without claiming it.
    pub fn get(&self, name: &str) -> Option<&Property> {
        self.index.get(name).map(|&i| &self.entries[i].property)
    }

    /// The property, marked as understood by the caller.
    pub fn claim(&mut self, name: &str) -> Option<&Property> {
        let &i = self.index.get(name)?;
        let entry = &mut self.entries[i];
        entry.claimed = true;
        Some(&entry.property)
    }

    /// Properties nobody has claimed, in the order first seen.
    pub fn unclaimed(&self) -> impl Iterator<Item = &Property> {
        self.entries
            .iter()
            .filter(|e| !e.claimed)
            .map(|e| &e.property)
    }

    /// Every property, in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = &Property> {
        self.entries.iter().map(|e| &e.property)
    }
}

/// Splits at the first `=` or `:`; the name must not be empty.
fn split_name_value(line: &str) -> Option<(&str, &str)> {
    let at = line.find(['=', ':'])?;
    let name = line[..at].trim();
    if name.is_empty() {
        return None;
    }
    Some((name, line[at + 1..].trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_java_subset_with_lines() {
        let mut p = Properties::new();
        let text = "# a comment\n\
                    ! another\n\
                    \n\
                    recordcount=1000\n\
                    \x20\x20operationcount = 2000  \n\
                    table:usertable\n\
                    requestdistribution=zip\\\n\
                    \x20\x20\x20fian\n\
                    db.url=jdbc:mysql://host/db?a=b\n";
        p.parse_str(text, Path::new("w.properties")).unwrap();
        let get = |n: &str| p.get(n).unwrap().clone();
        assert_eq!(get("recordcount").value, "1000");
        assert_eq!(
            get("recordcount").origin,
            Origin::File {
                path: "w.properties".into(),
                line: 4
            }
        );
        assert_eq!(get("operationcount").value, "2000");
        assert_eq!(get("table").value, "usertable");
        assert_eq!(get("requestdistribution").value, "zipfian");
        assert_eq!(
            get("requestdistribution").origin.to_string(),
            "w.properties:7"
        );
        assert_eq!(get("db.url").value, "jdbc:mysql://host/db?a=b");
        assert_eq!(p.iter().count(), 5);
    }

    #[test]
    fn overrides_win_whatever_the_order() {
        let mut p = Properties::new();
        p.parse_str("recordcount=10\n", Path::new("a")).unwrap();
        p.set_override("recordcount=20").unwrap();
        p.parse_str("recordcount=30\nfieldcount=5\n", Path::new("b"))
            .unwrap();
        assert_eq!(p.get("recordcount").unwrap().value, "20");
        assert_eq!(
            p.get("recordcount").unwrap().origin.to_string(),
            "-p override #1"
        );
        // Later files win over earlier files.
        p.parse_str("fieldcount=6\n", Path::new("c")).unwrap();
        assert_eq!(
            p.get("fieldcount").unwrap().to_string(),
            "c:1: fieldcount=6"
        );
        assert!(matches!(
            p.set_override("novalue"),
            Err(PropertyError::Override { .. })
        ));
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let mut p = Properties::new();
        let err = p
            .parse_str("a=1\n\njust words\n", Path::new("w"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "w:3: expected `name=value`, found \"just words\""
        );
        let err = p
            .load_file(Path::new("/nonexistent/storlab/w"))
            .unwrap_err();
        assert!(matches!(err, PropertyError::Io { .. }));
    }

    #[test]
    fn unclaimed_properties_are_reported() {
        let mut p = Properties::new();
        p.parse_str(
            "recordcount=1\nmongodb.url=mongodb://localhost\nredis.host=x\n",
            Path::new("w"),
        )
        .unwrap();
        assert_eq!(p.claim("recordcount").unwrap().value, "1");
        assert!(p.claim("absent").is_none());
        let left: Vec<String> = p.unclaimed().map(|q| q.to_string()).collect();
        assert_eq!(
            left,
            ["w:2: mongodb.url=mongodb://localhost", "w:3: redis.host=x"]
        );
        p.claim("redis.host");
        assert_eq!(p.unclaimed().count(), 1);
    }
}
