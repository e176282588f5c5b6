//! Unit tests of the core workload: properties, operation mixes, key choice (draw for draw as
//! YCSB 0.17.0's `CoreWorkload.nextKeynum`, fed the SplitMix64 stream tests/ycsb_exact.rs feeds
//! YCSB's own classes), load splits, values and errors.

use std::path::{Path, PathBuf};

use super::*;
use crate::ycsb::generators::test_rng::SplitMix64;
use crate::ycsb::generators::{fnvhash64, zeta};

fn workload_file(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("workloads")
        .join(name)
}

fn with(file: Option<&str>, overrides: &[&str]) -> Result<CoreWorkload, WorkloadError> {
    let mut p = Properties::new();
    if let Some(f) = file {
        p.load_file(&workload_file(f)).unwrap();
    }
    for o in overrides {
        p.set_override(o).unwrap();
    }
    CoreWorkload::from_properties(&mut p)
}

/// Shares of each kind over `draws` operations.
fn mix(w: &CoreWorkload, draws: u64) -> [f64; 5] {
    let run = w.start(42).unwrap();
    let mut s = run.source(0);
    let mut counts = [0u64; 5];
    for _ in 0..draws {
        let i = match s.next_op() {
            YcsbOp::Read { .. } => 0,
            YcsbOp::Update { .. } => 1,
            YcsbOp::Insert { keynum } => {
                s.acknowledge_insert(keynum).unwrap();
                2
            }
            YcsbOp::Scan { .. } => 3,
            YcsbOp::ReadModifyWrite { .. } => 4,
        };
        counts[i] += 1;
    }
    counts.map(|c| c as f64 / draws as f64)
}

/// The six standard workloads parse to YCSB's mixes, and 10^6 operations of each come out
/// within 0.003 of the proportion (3 standard deviations at p = 0.5 is 0.0015).
#[test]
fn standard_workloads_have_their_mix() {
    use RequestDistribution::*;
    let table = [
        ("workloada", [0.5, 0.5, 0.0, 0.0, 0.0], Zipfian),
        ("workloadb", [0.95, 0.05, 0.0, 0.0, 0.0], Zipfian),
        ("workloadc", [1.0, 0.0, 0.0, 0.0, 0.0], Zipfian),
        ("workloadd", [0.95, 0.0, 0.05, 0.0, 0.0], Latest),
        ("workloade", [0.0, 0.0, 0.05, 0.95, 0.0], Zipfian),
        ("workloadf", [0.5, 0.0, 0.0, 0.0, 0.5], Zipfian),
    ];
    for (file, expected, dist) in table {
        let w = with(Some(file), &[]).unwrap();
        assert_eq!(w.request_distribution, dist, "{file}");
        assert_eq!((w.record_count, w.operation_count), (1000, 1000), "{file}");
        assert_eq!((w.field_count, w.field_length_bytes), (10, 100));
        assert!(w.read_all_fields && !w.write_all_fields);
        assert_eq!(w.table, "usertable");
        let shares = mix(&w, 1_000_000);
        for (kind, (got, want)) in shares.iter().zip(expected).enumerate() {
            assert!(
                (got - want).abs() < 0.003,
                "{file} kind {kind}: {got} vs {want}"
            );
        }
    }
    let e = with(Some("workloade"), &[]).unwrap();
    assert_eq!((e.min_scan_length, e.max_scan_length), (1, 100));
    assert_eq!(e.scan_length_distribution, ScanLengthDistribution::Uniform);
}

#[test]
fn defaults_are_ycsbs() {
    let w = with(None, &["recordcount=10"]).unwrap();
    assert_eq!(w.table, "usertable");
    assert_eq!(w.insert_count, 10);
    assert_eq!(w.field_name_prefix, "field");
    assert_eq!(w.request_distribution, RequestDistribution::Uniform);
    assert_eq!(w.insert_order, InsertOrder::Hashed);
    assert_eq!(w.zero_padding, 1);
    assert_eq!(w.proportions.read, 0.95);
    assert_eq!(w.proportions.update, 0.05);
    assert_eq!((w.min_scan_length, w.max_scan_length), (1, 1000));
    assert_eq!(
        (w.hotspot_data_fraction, w.hotspot_opn_fraction),
        (0.2, 0.8)
    );
    assert_eq!(w.zipfian_constant, 0.99);
    assert!(!w.data_integrity && w.read_all_fields && !w.write_all_fields);
}

