//! fio's buffer options: what written blocks hold. `buffer_compress_percentage`,
//! `buffer_compress_chunk`, `buffer_pattern`, `zero_buffers`, `refill_buffers`,
//! `scramble_buffers`, `dedupe_percentage`, `dedupe_mode` (`repeat`, fio's default, or
//! `working_set` with `dedupe_working_set_percentage` and `dedupe_global`), read in
//! order with fio 3.33's side effects (options.c: `buffer_pattern` turns scrambling and zero
//! buffers off and refills when the job reads or compresses; `dedupe_percentage` refills;
//! init.c: a compress percentage of 100 is zero buffers, any other refills unless
//! `refill_buffers` is given; a job scrambles unless zero buffers were asked for), then made
//! the workload's `write-buffers` ([`storlab_workload::buffers`], fio's algorithms). A job that
//! gives none of them writes storlab's own data (random blocks, each stamped with its offset
//! and a generation), as before.

use super::job::{Buffers, Job};
use super::parse::{Entry, LineError, parse_bool, parse_size};
use storlab_model::units::Bytes;
use storlab_workload::buffers::WriteBuffers;
use storlab_workload::working_set::WorkingSet;

fn value(e: &Entry) -> Result<&str, String> {
    e.value
        .as_deref()
        .ok_or_else(|| format!("option `{}` needs a value", e.name))
}

fn flag(e: &Entry) -> Result<bool, String> {
    parse_bool(e.value.as_deref())
        .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))
}

fn percent(e: &Entry) -> Result<u32, String> {
    let v = value(e)?;
    v.parse::<u32>()
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| format!("{}={v}: a whole percent from 0 to 100", e.name))
}

/// fio's `parse_and_fill_pattern` without formats (as fio's `buffer_pattern`): strings in
/// double quotes, hexadecimal `0x..` of any length, decimals in the int range (their bytes,
/// little-endian, as fio stores them), run together; at most 512 bytes. A file (`'name'`)
/// and `%o` are refused.
pub fn parse_pattern(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(s) = rest.strip_prefix('"') {
            let end = s.find('"').ok_or("a string without its closing quote")?;
            out.extend_from_slice(&s.as_bytes()[..end]);
            rest = &s[end + 1..];
        } else if rest.starts_with("0x") || rest.starts_with("0X") {
            let digits = &rest[2..];
            let mut n = digits
                .find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(digits.len());
            // fio's look-back: `0xff0x14` is two numbers.
            if digits[n..].starts_with(['x', 'X']) && n > 0 {
                n -= 1;
            }
            if n == 0 {
                return Err("`0x` without hexadecimal digits".into());
            }
            let hex = &digits[..n];
            // An odd count: the first digit is a byte alone, as fio reads it.
            let (head, tail) = hex.split_at(n % 2);
            for h in [head].into_iter().filter(|h| !h.is_empty()) {
                out.push(u8::from_str_radix(h, 16).map_err(|e| e.to_string())?);
            }
            for i in (0..tail.len()).step_by(2) {
                out.push(u8::from_str_radix(&tail[i..i + 2], 16).map_err(|e| e.to_string())?);
            }
            rest = &digits[n..];
        } else if rest.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            let end = rest[1..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(rest.len(), |i| i + 1);
            let end = rest[..end].find("0x").filter(|&i| i > 0).unwrap_or(end);
            let n: i64 = rest[..end]
                .parse()
                .map_err(|_| format!("`{}` is not a number", &rest[..end]))?;
            let n = i32::try_from(n).map_err(|_| format!("{n} is outside the int range"))?;
            if n == 0 {
                out.push(0);
            } else {
                let mut v = n as u32;
                while v != 0 {
                    out.push((v & 0xff) as u8);
                    v >>= 8;
                }
            }
            rest = &rest[end..];
        } else if rest.starts_with('\'') || rest.starts_with('%') {
            return Err(
                "patterns from files ('name') and formats (%o) are not supported by storlab fio"
                    .into(),
            );
        } else {
            return Err(format!("`{rest}` is not a string, number or 0x.. bytes"));
        }
    }
    if out.is_empty() || out.len() > 512 {
        return Err("from 1 to 512 bytes (fio's limit)".into());
    }
    Ok(out)
}

