//! fio's `random_distribution` in `storlab fio`: parsed as fio 3.33 parses it (options.c
//! `str_random_distribution_cb`, `zone_split_ddir`: fio's defaults zipf 1.1, pareto 0.2,
//! normal 0, the optional `:CENTER`, zone sizes in fio's units with `kb_base`), and set as
//! the block workload's `distribution` for random jobs (fio ignores it for sequential ones,
//! and so does storlab). What storlab cannot honour is refused with its line.

use super::job::{Job, RandomDistribution};
use super::parse::{Entry, LineError, parse_size};
use storlab_workload::block::distribution::Distribution;

/// Applies `random_distribution` (`name` is the option's canonical name). False when `e`
/// is another option.
pub fn apply_distribution(job: &mut Job, e: &Entry, name: &str, kb: u64) -> Result<bool, String> {
    if name != "random_distribution" {
        return Ok(false);
    }
    let v = e
        .value
        .as_deref()
        .ok_or_else(|| "option `random_distribution` needs a value".to_string())?;
    if v.trim_start().starts_with("gauss") {
        return Err(format!(
            "random_distribution={v}: fio 3.33 refuses `gauss` here too (it is file_service_type's alias): write normal"
        ));
    }
    let distribution = Distribution::parse_with(v, "zoned_abs", &|s| parse_size(s, kb))
        .map_err(|m| format!("random_distribution={v}: {m}"))?;
    job.distribution = RandomDistribution {
        distribution,
        line: e.line,
    };
    Ok(true)
}

/// What a job's distribution cannot do in storlab, once all its options are known.
pub fn check(job: &Job) -> Vec<LineError> {
    let d = &job.distribution;
    let error = |message: String| LineError {
        file: job.file.clone(),
        line: d.line,
        message,
    };
    let mut errors = Vec::new();
    if d.distribution.is_random() || !job.rw.random() {
        return errors;
    }
    let needed = d.distribution.bytes_needed();
    if let Some(size) = job.size.filter(|s| needed > *s) {
        errors.push(error(format!(
            "job `{}`: the zoned_abs zones add up to {needed} bytes, more than size={size} (fio fails such a job: \"zoned_abs sizes exceed file size\")",
            job.name
        )));
    }
    errors
}

/// The workload's `distribution` value: a random job's non-uniform distribution (zoned_abs
/// written `zoned-abs`, as storlab's study files name it), else None.
pub fn workload_value(job: &Job) -> Option<String> {
    let d = &job.distribution.distribution;
    (job.rw.random() && !d.is_random()).then(|| d.to_string())
}

#[cfg(test)]
mod tests {
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;
    use storlab_workload::block::distribution::{Distribution, Zone};

    fn jobs(text: &str) -> Result<Vec<super::Job>, Vec<super::LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    #[test]
    fn random_jobs_take_fios_distributions_and_sequential_ones_ignore_them() {
        let j = jobs("[a]\nrw=randread\nrandom_distribution=zipf\n[b]\nrw=randwrite\nrandom_distribution=zoned_abs:60/1m:40/2m\nsize=4m\n[c]\nrw=read\nrandom_distribution=pareto:0.3\n").unwrap();
        assert_eq!(
            j[0].distribution.distribution,
            Distribution::Zipf {
                theta: 1.1,
                center: None
            }
        );
        assert_eq!(super::workload_value(&j[0]).as_deref(), Some("zipf:1.1"));
        assert_eq!(
            j[1].distribution.distribution,
            Distribution::ZonedAbs(vec![
                Zone {
                    access_percent: 60,
                    size: 1 << 20
                },
                Zone {
                    access_percent: 40,
                    size: 2 << 20
                }
            ])
        );
        assert_eq!(
            super::workload_value(&j[1]).as_deref(),
            Some("zoned-abs:60/1048576:40/2097152")
        );
        assert_eq!(super::workload_value(&j[2]), None);
        // kb_base applies to zoned_abs sizes, as to every fio size.
        let j = jobs(
            "[global]\nkb_base=1000\n[a]\nrw=randread\nrandom_distribution=zoned_abs:100/1k\n",
        )
        .unwrap();
        assert_eq!(j[0].distribution.distribution.bytes_needed(), 1000);
    }

    #[test]
    fn what_storlab_cannot_honour_is_refused_by_line() {
        // bssplit with a distribution is taken (fio's size per I/O, offsets from the
        // distribution: storlab's pattern source).
        let a =
            jobs("[a]\nrw=randread\nbssplit=4k/50:8k/50\nrandom_distribution=zipf:1.2\n").unwrap();
        assert_eq!(super::workload_value(&a[0]).as_deref(), Some("zipf:1.2"));
        let e = jobs("[a]\nrw=randread\nbssplit=4k/50:8k/50\nrandom_distribution=zipf:1.2\n[b]\nrw=randread\nsize=1m\nrandom_distribution=zoned_abs:50/1m:50/1m\n[c]\nrandom_distribution=gauss:5\nrandom_distribution=zoned:60/10:40/90,30/50:70/50\nrandom_distribution=zipf:1\n").unwrap_err();
        let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        assert_eq!(text.len(), 4, "{text:?}");
        assert!(
            text[0].contains("job.fio:8: job `b`: the zoned_abs zones"),
            "{}",
            text[0]
        );
        assert!(
            text[1].contains("job.fio:10: random_distribution=gauss:5"),
            "{}",
            text[1]
        );
        assert!(
            text[2].contains("job.fio:11: ") && text[2].contains("fio 3.33 refuses a `,`"),
            "{}",
            text[2]
        );
        assert!(
            text[3].contains("job.fio:12: ") && text[3].contains("theta"),
            "{}",
            text[3]
        );
    }
}
