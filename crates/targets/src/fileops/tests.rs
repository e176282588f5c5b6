//! The fileops target's options and what each operation does to the files.

use super::*;
use crate::{BlockParams, WorkloadParams};
use std::os::unix::fs::MetadataExt;

fn config(text: &str) -> Result<FileOpsConfig, OptionError> {
    let table: toml::Table = toml::from_str(text).unwrap();
    match parse(table)? {
        TargetConfig::Fileops(c) => Ok(c),
        _ => unreachable!("parse returns fileops targets"),
    }
}

fn params(region_bytes: u64) -> SessionParams {
    SessionParams {
        worker: 0,
        writes: true,
        region: Region {
            offset_bytes: 0,
            size_bytes: region_bytes,
        },
        queue_depth: 1,
        seed: 1,
        workload: WorkloadParams::Block(Box::new(BlockParams::zeros(4096))),
    }
}

/// Runs each operation in turn; the bytes each counted, or its errno.
struct Run(Vec<Op>);
impl SessionUser for Run {
    type Output = Vec<Result<u32, i32>>;
    fn run<S: Session>(self, mut s: S) -> Self::Output {
        self.0
            .into_iter()
            .map(|op| match s.submit(0, op).unwrap() {
                Submitted::Done { result, .. } => result.map_err(|e| e.code),
                Submitted::Queued => panic!("fileops never queues"),
            })
            .collect()
    }
}

fn run(c: &FileOpsConfig, ops: Vec<Op>) -> Vec<Result<u32, i32>> {
    let (region, ()) = c.prepare(&PrepareOptions::default()).unwrap();
    c.open(&(), &params(region.size_bytes), Run(ops)).unwrap()
}

fn write(offset: u64, len: u64) -> Op {
    Op::Write { offset, len }
}

fn read(offset: u64, len: u64) -> Op {
    Op::Read { offset, len }
}

#[test]
fn options_are_checked_by_key() {
    for (text, key) in [
        ("operation = \"stat\"\nsize = 4096", "path"),
        ("operation = \"stat\"\npath = \"a\"\nprefix = \"b\"\nsize = 4096", "prefix"),
        ("operation = \"truncate\"\nprefix = \"b\"\nsize = 4096", "prefix"),
        ("operation = \"stat\"\npath = \"a\"\ncount = 2\nsize = 4096", "count"),
        ("operation = \"stat\"\nprefix = \"a\"\ncount = 0\nsize = 4096", "count"),
        ("operation = \"stat\"\npath = \"a\"\nsize = 0", "size"),
        ("operation = \"create\"\npath = \"a\"\nsize = 1\nlayout = \"write\"", "layout"),
        ("operation = \"delete\"\npath = \"a\"\nsize = 1\ndirect = true", "direct"),
    ] {
        assert_eq!(config(text).unwrap_err().key, key, "{text}");
    }
    let e = config("operation = \"rename\"\npath = \"a\"\nsize = 1").unwrap_err();
    assert!(e.message.contains("rename"), "{}", e.message);
    let c = config("operation = \"stat\"\nprefix = \"d/j.0.\"\ncount = 3\nsize = 4096").unwrap();
    assert_eq!(c.files()[2], PathBuf::from("d/j.0.2"));
    assert_eq!(c.paths(), [PathBuf::from("d")]);
}

#[test]
fn each_workload_operation_kind_is_declared_per_operation() {
    let caps = |op: &str| {
        let c = config(&format!("operation = \"{op}\"\npath = \"a\"\nsize = 4096")).unwrap();
        c.capabilities().ops.to_vec()
    };
    assert_eq!(caps("create"), [OpKind::Read, OpKind::Write]);
    assert_eq!(caps("truncate"), [OpKind::Write, OpKind::Fsync]);
    assert_eq!(caps("allocate"), [OpKind::Read, OpKind::Write, OpKind::Fsync]);
    assert_eq!(caps("punch-hole"), [OpKind::Write, OpKind::Fsync]);
}

