//! fio's size and pacing options (issue 29 part 4b): block size ranges (`bsrange`, `bs=A-B`,
//! per direction `A-B,C-D`, `bs_unaligned`), the `rw=...:N` offset modifier and
//! `rw_sequencer`, how much a job does (`loops`, `io_size`, `number_ios`), `startdelay`, and
//! think time (`thinktime`, `thinktime_blocks`, `thinktime_spin`, `thinktime_blocks_type`,
//! `rate_ignore_thinktime`). They become the block workload's `block-size-range`,
//! `offset-skip`, `random-run`, `start-delay` and `think-time` keys
//! ([`storlab_workload::block::pattern`]) and the step's operation count ([`transfers`]).

use std::time::Duration;

use super::job::{Job, RwModifier};
use super::parse::{Entry, LineError, parse_bool, parse_size, parse_time};

fn need(e: &Entry) -> Result<&str, String> {
    e.value
        .as_deref()
        .ok_or_else(|| format!("option `{}` needs a value", e.name))
}

fn whole(e: &Entry) -> Result<u64, String> {
    let v = need(e)?;
    v.trim()
        .parse()
        .map_err(|_| format!("{}={v}: expected a whole number", e.name))
}

/// A fio time whose plain number is microseconds (`thinktime`, `thinktime_spin`).
fn micros(e: &Entry) -> Result<Duration, String> {
    let v = need(e)?;
    let t = v.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(Duration::from_micros(n));
    }
    parse_time(t).map_err(|m| format!("{}={v}: {m}", e.name))
}

/// `bs=` (`range` false) or `bsrange=` (`range` true) value, per direction as fio 3.33's
/// parser reads it (parse.c): `bs` takes a size, or a `read,write` pair, whose separator may
/// also be `:` or `-` (`bs=4k-16k` is reads of 4k and writes of 16k, not a range);
/// `bsrange` takes a range `A-B` (or `A:B`), or a `read,write` pair of them. An empty part
/// keeps that direction's size.
pub fn apply_bs(job: &mut Job, e: &Entry, kb: u64, range: bool) -> Result<(), String> {
    let v = need(e)?;
    let bad = |m: String| format!("{}={v}: {m}", e.name);
    let mut dirs = job.sizes_opts.range.unwrap_or([(job.bs, job.bs); 2]);
    let parts: Vec<&str> = if range || v.contains(',') {
        v.split(',').collect()
    } else if let Some(sep) = [':', '-'].into_iter().find(|c| v.contains(*c)) {
        v.split(sep).collect()
    } else {
        vec![v]
    };
    if parts.len() > 3 || parts.get(2).is_some_and(|p| !p.trim().is_empty()) {
        return Err(bad(
            "a third (trim) size is not supported by storlab fio: storlab does not trim".into(),
        ));
    }
    for (i, p) in parts.iter().take(2).enumerate() {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let (lo, hi) = if range {
            let (a, b) = p
                .split_once('-')
                .or_else(|| p.split_once(':'))
                .ok_or_else(|| bad(format!("`{p}` is not a range (low-high)")))?;
            let (a, b) = (
                parse_size(a, kb).map_err(bad)?,
                parse_size(b, kb).map_err(bad)?,
            );
            // fio swaps a range written high first.
            (a.min(b), a.max(b))
        } else {
            let b = parse_size(p, kb).map_err(bad)?;
            (b, b)
        };
        if lo == 0 {
            return Err(bad("a block size above 0".into()));
        }
        dirs[i] = (lo, hi);
        if parts.len() == 1 {
            dirs[1] = (lo, hi);
        }
    }
    job.bssplit.clear();
    job.bssplit_write = None;
    if dirs[0] == dirs[1] && dirs[0].0 == dirs[0].1 {
        job.bs = dirs[0].0;
        job.sizes_opts.range = None;
    } else {
        job.bs = dirs[0].1.max(dirs[1].1);
        job.sizes_opts.range = Some(dirs);
    }
    Ok(())
}

