//! fio's `random_distribution` against fio 3.33's own offsets: fio runs a null job with
//! `norandommap` and `write_iolog` on a 4 MiB file of 4 KiB blocks (1024 positions, a power
//! of two, so fio's golden-ratio scatter is a bijection), storlab's block source draws the same
//! number of offsets over the same region, and the shapes must agree: for zipf and pareto the
//! share of accesses on the hottest 1%, 10% and 50% of blocks (rank-frequency: the scatter's
//! random offset differs), for normal the share within n/12 (its sigma without deviation) of
//! the centre once the scatter is undone, for zoned the share of each zone. And `storlab fio`
//! runs such a job. Skipped with a reason when fio is absent, unless STORLAB_REQUIRE_SERVERS
//! (as tests/fio_latency.rs) or STORLAB_REQUIRE_FIO is set.
//!
//! Tolerance: each share is a proportion of N = 102400 draws, its standard error at most
//! 0.5 / sqrt(N) = 0.0016, that of a difference of two 0.0022; 0.012 is 5.5 of them. Each
//! check also asserts that a nearby parameter (theta 1.1 for 1.2, ...) lands outside it, so
//! the comparison would catch a parameter ignored.

mod common;

use std::process::Command;

use common::{Lab, text};
use storlab_model::{Op, Region};
use storlab_workload::block::BlockWorkload;

const BLOCKS: u64 = 1024;
const DRAWS: usize = 102_400;
const TOLERANCE: f64 = 0.012;

/// fio's block numbers of `DRAWS` random reads with `random_distribution=dist`, or None when
/// fio is not installed (and not required).
fn fio_blocks(lab: &Lab, dist: &str) -> Option<Vec<u64>> {
    let log = lab
        .path()
        .join(format!("{}.iolog", dist.replace([':', '/'], "_")));
    let job = lab.write(
        "dist.fio",
        &format!(
            "[d]\nioengine=null\nsize={}\nio_size={}\nbs=4k\nrw=randread\nnorandommap\nrandom_distribution={dist}\nwrite_iolog={}\n",
            BLOCKS * 4096,
            DRAWS as u64 * 4096,
            log.display()
        ),
    );
    let o = match Command::new("fio")
        .args(["--output-format=terse", job.to_str().unwrap()])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            let required = ["STORLAB_REQUIRE_SERVERS", "STORLAB_REQUIRE_FIO"]
                .iter()
                .any(|v| std::env::var_os(v).is_some());
            assert!(!required, "fio: {e} (fio is required)");
            eprintln!("skipped: fio not found ({e})");
            return None;
        }
    };
    assert!(o.status.success(), "fio {dist}: {}", text(&o).1);
    let blocks: Vec<u64> = std::fs::read_to_string(&log)
        .expect("fio's iolog")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"read")).then(|| f[3].parse::<u64>().expect("offset") / 4096)
        })
        .collect();
    assert_eq!(blocks.len(), DRAWS, "{dist}");
    Some(blocks)
}

