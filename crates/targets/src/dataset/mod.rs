//! The `dataset` target: a folder of training datasets on any mounted filesystem (a local disk,
//! tmpfs, a network or FUSE mount), read as a training framework reads it. It takes the
//! `training` workload, and the `checkpoint` workload, whose checkpoints go in its
//! `checkpoints` subfolder ([`checkpoint`]).
//!
//! Each workload's dataset lives in the folder's subfolder named after its model
//! (`PATH/unet3d`, as DLIO's `data/unet3d`). `prepare` writes it when that subfolder is
//! empty or missing (beside it, renamed into place once whole), in several threads, and leaves `storlab-dataset.json` beside the files last; a
//! folder that holds that manifest for the same dataset, with every file of the right size,
//! is used as it is. A folder that holds anything else is refused: storlab never deletes or
//! overwrites a user's files. `--quick` uses the folder's `quick` subfolder.
//!
//! A session reads one sample per operation, decoding it as the format's reader does
//! (`storlab_workload::training::format`): for npz the zip's end record, its central
//! directory, `x.npy`'s local header and then its data, whose CRC-32 is checked; for tfrecord
//! the record's header, data and footer through a sequential read buffer (TensorFlow's 256
//! KiB by default), both CRC-32Cs checked. A framing or checksum failure is an integrity
//! error of that operation. Files are opened by prebuilt paths and read into a buffer
//! allocated when the session opens: nothing is allocated per sample.

pub mod checkpoint;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::{
    Capabilities, Completions, OptionError, Overlap, PrepareOptions, Region, Session,
    SessionParams, SessionUser, Submitted, Target, TargetConfig, TargetError, TargetType,
    option_error,
};
use storlab_model::{Op, OpError, OpKind, WorkloadKind};
use storlab_workload::training::dataset::{Dataset, MANIFEST};
use storlab_workload::training::format::{
    self, DecodeError, Format, RECORD_FOOTER, RECORD_HEADER,
};

pub const TYPE: TargetType = TargetType {
    name: "dataset",
    summary: "a folder of training files (npz, tfrecord) written once and read as a training framework reads them, and of checkpoints",
    options: &[(
        "path",
        "the folder (created); each model's dataset goes in its subfolder, written when that is empty",
    )],
    parse,
    file_server: None,
    ycsb: None,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DatasetConfig {
    pub path: PathBuf,
}

fn parse(table: toml::Table) -> Result<TargetConfig, OptionError> {
    let c: DatasetConfig = table.try_into().map_err(option_error)?;
    if c.path.as_os_str().is_empty() {
        return Err(OptionError {
            key: "path".into(),
            message: "path names the dataset's folder".into(),
        });
    }
    Ok(TargetConfig::Dataset(c))
}

/// What a prepared target's sessions share: a training dataset's, or a checkpoint folder's.
pub enum DatasetShared {
    Training(TrainingShared),
    Checkpoint(checkpoint::CheckpointShared),
}

/// What a prepared dataset's sessions share: the dataset, every file's path, and whether
/// `prepare` wrote it.
pub struct TrainingShared {
    pub dataset: Arc<Dataset>,
    paths: Arc<[CString]>,
    pub generated: bool,
    read_bytes: u64,
}

impl Target for DatasetConfig {
    const TYPE: TargetType = TYPE;
    type Shared = DatasetShared;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            workloads: &[WorkloadKind::Training, WorkloadKind::Checkpoint],
            ops: &[OpKind::Read, OpKind::Write, OpKind::Fsync],
            overlap: Overlap::None,
            in_process: false,
            writes_given_buffers: false,
            reads_records_back: false,
            keeps_ledger: false,
        }
    }

    fn paths(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn make_quick(&mut self) {
        self.path = self.path.join("quick");
    }

    fn prepare(&self, opts: &PrepareOptions) -> Result<(Region, DatasetShared), TargetError> {
        if let Some(prep) = &opts.checkpoint {
            let folder = self.path.join("checkpoints").join(&prep.model);
            let (region, shared) = checkpoint::prepare(&folder, prep)?;
            return Ok((region, DatasetShared::Checkpoint(shared)));
        }
        let Some(prep) = opts.training.clone() else {
            return Err(TargetError::Invalid(
                "a dataset target runs training and checkpoint workloads only".into(),
            ));
        };
        let (dataset, read_bytes) = (prep.dataset, prep.read_bytes);
        let folder = self.path.join(&prep.folder);
        let generated = ensure(&folder, &dataset, opts.verbose)?;
        let paths = (0..dataset.files())
            .map(|f| {
                let p = folder.join(dataset.file_name(f));
                CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                    TargetError::Invalid(format!("{}: a NUL byte in the path", p.display()))
                })
            })
            .collect::<Result<Arc<[CString]>, _>>()?;
        let region = Region {
            offset_bytes: 0,
            size_bytes: dataset.total_bytes(),
        };
        Ok((
            region,
            DatasetShared::Training(TrainingShared {
                dataset,
                paths,
                generated,
                read_bytes,
            }),
        ))
    }

    fn open<U: SessionUser>(
        &self,
        shared: &DatasetShared,
        _: &SessionParams,
        user: U,
    ) -> Result<U::Output, TargetError> {
        Ok(match shared {
            DatasetShared::Training(t) => user.run(DatasetSession::new(t)),
            DatasetShared::Checkpoint(c) => user.run(checkpoint::CheckpointSession::new(c)),
        })
    }
}

