//! IOmeter's configuration files (`.icf`): their access specifications, read and turned into
//! the equivalent block workloads of a study (`storlab iometer-icf FILE.icf`).
//!
//! An `.icf` (IOmeter 2006.07.27 and 1.1.0, and a result file's own section) holds, after
//! `'ACCESS SPECIFICATIONS` (or `'Access specifications`) and up to `'END access
//! specifications`, per specification a name line (`NAME,DEFAULT-ASSIGNMENT`) after the
//! comment `'Access specification name,default assignment`, then after the comment
//! `'size,% of size,% reads,% random,delay,burst,align,reply` one line per access line:
//! transfer bytes, integer percents, delay in ms, burst length, alignment in bytes (0: sector
//! boundaries) and reply bytes (network targets). Its worker sections give each worker's
//! `Number of outstanding IOs` and `Assigned access specs`: a workload takes the queue depth
//! of the first worker the specification is assigned to. A reply size, which storlab does not
//! model, is refused by name.

use std::fmt::Write;

/// One access-specification line, as IOmeter stores it (integers, percents, ms, bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcfLine {
    pub size_bytes: u64,
    pub of_size_percent: u32,
    pub reads_percent: u32,
    pub random_percent: u32,
    pub delay_ms: u64,
    pub burst_ios: u32,
    /// 0: IOmeter's sector boundaries.
    pub align_bytes: u64,
    pub reply_bytes: u64,
}

/// One named access specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcfSpec {
    pub name: String,
    pub default_assignment: String,
    pub lines: Vec<IcfLine>,
}

/// A worker of the file, as far as workloads need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcfWorker {
    pub name: String,
    pub outstanding_ios: Option<u32>,
    pub specs: Vec<String>,
}

/// What storlab reads from an `.icf`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Icf {
    pub specs: Vec<IcfSpec>,
    pub workers: Vec<IcfWorker>,
}

/// A problem in an `.icf`, with its 1-based line (0: the whole file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IcfError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for IcfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for IcfError {}

fn icf_err(line: usize, message: impl Into<String>) -> IcfError {
    IcfError {
        line,
        message: message.into(),
    }
}

fn is_comment(l: &str) -> bool {
    l.trim_start().starts_with('\'')
}

