//! fio's options about what it measures and how it reports latency. storlab always measures
//! every I/O's latency and the bandwidth, so the options that switch measurement off in fio
//! (`gtod_reduce`, `disable_lat`, `disable_clat`, `disable_slat`, `disable_bw_measurement`)
//! are taken with a note that storlab measures anyway; those that choose what is printed
//! (`clat_percentiles`, `lat_percentiles`, `percentile_list`) are honoured in the fio-style
//! output, as fio 3.33 prints them.

use super::job::Job;
use super::parse::{Entry, parse_bool};

fn flag(e: &Entry) -> Result<bool, String> {
    parse_bool(e.value.as_deref())
        .map_err(|m| format!("{}={}: {m}", e.name, e.value.as_deref().unwrap_or("")))
}

fn percentile_list(e: &Entry) -> Result<Vec<f64>, String> {
    let v = e
        .value
        .as_deref()
        .ok_or_else(|| format!("option `{}` needs a value", e.name))?;
    let list: Vec<f64> = v
        .split(':')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .ok()
                .filter(|q| *q > 0.0 && *q <= 100.0)
                .ok_or_else(|| format!("{}={v}: `{p}` is not a percentile in (0, 100]", e.name))
        })
        .collect::<Result<_, _>>()?;
    if list.len() > 20 {
        return Err(format!(
            "{}={v}: at most 20 percentiles (fio's limit)",
            e.name
        ));
    }
    Ok(list)
}

/// Applies one measurement option to `job` (`canonical` is fio's name for it). False when
/// it is none of these.
pub fn apply_measure(job: &mut Job, e: &Entry, canonical: &str) -> Result<bool, String> {
    match canonical {
        "gtod_reduce"
        | "disable_lat"
        | "disable_clat"
        | "disable_slat"
        | "disable_bw_measurement" => {
            let off = flag(e)?;
            job.measurement_off.retain(|o| o != &e.name);
            if off {
                job.measurement_off.push(e.name.clone());
            }
        }
        "clat_percentiles" => job.latency_report.clat = flag(e)?,
        "lat_percentiles" => job.latency_report.lat = flag(e)?,
        "percentile_list" => job.latency_report.percentiles = percentile_list(e)?,
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    fn jobs(text: &str) -> Result<Vec<Job>, Vec<super::super::parse::LineError>> {
        resolve(&parse("job.fio", text, &|_| None).unwrap())
    }

    #[test]
    fn switches_are_noted_and_percentiles_chosen() {
        let j = jobs("[global]\ngtod_reduce=1\ndisable_slat=1\n[a]\ndisable_slat=0\ndisable_bw=1\npercentile_list=50:99.5\nlat_percentiles=1\nclat_percentiles=0\n")
            .unwrap();
        assert_eq!(j[0].measurement_off, ["gtod_reduce", "disable_bw"]);
        assert_eq!(j[0].latency_report.percentiles, [50.0, 99.5]);
        assert!(j[0].latency_report.lat && !j[0].latency_report.clat);
        assert_eq!(j[0].latency_report.decimals(), 1);
        let d = jobs("[a]\n").unwrap();
        assert_eq!(
            d[0].latency_report,
            storlab_model::fio_jobs::LatencyReport::default()
        );
        assert_eq!(d[0].latency_report.decimals(), 2);
        assert!(d[0].measurement_off.is_empty());
        let e = jobs("[a]\npercentile_list=50:0\n[b]\npercentile_list=101\n").unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(e[0].message.contains("`0` is not a percentile"), "{}", e[0]);
        assert_eq!(e[1].line, 4);
        let over: Vec<String> = (1..=21).map(|i| i.to_string()).collect();
        let e = jobs(&format!("[a]\npercentile_list={}\n", over.join(":"))).unwrap_err();
        assert!(e[0].message.contains("at most 20"), "{}", e[0]);
    }
}