#[test]
fn fields_follow_readallfields_and_writeallfields() {
    let w = with(
        Some("workloadf"),
        &[
            "readallfields=false",
            "writeallfields=false",
            "fieldcount=4",
        ],
    )
    .unwrap();
    let run = w.start(1).unwrap();
    let mut s = run.source(3);
    let mut seen = [false; 4];
    for _ in 0..10_000 {
        match s.next_op() {
            YcsbOp::Read { field, .. } => seen[field.unwrap() as usize] = true,
            YcsbOp::ReadModifyWrite {
                read_field,
                write_field,
                ..
            } => {
                assert!(read_field.unwrap() < 4 && write_field.unwrap() < 4);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seen, [true; 4]);
    let w = with(Some("workloada"), &["writeallfields=true"]).unwrap();
    let mut s = w.start(1).unwrap().source(0);
    for _ in 0..1000 {
        match s.next_op() {
            YcsbOp::Read { field, .. } | YcsbOp::Update { field, .. } => {
                assert_eq!(field, None)
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Scan lengths of workload E are uniform over 1..=100.
#[test]
fn scan_lengths() {
    let w = with(Some("workloade"), &["insertproportion=0"]).unwrap();
    let mut s = w.start(5).unwrap().source(0);
    let mut counts = [0u32; 101];
    for _ in 0..100_000 {
        match s.next_op() {
            YcsbOp::Scan { count, keynum, .. } => {
                assert!(keynum < 1000);
                counts[count as usize] += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(counts[0], 0);
    // 1000 expected each; 5 standard deviations is about 160.
    assert!(
        counts[1..].iter().all(|&c| (840..1160).contains(&c)),
        "{counts:?}"
    );
}

/// Thread i of n loads its share, and together they cover insertstart..+insertcount once.
#[test]
fn load_split_covers_the_range_exactly_once() {
    let w = with(
        None,
        &[
            "recordcount=100000",
            "insertstart=20000",
            "insertcount=50003",
        ],
    )
    .unwrap();
    let run = w.start(0).unwrap();
    let threads = 7u32;
    let shares: Vec<u64> = (0..threads)
        .map(|t| thread_op_count(50_003, threads, t))
        .collect();
    assert_eq!(shares, [7144, 7144, 7143, 7143, 7143, 7143, 7143]);
    let keys: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mut load = run.load_source(threads, t);
                s.spawn(move || {
                    let mut got = Vec::new();
                    while let Some(op) = load.next_op() {
                        let YcsbOp::Insert { keynum } = op else {
                            panic!()
                        };
                        got.push(keynum);
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, k) in keys.iter().enumerate() {
        assert_eq!(k.len() as u64, shares[t]);
    }
    let mut all: Vec<u64> = keys.concat();
    all.sort_unstable();
    assert_eq!(all, (20_000..70_003).collect::<Vec<u64>>());
    // More threads than records: the extra threads get nothing.
    assert_eq!(thread_op_count(3, 5, 2), 1);
    assert_eq!(thread_op_count(3, 5, 3), 0);
}

/// Workload D with 20% inserts: the share of reads within 1000 keys of the newest, and the
/// acknowledged end reached. Reads never go past the acknowledged end.
fn workload_d_near_share(eta: &str) -> (f64, u64) {
    let w = with(
        Some("workloadd"),
        &[
            "insertproportion=0.2",
            "readproportion=0.8",
            &format!("zipfianeta={eta}"),
        ],
    )
    .unwrap();
    let run = w.start(9).unwrap();
    let mut s = run.source(0);
    let mut pending = Vec::new();
    let (mut reads, mut near) = (0u64, 0u64);
    for _ in 0..200_000 {
        match s.next_op() {
            YcsbOp::Insert { keynum } => pending.push(keynum),
            YcsbOp::Read { keynum, .. } => {
                let end = run.insert_keys().acknowledged_end();
                assert!(keynum < end);
                reads += 1;
                if keynum + 1000 >= end {
                    near += 1;
                }
            }
            other => panic!("{other:?}"),
        }
        // Acknowledge with a lag, the oldest first.
        if pending.len() > 5 {
            s.acknowledge_insert(pending.remove(0)).unwrap();
        }
    }
    (
        near as f64 / reads as f64,
        run.insert_keys().acknowledged_end(),
    )
}

/// Workload D: inserts move the acknowledged counter, reads never go past it, reads stay
/// near the newest key, and at a fixed point the newest key is the most read one.
///
/// With the corrected eta (`zipfianeta=current-count`) the share of reads within 1000 keys of
/// the newest is at least zeta(1000)/zeta(n) for n growing from 1000 to 41,000, i.e. at least
/// zeta(1000)/zeta(40,738) = 0.656; measured 0.728. YCSB's eta (the default) keeps the 999 items
/// the zipfian was built with, a smaller eta that maps the same u to an older key: measured
/// 0.605, below that floor, which is why YCSB's workload D reads reach further back than the
/// formula says. Bound for the default: above 0.5 and below the corrected share.
#[test]
fn latest_reads_recent_inserts_and_never_unacknowledged_ones() {
    let (current, end) = workload_d_near_share("current-count");
    assert!(end > 1000 + 39_000, "acknowledged end {end}");
    let floor = zeta(1000, 0.99) / zeta(end, 0.99);
    assert!(
        current > floor,
        "current-count: share near the newest {current}, floor {floor}"
    );
    let (ycsb, _) = workload_d_near_share("initial-count");
    eprintln!("share within 1000 keys of the newest: YCSB's eta {ycsb}, current-count {current}");
    assert!(
        ycsb > 0.5 && ycsb < current,
        "YCSB's eta: share near the newest {ycsb}, current-count {current}"
    );
    let w = with(
        Some("workloadd"),
        &["readproportion=1", "insertproportion=0"],
    )
    .unwrap();
    let mut s = w.start(4).unwrap().source(0);
    let mut counts = vec![0u32; 1000];
    for _ in 0..100_000 {
        let YcsbOp::Read { keynum, .. } = s.next_op() else {
            panic!()
        };
        counts[keynum as usize] += 1;
    }
    let hottest = (0..1000).max_by_key(|&k| counts[k]).unwrap();
    assert_eq!(hottest, 999);
    // YCSB's skewed latest never draws key 0.
    assert_eq!(counts[0], 0);
}

/// Zipfian request keys come from [insertstart, insertstart + insertcount + expected inserts]
/// (YCSB's bound is inclusive: 1001 keys for workload A) and are redrawn while past the
/// acknowledged end; the hottest key is fnvhash64(0) mod 1001 = 144.
#[test]
fn zipfian_keys_stay_below_the_acknowledged_end() {
    let w = with(Some("workloada"), &[]).unwrap();
    let mut s = w.start(3).unwrap().source(0);
    let mut counts = vec![0u32; 1000];
    for _ in 0..200_000 {
        match s.next_op() {
            YcsbOp::Read { keynum, .. } | YcsbOp::Update { keynum, .. } => {
                counts[keynum as usize] += 1
            }
            other => panic!("{other:?}"),
        }
    }
    let hottest = (0..1000).max_by_key(|&k| counts[k]).unwrap();
    assert_eq!(hottest as u64, fnvhash64(0) % 1001);
    assert_eq!(hottest, 144);
    // With inserts the key space is larger; keys not yet acknowledged are never drawn.
    let w = with(
        Some("workloada"),
        &["operationcount=1000000", "insertproportion=0.1"],
    )
    .unwrap();
    assert_eq!(w.expected_new_keys(), 200_000);
    let run = w.start(3).unwrap();
    let mut s = run.source(0);
    let mut pending = Vec::new();
    for _ in 0..20_000 {
        match s.next_op() {
            YcsbOp::Insert { keynum } => pending.push(keynum),
            YcsbOp::Read { keynum, .. } | YcsbOp::Update { keynum, .. } => {
                assert!(keynum < run.insert_keys().acknowledged_end())
            }
            other => panic!("{other:?}"),
        }
        if pending.len() > 3 {
            s.acknowledge_insert(pending.remove(0)).unwrap();
        }
    }
    let end = run.insert_keys().acknowledged_end();
    assert!(end > 1000 + 1500, "acknowledged end {end}");
}

#[test]
fn exponential_counts_back_from_the_latest_key() {
    let w = with(
        None,
        &[
            "recordcount=10000",
            "requestdistribution=exponential",
            "readproportion=1",
        ],
    )
    .unwrap();
    let mut s = w.start(2).unwrap().source(0);
    let draws = 200_000;
    let mut recent = 0;
    for _ in 0..draws {
        let k = s.next_keynum();
        assert!(k < 10_000);
        if k > 9_999 - 8_571 {
            recent += 1;
        }
    }
    // YCSB redraws distances past the oldest key (x >= 10000), so the share within
    // 8571.43 of the latest is 0.95 / P(x < 10000) = 0.95 / (1 - 0.05^(10000 / 8571.43)),
    // 0.9797; measured 0.9799 with seed 2.
    let share = recent as f64 / draws as f64;
    let expected = 0.95 / (1.0 - 0.05f64.powf(10_000.0 / (10_000.0 * 0.8571428571)));
    assert!((share - expected).abs() < 0.003, "{share} vs {expected}");
}

#[test]
fn sequential_and_hotspot_request_keys() {
    let w = with(None, &["recordcount=5", "requestdistribution=sequential"]).unwrap();
    let run = w.start(0).unwrap();
    let (mut a, mut b) = (run.source(0), run.source(1));
    let got: Vec<u64> = (0..7)
        .map(|i| {
            if i % 2 == 0 {
                a.next_keynum()
            } else {
                b.next_keynum()
            }
        })
        .collect();
    assert_eq!(got, [0, 1, 2, 3, 4, 0, 1]);
    let w = with(
        None,
        &[
            "recordcount=1000",
            "requestdistribution=hotspot",
            "insertstart=100",
            "insertcount=900",
        ],
    )
    .unwrap();
    let mut s = w.start(0).unwrap().source(0);
    let hot = (0..100_000)
        .filter(|_| {
            let k = s.next_keynum();
            assert!((100..1000).contains(&k));
            k < 100 + 180
        })
        .count();
    assert!((hot as f64 / 100_000.0 - 0.8).abs() < 0.01, "{hot}");
}

#[test]
fn values_keys_and_integrity() {
    let w = with(
        Some("workloada"),
        &[
            "dataintegrity=true",
            "fieldlength=64",
            "insertorder=ordered",
            "zeropadding=6",
        ],
    )
    .unwrap();
    let mut s = w.start(0).unwrap().source(0);
    let (mut key, mut field, mut value) = (Vec::new(), Vec::new(), Vec::new());
    s.write_key(42, &mut key);
    assert_eq!(key, b"user000042");
    s.write_field_name(3, &mut field);
    assert_eq!(field, b"field3");
    s.fill_value(&key, &field, &mut value);
    assert_eq!(value.len(), 64);
    assert!(value.starts_with(b"user000042:field3:"));
    assert!(s.verify_value(&key, &field, &value));
    value[20] ^= 0x20;
    assert!(!s.verify_value(&key, &field, &value));
    let err = with(
        None,
        &[
            "recordcount=5",
            "dataintegrity=true",
            "fieldlengthdistribution=uniform",
        ],
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("needs fieldlengthdistribution=constant"),
        "{err}"
    );
    let w = with(
        None,
        &[
            "recordcount=5",
            "fieldlengthdistribution=uniform",
            "minfieldlength=10",
            "fieldlength=20",
        ],
    )
    .unwrap();
    let mut s = w.start(0).unwrap().source(0);
    for _ in 0..100 {
        s.fill_value(b"k", b"f", &mut value);
        assert!((10..=20).contains(&value.len()));
    }
}

#[test]
fn errors_name_the_property_file_and_line() {
    let mut p = Properties::new();
    p.parse_str(
        "recordcount=1000\nfieldcount=ten\n",
        Path::new("workloads/mine"),
    )
    .unwrap();
    let err = CoreWorkload::from_properties(&mut p).unwrap_err();
    assert_eq!(
        err.to_string(),
        "workloads/mine:2: fieldcount=ten: expected a whole number from 0 to 4294967295"
    );
    let mut p = Properties::new();
    p.parse_str(
        "recordcount=1000\ninsertstart=600\ninsertcount=500\n",
        Path::new("w"),
    )
    .unwrap();
    let err = CoreWorkload::from_properties(&mut p).unwrap_err();
    assert_eq!(
        err.to_string(),
        "insertstart + insertcount (600 + 500) is above recordcount (1000) \
         (w:2: insertstart=600; w:3: insertcount=500; w:1: recordcount=1000)"
    );
    let err = with(None, &["recordcount=10", "requestdistribution=zipf"]).unwrap_err();
    assert!(err.to_string().contains("one of uniform, zipfian"), "{err}");
    let err = with(None, &["recordcount=10", "readallfields=yes"]).unwrap_err();
    assert!(matches!(err, WorkloadError::Invalid { .. }));
    let err = with(
        None,
        &[
            "recordcount=10",
            "workload=site.ycsb.workloads.RestWorkload",
        ],
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("only site.ycsb.workloads.CoreWorkload")
    );
    let err = with(None, &["recordcount=10", "zipfianconstant=1"]).unwrap_err();
    assert!(err.to_string().contains("zipfianconstant=1"), "{err}");
    assert!(with(None, &["recordcount=10", "zipfianconstant=0.5"]).is_ok());
    assert!(
        with(
            None,
            &["recordcount=10", "minscanlength=5", "maxscanlength=4"]
        )
        .is_err()
    );
    assert!(with(None, &[]).is_err());
}

#[test]
fn unknown_properties_are_left_for_the_caller() {
    let mut p = Properties::new();
    p.load_file(&workload_file("workloada")).unwrap();
    p.parse_str(
        "threadcount=8\nmongodb.url=mongodb://localhost:27017/ycsb\nreadproportoin=0.5\n",
        Path::new("extra"),
    )
    .unwrap();
    CoreWorkload::from_properties(&mut p).unwrap();
    let left: Vec<String> = p.unclaimed().map(|q| q.to_string()).collect();
    assert_eq!(
        left,
        [
            "extra:1: threadcount=8",
            "extra:2: mongodb.url=mongodb://localhost:27017/ycsb",
            "extra:3: readproportoin=0.5",
        ]
    );
    assert!(CLIENT_PROPERTIES.contains(&"threadcount"));
}

/// The first 12 keys YCSB 0.17.0's `CoreWorkload.nextKeynum` chose for recordcount 1000,
/// operationcount 3000, insertproportion 0.1 (so zipfian draws over 1000 + 600 + 1 keys), one
/// insert acknowledged before every fourth choice, fed SplitMix64 from seed 7.
#[test]
fn key_choice_is_ycsbs() {
    for (distribution, expected) in [
        (
            "uniform",
            [487, 804, 270, 413, 674, 305, 798, 182, 985, 425, 83, 100],
        ),
        (
            "zipfian",
            [635, 697, 745, 576, 684, 336, 792, 200, 856, 42, 122, 433],
        ),
        (
            "latest",
            [
                991, 1000, 526, 958, 986, 998, 984, 996, 1001, 991, 1002, 261,
            ],
        ),
        (
            "hotspot",
            [4, 413, 105, 182, 25, 100, 472, 336, 591, 16, 149, 15],
        ),
        (
            "exponential",
            [731, 971, 846, 774, 604, 784, 683, 427, 750, 354, 991, 978],
        ),
    ] {
        let w = with(
            None,
            &[
                "recordcount=1000",
                "operationcount=3000",
                "insertproportion=0.1",
                &format!("requestdistribution={distribution}"),
            ],
        )
        .unwrap();
        let mut keys = w.key_chooser().unwrap();
        let inserts = AcknowledgedCounter::new(w.record_count);
        let mut r = SplitMix64(7);
        let got: Vec<u64> = (0..12)
            .map(|i| {
                if i % 4 == 0 {
                    inserts.acknowledge(inserts.next()).unwrap();
                }
                keys.next_keynum(&mut r, inserts.acknowledged_end())
            })
            .collect();
        assert_eq!(got, expected, "{distribution}");
    }
}

/// `zipfianeta`: YCSB's eta by default, the corrected one on request, anything else refused.
#[test]
fn zipfianeta_chooses_the_eta_of_a_grown_zipfian() {
    let w = with(Some("workloadd"), &[]).unwrap();
    assert_eq!(w.zipfian_eta, ZipfianEta::InitialCount);
    let w = with(Some("workloadd"), &["zipfianeta=current-count"]).unwrap();
    assert_eq!(w.zipfian_eta, ZipfianEta::CurrentCount);
    let KeyChooser::Latest(latest) = w.key_chooser().unwrap() else {
        panic!("workload D draws from the latest")
    };
    assert_eq!(latest.zipfian().items(), 999);
    assert_eq!(latest.zipfian().eta_count(), ZipfianEta::CurrentCount);
    let err = with(Some("workloadd"), &["zipfianeta=current"]).unwrap_err();
    assert!(
        err.to_string()
            .contains("zipfianeta=current: expected one of initial-count, current-count"),
        "{err}"
    );
}