/// Applies one buffer option (`canonical` is fio's name for it), with fio's side effects.
/// False when it is none of these.
pub fn apply_buffers(job: &mut Job, e: &Entry, canonical: &str, kb: u64) -> Result<bool, String> {
    if canonical == "mem" {
        job.buffers.pages = Some(memory(e)?);
        return Ok(true);
    }
    let b = &mut job.buffers;
    match canonical {
        "buffer_compress_percentage" => {
            b.compress_percentage = percent(e)?;
            b.compress_flag = true;
        }
        "buffer_compress_chunk" => {
            let v = value(e)?;
            b.chunk = Some(parse_size(v, kb).map_err(|m| format!("{}={v}: {m}", e.name))?);
        }
        "dedupe_percentage" => {
            b.dedupe_percentage = percent(e)?;
            b.compress_flag = true;
            b.refill.0 = true;
        }
        "dedupe_mode" => {
            b.dedupe_working_set = match value(e)? {
                "repeat" => None,
                "working_set" => Some(e.line),
                v => {
                    return Err(format!(
                        "{}={v}: fio's modes are repeat and working_set",
                        e.name
                    ));
                }
            }
        }
        "dedupe_working_set_percentage" => b.dedupe_working_set_percent = Some(percent(e)?),
        "dedupe_global" => b.dedupe_global = flag(e)?,
        "buffer_pattern" => {
            let v = value(e)?;
            b.pattern = parse_pattern(v).map_err(|m| format!("{}={v}: {m}", e.name))?;
            b.pattern_refill_reads = true;
            b.refill.0 = b.compress_percentage > 0;
            b.scramble.0 = Some(false);
            b.zero.0 = false;
        }
        "refill_buffers" => {
            b.refill = (flag(e)?, true);
            b.pattern_refill_reads = false;
        }
        "scramble_buffers" => b.scramble = (Some(flag(e)?), true),
        "zero_buffers" => b.zero = (flag(e)?, true),
        _ => return Ok(false),
    }
    job.buffers.given = true;
    Ok(true)
}

/// fio's `mem`/`iomem` as the file target's `buffer-pages`: fio's huge-page kinds (with an
/// optional `:FILE`) in huge pages, its other kinds in base pages.
fn memory(e: &Entry) -> Result<&'static str, String> {
    let v = value(e)?;
    let kind = v.split_once(':').map_or(v, |(k, _)| k);
    match kind {
        "malloc" | "shm" | "mmap" | "mmapshared" => Ok("base"),
        "mmaphuge" | "shmhuge" => Ok("huge"),
        _ => Err(format!(
            "{}={v}: not supported by storlab fio (malloc, shm, mmap, mmapshared: 4 KiB pages; mmaphuge, shmhuge: huge pages)",
            e.name
        )),
    }
}

/// The target's `buffer-pages` from `mem`, when the job gives it.
pub fn target_keys(job: &Job, tt: &mut toml::Table) {
    if let Some(p) = job.buffers.pages {
        tt.insert("buffer-pages".into(), p.into());
    }
}

impl Buffers {
    /// The workload's `write-buffers`: None when the job gives no buffer option (storlab's
    /// own data). `reads`: the job reads (a pattern is then refilled for every write, as
    /// fio does so that reads do not spoil it).
    pub fn write_buffers(&self, reads: bool) -> Option<WriteBuffers> {
        if !self.given {
            return None;
        }
        let mut refill = self.refill.0 || (self.pattern_refill_reads && reads);
        let (mut zero, mut compress) = (self.zero.0, self.compress_percentage);
        // init.c fixup_options.
        if compress == 100 {
            zero = true;
            compress = 0;
        } else if compress > 0 && !self.refill.1 {
            refill = true;
        }
        // init.c td_set_flags, and get_io_u: scrambled when not refilled nor compressed.
        let scramble_opt = self.scramble.0.unwrap_or(true);
        let scramble_flag = scramble_opt && (self.scramble.1 || !(self.zero.0 && self.zero.1));
        let scramble = scramble_flag && !refill && !self.compress_flag;
        Some(WriteBuffers {
            compress_percentage: compress,
            compress_chunk: Bytes(self.chunk.unwrap_or(512)),
            dedupe_percentage: self.dedupe_percentage,
            pattern: self.pattern.clone(),
            zero,
            refill,
            scramble,
            dedupe_working_set: self.working_set(),
        })
    }

