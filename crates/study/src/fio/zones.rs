//! fio's strided zones: `zonemode`, `zonesize`, `zonerange`, `zoneskip` (fio 3.33's
//! `fixup_options` and `setup_strided_zone_mode`). A sequential job does `zonesize` bytes in
//! a zone of `zonerange` bytes, then moves `zonerange + zoneskip` further: the block
//! workload's `zones`. `zonemode=zbd` (a zoned block device's write pointers, zone resets)
//! is refused.

use super::job::{Job, ZoneMode};
use super::parse::{Entry, LineError, parse_size};

/// Applies one zone option; false when `e` is none of them.
pub fn apply_zones(job: &mut Job, e: &Entry, canonical: &str, kb: u64) -> Result<bool, String> {
    let z = &mut job.zones;
    let name = e.name.as_str();
    let bytes = |e: &Entry| {
        let v = e.needed()?;
        parse_size(v, kb).map_err(|m| format!("{name}={v}: {m}"))
    };
    match canonical {
        "zonemode" => {
            z.mode = match e.needed()? {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => {
                    return Err(
                        "zonemode=zbd: storlab fio does not drive zoned block devices (write pointers, zone resets and appends)"
                            .into(),
                    );
                }
                other => return Err(format!("zonemode={other}: none, strided or zbd")),
            };
            z.line = e.line;
        }
        "zonesize" => {
            z.size = Some(bytes(e)?).filter(|&b| b > 0);
            z.size_line = e.line;
        }
        "zonerange" => z.range = Some(bytes(e)?).filter(|&b| b > 0),
        "zoneskip" => z.skip = bytes(e)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The zones the job strides through: `(size, range, skip)` bytes, as fio settles them (the
/// range defaults to the size). None without strided zones, or with several files (fio
/// drops strided zones on more than one file).
pub fn strided(job: &Job) -> Option<(u64, u64, u64)> {
    let z = &job.zones;
    let size = z.size?;
    let strided = z.mode == ZoneMode::Strided;
    let one_file = job.files.nrfiles.is_none_or(|n| n <= 1);
    (strided && one_file).then(|| (size, z.range.unwrap_or(size), z.skip))
}

/// What fio itself refuses of the zone options, and what storlab cannot honour.
pub fn check(job: &Job) -> Vec<LineError> {
    let z = &job.zones;
    // The line to blame: the option that is wrong, else the job's.
    let at = |line: usize| if line > 0 { line } else { job.line };
    let refuse = |line: usize, message: String| LineError {
        file: job.file.clone(),
        line: at(line),
        message: format!("job `{}`: {message}", job.name),
    };
    let mut errors = Vec::new();
    match (z.mode, z.size) {
        (ZoneMode::None, Some(_)) => errors.push(refuse(
            z.size_line,
            "zonesize without zonemode=strided: fio 3.33 refuses it (\"--zonemode=none and --zonesize are not compatible\"; none is its default)".into(),
        )),
        (ZoneMode::Strided, None) => errors.push(refuse(
            z.line,
            "zonemode=strided needs zonesize (fio 3.33: \"--zonesize must be specified\")".into(),
        )),
        _ => {}
    }
    if strided(job).is_some() && (job.rw.random() || job.sizes_opts.modifier.is_some()) {
        errors.push(refuse(
            z.line,
            "strided zones with random I/O or `rw=...:N` are not supported by storlab fio: its zones stride sequential I/O".into(),
        ));
    }
    errors
}

/// The workload's `zones` key.
pub fn workload_keys(job: &Job, w: &mut toml::Table) {
    if let Some((size, range, skip)) = strided(job) {
        let mut t = toml::Table::new();
        t.insert("size".into(), (size as i64).into());
        t.insert("range".into(), (range as i64).into());
        t.insert("skip".into(), (skip as i64).into());
        w.insert("zones".into(), t.into());
    }
}

/// What the plan says of the job's zones.
pub fn notes(job: &Job) -> Vec<String> {
    let z = &job.zones;
    if z.size.is_some() && strided(job).is_none() && z.mode == ZoneMode::Strided {
        return vec![format!(
            "job `{}`: zonesize on {} files: no zones, as fio (its strided zones work on one file)",
            job.name,
            job.files.nrfiles.unwrap_or(1)
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn jobs(text: &str) -> Result<Vec<Job>, Vec<LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    #[test]
    fn strided_zones_as_fio_settles_them() {
        let j = jobs("[a]\nrw=read\nzonemode=strided\nzonesize=16k\nzoneskip=32k\n[b]\nrw=read\nzonemode=strided\nzonesize=16k\nzonerange=8k\n[c]\nrw=read\nzonemode=none\n").unwrap();
        assert_eq!(strided(&j[0]), Some((16384, 16384, 32768)));
        assert_eq!(strided(&j[1]), Some((16384, 8192, 0)));
        assert_eq!(strided(&j[2]), None);
        let mut w = toml::Table::new();
        workload_keys(&j[0], &mut w);
        assert_eq!(w["zones"]["skip"].as_integer(), Some(32768));
    }

    #[test]
    fn what_fio_or_storlab_refuses_is_named() {
        for (text, what) in [
            ("[a]\nzonemode=zbd\n", "zoned block devices"),
            ("[a]\nzonemode=none\nzonesize=1m\n", "not compatible"),
            ("[a]\nzonesize=1m\n", "not compatible"),
            ("[a]\nzonemode=strided\n", "needs zonesize"),
            (
                "[a]\nrw=randread\nzonemode=strided\nzonesize=1m\n",
                "random I/O",
            ),
        ] {
            let e = jobs(text).unwrap_err();
            assert!(e[0].message.contains(what), "{text}: {e:?}");
        }
    }
}
