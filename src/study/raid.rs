//! A study's `[raid]` section: the array's geometry (level, member targets, array target,
//! strip size), checked against the study's targets, for the efficiency table that
//! the results' RAID table computes from the stored results.

use serde::Deserialize;
use toml::Spanned;

use super::{Source, StudyError};
use crate::model::raid::{Geometry, Level};
use crate::units::Bytes;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawRaid {
    level: Spanned<toml::Value>,
    members: Spanned<Vec<Spanned<String>>>,
    array: Spanned<String>,
    strip_size: Option<Spanned<Bytes>>,
}

/// Checks `[raid]` against the study's target names.
pub(super) fn check(
    src: &Source<'_>,
    raw: &RawRaid,
    target_names: &[&String],
    errors: &mut Vec<StudyError>,
) -> Option<Geometry> {
    let before = errors.len();
    let level_text = match raw.level.get_ref() {
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let level = match Level::parse(&level_text) {
        Ok(l) => Some(l),
        Err(message) => {
            errors.push(src.error(Some(raw.level.span()), "raid.level", message));
            None
        }
    };
    let mut members = Vec::new();
    for m in raw.members.get_ref() {
        let name = m.get_ref();
        if !target_names.contains(&name) {
            errors.push(src.error(
                Some(m.span()),
                "raid.members",
                format!("no target named `{name}`: members are target names"),
            ));
        } else if members.contains(name) {
            errors.push(src.error(
                Some(m.span()),
                "raid.members",
                format!("`{name}` is named twice"),
            ));
        } else {
            members.push(name.clone());
        }
    }
    let array = raw.array.get_ref();
    if !target_names.contains(&array) {
        errors.push(src.error(
            Some(raw.array.span()),
            "raid.array",
            format!(
                "no target named `{array}`: the array is a target (a file on it, or its device)"
            ),
        ));
    } else if members.contains(array) {
        errors.push(src.error(
            Some(raw.array.span()),
            "raid.array",
            format!("`{array}` is also a member"),
        ));
    }
    if let Some(level) = level
        && let Err(message) = level.check_members(raw.members.get_ref().len())
    {
        errors.push(src.error(Some(raw.members.span()), "raid.members", message));
    }
    if errors.len() > before {
        return None;
    }
    Some(Geometry {
        level: level?,
        members,
        array: array.clone(),
        strip_bytes: raw.strip_size.as_ref().map(|s| s.get_ref().0),
    })
}