#[test]
fn create_stat_and_delete_take_the_files_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("sub/j.0.");
    let set = |op: &str| {
        config(&format!(
            "operation = \"{op}\"\nprefix = \"{}\"\ncount = 3\nsize = 4096",
            prefix.display()
        ))
        .unwrap()
    };
    let name = |i: u32| dir.path().join(format!("sub/j.0.{i}"));
    // create: the folder made, no file laid out; each operation creates the next file empty.
    let c = set("create");
    assert_eq!(run(&c, vec![read(0, 4096); 2]), [Ok(4096), Ok(4096)]);
    assert_eq!(std::fs::metadata(name(1)).unwrap().len(), 0);
    assert_eq!(std::fs::metadata(name(1)).unwrap().mode() & 0o777, 0o600);
    assert!(!name(2).exists());
    // stat: every file laid out to its size first; the fourth operation wraps to the first.
    let s = set("stat");
    assert_eq!(run(&s, vec![write(0, 4096); 4]), [Ok(4096); 4]);
    assert_eq!(std::fs::metadata(name(2)).unwrap().len(), 4096);
    // delete: each operation unlinks the next file; a file already gone is the error.
    let d = set("delete");
    let r = run(&d, vec![read(0, 4096); 4]);
    assert_eq!(r, [Ok(4096), Ok(4096), Ok(4096), Err(libc::ENOENT)]);
    assert!(!name(0).exists() && !name(2).exists());
}

#[test]
fn stat_calls_are_fios_stat_types() {
    // A dangling symbolic link: lstat sees the link, stat and statx (after realpath) do not.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("l.0.0")).unwrap();
    let stat = |call: &str| {
        let c = config(&format!(
            "operation = \"stat\"\nprefix = \"{}/l.0.\"\nsize = 4096\nstat-call = \"{call}\"",
            dir.path().display()
        ))
        .unwrap();
        c.open(&(), &params(4096), Run(vec![read(0, 4096)])).unwrap()
    };
    assert_eq!(stat("lstat"), [Ok(4096)]);
    assert_eq!(stat("stat"), [Err(libc::ENOENT)]);
    assert_eq!(stat("statx"), [Err(libc::ENOENT)]);
    std::fs::write(dir.path().join("gone"), b"back").unwrap();
    assert_eq!(stat("statx"), [Ok(4096)]);
    let e = config("operation = \"delete\"\npath = \"a\"\nsize = 1\nstat-call = \"lstat\"");
    assert_eq!(e.unwrap_err().key, "stat-call");
}

#[test]
fn remove_after_removes_only_the_files_storlab_created() {
    let dir = tempfile::tempdir().unwrap();
    let name = |i: u32| dir.path().join(format!("k.0.{i}"));
    std::fs::write(name(1), b"the user's").unwrap();
    let c = config(&format!(
        "operation = \"create\"\nprefix = \"{}/k.0.\"\ncount = 2\nsize = 4096\nremove-after = true",
        dir.path().display()
    ))
    .unwrap();
    assert_eq!(run(&c, vec![write(0, 4096); 2]), [Ok(4096); 2]);
    assert!(name(0).exists());
    c.finish();
    assert!(!name(0).exists(), "created by storlab: removed");
    assert_eq!(std::fs::read(name(1)).unwrap(), b"the user's");
}

#[test]
fn truncate_sets_the_size_to_each_writes_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    let c = config(&format!(
        "operation = \"truncate\"\npath = \"{}\"\nsize = 65536\nlayout = \"truncate\"",
        path.display()
    ))
    .unwrap();
    let r = run(&c, vec![write(0, 4096), write(8192, 4096), Op::Fsync]);
    assert_eq!(r, [Ok(4096), Ok(4096), Ok(0)]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 8192);
    // A read is not a truncate's (the study refuses it before a run); nothing outside the
    // region is addressed.
    let mut s = c.file_session(FileOp::Truncate, &params(65536)).unwrap();
    assert_eq!(s.submit(0, read(0, 4096)).unwrap_err(), NOT_BLOCK_OP);
    assert_eq!(s.submit(0, write(65536, 4096)).unwrap_err(), OUT_OF_BOUNDS);
}

#[test]
fn allocate_and_punch_hole_change_the_blocks_not_the_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let one = |op: &str| {
        config(&format!(
            "operation = \"{op}\"\npath = \"{}\"\nsize = 1048576\nlayout = \"truncate\"",
            path.display()
        ))
        .unwrap()
    };
    let allocated = || std::fs::metadata(&path).unwrap().blocks() * 512;
    let a = one("allocate");
    assert_eq!(run(&a, vec![read(0, 65536), write(65536, 65536)]), [Ok(65536); 2]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
    let before = allocated();
    assert!(before >= 131072, "{before}");
    let p = one("punch-hole");
    assert_eq!(run(&p, vec![write(0, 65536)]), [Ok(65536)]);
    assert_eq!(allocated(), before - 65536);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
}
