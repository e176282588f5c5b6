//! The YCSB core workload's hot path allocates nothing: drawing operations and building their
//! keys, field names and values in reused buffers, with a counting global allocator (which is
//! why this is an integration test and not beside the code).

use std::path::Path;

use storlab_model::YcsbOp;
use storlab_workload::{ycsb::CoreWorkload, ycsb::Properties};

#[path = "common/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocs;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// Allocations made while drawing `ops` operations of the workload file with `overrides`,
/// building every key, field name and value the operations need.
fn allocations(file: &str, overrides: &[&str], ops: u64) -> u64 {
    let mut props = Properties::new();
    props
        .load_file(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("workloads")
                .join(file),
        )
        .unwrap();
    for o in overrides {
        props.set_override(o).unwrap();
    }
    let setup = allocs();
    let workload = CoreWorkload::from_properties(&mut props).unwrap();
    let fields = workload.field_count;
    let run = workload.start(1).unwrap();
    let mut source = run.source(0);
    let mut key = Vec::with_capacity(64);
    let mut field = Vec::with_capacity(64);
    let mut value = Vec::with_capacity(4096);
    let mut checksum = 0u64;
    let mut one = |source: &mut storlab_workload::ycsb::CoreSource| {
        let op = source.next_op();
        let (keynum, write) = match op {
            YcsbOp::Read { keynum, .. } | YcsbOp::Scan { keynum, .. } => (keynum, None),
            YcsbOp::Update { keynum, field } => (keynum, Some(field.unwrap_or(0))),
            YcsbOp::ReadModifyWrite {
                keynum,
                write_field,
                ..
            } => (keynum, Some(write_field.unwrap_or(0))),
            YcsbOp::Insert { keynum } => {
                source.write_key(keynum, &mut key);
                for f in 0..fields {
                    source.write_field_name(f, &mut field);
                    source.fill_value(&key, &field, &mut value);
                    checksum += value.len() as u64;
                }
                source.acknowledge_insert(keynum).unwrap();
                return;
            }
        };
        source.write_key(keynum, &mut key);
        if let Some(f) = write {
            source.write_field_name(f, &mut field);
            source.fill_value(&key, &field, &mut value);
        }
        checksum += key.len() as u64 + value.len() as u64;
    };
    // The counter works: building the workload did allocate.
    assert!(allocs() > setup);
    // Warm up: buffers reach their size.
    for _ in 0..10_000 {
        one(&mut source);
    }
    let before = allocs();
    for _ in 0..ops {
        one(&mut source);
    }
    let made = allocs() - before;
    assert!(checksum > 0);
    made
}

#[test]
fn drawing_a_million_ops_allocates_nothing() {
    for (file, overrides) in [
        ("workloada", &[][..]),
        ("workloadd", &[][..]),
        ("workloade", &[][..]),
        (
            "workloadf",
            &["readallfields=false", "dataintegrity=true"][..],
        ),
        (
            "workloada",
            &["requestdistribution=hotspot", "fieldlength=1000"][..],
        ),
        ("workloadb", &["requestdistribution=exponential"][..]),
    ] {
        assert_eq!(
            allocations(file, overrides, 1_000_000),
            0,
            "{file} {overrides:?}"
        );
    }
}

/// Verified writes (`verify = true`) allocate nothing per operation either: starting a write
/// in the table, filling stamped values, checking a stamped value read back, ending the write.
#[test]
fn verified_writes_allocate_nothing() {
    use std::sync::Arc;
    use storlab_verify::kv::{KvTable, WriteOutcome};
    use storlab_workload::ycsb::RecordBuf;

    let mut props = Properties::new();
    props.set_override("recordcount=1000").unwrap();
    let workload = CoreWorkload::from_properties(&mut props).unwrap();
    let table = Arc::new(KvTable::new("t", 1000).unwrap());
    let mut rec = RecordBuf::new(&workload, 1).with_verify(Some(&table), 4);
    let mut good = 0u64;
    let mut one = |rec: &mut RecordBuf, i: u64| {
        rec.set_key(i % 1000);
        rec.begin_write(Some((i % 4) as u32));
        if i.is_multiple_of(2) {
            rec.fill_all();
        } else {
            rec.fill(3);
        }
        good += u64::from(rec.verify(3, &rec.values[3]));
        rec.end_write(Some((i % 4) as u32), WriteOutcome::Acked);
    };
    for i in 0..10_000 {
        one(&mut rec, i);
    }
    let before = allocs();
    for i in 0..500_000 {
        one(&mut rec, i);
    }
    assert_eq!(allocs() - before, 0);
    assert_eq!(good, 510_000, "every stamped value checks out");
}