/// `rw=MODE:N`'s N: a size for sequential modes, a count for random ones (fio's
/// `str_rw_cb`).
pub fn modifier(random: bool, text: &str, kb: u64) -> Result<RwModifier, String> {
    if random {
        let n: u32 = text
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: a random mode's modifier is a number of I/Os"))?;
        if n == 0 {
            return Err(format!("`{text}`: at least 1 I/O per random offset"));
        }
        Ok(RwModifier::Every(n))
    } else {
        match text.trim().strip_prefix('-') {
            Some(back) => Ok(RwModifier::Back(parse_size(back, kb)?)),
            None => Ok(RwModifier::Skip(parse_size(text, kb)?)),
        }
    }
}

/// Applies one of this module's options; false when `e` is none of them.
pub fn apply_sizes(job: &mut Job, e: &Entry, canonical: &str, kb: u64) -> Result<bool, String> {
    let name = e.name.as_str();
    let flag = |e: &Entry| {
        parse_bool(e.value.as_deref())
            .map_err(|m| format!("{name}={}: {m}", e.value.as_deref().unwrap_or("")))
    };
    let o = &mut job.sizes_opts;
    match canonical {
        "bsrange" => apply_bs(job, e, kb, true)?,
        "bs_unaligned" => o.unaligned = flag(e)?,
        "rw_sequencer" => {
            o.identical = match need(e)? {
                "sequential" => false,
                "identical" => true,
                other => return Err(format!("{name}={other}: sequential or identical")),
            }
        }
        "loops" => {
            let n = whole(e)?;
            if n == 0 {
                return Err(format!("{name}=0: at least 1"));
            }
            o.loops = Some(n);
        }
        "io_size" => {
            let v = need(e)?;
            if v.trim().ends_with('%') {
                return Err(format!(
                    "{name}={v}: a percent of the file is not supported by storlab fio: give bytes"
                ));
            }
            let b = parse_size(v, kb).map_err(|m| format!("{name}={v}: {m}"))?;
            o.io_size = (b > 0).then_some(b);
        }
        "number_ios" => {
            let n = whole(e)?;
            o.number_ios = (n > 0).then_some(n);
        }
        "startdelay" => {
            let v = need(e)?;
            let t = |s: &str| parse_time(s).map_err(|m| format!("{name}={v}: {m}"));
            o.start_delay = Some(match v.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (t(a)?, t(b)?);
                    (a.min(b), a.max(b))
                }
                None => (t(v)?, t(v)?),
            });
        }
        "thinktime" => o.think = micros(e)?,
        "thinktime_spin" => o.think_spin = micros(e)?,
        "thinktime_blocks" => {
            let n = whole(e)?;
            if n == 0 {
                return Err(format!("{name}=0: at least 1"));
            }
            o.think_blocks = Some(n);
        }
        "thinktime_blocks_type" => {
            o.think_on_issue = match need(e)? {
                "complete" => false,
                "issue" => true,
                other => return Err(format!("{name}={other}: complete or issue")),
            }
        }
        "thinktime_iotime" => {
            if !micros(e)?.is_zero() {
                return Err(format!(
                    "{name}: not supported by storlab fio: its think time comes after a number of I/Os (thinktime_blocks); a time of I/O between pauses needs a clock in the operation source, which storlab's has not"
                ));
            }
        }
        "rate_ignore_thinktime" => o.ignore_think_for_rate = flag(e)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn line_error(job: &Job, message: String) -> LineError {
    LineError {
        file: job.file.clone(),
        line: job.line,
        message,
    }
}

/// The pattern options are given (the workload needs storlab's pattern source).
fn patterned(job: &Job) -> bool {
    let o = &job.sizes_opts;
    o.range.is_some()
        || o.modifier.is_some()
        || o.start_delay.is_some_and(|d| !d.1.is_zero())
        || !o.think.is_zero()
}