fn starts_ci(l: &str, prefix: &str) -> bool {
    let l = l.trim();
    l.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

fn parse_line(text: &str, n: usize) -> Result<IcfLine, IcfError> {
    let fields: Vec<&str> = text
        .trim()
        .trim_end_matches(',')
        .split(',')
        .map(str::trim)
        .collect();
    if fields.len() != 8 {
        return Err(icf_err(
            n,
            format!(
                "an access line has 8 fields (size,% of size,% reads,% random,delay,burst,align,reply); this one has {}: {text:?}",
                fields.len()
            ),
        ));
    }
    let num = |i: usize, what: &str| -> Result<u64, IcfError> {
        fields[i]
            .parse::<u64>()
            .map_err(|_| icf_err(n, format!("{what} {:?} is not a whole number", fields[i])))
    };
    let percent = |i: usize, what: &str| -> Result<u32, IcfError> {
        let v = num(i, what)?;
        if v > 100 {
            return Err(icf_err(n, format!("{what} {v} is above 100")));
        }
        Ok(v as u32)
    };
    Ok(IcfLine {
        size_bytes: num(0, "size")?,
        of_size_percent: percent(1, "% of size")?,
        reads_percent: percent(2, "% reads")?,
        random_percent: percent(3, "% random")?,
        delay_ms: num(4, "delay")?,
        burst_ios: num(5, "burst")?.min(u32::MAX as u64) as u32,
        align_bytes: num(6, "align")?,
        reply_bytes: num(7, "reply")?,
    })
}

/// Reads the access specifications and worker assignments of an `.icf` text.
pub fn parse(text: &str) -> Result<Icf, IcfError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut icf = Icf::default();
    let mut i = 0;
    let mut in_specs = false;
    let mut found_section = false;
    while i < lines.len() {
        let l = lines[i];
        let n = i + 1;
        if starts_ci(l, "'ACCESS SPECIFICATIONS") {
            in_specs = true;
            found_section = true;
        } else if starts_ci(l, "'END access specifications") {
            in_specs = false;
        } else if in_specs && starts_ci(l, "'Access specification name") {
            let Some(value) = lines.get(i + 1).filter(|v| !is_comment(v)) else {
                return Err(icf_err(n, "an access specification name line follows this"));
            };
            let value = value.trim();
            let (name, assignment) = value.rsplit_once(',').unwrap_or((value, ""));
            i += 2;
            if !lines.get(i).is_some_and(|c| starts_ci(c, "'size")) {
                return Err(icf_err(
                    i + 1,
                    format!(
                        "expected the comment 'size,% of size,% reads,% random,delay,burst,align,reply after access specification {name:?}"
                    ),
                ));
            }
            i += 1;
            let mut spec = IcfSpec {
                name: name.trim().to_string(),
                default_assignment: assignment.trim().to_string(),
                lines: Vec::new(),
            };
            while let Some(d) = lines.get(i).filter(|d| !is_comment(d)) {
                if !d.trim().is_empty() {
                    spec.lines.push(parse_line(d, i + 1)?);
                }
                i += 1;
            }
            let total: u32 = spec.lines.iter().map(|l| l.of_size_percent).sum();
            if total != 100 {
                return Err(icf_err(
                    n,
                    format!(
                        "access specification {:?}: its lines' % of size add up to {total}, not 100",
                        spec.name
                    ),
                ));
            }
            icf.specs.push(spec);
            continue;
        } else if starts_ci(l, "'Worker") && !starts_ci(l, "'Worker type") {
            let name = lines.get(i + 1).map(|v| v.trim()).unwrap_or("");
            icf.workers.push(IcfWorker {
                name: name.to_string(),
                outstanding_ios: None,
                specs: Vec::new(),
            });
        } else if starts_ci(l, "'Number of outstanding IOs") {
            if let (Some(w), Some(v)) = (icf.workers.last_mut(), lines.get(i + 1)) {
                w.outstanding_ios = v
                    .trim()
                    .split(',')
                    .next()
                    .and_then(|x| x.trim().parse().ok());
            }
        } else if starts_ci(l, "'Assigned access specs") {
            i += 1;
            while let Some(s) = lines.get(i).filter(|s| !is_comment(s)) {
                if let Some(w) = icf.workers.last_mut()
                    && !s.trim().is_empty()
                {
                    w.specs.push(s.trim().to_string());
                }
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    if !found_section {
        return Err(icf_err(
            1,
            "no 'ACCESS SPECIFICATIONS section: is this an IOmeter .icf file?",
        ));
    }
    Ok(icf)
}

/// A workload name from an IOmeter specification name: lowercase letters, digits and dashes.
pub fn workload_name(spec: &str) -> String {
    let mut out = String::new();
    for c in spec.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "spec".into() } else { out }
}

fn fraction(percent: u32) -> String {
    format!("{:?}", percent as f64 / 100.0)
}

/// The study TOML of the file's access specifications: one `[workloads.NAME]` per
/// specification, with its `access-spec` lines. `source` names the file in comments.
pub fn to_toml(icf: &Icf, source: &str) -> Result<String, IcfError> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Access specifications of {source}, as storlab block workloads (IOmeter's model)."
    );
    let mut used = std::collections::BTreeSet::new();
    for spec in &icf.specs {
        if let Some(l) = spec.lines.iter().find(|l| l.reply_bytes > 0) {
            return Err(icf_err(
                0,
                format!(
                    "access specification {:?} has a reply of {} bytes (network targets): storlab has no equivalent",
                    spec.name, l.reply_bytes
                ),
            ));
        }
        let mut name = workload_name(&spec.name);
        let base = name.clone();
        let mut k = 2;
        while !used.insert(name.clone()) {
            name = format!("{base}-{k}");
            k += 1;
        }
        let _ = writeln!(out, "\n# IOmeter: {:?}", spec.name);
        let _ = writeln!(out, "[workloads.{name}]");
        let worker = icf
            .workers
            .iter()
            .find(|w| w.specs.iter().any(|s| s == &spec.name) && w.outstanding_ios.is_some());
        match worker.and_then(|w| w.outstanding_ios.map(|q| (w, q))) {
            Some((w, q)) => {
                let _ = writeln!(
                    out,
                    "queue-depth = {q}    # \"# of outstanding I/Os\" of worker {:?}",
                    w.name
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "# queue-depth: no worker of the file runs this specification (storlab's default: 1)"
                );
            }
        }
        for l in spec.lines.iter().filter(|l| l.of_size_percent > 0) {
            let _ = writeln!(out, "[[workloads.{name}.access-spec]]");
            let _ = writeln!(out, "spec-share = {}", fraction(l.of_size_percent));
            let _ = writeln!(out, "block-size = {}", l.size_bytes);
            let _ = writeln!(out, "read-share = {}", fraction(l.reads_percent));
            let _ = writeln!(out, "random-share = {}", fraction(l.random_percent));
            if l.align_bytes > 0 {
                let _ = writeln!(out, "alignment = {}", l.align_bytes);
            } else {
                let _ = writeln!(out, "# alignment: sector boundaries (512 bytes)");
            }
            let _ = writeln!(out, "burst-ios = {}", l.burst_ios.max(1));
            let _ = writeln!(out, "burst-delay = \"{}ms\"", l.delay_ms);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line whose first bytes end inside a character (fuzz/corpus/iometer-icf/crash-not-a-
    /// char-boundary.icf) is compared by bytes, not sliced as a str (which panicked).
    #[test]
    fn a_line_with_a_character_across_the_prefix_length_is_no_match() {
        assert!(!starts_ci("'Run \u{fffd}Time", "'Run T"));
        assert!(starts_ci("  'run time", "'Run T"));
        let text = "Version 1.1.0\n'Run \u{fffd}Time\n'Worker typ\u{fffd}e\n";
        // Panicked before: parse reads every line with starts_ci.
        let _ = parse(text);
    }

    const ICF: &str = "Version 1.1.0 \n\
'TEST SETUP ====================================================================\n\
'Test Description\n\
\t\n\
'Run Time\n\
'\thours      minutes    seconds\n\
\t0          0          10\n\
'ACCESS SPECIFICATIONS =========================================================\n\
'Access specification name,default assignment\n\
\tDefault,DISK\n\
'size,% of size,% reads,% random,delay,burst,align,reply\n\
\t2048,100,67,100,0,1,0,0\n\
'Access specification name,default assignment\n\
\tOLTP 64K mix,NONE\n\
'size,% of size,% reads,% random,delay,burst,align,reply\n\
\t65536,60,67,100,0,1,4096,0\n\
\t8192,40,100,0,5,4,0,0\n\
'END access specifications\n\
'MANAGER LIST ==================================================================\n\
'Manager ID, manager name\n\
\t1,CLIENT1\n\
'Worker\n\
\tWorker 1\n\
'Worker type\n\
\tDISK\n\
'Default target settings for worker\n\
'Number of outstanding IOs,test connection rate,transactions per connection,use fixed seed,fixed seed value\n\
\t12,DISABLED,1,DISABLED,0\n\
'End default target settings for worker\n\
'Assigned access specs\n\
\tOLTP 64K mix\n\
'End assigned access specs\n\
'End worker\n\
'END manager list\n\
Version 1.1.0 \n";

    #[test]
    fn access_specifications_and_worker_queue_depths_are_read() {
        let icf = parse(ICF).unwrap();
        assert_eq!(icf.specs.len(), 2);
        assert_eq!(icf.specs[0].name, "Default");
        assert_eq!(icf.specs[0].default_assignment, "DISK");
        assert_eq!(
            icf.specs[1].lines[1],
            IcfLine {
                size_bytes: 8192,
                of_size_percent: 40,
                reads_percent: 100,
                random_percent: 0,
                delay_ms: 5,
                burst_ios: 4,
                align_bytes: 0,
                reply_bytes: 0
            }
        );
        assert_eq!(icf.workers.len(), 1);
        assert_eq!(icf.workers[0].outstanding_ios, Some(12));
        assert_eq!(icf.workers[0].specs, vec!["OLTP 64K mix".to_string()]);
    }

    #[test]
    fn the_toml_is_a_valid_workload_with_the_same_lines() {
        let text = to_toml(&parse(ICF).unwrap(), "test.icf").unwrap();
        let table: toml::Table = toml::from_str(&text).expect(&text);
        let workloads = table["workloads"].as_table().unwrap();
        let oltp = workloads["oltp-64k-mix"].as_table().unwrap().clone();
        assert_eq!(oltp["queue-depth"].as_integer(), Some(12), "{text}");
        let w = crate::BlockWorkload::from_table(oltp).expect(&text);
        assert_eq!(w.access_spec.len(), 2);
        let l = &w.access_spec[1];
        assert_eq!(
            (l.spec_share, l.block_size.0, l.read_share),
            (0.4, 8192, 1.0)
        );
        assert_eq!((l.random_share, l.burst_ios), (0.0, 4));
        assert_eq!(l.burst_delay.0, std::time::Duration::from_millis(5));
        assert_eq!(l.alignment_bytes(), 512);
        assert_eq!(w.access_spec[0].alignment_bytes(), 4096);
        assert_eq!(w.block_size.0, 65536);
        // Not assigned to a worker: no queue depth, said in a comment.
        assert!(
            !workloads["default"]
                .as_table()
                .unwrap()
                .contains_key("queue-depth")
        );
        assert!(text.contains("# queue-depth: no worker"), "{text}");
    }

    #[test]
    fn bad_files_say_where() {
        let e = parse(&ICF.replace("65536,60,", "65536,50,")).unwrap_err();
        assert!(e.message.contains("add up to 90"), "{e}");
        assert_eq!(e.line, 13);
        let e = parse(&ICF.replace("8192,40,100,0,5,4,0,0", "8192,40,100,0,5")).unwrap_err();
        assert_eq!(e.line, 17);
        assert!(parse("just text\n").is_err());
        let e = to_toml(
            &parse(&ICF.replace("2048,100,67,100,0,1,0,0", "2048,100,67,100,0,1,0,512")).unwrap(),
            "x",
        )
        .unwrap_err();
        assert!(e.message.contains("reply of 512 bytes"), "{e}");
    }
}