    /// The working set of `dedupe_mode=working_set` (with a dedupe percentage).
    fn working_set(&self) -> Option<WorkingSet> {
        self.dedupe_working_set
            .filter(|_| self.dedupe_percentage > 0)
            .map(|_| WorkingSet {
                percent: self.dedupe_working_set_percent.unwrap_or(5),
                global: self.dedupe_global,
            })
    }
}

/// What fio 3.33 refuses of a dedupe working set (init.c `fixup_options`): no `size`, more
/// than one file, or a working set and a dedupe percentage above 100 together.
pub fn check(job: &Job) -> Vec<LineError> {
    let b = &job.buffers;
    let (Some(line), Some(ws)) = (b.dedupe_working_set, b.working_set()) else {
        return Vec::new();
    };
    let problem = if job.size.is_none() {
        Some("a dedupe working set needs size (fio: \"pregenerated dedupe working set requires size to be set\")".to_string())
    } else if job.files.set() {
        Some("a dedupe working set takes one file per job, as fio's".to_string())
    } else if ws.percent + b.dedupe_percentage > 100 {
        Some(format!(
            "dedupe_percentage={} and dedupe_working_set_percentage={} add up to above 100: the working set's pages are unique (fio: \"impossible to reach expected dedupe percentage\")",
            b.dedupe_percentage, ws.percent
        ))
    } else {
        None
    };
    problem
        .map(|m| LineError {
            file: job.file.clone(),
            line,
            message: format!("job `{}`: {m}", job.name),
        })
        .into_iter()
        .collect()
}