fn io_error<'a>(
    path: &'a Path,
    what: &'static str,
) -> impl FnOnce(std::io::Error) -> TargetError + 'a {
    move |source| TargetError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

/// What a folder holds for a dataset: it, something else, or nothing yet.
enum Found {
    Same,
    Other,
    Nothing,
}

fn found(folder: &Path, wanted: &str) -> Result<Found, TargetError> {
    let manifest = folder.join(MANIFEST);
    match std::fs::read_to_string(&manifest) {
        Ok(text) if text == wanted => Ok(Found::Same),
        Ok(_) => Ok(Found::Other),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let empty = std::fs::read_dir(folder).map_or(true, |mut e| e.next().is_none());
            Ok(if empty { Found::Nothing } else { Found::Other })
        }
        Err(e) => Err(io_error(&manifest, "reading the dataset's manifest")(e)),
    }
}

fn refused(folder: &Path) -> TargetError {
    TargetError::Invalid(format!(
        "{} holds another dataset or other files (no {MANIFEST} for this one): storlab writes a dataset only into an empty or new folder; give the target another path, or remove that folder yourself",
        folder.display()
    ))
}

/// Makes sure `folder` holds `dataset`: used as it is when its manifest matches, written when
/// the folder is empty or missing, refused otherwise. True when this call wrote it.
///
/// It is written into a hidden sibling folder of this process's own and renamed into place
/// once whole (manifest last, synced): a reader never sees half a dataset, and several
/// processes preparing the same target at once (the ranks of an MPI job on one host) end
/// with one dataset; one that loses the rename uses the winner's and removes its own copy.
fn ensure(folder: &Path, dataset: &Dataset, verbose: bool) -> Result<bool, TargetError> {
    let wanted = dataset.manifest();
    match found(folder, &wanted)? {
        Found::Same => {
            check_sizes(folder, dataset)?;
            return Ok(false);
        }
        Found::Other => return Err(refused(folder)),
        Found::Nothing => {}
    }
    let (Some(parent), Some(name)) = (folder.parent(), folder.file_name()) else {
        return Err(TargetError::Invalid(format!(
            "{}: not a folder a dataset can be written to",
            folder.display()
        )));
    };
    let own = parent.join(format!(
        ".{}.writing-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    std::fs::create_dir_all(own.join("train"))
        .map_err(io_error(&own, "creating the dataset's folder"))?;
    if verbose {
        eprintln!(
            "writing the dataset: {} {} files, {:.1} GiB, into {}",
            dataset.files(),
            dataset.spec.format,
            dataset.total_bytes() as f64 / (1u64 << 30) as f64,
            folder.display()
        );
    }
    generate(&own, dataset)?;
    let manifest = own.join(MANIFEST);
    std::fs::write(&manifest, &wanted).map_err(io_error(&manifest, "writing the manifest"))?;
    // The manifest, written last, says the files are whole: it reaches the disk after them.
    std::fs::File::open(&own)
        .and_then(|d| d.sync_all())
        .map_err(io_error(&own, "syncing the dataset's folder"))?;
    match std::fs::rename(&own, folder) {
        Ok(()) => {
            let _ = std::fs::File::open(parent).and_then(|d| d.sync_all());
            Ok(true)
        }
        Err(e) => {
            // Another process put its dataset there first: ours (this process's own folder,
            // never the user's) goes.
            let theirs = found(folder, &wanted)?;
            let _ = std::fs::remove_dir_all(&own);
            match theirs {
                Found::Same => {
                    check_sizes(folder, dataset)?;
                    Ok(false)
                }
                _ => Err(io_error(folder, "moving the written dataset into place")(e)),
            }
        }
    }
}

/// Writes every file, in as many threads as the machine has CPUs.
fn generate(folder: &Path, dataset: &Dataset) -> Result<(), TargetError> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get() as u32)
        .min(dataset.files());
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || -> Result<(), TargetError> {
                    let mut buf = vec![0u8; 1 << 20];
                    for f in (t..dataset.files()).step_by(threads as usize) {
                        let path = folder.join(dataset.file_name(f));
                        let out = std::fs::File::create(&path)
                            .map_err(io_error(&path, "creating a dataset file"))?;
                        dataset
                            .write_file(f, &out, &mut buf)
                            .and_then(|_| out.sync_data())
                            .map_err(io_error(&path, "writing a dataset file"))?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            h.join()
                .unwrap_or_else(|_| Err(TargetError::Invalid("a dataset writer panicked".into())))
        })
    })
}