/// storlab's block numbers of `DRAWS` reads of a workload with `distribution = dist`.
fn storlab_blocks(dist: &str) -> Vec<u64> {
    let w = BlockWorkload::from_table(
        toml::from_str(&format!("distribution = \"{dist}\"")).expect("toml"),
    )
    .expect("workload");
    let region = Region {
        offset_bytes: 0,
        size_bytes: BLOCKS * 4096,
    };
    let mut s = w.source(region, 0, 1);
    (0..DRAWS)
        .map(|_| match s.next_op() {
            Op::Read { offset, .. } => offset / 4096,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn counts(blocks: &[u64]) -> Vec<u64> {
    let mut c = vec![0u64; BLOCKS as usize];
    for b in blocks {
        c[*b as usize] += 1;
    }
    c
}

/// The share of accesses on the hottest 1%, 10% and 50% of blocks.
fn hottest(blocks: &[u64]) -> [f64; 3] {
    let mut c = counts(blocks);
    c.sort_unstable_by(|a, b| b.cmp(a));
    [0.01, 0.1, 0.5].map(|f| {
        let k = ((BLOCKS as f64 * f) as usize).max(1);
        c[..k].iter().sum::<u64>() as f64 / blocks.len() as f64
    })
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= TOLERANCE)
}

#[test]
fn zipf_and_pareto_put_as_many_accesses_on_the_hottest_blocks_as_fio() {
    let lab = Lab::new();
    for (dist, nearby) in [
        ("zipf:1.2", "zipf:1.1"),
        ("zipf:0.8", "zipf:0.9"),
        ("pareto:0.2", "pareto:0.25"),
    ] {
        let Some(fio) = fio_blocks(&lab, dist) else {
            return;
        };
        let (f, s, n) = (
            hottest(&fio),
            hottest(&storlab_blocks(dist)),
            hottest(&storlab_blocks(nearby)),
        );
        println!("{dist}: hottest 1/10/50%: fio {f:.4?} storlab {s:.4?} ({nearby}: {n:.4?})");
        assert!(close(&f, &s), "{dist}: fio {f:?}, storlab {s:?}");
        assert!(!close(&f, &n), "{dist}: {nearby} is as close: {n:?}");
    }
    // With a centre fio's scatter has no random part: rank 1 is block n * centre, in both.
    let dist = "zipf:1.2:0.25";
    let Some(fio) = fio_blocks(&lab, dist) else {
        return;
    };
    let top = |blocks: &[u64]| {
        let c = counts(blocks);
        (0..BLOCKS).max_by_key(|b| c[*b as usize]).unwrap()
    };
    assert_eq!(top(&fio), BLOCKS / 4);
    assert_eq!(top(&storlab_blocks(dist)), BLOCKS / 4);
}

#[test]
fn normal_spreads_around_the_centre_as_fio() {
    // The inverse of fio's golden ratio modulo 2^64 undoes its scatter on 1024 blocks.
    let g = storlab_workload::block::distribution::GOLDEN_RATIO_64;
    let mut inverse = g;
    for _ in 0..6 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(g.wrapping_mul(inverse)));
    }
    let near = |blocks: &[u64]| {
        let within = blocks
            .iter()
            .filter(|b| (b.wrapping_mul(inverse) % BLOCKS).abs_diff(BLOCKS / 2) <= BLOCKS / 12)
            .count();
        within as f64 / blocks.len() as f64
    };
    let lab = Lab::new();
    for (dist, nearby) in [("normal:0", "normal:25"), ("normal:40", "normal:25")] {
        let Some(fio) = fio_blocks(&lab, dist) else {
            return;
        };
        let (f, s, n) = (
            near(&fio),
            near(&storlab_blocks(dist)),
            near(&storlab_blocks(nearby)),
        );
        println!("{dist}: within n/12 of the centre: fio {f:.4} storlab {s:.4} ({nearby}: {n:.4})");
        assert!((f - s).abs() <= TOLERANCE, "{dist}: fio {f}, storlab {s}");
        assert!(
            (f - n).abs() > TOLERANCE,
            "{dist}: {nearby} is as close: {n}"
        );
    }
}

#[test]
fn zones_get_the_share_fio_gives_them() {
    let lab = Lab::new();
    // Zone bounds in blocks as fio computes them (start = prev% * n / 100).
    for (dist, bounds, nearby) in [
        (
            "zoned:60/10:30/20:10/70",
            vec![0, 102, 307, 1024],
            "zoned:50/10:40/20:10/70",
        ),
        (
            "zoned_abs:70/1m:30/3m",
            vec![0, 256, 1024],
            "zoned-abs:65/1m:35/3m",
        ),
    ] {
        let Some(fio) = fio_blocks(&lab, dist) else {
            return;
        };
        let shares = |blocks: &[u64]| -> Vec<f64> {
            bounds
                .windows(2)
                .map(|w| {
                    let n = blocks.iter().filter(|b| (w[0]..w[1]).contains(*b)).count();
                    n as f64 / blocks.len() as f64
                })
                .collect()
        };
        let ours = dist.replace("zoned_abs", "zoned-abs");
        let (f, s, n) = (
            shares(&fio),
            shares(&storlab_blocks(&ours)),
            shares(&storlab_blocks(nearby)),
        );
        println!("{dist}: per zone: fio {f:.4?} storlab {s:.4?} ({nearby}: {n:.4?})");
        assert!(close(&f, &s), "{dist}: fio {f:?}, storlab {s:?}");
        assert!(!close(&f, &n), "{dist}: {nearby} is as close: {n:?}");
        // The blocks fio never touches (between zones, from its rounding), storlab neither.
        let (cf, cs) = (counts(&fio), counts(&storlab_blocks(&ours)));
        let untouched = |c: &[u64]| (0..BLOCKS).filter(|b| c[*b as usize] == 0).count();
        assert_eq!(untouched(&cf), untouched(&cs), "{dist}");
    }
}

