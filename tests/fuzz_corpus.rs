//! The short run of the fuzz targets that CI makes on stable: every file of the fuzz corpus
//! (`fuzz/corpus/TARGET`, kept by `cargo fuzz cmin`, with every input that once crashed a
//! target) through the target's entry point in `storlab_cli::fuzzing`, then a few thousand
//! pseudo-random mutations of them from a fixed seed. None may panic, nor take long. The long
//! runs under libFuzzer are a benchmark: `bench/fuzz`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use storlab_cli::fuzzing::FuzzTarget;

/// Mutations per target (each of a corpus file, or of two spliced).
const MUTATIONS_PER_TARGET: usize = 400;

/// Longer than this on one input in a debug build is a hang as far as CI can tell.
const SLOW: Duration = Duration::from_secs(5);

fn corpus(target: FuzzTarget) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target.name());
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).expect("corpus file");
            (p, bytes)
        })
        .collect();
    files.sort();
    files
}

/// A small xorshift generator: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Tokens that parsers of numbers, sizes, durations, tables and lists stumble on.
#[rustfmt::skip]
const TOKENS: &[&str] = &[
    "0", "-1", "-0", "1e308", "-1e308", "NaN", "inf", "18446744073709551615",
    "18446744073709551616", "9223372036854775807", "-9223372036854775808", "4294967296", "0.0",
    "1e-320", "999999999999999999999", "", "=", "==", ",", ";", ":", "[", "]", "[[", "{", "}",
    "\"", "'", "\\", "\n", "\r\n", "\t", "#", "%", "$", "${", "--", "-", "k", "KiB", "ms", "s",
    "h", "1ns", "0s", "100%", "101", "\u{0}", "\u{feff}", "é", "/dev/null", "null", "true",
];

fn mutate(rng: &mut Rng, base: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(7) {
            0 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            1 => out.insert(at, rng.next() as u8),
            2 if at < out.len() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at..end);
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                out.splice(at..at, t.iter().copied());
            }
            4 if at < out.len() => {
                // A token in place of the run of digits or letters at `at`.
                let end = out[at..]
                    .iter()
                    .position(|b| !b.is_ascii_alphanumeric() && *b != b'.')
                    .map_or(out.len(), |n| at + n);
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                out.splice(at..end, t.iter().copied());
            }
            5 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(64)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            6 if at < out.len() => {
                let end = (at + 1 + rng.below(32)).min(out.len());
                let copy = out[at..end].to_vec();
                out.splice(end..end, copy);
            }
            _ => out.truncate(at),
        }
    }
    out
}

/// Runs `input` through `target`: a failure message when it panicked or was slow.
fn check(target: FuzzTarget, what: &str, input: &[u8]) -> Option<String> {
    let start = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| target.run(input)));
    let took = start.elapsed();
    let saved = || {
        let path = std::env::temp_dir().join(format!(
            "storlab-fuzz-{}-{}-{:016x}",
            target.name(),
            std::process::id(),
            input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
            })
        ));
        let _ = std::fs::write(&path, input);
        path.display().to_string()
    };
    match result {
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Some(format!(
                "{}: {what} panicked: {message} (input in {})",
                target.name(),
                saved()
            ))
        }
        Ok(_) if took > SLOW => Some(format!(
            "{}: {what} took {took:?} (input in {})",
            target.name(),
            saved()
        )),
        Ok(_) => None,
    }
}

fn replay(target: FuzzTarget, seed: u64) -> Vec<String> {
    let files = corpus(target);
    assert!(!files.is_empty(), "no corpus for {}", target.name());
    let mut failures: Vec<String> = files
        .iter()
        .filter_map(|(p, bytes)| check(target, &p.display().to_string(), bytes))
        .collect();
    let mut rng = Rng(seed);
    for n in 0..MUTATIONS_PER_TARGET {
        let (base_path, base) = &files[rng.below(files.len())];
        let (_, other) = &files[rng.below(files.len())];
        let input = mutate(&mut rng, base, other);
        let what = format!("mutation {n} of {}", base_path.display());
        failures.extend(check(target, &what, &input));
    }
    failures
}

#[test]
fn no_corpus_file_nor_mutation_of_one_panics_any_target() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    for (i, target) in FuzzTarget::ALL.iter().enumerate() {
        failures.extend(replay(*target, 0x9e37_79b9_7f4a_7c15 ^ i as u64));
    }
    std::panic::set_hook(hook);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_mutations_change_their_input_and_every_target_has_a_corpus() {
    let mut rng = Rng(1);
    let base = b"name = \"x\"\n[targets.null]\ntype = \"null\"\n";
    let changed = (0..100)
        .filter(|_| mutate(&mut rng, base, b"other") != base)
        .count();
    assert!(changed > 90, "{changed} of 100 mutations changed the input");
    // Every target is run on its corpus: a corpus folder per target.
    for t in FuzzTarget::ALL {
        assert!(!corpus(t).is_empty(), "{}", t.name());
    }
}