fn check_sizes(folder: &Path, dataset: &Dataset) -> Result<(), TargetError> {
    for f in 0..dataset.files() {
        let path = folder.join(dataset.file_name(f));
        let len = std::fs::metadata(&path)
            .map_err(io_error(&path, "checking a dataset file"))?
            .len();
        if len != dataset.file_bytes(f) {
            return Err(TargetError::Invalid(format!(
                "{}: {len} bytes where the dataset's manifest says {}: the dataset was changed; remove the folder to write it again",
                path.display(),
                dataset.file_bytes(f)
            )));
        }
    }
    Ok(())
}

/// A sequential read buffer over one open file (TensorFlow's buffered input stream, or
/// NumPy's one read of a member when it is as large as the member).
struct Stream {
    fd: libc::c_int,
    file: u32,
    /// The file offset of `buf[0]`, the valid bytes in `buf` and the next one to hand out.
    at: u64,
    len: usize,
    cursor: usize,
    buf: Vec<u8>,
    /// Bytes read from the file since the last `take_read`.
    read: u64,
}

impl Stream {
    fn close(&mut self) {
        if self.fd >= 0 {
            // SAFETY: fd is a descriptor this stream opened and still owns.
            unsafe { libc::close(self.fd) };
            self.fd = -1;
        }
    }

    fn open(&mut self, path: &CString, file: u32) -> Result<(), OpError> {
        self.close();
        // SAFETY: path is a NUL-terminated C string that outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(last_error());
        }
        self.fd = fd;
        self.file = file;
        self.len = 0;
        self.cursor = 0;
        Ok(())
    }

    /// Reads exactly `out.len()` bytes at `offset`, outside the buffer.
    fn pread_exact(&mut self, out: &mut [u8], offset: u64) -> Result<(), OpError> {
        pread_exact(self.fd, out, offset)?;
        self.read += out.len() as u64;
        Ok(())
    }

    /// Moves the stream to `offset` (dropping the buffer unless it holds that byte).
    fn seek(&mut self, offset: u64) {
        if offset >= self.at && offset < self.at + self.len as u64 {
            self.cursor = (offset - self.at) as usize;
        } else {
            self.at = offset;
            self.len = 0;
            self.cursor = 0;
        }
    }

    /// Hands the next `n` bytes to `visit` in slices, refilling the buffer with reads of its
    /// size (the last one short when the file ends, within `file_bytes`).
    fn take(
        &mut self,
        mut n: u64,
        file_bytes: u64,
        mut visit: impl FnMut(&[u8]),
    ) -> Result<(), OpError> {
        while n > 0 {
            if self.cursor == self.len {
                let next = self.at + self.len as u64;
                let want = (self.buf.len() as u64).min(file_bytes.saturating_sub(next)) as usize;
                if want == 0 {
                    return Err(OpError::INTEGRITY);
                }
                let mut buf = std::mem::take(&mut self.buf);
                let r = self.pread_exact(&mut buf[..want], next);
                self.buf = buf;
                r?;
                self.at = next;
                self.len = want;
                self.cursor = 0;
            }
            let k = ((self.len - self.cursor) as u64).min(n) as usize;
            visit(&self.buf[self.cursor..self.cursor + k]);
            self.cursor += k;
            n -= k as u64;
        }
        Ok(())
    }

    /// Copies the next `N` bytes (a header or footer).
    fn take_array<const N: usize>(&mut self, file_bytes: u64) -> Result<[u8; N], OpError> {
        let mut out = [0u8; N];
        let mut at = 0;
        self.take(N as u64, file_bytes, |c| {
            out[at..at + c.len()].copy_from_slice(c);
            at += c.len();
        })?;
        Ok(out)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.close();
    }
}

