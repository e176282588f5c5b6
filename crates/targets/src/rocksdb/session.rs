//! A RocksDB session: one worker's read and write options and buffers on the shared
//! database, db_bench's and YCSB's operations on it, each executed in `submit`.

use super::*;

/// One worker's session: executes each operation in `submit`.
pub struct RocksSession<'a> {
    pub(super) db: &'a DB,
    pub(super) read: ReadOptions,
    pub(super) write: WriteOptions,
    pub(super) key: Vec<u8>,
    pub(super) values: ValueGen,
    pub(super) iter: Option<DBRawIterator<'a>>,
    /// YCSB records: key, fields and values.
    pub(super) record: Option<RecordBuf>,
    /// A YCSB record encoded as one value.
    pub(super) encoded: Vec<u8>,
}

fn op_error(e: &rocksdb::Error) -> OpError {
    let kind = match e.kind() {
        rocksdb::ErrorKind::IOError => ErrorKind::Io,
        rocksdb::ErrorKind::TimedOut => ErrorKind::Timeout,
        rocksdb::ErrorKind::InvalidArgument | rocksdb::ErrorKind::NotSupported => {
            ErrorKind::Invalid
        }
        rocksdb::ErrorKind::NotFound => ErrorKind::NotFound,
        _ => ErrorKind::Other,
    };
    OpError { kind, code: 0 }
}

impl RocksSession<'_> {
    #[inline]
    fn get(&mut self, key: u64) -> Result<(u32, bool), OpError> {
        write_key(key, &mut self.key);
        let got: Result<Option<DBPinnableSlice>, _> = self.db.get_pinned_opt(&self.key, &self.read);
        match got {
            Ok(Some(v)) => Ok(((self.key.len() + v.len()) as u32, true)),
            Ok(None) => Ok((0, false)),
            Err(e) => Err(op_error(&e)),
        }
    }

    #[inline]
    fn put(&mut self, key: u64) -> Result<u32, OpError> {
        write_key(key, &mut self.key);
        let value = self.values.next();
        let n = (self.key.len() + value.len()) as u32;
        self.db
            .put_opt(&self.key, value, &self.write)
            .map(|()| n)
            .map_err(|e| op_error(&e))
    }

    fn next(&mut self) -> Result<(u32, bool), OpError> {
        let db = self.db;
        let it = self.iter.get_or_insert_with(|| {
            let mut it = db.raw_iterator();
            it.seek_to_first();
            it
        });
        if !it.valid() {
            // The end of the database: start over from the first key.
            it.status().map_err(|e| op_error(&e))?;
            it.seek_to_first();
        }
        let r = match (it.key(), it.value()) {
            (Some(k), Some(v)) => ((k.len() + v.len()) as u32, true),
            _ => (0, false),
        };
        it.next();
        Ok(r)
    }
}

impl RocksSession<'_> {
    /// Runs one YCSB operation: (bytes moved, record found).
    fn ycsb(&mut self, op: YcsbOp) -> Result<(u32, bool), OpError> {
        let Some(rec) = self.record.as_mut() else {
            return Err(OpError {
                kind: ErrorKind::Invalid,
                code: libc::EINVAL,
            });
        };
        match op {
            YcsbOp::Read { keynum, field } => {
                rec.set_key(keynum);
                read_record(self.db, &self.read, rec, field)
            }
            YcsbOp::Insert { keynum } => {
                rec.set_key(keynum);
                rec.begin_write(None);
                rec.fill_all();
                encode_record(&rec.values, &mut self.encoded);
                let n = (rec.key.len() + self.encoded.len()) as u32;
                let put = self
                    .db
                    .put_opt(&rec.key, &self.encoded, &self.write)
                    .map(|()| (n, true))
                    .map_err(|e| op_error(&e));
                rec.end_write(None, write_outcome(&put));
                put
            }
            YcsbOp::Update { keynum, field } => {
                rec.set_key(keynum);
                rec.begin_write(None);
                let r = update_record(
                    self.db,
                    &self.read,
                    &self.write,
                    rec,
                    &mut self.encoded,
                    field,
                );
                rec.end_write(None, write_outcome(&r));
                r
            }
            YcsbOp::ReadModifyWrite {
                keynum,
                read_field,
                write_field,
            } => {
                rec.set_key(keynum);
                let (r, found) = read_record(self.db, &self.read, rec, read_field)?;
                if !found {
                    return Ok((0, false));
                }
                rec.begin_write(None);
                let written = update_record(
                    self.db,
                    &self.read,
                    &self.write,
                    rec,
                    &mut self.encoded,
                    write_field,
                );
                rec.end_write(None, write_outcome(&written));
                let (w, found) = written?;
                Ok((r + w, found))
            }
            YcsbOp::Scan {
                keynum,
                count,
                field,
            } => {
                rec.set_key(keynum);
                let mut it = self.db.raw_iterator_opt(ReadOptions::default());
                it.seek(&rec.key);
                let mut bytes = 0u32;
                let mut n = 0;
                let mut good = true;
                while n < count && it.valid() {
                    if let (Some(k), Some(v)) = (it.key(), it.value()) {
                        bytes = bytes.saturating_add((k.len() + v.len()) as u32);
                        if rec.verifying() {
                            rec.key.clear();
                            rec.key.extend_from_slice(k);
                            good &= rec.check_encoded(v, field);
                        }
                    }
                    n += 1;
                    it.next();
                }
                it.status().map_err(|e| op_error(&e))?;
                if !good {
                    return Err(OpError::INTEGRITY);
                }
                Ok((bytes, n > 0))
            }
        }
    }
}