#[test]
fn storlab_fio_runs_a_skewed_job_and_stores_its_distribution() {
    let lab = Lab::new();
    let job = lab.write(
        "skew.fio",
        "[skew]\nioengine=null\nsize=4m\nbs=4k\nrw=randrw\nnorandommap\nrandom_distribution=zoned_abs:60/1m:40/3m\n[seq]\nioengine=null\nsize=4m\nrw=read\nrandom_distribution=pareto\nstonewall\n",
    );
    let o = lab
        .cmd()
        .args(["fio", job.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let study = std::fs::read_to_string(lab.study_folder().join("run-001/study.toml")).unwrap();
    assert!(
        study.contains("distribution = \"zoned-abs:60/1048576:40/3145728\""),
        "{study}"
    );
    // The sequential job ignores it, as fio does.
    assert_eq!(study.matches("distribution =").count(), 1, "{study}");
}

#[test]
fn zoned_abs_zones_larger_than_an_existing_file_stop_the_run_before_any_io() {
    let lab = Lab::new();
    let data = lab.path().join("small.dat");
    std::fs::write(&data, vec![0u8; 1 << 20]).unwrap();
    let job = lab.write(
        "big-zones.fio",
        &format!(
            "[z]\nfilename={}\nrw=randread\nrandom_distribution=zoned_abs:50/1m:50/1m\n",
            data.display()
        ),
    );
    let o = lab
        .cmd()
        .args(["fio", job.to_str().unwrap()])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert!(!o.status.success(), "it ran: {err}");
    assert!(
        err.contains(
            "zoned-abs zones add up to 2097152 bytes, more than the region's 1048576 bytes"
        ),
        "{err}"
    );
}

/// (offset, size) of the I/Os in fio's `write_iolog` of `job`, or None when fio is not
/// installed (and not required).
fn fio_ops(lab: &Lab, name: &str, job: &str) -> Option<Vec<(u64, u64)>> {
    let log = lab.path().join(format!("{name}.iolog"));
    let path = lab.write(
        &format!("{name}-fio.fio"),
        &format!("{job}write_iolog={}\n", log.display()),
    );
    let o = match Command::new("fio")
        .args(["--output-format=terse", path.to_str().unwrap()])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            let required = ["STORLAB_REQUIRE_SERVERS", "STORLAB_REQUIRE_FIO"]
                .iter()
                .any(|v| std::env::var_os(v).is_some());
            assert!(!required, "fio: {e} (fio is required)");
            eprintln!("skipped: fio not found ({e})");
            return None;
        }
    };
    assert!(o.status.success(), "fio {name}: {}", text(&o).1);
    let ops = std::fs::read_to_string(&log)
        .expect("fio's iolog")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"read")).then(|| (f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect();
    Some(ops)
}

/// The first `DRAWS` (offset, size) of thread 0 of `storlab fio`'s plan of `job`, over the
/// same region.
fn storlab_ops(lab: &Lab, name: &str, job: &str) -> Vec<(u64, u64)> {
    let path = lab.write(&format!("{name}.fio"), job);
    let plan = storlab_study::fio::load(&[path]).expect("plan");
    let study = storlab_study::parse("fio.toml", &plan.study_text).expect("study");
    let w = &study.runs[0].targets[0].workload;
    let region = Region {
        offset_bytes: 0,
        size_bytes: BLOCKS * 4096,
    };
    let mut s = w.source(region, 0, w.run_seed(1, 1, 1));
    (0..DRAWS)
        .map(|_| match s.next_op() {
            Some(Op::Read { offset, len }) => (offset, len),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn bssplit_sizes_and_distribution_offsets_are_fios_together() {
    // fio draws each I/O's offset from the distribution (in blocks of the smallest size,
    // `ba`), then its size from bssplit's percents (io_u.c get_next_offset,
    // get_next_buflen): the size shares and the shape of the start blocks both match.
    let lab = Lab::new();
    let job = |dist: &str| {
        format!(
            "[d]\nioengine=null\nsize={}\nio_size=1t\nnumber_ios={DRAWS}\nrw=randread\nnorandommap\nbssplit=4k/40:16k/30:64k/30\nrandom_distribution={dist}\n",
            BLOCKS * 4096
        )
    };
    let Some(fio) = fio_ops(&lab, "split", &job("pareto:0.2")) else {
        return;
    };
    assert_eq!(fio.len(), DRAWS);
    let ours = storlab_ops(&lab, "split", &job("pareto:0.2"));
    let nearby = storlab_ops(&lab, "nearby", &job("pareto:0.25"));
    let uniform = storlab_ops(&lab, "uniform", &job("random"));
    let sizes = |ops: &[(u64, u64)]| {
        [4096, 16384, 65536]
            .map(|b| ops.iter().filter(|o| o.1 == b).count() as f64 / ops.len() as f64)
    };
    let blocks = |ops: &[(u64, u64)]| ops.iter().map(|o| o.0 / 4096).collect::<Vec<_>>();
    let (fs, os) = (sizes(&fio), sizes(&ours));
    let (fh, oh, nh, uh) = (
        hottest(&blocks(&fio)),
        hottest(&blocks(&ours)),
        hottest(&blocks(&nearby)),
        hottest(&blocks(&uniform)),
    );
    println!(
        "bssplit=4k/40:16k/30:64k/30 pareto:0.2: sizes fio {fs:.4?} storlab {os:.4?}; hottest 1/10/50%: fio {fh:.4?} storlab {oh:.4?} (pareto:0.25 {nh:.4?}, uniform {uh:.4?})"
    );
    assert!(close(&fs, &os), "sizes: fio {fs:?}, storlab {os:?}");
    assert!(close(&fh, &oh), "shape: fio {fh:?}, storlab {oh:?}");
    assert!(!close(&fh, &nh), "pareto:0.25 is as close: {nh:?}");
    assert!(!close(&fh, &uh), "uniform is as close: {uh:?}");
    // Every I/O ends inside the region, in both.
    for (o, l) in fio.iter().chain(&ours) {
        assert!(o + l <= BLOCKS * 4096 && o % 4096 == 0, "{o} {l}");
    }
}