/// Reads exactly `out.len()` bytes of `fd` at `offset`; a file that ends first is a short
/// transfer.
fn pread_exact(fd: libc::c_int, out: &mut [u8], offset: u64) -> Result<(), OpError> {
    let mut done = 0;
    while done < out.len() {
        // SAFETY: the pointer and length stay within `out`.
        let n = unsafe {
            libc::pread(
                fd,
                out[done..].as_mut_ptr().cast(),
                out.len() - done,
                (offset + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            let e = last_error();
            if e.code == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(OpError {
                kind: storlab_model::ErrorKind::ShortTransfer,
                code: done as i32,
            });
        }
        done += n as usize;
    }
    Ok(())
}

fn last_error() -> OpError {
    OpError::errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
}

fn decode_error(_: DecodeError) -> OpError {
    OpError::INTEGRITY
}

/// One reader thread's session.
pub struct DatasetSession {
    dataset: Arc<Dataset>,
    paths: Arc<[CString]>,
    stream: Stream,
}

impl DatasetSession {
    fn new(shared: &TrainingShared) -> DatasetSession {
        let read_bytes = shared.read_bytes.max(4096) as usize;
        DatasetSession {
            dataset: shared.dataset.clone(),
            paths: shared.paths.clone(),
            stream: Stream {
                fd: -1,
                file: u32::MAX,
                at: 0,
                len: 0,
                cursor: 0,
                buf: vec![0u8; read_bytes],
                read: 0,
            },
        }
    }

    /// Reads and checks one npz file's `x.npy`, as NumPy's `np.load(f)['x']` finds it.
    fn read_npz(&mut self, file: u32) -> Result<(), OpError> {
        self.stream.open(&self.paths[file as usize], file)?;
        let size = self.dataset.file_bytes(file);
        let mut end = [0u8; format::END_RECORD as usize];
        self.stream.pread_exact(&mut end, size - format::END_RECORD)?;
        let (cd_at, cd_len) = format::npz_directory(&end).map_err(decode_error)?;
        let mut dir = [0u8; 512];
        let dir = dir.get_mut(..cd_len as usize).ok_or(OpError::INTEGRITY)?;
        self.stream.pread_exact(dir, cd_at)?;
        let x = format::npz_member(dir, b"x.npy").map_err(decode_error)?;
        let mut local = [0u8; format::LOCAL_HEADER as usize];
        self.stream.pread_exact(&mut local, x.local_at)?;
        let data = x.local_at + format::npz_data_start(&local).map_err(decode_error)?;
        self.stream.seek(data);
        self.stream.len = 0;
        let mut crc = crc32fast::Hasher::new();
        let mut first = true;
        let mut framing = Ok(());
        self.stream.take(x.bytes, size, |c| {
            if first {
                first = false;
                framing = format::npy_header_len(c).map(|_| ());
            }
            crc.update(c);
        })?;
        framing.map_err(decode_error)?;
        if crc.finalize() != x.crc {
            return Err(OpError::INTEGRITY);
        }
        self.stream.close();
        Ok(())
    }

    /// Reads and checks record `record` of a tfrecord file through the read buffer.
    fn read_tfrecord(&mut self, file: u32, record: u32) -> Result<(), OpError> {
        if self.stream.file != file || self.stream.fd < 0 {
            self.stream.open(&self.paths[file as usize], file)?;
        }
        let size = self.dataset.file_bytes(file);
        let framed = self.dataset.sample_bytes(file);
        self.stream.seek(u64::from(record) * framed);
        let header = self.stream.take_array::<{ RECORD_HEADER as usize }>(size)?;
        let data_bytes = format::record_length(&header).map_err(decode_error)?;
        if data_bytes + RECORD_HEADER + RECORD_FOOTER != framed {
            return Err(OpError::INTEGRITY);
        }
        let mut crc = 0u32;
        let mut first = true;
        let mut framing = Ok(());
        self.stream.take(data_bytes, size, |c| {
            if first {
                first = false;
                framing = format::check_example_start(c, data_bytes);
            }
            crc = crc32c::crc32c_append(crc, c);
        })?;
        framing.map_err(decode_error)?;
        let footer = self.stream.take_array::<{ RECORD_FOOTER as usize }>(size)?;
        if u32::from_le_bytes(footer) != format::masked_crc32c(crc) {
            return Err(OpError::INTEGRITY);
        }
        Ok(())
    }
}

impl Session for DatasetSession {
    fn submit(&mut self, _slot: u32, op: Op) -> Result<Submitted, OpError> {
        let Op::Read { offset: id, .. } = op else {
            return Err(crate::session::NOT_BLOCK_OP);
        };
        let (file, record) = self.dataset.locate(id);
        self.stream.read = 0;
        let r = match self.dataset.spec.format {
            Format::Npz => self.read_npz(file),
            Format::Tfrecord => self.read_tfrecord(file, record),
        };
        let bytes = self.stream.read.min(u32::MAX as u64) as u32;
        Ok(Submitted::Done {
            result: r.map(|_| bytes),
            found: true,
        })
    }

    fn complete(&mut self, _min: u32, _out: &mut Completions) -> Result<(), OpError> {
        Ok(())
    }

    fn used(&self) -> Vec<(&'static str, String)> {
        vec![("dataset.read-bytes", self.stream.buf.len().to_string())]
    }
}