fn read_record(
    db: &DB,
    read: &ReadOptions,
    rec: &RecordBuf,
    field: Option<u32>,
) -> Result<(u32, bool), OpError> {
    match db.get_pinned_opt(&rec.key, read) {
        Ok(Some(v)) => {
            if !rec.check_encoded(&v, field) {
                return Err(OpError::INTEGRITY);
            }
            Ok(((rec.key.len() + v.len()) as u32, true))
        }
        Ok(None) => Ok((0, false)),
        Err(e) => Err(op_error(&e)),
    }
}

/// Rewrites one field (reading the record first, as YCSB's rocksdb binding does) or all.
fn update_record(
    db: &DB,
    read: &ReadOptions,
    write: &WriteOptions,
    rec: &mut RecordBuf,
    encoded: &mut Vec<u8>,
    field: Option<u32>,
) -> Result<(u32, bool), OpError> {
    match field {
        Some(f) => {
            let current = db
                .get_pinned_opt(&rec.key, read)
                .map_err(|e| op_error(&e))?;
            let Some(current) = current else {
                return Ok((0, false));
            };
            if !rec.take_encoded(&current) {
                return Err(OpError::INTEGRITY);
            }
            drop(current);
            rec.fill(f as usize);
        }
        None => rec.fill_all(),
    }
    encode_record(&rec.values, encoded);
    let n = (rec.key.len() + encoded.len()) as u32;
    db.put_opt(&rec.key, &*encoded, write)
        .map_err(|e| op_error(&e))?;
    Ok((n, true))
}

impl Session for RocksSession<'_> {
    #[inline]
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let (result, found) = match op {
            Op::Ycsb(y) => match self.ycsb(y) {
                Ok((n, found)) => (Ok(n), found),
                Err(e) => (Err(e), false),
            },
            Op::Get { key } => match self.get(key) {
                Ok((n, found)) => (Ok(n), found),
                Err(e) => (Err(e), false),
            },
            Op::Put { key } => (self.put(key), true),
            Op::Next => match self.next() {
                Ok((n, found)) => (Ok(n), found),
                Err(e) => (Err(e), false),
            },
            Op::ReadModifyWrite { key } => match self.get(key) {
                Ok((read, found)) => (self.put(key).map(|w| read + w), found),
                Err(e) => (Err(e), false),
            },
            Op::Delete { key } => {
                write_key(key, &mut self.key);
                (
                    self.db
                        .delete_opt(&self.key, &self.write)
                        .map(|()| self.key.len() as u32)
                        .map_err(|e| op_error(&e)),
                    true,
                )
            }
            Op::Read { .. } | Op::Write { .. } | Op::Fsync | Op::Pgbench(_) => {
                return Err(OpError {
                    kind: ErrorKind::Invalid,
                    code: libc::EINVAL,
                });
            }
        };
        Ok(Submitted::Done { result, found })
    }

    #[inline]
    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn read_back(&mut self, keynum: u64) -> Option<storlab_verify::kv::ReadBack> {
        let rec = self.record.as_mut()?;
        rec.set_key(keynum);
        rec.start_probe();
        let result = read_record(self.db, &self.read, rec, None).map(|(_, found)| found);
        Some(storlab_verify::kv::ReadBack {
            result,
            observation: rec.take_probe(),
        })
    }
}
