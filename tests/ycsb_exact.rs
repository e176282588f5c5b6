//! storlab's YCSB generators against YCSB 0.17.0's own, draw for draw. A small Java program
//! (tests/ycsb_exact/*.java, compiled here with javac into a temp folder) loads YCSB's core jar
//! through a class loader that renames `java/util/concurrent/ThreadLocalRandom` in YCSB's class
//! files to a class of the same name length that hands out a SplitMix64 stream; so YCSB's
//! unmodified generator code draws from a stream the test controls. It prints YCSB's draws;
//! this test feeds the same stream to storlab's generators and requires every draw to be equal:
//! zipfian (also as its item count grows, as workload D's latest grows it), scrambled zipfian,
//! skewed latest over an acknowledged counter, hotspot, uniform, exponential (to 4 ulps: the
//! logarithm's last bit is the JVM's), the discrete operation chooser, and CoreWorkload's key
//! choice for each request distribution (exact, exponential included).
//!
//! YCSB 0.17.0's core jar comes from `scripts/peers.sh install` (in
//! ~/.cache/storlab-tools/ycsb-0.17.0, or STORLAB_YCSB_CP as `scripts/peers.sh env` prints it).
//! Without Java or the jar the test is skipped with the reason printed, unless
//! STORLAB_REQUIRE_SERVERS is set: then it fails.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::process::Command;

use storlab_workload::ycsb::generators::{
    AcknowledgedCounter, Discrete, Exponential, Hotspot, ScrambledZipfian, SkewedLatest, Uniform,
    ZIPFIAN_CONSTANT, Zipfian, ZipfianEta,
};
use storlab_workload::ycsb::{CoreWorkload, Properties};

const JAVA_SOURCES: [(&str, &str); 3] = [
    (
        "FixedStreamThreadLocalRandom.java",
        include_str!("ycsb_exact/FixedStreamThreadLocalRandom.java"),
    ),
    ("Main.java", include_str!("ycsb_exact/Main.java")),
    ("Draws.java", include_str!("ycsb_exact/Draws.java")),
];

/// Draws per scenario.
const DRAWS: usize = 20_000;

/// The stream the Java side feeds YCSB (FixedStreamThreadLocalRandom).
struct SplitMix64(u64);

/// One generator's draw, given the stream and the draw's index.
type Draw<'a> = Box<dyn FnMut(&mut SplitMix64, usize) -> String + 'a>;

impl rand::TryRng for SplitMix64 {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.try_next_u64().map(|x| x as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Ok(z ^ (z >> 31))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let x = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&x[..chunk.len()]);
        }
        Ok(())
    }
}

fn require() -> bool {
    std::env::var_os("STORLAB_REQUIRE_SERVERS").is_some()
}

/// YCSB's classpath, or None (skipping, with the reason) when Java or the jar is missing.
fn ycsb_classpath() -> Option<String> {
    let missing = |why: String| {
        assert!(
            !require(),
            "{why}, and STORLAB_REQUIRE_SERVERS is set: run scripts/peers.sh install"
        );
        eprintln!("skipped: {why} (scripts/peers.sh install)");
        None
    };
    for tool in ["java", "javac"] {
        let found = Command::new(tool)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return missing(format!("{tool} is not installed"));
        }
    }
    if let Ok(cp) = std::env::var("STORLAB_YCSB_CP")
        && !cp.is_empty()
    {
        return Some(cp);
    }
    let tools = std::env::var_os("STORLAB_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/storlab-tools"))
        });
    let jar = tools.map(|t| t.join("ycsb-0.17.0").join("core-0.17.0.jar"));
    match jar {
        Some(j) if j.is_file() => Some(j.display().to_string()),
        Some(j) => missing(format!("YCSB 0.17.0's core jar is not at {}", j.display())),
        None => missing("neither STORLAB_YCSB_CP nor HOME is set".into()),
    }
}

/// YCSB's draws: scenario name to its values as printed.
fn ycsb_draws(classpath: &str, seed: u64) -> HashMap<String, Vec<String>> {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in JAVA_SOURCES {
        std::fs::write(dir.path().join(name), text).expect("write Java source");
    }
    let classes = dir.path().join("classes");
    let out = Command::new("javac")
        .arg("-d")
        .arg(&classes)
        .arg("-cp")
        .arg(classpath)
        .args(JAVA_SOURCES.iter().map(|(n, _)| dir.path().join(n)))
        .output()
        .expect("run javac");
    assert!(
        out.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{classpath}", classes.display()))
        .arg("ycsbexact.Main")
        .arg(DRAWS.to_string())
        .arg(seed.to_string())
        .output()
        .expect("run java");
    assert!(
        out.status.success(),
        "java: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, values) = l.split_once(": ")?;
            Some((
                name.to_string(),
                values.split(' ').map(String::from).collect(),
            ))
        })
        .collect()
}