/// What storlab does otherwise than fio with the job's buffers.
pub fn notes(job: &Job) -> Vec<String> {
    let b = &job.buffers;
    if b.dedupe_global && b.working_set().is_none() {
        return vec![format!(
            "job `{}`: dedupe_global taken: it acts only with dedupe_mode=working_set and a dedupe_percentage, as in fio",
            job.name
        )];
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn buffers(text: &str) -> Option<WriteBuffers> {
        let j = resolve(&parse("job.fio", text, &|_| None).unwrap())
            .unwrap()
            .remove(0);
        j.buffers.write_buffers(!matches!(
            j.rw,
            crate::fio::Rw::Write | crate::fio::Rw::RandWrite
        ))
    }

    #[test]
    fn mem_picks_the_buffer_pages() {
        let pages = |text: &str| {
            resolve(&parse("job.fio", text, &|_| None).unwrap())
                .map(|mut j| j.remove(0).buffers.pages)
        };
        assert_eq!(pages("[a]\nrw=read\n").unwrap(), None);
        assert_eq!(pages("[a]\nmem=malloc\n").unwrap(), Some("base"));
        assert_eq!(
            pages("[a]\niomem=mmaphuge:/huge/f\n").unwrap(),
            Some("huge")
        );
        assert_eq!(pages("[a]\nmem=shmhuge\n").unwrap(), Some("huge"));
        let e = pages("[a]\nmem=cudamalloc\n").unwrap_err();
        assert!(
            format!("{e:?}").contains("mem=cudamalloc: not supported"),
            "{e:?}"
        );
    }

    #[test]
    fn patterns_are_read_as_fio_reads_them() {
        // fio's own examples (lib/pattern.c).
        assert_eq!(parse_pattern("\"abcd\"").unwrap(), b"abcd");
        assert_eq!(parse_pattern("-1024").unwrap(), [0x00, 0xfc, 0xff, 0xff]);
        assert_eq!(parse_pattern("66").unwrap(), [0x42]);
        assert_eq!(parse_pattern("0xFF0X1").unwrap(), [0xff, 0x01]);
        assert_eq!(
            parse_pattern("\"123\"0xFFeeCC").unwrap(),
            [0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]
        );
        assert_eq!(
            parse_pattern("0xdeadbeef").unwrap(),
            [0xde, 0xad, 0xbe, 0xef]
        );
        assert!(parse_pattern("'file'").is_err());
        assert!(parse_pattern("%o").is_err());
        assert!(parse_pattern("\"abc").is_err());
    }

    #[test]
    fn fios_side_effects_decide_refill_and_scramble() {
        assert_eq!(buffers("[a]\nrw=write\n"), None);
        // A compress percentage refills unless refill_buffers is given; no scrambling.
        let b = buffers("[a]\nrw=write\nbuffer_compress_percentage=50\n").unwrap();
        assert_eq!(
            (b.compress_percentage, b.refill, b.scramble),
            (50, true, false)
        );
        assert_eq!(b.compress_chunk, Bytes(512));
        let b = buffers("[a]\nrw=write\nbuffer_compress_percentage=50\nrefill_buffers=0\nbuffer_compress_chunk=4k\n").unwrap();
        assert_eq!(
            (b.refill, b.scramble, b.compress_chunk),
            (false, false, Bytes(4096))
        );
        // 100 is zero buffers.
        let b = buffers("[a]\nrw=write\nbuffer_compress_percentage=100\n").unwrap();
        assert_eq!((b.compress_percentage, b.zero, b.refill), (0, true, false));
        // Dedupe refills; a pattern stops scrambling, and refills when the job reads.
        assert!(
            buffers("[a]\nrw=write\ndedupe_percentage=30\n")
                .unwrap()
                .refill
        );
        let b = buffers("[a]\nrw=write\nbuffer_pattern=0xab\n").unwrap();
        assert_eq!(
            (b.pattern.clone(), b.refill, b.scramble),
            (vec![0xab], false, false)
        );
        assert!(
            buffers("[a]\nrw=randrw\nbuffer_pattern=0xab\n")
                .unwrap()
                .refill
        );
        // zero_buffers given: no scrambling unless scramble_buffers is given too.
        let b = buffers("[a]\nrw=write\nzero_buffers\n").unwrap();
        assert_eq!((b.zero, b.scramble), (true, false));
        let b = buffers("[a]\nrw=write\nzero_buffers\nscramble_buffers=1\n").unwrap();
        assert!(b.scramble);
        // refill_buffers alone: fresh random blocks.
        let b = buffers("[a]\nrw=write\nrefill_buffers\n").unwrap();
        assert_eq!((b.refill, b.scramble, b.zero), (true, false, false));
        let e = resolve(
            &parse(
                "job.fio",
                "[a]\ndedupe_mode=other\ndedupe_percentage=101\n",
                &|_| None,
            )
            .unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn a_dedupe_working_set_is_taken_and_refused_where_fio_refuses_it() {
        let b = buffers("[a]\nrw=write\nsize=1m\ndedupe_percentage=50\ndedupe_mode=working_set\ndedupe_global=1\n").unwrap();
        let ws = b.dedupe_working_set.unwrap();
        assert_eq!((ws.percent, ws.global), (5, true));
        let b = buffers(
            "[a]\nrw=write\nsize=1m\ndedupe_percentage=50\ndedupe_working_set_percentage=30\n",
        )
        .unwrap();
        assert_eq!(b.dedupe_working_set, None, "repeat, fio's default");
        let refused = |text: &str| {
            resolve(&parse("job.fio", text, &|_| None).unwrap()).unwrap_err()[0]
                .message
                .clone()
        };
        let ws = "dedupe_mode=working_set\ndedupe_percentage=60\n";
        assert!(refused(&format!("[a]\n{ws}")).contains("needs size"));
        assert!(refused(&format!("[a]\nsize=1m\nnrfiles=2\n{ws}")).contains("one file"));
        assert!(
            refused(&format!(
                "[a]\nsize=1m\n{ws}dedupe_working_set_percentage=50\n"
            ))
            .contains("above 100")
        );
        let j = resolve(&parse("job.fio", "[a]\ndedupe_global=1\n", &|_| None).unwrap()).unwrap();
        assert!(notes(&j[0])[0].contains("acts only with dedupe_mode=working_set"));
    }
}