/// What a resolved job cannot combine.
pub fn check(job: &Job) -> Vec<LineError> {
    let o = &job.sizes_opts;
    let name = &job.name;
    let mut errors = Vec::new();
    let mut refuse = |m: String| errors.push(line_error(job, format!("job `{name}`: {m}")));
    if (patterned(job) || !job.bssplit.is_empty()) && job.verify {
        refuse("verify with bssplit, a block size range, `rw=...:N`, startdelay or thinktime is not supported by storlab fio: its verified blocks are whole blocks of bs".into());
    }
    if o.unaligned && job.direct && o.range.is_some() {
        refuse("bs_unaligned with direct=1: sizes that are not multiples of the sector fail under O_DIRECT (fio 3.33 warns `bs_unaligned may not work with raw io` and its I/Os fail with EINVAL); use buffered I/O".into());
    }
    if job.time_based && (o.io_size.is_some() || o.number_ios.is_some()) {
        refuse("io_size or number_ios with time_based is not supported by storlab fio: a time_based job is bounded by its runtime".into());
    }
    if o.think_spin > o.think && !o.think.is_zero() {
        refuse("thinktime_spin above thinktime: the spin is part of the think time".into());
    }
    errors
}

/// I/Os of one sweep of `size` bytes with holes of `skip` after each I/O of `bs`, as fio's
/// `get_next_seq_offset` sweeps: None when the sweep wraps to the start (the hole after the
/// last I/O that fits reaches the end) and goes on until the byte limit; else the sweep ends
/// (its last I/O ends at the end, or the next would not fit) and so does the pass.
fn sweep(size: f64, bs: f64, skip: f64) -> Option<u64> {
    if size < bs {
        return Some(1);
    }
    let stride = bs + skip;
    let n = ((size - bs) / stride).floor() as u64 + 1;
    let last_end = (n - 1) as f64 * stride + bs;
    let wraps = last_end + 0.5 < size && n as f64 * stride >= size;
    (!wraps).then_some(n)
}

/// I/Os one clone of a size-bounded job does on `size` bytes, as fio 3.33 counts them
/// (backend.c `keep_running`, `io_bytes_exceeded`; checked against its `write_iolog`): a
/// loop does `size / bs` I/Os, or `io_size / bs`, or fewer when a sweep with holes ends at
/// the file's end; without loops, `io_size` bytes (passes start again); with loops, each loop
/// at most that, then more while fewer than `io_size` bytes were done; at most `number_ios`
/// times `loops`.
pub fn transfers(job: &Job, size: u64) -> u64 {
    let o = &job.sizes_opts;
    let mean = job.mean_bs().max(1.0);
    // One block size: fio issues whole blocks only, none past the region's end (size=1m
    // with bs=2300 is 455 writes, checked with fio 3.33). Drawn sizes: the bytes over the
    // mean draw, the last I/O counted whole.
    let fixed = o.range.is_none() && job.bssplit.is_empty();
    let count = |bytes: u64| {
        let n = bytes as f64 / mean;
        (if fixed { n.floor() } else { n.ceil() } as u64).max(1)
    };
    let pass = match o.modifier {
        Some(RwModifier::Skip(skip)) if skip > 0 && !job.rw.random() => {
            sweep(size as f64, mean, skip as f64)
        }
        _ => Some(count(size)),
    };
    let limit = count(o.io_size.unwrap_or(size));
    let per_loop = pass.map_or(limit, |p| p.min(limit));
    let loops = o.loops.unwrap_or(1);
    let mut total = match o.io_size {
        Some(_) if loops == 1 => limit,
        Some(io) => {
            let mut t = per_loop * loops;
            while (t as f64) * mean < io as f64 {
                t += per_loop;
            }
            t
        }
        None => per_loop * loops,
    };
    if let Some(n) = o.number_ios {
        total = total.min(n * loops);
    }
    total.max(1)
}

/// The seed-drawn value of a `startdelay` range: the same on every run (drawn from the job's
/// name), whole milliseconds.
fn start_delay(job: &Job) -> Option<Duration> {
    let (lo, hi) = job.sizes_opts.start_delay?;
    if hi <= lo {
        return (!lo.is_zero()).then_some(lo);
    }
    let h = job.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let span = (hi - lo).as_millis() as u64 + 1;
    Some(lo + Duration::from_millis(h % span))
}

fn dur(d: Duration) -> toml::Value {
    format!("{}us", d.as_micros()).into()
}