/// storlab's draws for every scenario Draws.java prints.
fn storlab_draws(seed: u64) -> Vec<(String, Vec<String>)> {
    let n = DRAWS;
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut put = |name: &str, mut draw: Draw<'_>| {
        let mut r = SplitMix64(seed);
        out.push((name.into(), (0..n).map(|i| draw(&mut r, i)).collect()));
    };
    for (name, min, max) in [
        ("zipfian 0 999", 0, 999),
        ("zipfian 1 100", 1, 100),
        ("zipfian 0 99999", 0, 99_999),
    ] {
        let mut z = Zipfian::new(min, max, ZIPFIAN_CONSTANT).unwrap();
        put(name, Box::new(move |r, _| z.next(r).to_string()));
    }
    let mut grow = Zipfian::new(0, 999, ZIPFIAN_CONSTANT).unwrap();
    let mut state = Vec::new();
    put(
        "zipfian 0 999 growing by 3",
        Box::new(|r, i| {
            let v = grow.next_for_count(r, 1000 + 3 * i as u64).to_string();
            if i + 1 == n {
                state = vec![
                    (grow.zetan().to_bits() as i64).to_string(),
                    (grow.eta().to_bits() as i64).to_string(),
                ];
            }
            v
        }),
    );
    out.push(("zipfian 0 999 growing by 3 state".into(), state));
    let mut put = |name: &str, mut draw: Draw<'_>| {
        let mut r = SplitMix64(seed);
        out.push((name.into(), (0..n).map(|i| draw(&mut r, i)).collect()));
    };
    for (name, max) in [
        ("scrambled 0 1000", 1000),
        ("scrambled 0 1200000", 1_200_000),
    ] {
        let mut s = ScrambledZipfian::new(0, max, ZIPFIAN_CONSTANT).unwrap();
        put(name, Box::new(move |r, _| s.next(r).to_string()));
    }
    let acked = AcknowledgedCounter::new(1000);
    let mut latest = SkewedLatest::new(999, ZIPFIAN_CONSTANT, ZipfianEta::InitialCount).unwrap();
    put(
        "latest 1000 inserting every 3",
        Box::new(move |r, i| {
            if i % 3 == 0 {
                acked.acknowledge(acked.next()).unwrap();
            }
            latest.next(r, acked.acknowledged_end() - 1).to_string()
        }),
    );
    let h = Hotspot::new(100, 1099, 0.2, 0.8).unwrap();
    put(
        "hotspot 100 1099 0.2 0.8",
        Box::new(move |r, _| h.next(r).to_string()),
    );
    for (name, lower, upper) in [("uniform 5000 5999", 5000, 5999), ("uniform 0 9", 0, 9)] {
        let u = Uniform::new(lower, upper).unwrap();
        put(name, Box::new(move |r, _| u.next(r).to_string()));
    }
    let e = Exponential::new(95.0, 1000.0 * 0.8571428571).unwrap();
    put(
        "exponential 95 857.1428571 bits",
        Box::new(move |r, _| (e.next(r).to_bits() as i64).to_string()),
    );
    let d = Discrete::new(&[(0.5, 0u8), (0.3, 1), (0.15, 2), (0.05, 3)]).unwrap();
    put(
        "discrete 0.5 0.3 0.15 0.05",
        Box::new(move |r, _| d.next(r).to_string()),
    );
    for dist in ["uniform", "zipfian", "latest", "hotspot", "exponential"] {
        let mut p = Properties::new();
        for o in [
            "recordcount=1000".to_string(),
            "operationcount=3000".into(),
            "insertproportion=0.1".into(),
            format!("requestdistribution={dist}"),
        ] {
            p.set_override(&o).unwrap();
        }
        let w = CoreWorkload::from_properties(&mut p).unwrap();
        let mut keys = w.key_chooser().unwrap();
        let inserts = AcknowledgedCounter::new(w.record_count);
        put(
            &format!("keynum {dist} recordcount 1000 inserting every 4"),
            Box::new(move |r, i| {
                if i % 4 == 0 {
                    inserts.acknowledge(inserts.next()).unwrap();
                }
                keys.next_keynum(r, inserts.acknowledged_end()).to_string()
            }),
        );
    }
    out
}

#[test]
fn generators_match_ycsb_0_17_0_draw_for_draw() {
    let Some(classpath) = ycsb_classpath() else {
        return;
    };
    for seed in [7u64, 0x5eed_1234_abcd] {
        let ycsb = ycsb_draws(&classpath, seed);
        let ours = storlab_draws(seed);
        assert_eq!(ycsb.len(), ours.len(), "scenarios: {:?}", ycsb.keys());
        let mut mismatches = Vec::new();
        for (name, values) in &ours {
            let Some(theirs) = ycsb.get(name) else {
                panic!("YCSB printed no scenario `{name}`");
            };
            assert_eq!(theirs.len(), values.len(), "{name}");
            // Exponential draws are doubles from a logarithm: Java's Math.log may be 1 ulp off
            // the correctly rounded value (HotSpot's intrinsic and glibc's log part ways in
            // about 1 draw in 1000; seed 7: 20 of 20,000, at most 2 ulps after the division by
            // gamma), so they must agree to 4 ulps; the keys chosen from them ("keynum
            // exponential") must agree exactly. Everything else is exact.
            let ulps = name.starts_with("exponential");
            let same = |a: &str, b: &str| {
                if !ulps {
                    return a == b;
                }
                match (a.parse::<i64>(), b.parse::<i64>()) {
                    (Ok(x), Ok(y)) => x.abs_diff(y) <= 4,
                    _ => false,
                }
            };
            let differ: Vec<usize> = (0..values.len())
                .filter(|&i| !same(&values[i], &theirs[i]))
                .collect();
            if ulps {
                let apart: Vec<u64> = (0..values.len())
                    .filter_map(|i| {
                        let x = values[i].parse::<i64>().ok()?;
                        let y = theirs[i].parse::<i64>().ok()?;
                        (x != y).then(|| x.abs_diff(y))
                    })
                    .collect();
                eprintln!(
                    "seed {seed} `{name}`: {} of {} draws apart, by at most {} ulps",
                    apart.len(),
                    values.len(),
                    apart.iter().max().unwrap_or(&0)
                );
            }
            if let Some(&i) = differ.first() {
                mismatches.push(format!(
                    "seed {seed} `{name}`: {} of {} draws differ, first at {i}: storlab {} YCSB {}",
                    differ.len(),
                    values.len(),
                    values[i],
                    theirs[i]
                ));
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }
}
