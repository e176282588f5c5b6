//! fio's rate options: `rate` (bytes per second) and `rate_iops`, each one value or a
//! `read,write` pair; `rate_min` / `rate_iops_min`, the least a job may do per `rate_cycle`
//! (checked after the run on the measured timeline: a job below it fails, as in fio); and
//! `rate_process` (`linear`, or `poisson`: exponential gaps). storlab paces a job's
//! operations as one stream ([`Rates::ops_per_second`]): a one-direction job at its rate over
//! its mean block size; a mixed job at the most its mix allows without either direction going
//! above its own limit, said in a note (fio paces reads and writes apart).

use std::time::Duration;

use super::job::{Job, Pair, Rates};
use super::parse::{Entry, LineError, parse_size};
use storlab_model::rate::RateProcess;

impl Default for Rates {
    fn default() -> Self {
        Rates {
            bytes: [None; 2],
            iops: [None; 2],
            min_bytes: [None; 2],
            min_iops: [None; 2],
            process: RateProcess::Linear,
            cycle: Duration::from_millis(1000),
            flow: 0,
            flow_id: 0,
            flow_sleep: Duration::ZERO,
            trim_line: None,
        }
    }
}

/// fio's `R` (both directions) or `R,W` (`,W`: writes only; `R,`: reads only); 0 is no
/// limit. A third value, for trims, is taken and noted in `trims` ([`check`] refuses it for
/// a job that trims: storlab paces falloc's trims as its writes).
fn pair(
    e: &Entry,
    one: &dyn Fn(&str) -> Result<u64, String>,
    trims: &mut Option<usize>,
) -> Result<Pair, String> {
    let v = e
        .value
        .as_deref()
        .ok_or_else(|| format!("option `{}` needs a value", e.name))?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let value = |p: &str| -> Result<Option<u64>, String> {
        if p.is_empty() {
            return Ok(None);
        }
        let n = one(p).map_err(|m| format!("{}={v}: {m}", e.name))?;
        Ok((n > 0).then_some(n))
    };
    match parts.as_slice() {
        [one] => {
            let r = value(one)?;
            Ok([r, r])
        }
        [r, w] => Ok([value(r)?, value(w)?]),
        [r, w, t] => {
            if value(t)?.is_some() {
                *trims = Some(e.line);
            }
            Ok([value(r)?, value(w)?])
        }
        _ => Err(format!(
            "{}={v}: at most three values (read,write,trim)",
            e.name
        )),
    }
}

fn whole(p: &str) -> Result<u64, String> {
    p.parse()
        .map_err(|_| format!("`{p}` is not a whole number"))
}