/// The block workload's keys for these options (the plain workload, not bssplit's).
pub fn workload_keys(job: &Job, w: &mut toml::Table) {
    let o = &job.sizes_opts;
    if let Some([r, wr]) = o.range {
        let mut t = toml::Table::new();
        t.insert("min".into(), (r.0 as i64).into());
        t.insert("max".into(), (r.1 as i64).into());
        if wr != r {
            t.insert("write-min".into(), (wr.0 as i64).into());
            t.insert("write-max".into(), (wr.1 as i64).into());
        }
        if o.unaligned {
            t.insert("unaligned".into(), true.into());
        }
        w.insert("block-size-range".into(), t.into());
        w.remove("block-size");
    }
    match o.modifier {
        Some(RwModifier::Skip(s)) if s > 0 => {
            w.insert("offset-skip".into(), (s as i64).into());
        }
        Some(RwModifier::Back(s)) if s > 0 => {
            w.insert("offset-back".into(), (s as i64).into());
        }
        Some(RwModifier::Every(n)) if n > 1 => {
            let mut t = toml::Table::new();
            t.insert("ios".into(), (n as i64).into());
            if o.identical {
                t.insert("offsets".into(), "identical".into());
            }
            w.insert("random-run".into(), t.into());
        }
        _ => {}
    }
    if !o.think.is_zero() {
        let mut t = toml::Table::new();
        t.insert("time".into(), dur(o.think));
        t.insert(
            "every-ios".into(),
            (o.think_blocks.unwrap_or(1) as i64).into(),
        );
        if !o.think_spin.is_zero() {
            t.insert("spin".into(), dur(o.think_spin));
        }
        if o.ignore_think_for_rate {
            t.insert("ignore-for-rate".into(), true.into());
        }
        w.insert("think-time".into(), t.into());
    }
    if let Some(d) = start_delay(job) {
        w.insert("start-delay".into(), dur(d));
    }
}

