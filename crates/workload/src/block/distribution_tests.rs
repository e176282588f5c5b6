use rand::SeedableRng;

use super::*;
use crate::block::BlockWorkload;
use storlab_model::{Op, Region};

fn parse(text: &str) -> Result<Distribution, String> {
    Distribution::try_from(text.to_string())
}

/// `draws` positions of `d` over `n` positions, counted per position.
fn counts(d: &Distribution, n: u64, draws: usize) -> Vec<u64> {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut s = Skewed::new(d, n, 4096, &mut rng).expect("skewed");
    let mut c = vec![0u64; n as usize];
    for _ in 0..draws {
        c[s.position(&mut rng) as usize] += 1;
    }
    c
}

/// The share of draws on the hottest `fraction` of positions.
fn hottest(counts: &[u64], fraction: f64) -> f64 {
    let mut c = counts.to_vec();
    c.sort_unstable_by(|a, b| b.cmp(a));
    let k = ((c.len() as f64 * fraction) as usize).max(1);
    c[..k].iter().sum::<u64>() as f64 / c.iter().sum::<u64>() as f64
}

#[test]
fn fio_syntax_is_parsed_with_fios_defaults_and_limits() {
    assert_eq!(parse("random"), Ok(Distribution::Random));
    assert_eq!(
        parse("zipf:1.2"),
        Ok(Distribution::Zipf {
            theta: 1.2,
            center: None
        })
    );
    assert_eq!(
        parse("zipf"),
        Ok(Distribution::Zipf {
            theta: 1.1,
            center: None
        })
    );
    assert_eq!(
        parse("pareto:0.3:0.25"),
        Ok(Distribution::Pareto {
            h: 0.3,
            center: Some(0.25)
        })
    );
    assert_eq!(
        parse("normal"),
        Ok(Distribution::Normal {
            deviation_percent: 0.0,
            center: None
        })
    );
    let z = |a: u8, s: u64| Zone {
        access_percent: a,
        size: s,
    };
    assert_eq!(
        parse("zoned:60/10:30/20:10/70"),
        Ok(Distribution::Zoned(vec![z(60, 10), z(30, 20), z(10, 70)]))
    );
    // fio shares the size left among the zones without one (and a 0 is one without).
    assert_eq!(
        parse("zoned:50/20:25:25/0"),
        Ok(Distribution::Zoned(vec![z(50, 20), z(25, 40), z(25, 40)]))
    );
    // fio's examples/rand-zones.fio: an empty size after `/` is a missing one (fio's atoi).
    assert_eq!(
        parse("zoned:50/5:30/15:20/"),
        Ok(Distribution::Zoned(vec![z(50, 5), z(30, 15), z(20, 80)]))
    );
    assert_eq!(
        parse("zoned-abs:60/1MiB:40/3m"),
        Ok(Distribution::ZonedAbs(vec![z(60, 1 << 20), z(40, 3 << 20)]))
    );
    for bad in [
        "zipf:1",
        "zipf:x",
        "pareto:1.0",
        "pareto:0",
        "normal:100",
        "zipf:1.2:1.5",
        "zoned:60/10:30/20",
        "zoned:60/60:40/60",
        "zoned",
        "zoned:60/10:40/90,30/50:70/50",
        "gauss:10",
        "zoned_abs:100/1m",
        "random:1",
    ] {
        assert!(parse(bad).is_err(), "{bad} was taken");
    }
}

#[test]
fn every_distribution_reads_back_as_written() {
    for text in [
        "random",
        "zipf:1.2",
        "zipf:0.8:0.25",
        "pareto:0.2",
        "normal:10:0.5",
        "zoned:60/10:30/20:10/70",
        "zoned-abs:60/1048576:40/3145728",
    ] {
        let d = parse(text).unwrap();
        assert_eq!(d.to_string(), text);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<Distribution>(&json).unwrap(), d);
    }
}

#[test]
fn the_block_workload_takes_a_distribution_by_key_and_keeps_it_through_its_table() {
    let w =
        BlockWorkload::from_table(toml::from_str("distribution = \"zipf:1.2\"").unwrap()).unwrap();
    assert_eq!(
        w.distribution,
        Distribution::Zipf {
            theta: 1.2,
            center: None
        }
    );
    let table = toml::Table::try_from(&w).unwrap();
    assert_eq!(table["distribution"].as_str(), Some("zipf:1.2"));
    assert_eq!(BlockWorkload::from_table(table).unwrap(), w);
    // Uniform is not written into stored studies (they read as before).
    let plain = BlockWorkload::from_table(toml::Table::new()).unwrap();
    assert!(
        !toml::Table::try_from(&plain)
            .unwrap()
            .contains_key("distribution")
    );
    for bad in [
        "distribution = \"zipf:1\"",
        "distribution = \"zipf:1.2\"\naccess = \"sequential\"",
        "distribution = \"normal:5\"\nrandom-share = 0.5",
    ] {
        let e = BlockWorkload::from_table(toml::from_str(bad).unwrap()).unwrap_err();
        assert_eq!(e.key, "distribution", "{bad}: {e:?}");
    }
}