/// Applies one rate option (`canonical` is fio's name for it). False when it is none of
/// these.
pub fn apply_rate(job: &mut Job, e: &Entry, canonical: &str, kb: u64) -> Result<bool, String> {
    let size = |p: &str| parse_size(p, kb);
    let r = &mut job.rates;
    match canonical {
        "rate" => r.bytes = pair(e, &size, &mut r.trim_line)?,
        "rate_iops" => r.iops = pair(e, &whole, &mut r.trim_line)?,
        "rate_min" => r.min_bytes = pair(e, &size, &mut r.trim_line)?,
        "rate_iops_min" => r.min_iops = pair(e, &whole, &mut r.trim_line)?,
        "rate_process" => {
            r.process = match e.value.as_deref() {
                Some("linear") => RateProcess::Linear,
                Some("poisson") => RateProcess::Poisson,
                other => {
                    return Err(format!(
                        "{}={}: linear or poisson",
                        e.name,
                        other.unwrap_or("")
                    ));
                }
            }
        }
        "rate_cycle" => {
            let ms = whole(e.value.as_deref().unwrap_or(""))
                .map_err(|m| format!("{}: {m} (milliseconds)", e.name))?;
            if ms == 0 {
                return Err(format!("{}=0: at least 1 ms", e.name));
            }
            r.cycle = Duration::from_millis(ms);
        }
        "flow" => {
            let v = e.value.as_deref().unwrap_or("").trim();
            r.flow = v.parse().map_err(|_| {
                format!("flow={v}: a weight from 0 (no flow control) up (fio 3.33 takes no negative weight)")
            })?;
        }
        "flow_id" => {
            r.flow_id =
                whole(e.value.as_deref().unwrap_or("")).map_err(|m| format!("flow_id: {m}"))? as u32
        }
        "flow_sleep" => {
            let us = whole(e.value.as_deref().unwrap_or(""))
                .map_err(|m| format!("flow_sleep: {m} (microseconds)"))?;
            r.flow_sleep = Duration::from_micros(us);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A trim rate on a job that trims (fio's falloc punching holes): storlab paces its trims
/// as its writes, so it cannot hold a rate of their own. On any other job it paces nothing,
/// as in fio.
pub fn check(job: &Job) -> Vec<LineError> {
    match job.rates.trim_line {
        Some(line) if job.trim.is_some() => vec![LineError {
            file: job.file.clone(),
            line,
            message: format!(
                "job `{}`: a trim rate (the third value) is not supported by storlab fio: it paces falloc's trims as its writes; give the rate as the write value",
                job.name
            ),
        }],
        _ => Vec::new(),
    }
}

/// The workload's `flow` key (fio's flow control), when the job has a weight.
pub fn flow_table(job: &Job) -> Option<toml::Table> {
    let r = &job.rates;
    (r.flow > 0).then(|| {
        let mut t = toml::Table::new();
        t.insert("id".into(), i64::from(r.flow_id).into());
        t.insert("weight".into(), i64::from(r.flow).into());
        if !r.flow_sleep.is_zero() {
            t.insert(
                "sleep".into(),
                format!("{}us", r.flow_sleep.as_micros()).into(),
            );
        }
        t
    })
}

/// The shares of a job's I/Os that are reads and writes.
pub fn shares(job: &Job) -> [f64; 2] {
    let read = job.read_share();
    [read, 1.0 - read]
}

impl Rates {
    /// The I/Os per second each clone is paced at: for each direction the job does and
    /// limits (`rate` over the mean block size, else `rate_iops`), the total at which that
    /// direction reaches its limit; the least of them. None: not paced.
    pub fn ops_per_second(&self, job: &Job) -> Option<f64> {
        let share = shares(job);
        (0..2)
            .filter(|&d| share[d] > 0.0)
            .filter_map(|d| {
                let limit = match (self.bytes[d], self.iops[d]) {
                    (Some(b), _) => b as f64 / job.mean_bs(),
                    (None, Some(n)) => n as f64,
                    (None, None) => return None,
                };
                Some(limit / share[d])
            })
            .min_by(f64::total_cmp)
    }

    /// What storlab does otherwise than fio with this job's rates, if anything.
    pub fn note(&self, job: &Job) -> Option<String> {
        let total = self.ops_per_second(job)?;
        let share = shares(job);
        if !job.rw.mixed() {
            return None;
        }
        Some(format!(
            "job `{}`: its rates pace reads and writes as one stream of {total:.0} I/Os per second ({:.0} reads, {:.0} writes), the most its rwmixread allows within each direction's limit (fio paces the two apart)",
            job.name,
            total * share[0],
            total * share[1]
        ))
    }

    /// Whether the job has a least rate to keep.
    pub fn has_min(&self) -> bool {
        self.min_bytes
            .iter()
            .chain(&self.min_iops)
            .any(Option::is_some)
    }
}

#[cfg(test)]
mod tests {
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn job(text: &str) -> super::Job {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
            .unwrap()
            .remove(0)
    }

    #[test]
    fn rates_become_ios_per_second_of_one_stream() {
        // 1 MiB/s of 4 KiB writes: 256 I/Os per second.
        let j = job("[a]\nrw=write\nbs=4k\nrate=1m\n");
        assert_eq!(j.rates.ops_per_second(&j), Some(256.0));
        assert_eq!(j.rates.note(&j), None);
        // `rate` wins over `rate_iops` in a direction, as in fio.
        let j = job("[a]\nrw=read\nbs=8k\nrate_iops=10\nrate=80k\n");
        assert_eq!(j.rates.ops_per_second(&j), Some(10.0));
        // A mixed job: reads 70%, limits 700 reads and 100 writes per second; writes bind
        // at 100 / 0.3.
        let j = job("[a]\nrw=randrw\nrwmixread=70\nrate_iops=700,100\n");
        let total = j.rates.ops_per_second(&j).unwrap();
        assert!((total - 100.0 / 0.3).abs() < 1e-9, "{total}");
        assert!(j.rates.note(&j).unwrap().contains("333 I/Os per second"));
        // `,W`: writes only; a read job is then not paced.
        let j = job("[a]\nrw=read\nrate=,1m\n");
        assert_eq!(j.rates.ops_per_second(&j), None);
        let j = job("[a]\nrw=randrw\nrate=,1m\nbs=4k\n");
        assert_eq!(j.rates.ops_per_second(&j), Some(512.0));
        // A trim rate (fio's examples/exitwhat.fio: rate=300,300,300) paces nothing on a job
        // that does not trim, as in fio; on one that trims it is refused by line.
        let j = job("[a]\nrw=randrw\nrate=300,300,300\n");
        assert_eq!(j.rates.bytes, [Some(300), Some(300)]);
        let e = resolve(
            &parse(
                "job.fio",
                "[a]\nioengine=falloc\nrw=trim\nsize=1m\nrate=1m,1m,1m\n",
                &|_| None,
            )
            .unwrap(),
        )
        .unwrap_err();
        assert_eq!(e[0].line, 5);
        assert!(e[0].message.contains("trim rate"), "{e:?}");
    }

    #[test]
    fn minimums_cycles_and_processes_are_read_and_checked() {
        let j = job(
            "[a]\nrw=write\nratemin=1m\nrate_iops_min=,5\nrate_process=poisson\nratecycle=500\n",
        );
        assert_eq!(j.rates.min_bytes, [Some(1 << 20), Some(1 << 20)]);
        assert_eq!(j.rates.min_iops, [None, Some(5)]);
        assert_eq!(j.rates.process, super::RateProcess::Poisson);
        assert_eq!(j.rates.cycle, std::time::Duration::from_millis(500));
        assert!(j.rates.has_min());
        let e = resolve(
            &parse(
                "job.fio",
                "[a]\nrate=1m,1m,1m,1m\nrate_process=bursty\nrate_cycle=0\n",
                &|_| None,
            )
            .unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].message.contains("at most three"), "{}", e[0]);
        assert!(e[1].message.contains("linear or poisson"), "{}", e[1]);
    }
}