/// What storlab does otherwise than fio with these options, said and stored.
pub fn notes(job: &Job) -> Vec<String> {
    let o = &job.sizes_opts;
    let name = &job.name;
    let mut notes = Vec::new();
    let size_bounded = !job.time_based;
    let what = if o.range.is_some() {
        "block size range"
    } else {
        "bssplit"
    };
    let drawn = o.range.is_some() || !job.bssplit.is_empty();
    if drawn && job.rw.random() {
        notes.push(format!(
            "job `{name}`: {what} in random I/O: sizes drawn as fio draws them with norandommap; without it fio's random map cuts an I/O that would overlap blocks already done, so its sizes fall toward the smallest"
        ));
    }
    if drawn && size_bounded {
        notes.push(format!(
            "job `{name}`: {what}: the job is bounded by {} I/Os, its bytes over the mean of fio's size draw ({:.0} bytes); fio stops at the bytes themselves",
            job.size.map_or(0, |s| transfers(job, s)),
            job.mean_bs()
        ));
    }
    if o.loops.is_some_and(|l| l > 1) && size_bounded {
        notes.push(format!(
            "job `{name}`: loops={}: one run of all the passes' I/Os (each sequential pass starts again at the file's start), not one run per loop; fio's random map is not reset (storlab draws with replacement)",
            o.loops.unwrap_or(1)
        ));
    }
    if let Some((lo, hi)) = o.start_delay.filter(|(lo, hi)| hi > lo) {
        notes.push(format!(
            "job `{name}`: startdelay={}-{} ms: {} ms, drawn from the job's name, the same on every run (fio draws it per run)",
            lo.as_millis(),
            hi.as_millis(),
            start_delay(job).map_or(0, |d| d.as_millis())
        ));
    }
    if !o.think.is_zero() {
        notes.push(format!(
            "job `{name}`: thinktime: the pause comes before the I/O after every thinktime_blocks I/Os, not after the job's last I/O (fio pauses after it too)"
        ));
        if !o.think_on_issue && job.iodepth > 1 && !job.engine.runs_on().one_at_a_time() {
            notes.push(format!(
                "job `{name}`: thinktime_blocks_type=complete with iodepth={}: storlab counts issued I/Os (fio's `issue`); fio counts completions, so its pauses come a few I/Os later",
                job.iodepth
            ));
        }
        if job.rates.ops_per_second(job).is_some() && !o.ignore_think_for_rate {
            notes.push(format!(
                "job `{name}`: thinktime with a rate: after each pause the starts due meanwhile are issued at once (fio's catch-up); their latency from the intended start includes the pause"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn job(text: &str) -> Job {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
            .unwrap()
            .remove(0)
    }

    #[test]
    fn ranges_and_pairs_per_direction() {
        let j = job("[a]\nbsrange=1k-4k,2k-8k\n");
        assert_eq!(j.sizes_opts.range, Some([(1024, 4096), (2048, 8192)]));
        assert_eq!(j.bs, 8192);
        let j = job("[a]\nbsrange=16k-4k\n");
        assert_eq!(j.sizes_opts.range, Some([(4096, 16384); 2]));
        // fio 3.33 reads `bs=4k-16k` as reads of 4k and writes of 16k (parse.c: `-` and `:`
        // separate the directions as `,` does), as its write_iolog shows.
        let j = job("[a]\nbs=4k-16k\n");
        assert_eq!(j.sizes_opts.range, Some([(4096, 4096), (16384, 16384)]));
        let j = job("[a]\nbs=4k:8k\n");
        assert_eq!(j.sizes_opts.range, Some([(4096, 4096), (8192, 8192)]));
        let j = job("[a]\nbs=4k,8k\n");
        assert_eq!(j.sizes_opts.range, Some([(4096, 4096), (8192, 8192)]));
        let j = job("[a]\nbsrange=4k-8k\nbs=4k\n");
        assert_eq!((j.bs, j.sizes_opts.range), (4096, None));
        assert!((j.mean_bs() - 4096.0).abs() < 1e-9);
        let j = job("[a]\nrw=randrw\nrwmixread=50\nbsrange=4k-16k,8k-8k\n");
        assert!((j.mean_bs() - (10240.0 + 8192.0) / 2.0).abs() < 1e-6);
    }

    #[test]
    fn io_counts_follow_fio() {
        // Each against fio 3.33's write_iolog (ioengine=null, bs=4k, size=16k: a pass of 4).
        let n = |extra: &str| {
            let j = job(&format!("[a]\nbs=4k\nsize=16k\nrw=read\n{extra}"));
            transfers(&j, 16384)
        };
        assert_eq!(n(""), 4);
        assert_eq!(n("loops=2\n"), 8);
        assert_eq!(n("io_size=40k\n"), 10);
        assert_eq!(n("io_size=24k\nloops=2\n"), 8);
        assert_eq!(n("io_size=24k\nloops=3\n"), 12);
        assert_eq!(n("io_size=8k\nloops=2\n"), 4);
        assert_eq!(n("io_size=40k\nloops=2\n"), 12);
        assert_eq!(n("number_ios=3\nloops=2\n"), 6);
        assert_eq!(n("number_ios=6\nloops=3\n"), 12);
        assert_eq!(n("io_size=40k\nnumber_ios=5\nloops=2\n"), 10);
        let holes = |extra: &str, size: u64| {
            let j = job(&format!("[a]\nbs=4k\nrw=read:8k\n{extra}"));
            transfers(&j, size)
        };
        assert_eq!(holes("", 64 << 10), 6);
        assert_eq!(holes("", 62 << 10), 5);
        assert_eq!(holes("loops=2\n", 64 << 10), 12);
        // The hole after the last I/O reaches the end: fio wraps and goes on to size bytes.
        let j = job("[a]\nbs=4k\nrw=write:4k\n");
        assert_eq!(transfers(&j, 1 << 20), 256);
        assert_eq!(holes("io_size=40k\n", 64 << 10), 10);
    }

    #[test]
    fn modifiers_sequencer_and_think_time_become_workload_keys() {
        let j = job(
            "[a]\nrw=randread:8\nrw_sequencer=identical\nthinktime=500\nthinktime_blocks=4\nthinktime_spin=100\nstartdelay=1-3\n",
        );
        assert_eq!(j.sizes_opts.modifier, Some(RwModifier::Every(8)));
        let mut w = toml::Table::new();
        workload_keys(&j, &mut w);
        let text = toml::to_string(&w).unwrap();
        assert!(
            text.contains("ios = 8") && text.contains("offsets = \"identical\""),
            "{text}"
        );
        assert!(
            text.contains("time = \"500us\"") && text.contains("every-ios = 4"),
            "{text}"
        );
        assert!(text.contains("spin = \"100us\""), "{text}");
        let d = start_delay(&j).unwrap();
        assert!(d >= Duration::from_secs(1) && d <= Duration::from_secs(3));
        let j = job("[a]\nrw=write:4k\n");
        assert_eq!(j.sizes_opts.modifier, Some(RwModifier::Skip(4096)));
        // A later rw line without a modifier drops it, as fio's.
        assert_eq!(job("[a]\nrw=read:4k\nrw=read\n").sizes_opts.modifier, None);
    }

    #[test]
    fn the_stored_study_has_the_keys_and_says_the_differences() {
        let f = crate::fio::from_text(
            "job.fio",
            "[global]\nioengine=null\nsize=1m\n[a]\nrw=randrw\nbsrange=1k-4k,8k-16k\nbs_unaligned\nthinktime=1ms\nthinktime_blocks=8\nloops=2\n[b]\nstonewall\nrw=write:4k\nstartdelay=10ms-20ms\n",
            &|_| None,
        )
        .unwrap();
        let p = crate::fio::plan::build(vec![f]).unwrap();
        let study = crate::parse("fio.toml", &p.study_text).unwrap();
        let w = study.runs[0].targets[0].workload.as_block().unwrap();
        let r = w.block_size_range.unwrap();
        assert_eq!(
            (r.min.0, r.max.0, r.write_max.map(|b| b.0)),
            (1024, 4096, Some(16384))
        );
        assert!(r.unaligned);
        assert_eq!(w.block_size.0, 16384);
        assert_eq!(w.think_time.map(|t| t.every_ios), Some(8));
        let b = study.runs[1].targets[0].workload.as_block().unwrap();
        assert_eq!(b.offset_skip.map(|s| s.0), Some(4096));
        let delay = b.start_delay.map_or(Duration::ZERO, |d| d.0);
        assert!(
            (Duration::from_millis(10)..=Duration::from_millis(20)).contains(&delay),
            "{delay:?}"
        );
        // 1 MiB of 4 KiB writes with 4 KiB holes: the sweep wraps, 256 I/Os as fio's.
        assert_eq!(study.runs[1].ops, Some(256));
        for said in [
            "# substitution: job `a`: loops=2: one run",
            "# substitution: job `a`: block size range",
            "# substitution: job `b`: startdelay=10-20 ms: ",
        ] {
            assert!(p.study_text.contains(said), "{said}: {}", p.study_text);
        }
    }

    #[test]
    fn what_cannot_be_honoured_is_refused() {
        let e = |t: &str| {
            resolve(&parse("job.fio", t, &|_| None).unwrap())
                .unwrap_err()
                .remove(0)
                .message
        };
        assert!(e("[a]\nthinktime_iotime=1s\n").contains("thinktime_iotime"));
        assert!(e("[a]\nbsrange=1k-4k\nbs_unaligned\ndirect=1\n").contains("EINVAL"));
        assert!(e("[a]\nrw=randwrite\nbssplit=4k/50:8k/50\nverify=crc32c\n").contains("bssplit"));
        // bssplit with the pattern options is taken (one source draws them all).
        let j = resolve(
            &parse(
                "job.fio",
                "[a]\nbssplit=4k/50:8k/50\nthinktime=10\nrw=randread:4\n",
                &|_| None,
            )
            .unwrap(),
        )
        .unwrap();
        let mut w = toml::Table::new();
        workload_keys(&j[0], &mut w);
        assert!(
            w.contains_key("think-time") && w.contains_key("random-run"),
            "{w:?}"
        );
        assert!(e("[a]\ntime_based\nruntime=1\nnumber_ios=4\n").contains("time_based"));
        assert!(e("[a]\nbs=4k,4k,4k\n").contains("trim"));
        assert!(e("[a]\nbsrange=4k\n").contains("not a range"));
        assert!(e("[a]\nrw=randread:0\n").contains("at least 1"));
    }
}