#[test]
fn the_uniform_source_draws_exactly_what_it_drew_before() {
    // The offsets of today's uniform path (the multiply-shift of SmallRng's draws), recomputed
    // here from the same seed: a skewed field must not disturb them.
    let w = BlockWorkload::from_table(toml::Table::new()).unwrap();
    let region = Region {
        offset_bytes: 0,
        size_bytes: 1 << 20,
    };
    let mut s = w.source(region, 0, 9);
    let mut rng = SmallRng::seed_from_u64(crate::thread_seed(9, 0));
    for _ in 0..1000 {
        let expected = ((rng.next_u64() as u128 * 256u128) >> 64) as u64 * 4096;
        match s.next_op() {
            Op::Read { offset, .. } => assert_eq!(offset, expected),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn skewed_offsets_are_aligned_and_inside_the_region() {
    let region = Region {
        offset_bytes: 8192,
        size_bytes: 100 * 4096,
    };
    for d in [
        "zipf:1.2",
        "pareto:0.2",
        "normal:30",
        "zoned:50/5:50/95",
        "zoned-abs:90/4096:10/401408",
    ] {
        let w = BlockWorkload::from_table(
            toml::from_str(&format!("distribution = \"{d}\"\nread-share = 0.5")).unwrap(),
        )
        .unwrap();
        let mut s = w.source(region, 1, 3);
        for _ in 0..20_000 {
            let (Op::Read { offset, len } | Op::Write { offset, len }) = s.next_op() else {
                panic!("{d}: reads and writes only")
            };
            assert_eq!((offset - 8192) % 4096, 0, "{d}");
            assert!(offset + len <= 8192 + 100 * 4096, "{d}: {offset}");
        }
    }
}

#[test]
fn zipf_and_pareto_skew_by_their_parameter() {
    let n = 1024;
    let uniform: Vec<u64> = {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut c = vec![0; n as usize];
        for _ in 0..200_000 {
            c[below(&mut rng, n) as usize] += 1;
        }
        c
    };
    let z12 = counts(&parse("zipf:1.2").unwrap(), n, 200_000);
    let z08 = counts(&parse("zipf:0.8").unwrap(), n, 200_000);
    let p02 = counts(&parse("pareto:0.2").unwrap(), n, 200_000);
    let p04 = counts(&parse("pareto:0.4").unwrap(), n, 200_000);
    // Rank 1 of zipf 1.2 over 1024 ranks: 1 / zeta(1024, 1.2) = 0.2303.
    let top = *z12.iter().max().unwrap() as f64 / 200_000.0;
    assert!((top - 0.2303).abs() < 0.006, "zipf 1.2 rank 1: {top}");
    let (u, a, b) = (
        hottest(&uniform, 0.1),
        hottest(&z08, 0.1),
        hottest(&z12, 0.1),
    );
    assert!(u < 0.12 && u + 0.2 < a && a + 0.1 < b, "{u} {a} {b}");
    // Pareto H=0.2: the hottest 20% of ranks take 80% of the draws (the 80/20 rule).
    let p = hottest(&p02, 0.2);
    assert!((p - 0.8).abs() < 0.03, "pareto 0.2: {p}");
    assert!(hottest(&p04, 0.2) + 0.1 < p);
}

#[test]
fn normal_centres_on_the_middle_before_fios_scatter() {
    // n a power of two: the golden-ratio scatter is a bijection, undone by its inverse.
    let n = 1024u64;
    let mut inverse = GOLDEN_RATIO_64;
    for _ in 0..6 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(GOLDEN_RATIO_64.wrapping_mul(inverse)));
    }
    assert_eq!(GOLDEN_RATIO_64.wrapping_mul(inverse), 1);
    let within = |d: &str| {
        let c = counts(&parse(d).unwrap(), n, 100_000);
        let mut near = 0;
        for (p, k) in c.iter().enumerate() {
            let rank = (p as u64).wrapping_mul(inverse) % n;
            if rank.abs_diff(n / 2) <= n / 12 {
                near += k;
            }
        }
        near as f64 / 100_000.0
    };
    // The mean of 12 uniforms has sigma n/12: 68% within; a 40% deviation widens it.
    let (narrow, wide) = (within("normal:0"), within("normal:40"));
    assert!((narrow - 0.683).abs() < 0.01, "normal:0 {narrow}");
    assert!(wide < narrow - 0.15, "normal:40 {wide}");
}

#[test]
fn zones_get_their_share() {
    let n = 1000;
    let c = counts(&parse("zoned:60/10:30/20:10/70").unwrap(), n, 100_000);
    let share = |a: usize, b: usize| c[a..b].iter().sum::<u64>() as f64 / 100_000.0;
    for (a, b, want) in [(0, 100, 0.6), (100, 300, 0.3), (300, 1000, 0.1)] {
        let got = share(a, b);
        assert!((got - want).abs() < 0.01, "{a}..{b}: {got}");
    }
    // zoned-abs over 4 KiB positions: 90% in the first 40 KiB.
    let c = counts(&parse("zoned-abs:90/40k:10/360k").unwrap(), 100, 100_000);
    let first = c[..10].iter().sum::<u64>() as f64 / 100_000.0;
    assert!((first - 0.9).abs() < 0.01, "{first}");
    assert_eq!(
        parse("zoned-abs:90/40k:10/360k").unwrap().bytes_needed(),
        400 << 10
    );
}

#[test]
fn zeta_is_capped_at_fios_rank_limit() {
    let full = zeta(1.2, ZIPF_MAX_GEN);
    assert_eq!(zeta(1.2, 40 * ZIPF_MAX_GEN), full);
    assert!(zeta(1.2, 1000) < full);
}
