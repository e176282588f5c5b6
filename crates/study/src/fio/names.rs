//! fio's option names as fio 3.33 matches them: exactly and case-sensitively (`NumJobs` and
//! the prefix `numj` are refused by fio: "Bad option <numj=2>"), each option by its name or
//! by its one alias from fio's option table (`fio --cmdhelp=OPTION` prints `alias:`).

/// fio 3.33's aliases, `(alias, option)`: every one `fio --cmdhelp=all` lists.
pub const ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("blocksize", "bs"),
    ("blockalign", "ba"),
    ("blocksize_range", "bsrange"),
    ("blocksize_unaligned", "bs_unaligned"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("io_limit", "io_size"),
    ("fill_fs", "fill_device"),
    ("fileoffset", "offset"),
    ("nr_files", "nrfiles"),
    ("timeout", "runtime"),
    ("iomem", "mem"),
    ("ratemin", "rate_min"),
    ("ratecycle", "rate_cycle"),
    ("wait_for_previous", "stonewall"),
    ("disable_bw", "disable_bw_measurement"),
    ("ss", "steadystate"),
    ("ss_dur", "steadystate_duration"),
    ("ss_ramp", "steadystate_ramp_time"),
];

/// The option fio means by `name`: itself, or the option it is an alias of.
pub fn canonical(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, option)| option)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_name_their_option_and_nothing_else_is_changed() {
        assert_eq!(canonical("timeout"), "runtime");
        assert_eq!(canonical("fileoffset"), "offset");
        assert_eq!(canonical("ss_dur"), "steadystate_duration");
        assert_eq!(canonical("runtime"), "runtime");
        // fio matches exactly: no case folding, no prefixes.
        assert_eq!(canonical("Timeout"), "Timeout");
        assert_eq!(canonical("numj"), "numj");
    }
}
