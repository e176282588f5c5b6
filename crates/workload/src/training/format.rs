//! The dataset's file formats, byte for byte as the training frameworks read them:
//!
//! - **npz** (NumPy's `np.savez`, DLIO's unet3d): a zip archive, stored (not compressed),
//!   holding `x.npy` (the sample, `|u1` bytes) and `y.npy` (its label, `<i8`). A reader finds
//!   the end-of-central-directory record, the central directory, `x.npy`'s local header, the
//!   `.npy` header, then reads the data and checks its CRC-32 (what `np.load(f)['x']` reads).
//! - **tfrecord** (TensorFlow's TFRecord, DLIO's resnet50 and cosmoflow): records of a
//!   little-endian u64 length, the masked CRC-32C of those 8 bytes, the data (a serialized
//!   `tf.train.Example` with the features `image`, bytes, and `size`, int64), and the
//!   masked CRC-32C of the data.
//!
//! Writing builds the small framing pieces once per file (allocation is fine there); reading
//! (`npz_directory`, `npz_member`, `record_length`, ...) checks the framing of bytes already
//! read, without allocating.

use std::fmt;

/// A dataset file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Npz,
    Tfrecord,
}

impl Format {
    pub const NAMES: &'static str = "npz, tfrecord";

    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "npz" => Some(Format::Npz),
            "tfrecord" => Some(Format::Tfrecord),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Npz => "npz",
            Format::Tfrecord => "tfrecord",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a sample's bytes are not what its format says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// A signature, a header or a length is not the format's.
    Framing,
    /// A checksum does not match the data.
    Checksum,
}

// ---------------------------------------------------------------- npz (zip + npy)

const LOCAL_SIG: u32 = 0x0403_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const END_SIG: u32 = 0x0605_4b50;
/// Bytes of a local file header before its name, of a central directory entry before its
/// name, and of the end-of-central-directory record.
pub const LOCAL_HEADER: u64 = 30;
const CENTRAL_HEADER: u64 = 46;
pub const END_RECORD: u64 = 22;
/// 1980-01-01 00:00 in DOS time, as a reproducible dataset stamps every member.
const DOS_DATE: u16 = (1 << 5) | 1;

/// A `.npy` version 1.0 header for an array of `dtype` and `shape`, padded with spaces so
/// that the data starts on a 64-byte boundary, as NumPy writes it.
fn npy_header(dtype: &str, shape: &str) -> Vec<u8> {
    let dict = format!("{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape}, }}");
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    h
}

/// The layout of one npz file whose `x` holds `sample_bytes` bytes: the pieces around the
/// data, and where the data sits.
#[derive(Debug, Clone)]
pub struct NpzLayout {
    /// `x.npy`'s local header, then its npy header: written before the sample's bytes.
    pub x_head: Vec<u8>,
    pub sample_bytes: u64,
    /// `y.npy` whole: local header, npy header and the label (one `<i8` zero).
    pub y_member: Vec<u8>,
    y_crc: u32,
    x_npy_header: usize,
}

impl NpzLayout {
    pub fn new(sample_bytes: u64) -> NpzLayout {
        let x_npy = npy_header("|u1", &format!("({sample_bytes},)"));
        let x_npy_header = x_npy.len();
        let mut x_head = local_header("x.npy", 0, x_npy.len() as u64 + sample_bytes);
        x_head.extend_from_slice(&x_npy);
        let mut y_data = npy_header("<i8", "(1,)");
        y_data.extend_from_slice(&0i64.to_le_bytes());
        let y_crc = crc32fast::hash(&y_data);
        let mut y_member = local_header("y.npy", y_crc, y_data.len() as u64);
        y_member.extend_from_slice(&y_data);
        NpzLayout {
            x_head,
            sample_bytes,
            y_member,
            y_crc,
            x_npy_header,
        }
    }

    /// `x.npy`'s npy header (the start of its stored bytes).
    pub fn x_npy(&self) -> &[u8] {
        &self.x_head[self.x_head.len() - self.x_npy_header..]
    }

    /// Bytes of `x.npy`'s data as the zip stores it (npy header and sample).
    fn x_stored(&self) -> u64 {
        self.x_npy_header as u64 + self.sample_bytes
    }

    /// Offset of the CRC-32 field in `x.npy`'s local header, to be written once the data's
    /// checksum is known (as Python's zipfile seeks back to write it).
    pub const X_CRC_AT: u64 = 14;

    /// The central directory and the end record, after both members; `x_crc` is the CRC-32
    /// of `x.npy`'s stored bytes (its npy header and data).
    pub fn tail(&self, x_crc: u32) -> Vec<u8> {
        let y_at = self.x_head.len() as u64 - self.x_npy_header as u64 + self.x_stored();
        let y_len = self.y_member.len() as u64 - LOCAL_HEADER - 5;
        let mut t = central_entry("x.npy", x_crc, self.x_stored(), 0);
        t.extend(central_entry("y.npy", self.y_crc, y_len, y_at));
        let cd_at = y_at + self.y_member.len() as u64;
        let cd_len = t.len() as u64;
        t.extend_from_slice(&END_SIG.to_le_bytes());
        t.extend_from_slice(&[0, 0, 0, 0]);
        t.extend_from_slice(&2u16.to_le_bytes());
        t.extend_from_slice(&2u16.to_le_bytes());
        t.extend_from_slice(&(cd_len as u32).to_le_bytes());
        t.extend_from_slice(&(cd_at as u32).to_le_bytes());
        t.extend_from_slice(&0u16.to_le_bytes());
        t
    }

    /// Bytes of the whole file.
    pub fn file_bytes(&self) -> u64 {
        self.x_head.len() as u64
            + self.sample_bytes
            + self.y_member.len() as u64
            + 2 * (CENTRAL_HEADER + 5)
            + END_RECORD
    }
}

fn local_header(name: &str, crc: u32, len: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(LOCAL_HEADER as usize + name.len());
    h.extend_from_slice(&LOCAL_SIG.to_le_bytes());
    h.extend_from_slice(&20u16.to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes()); // flags
    h.extend_from_slice(&0u16.to_le_bytes()); // stored
    h.extend_from_slice(&0u16.to_le_bytes()); // time
    h.extend_from_slice(&DOS_DATE.to_le_bytes());
    h.extend_from_slice(&crc.to_le_bytes());
    h.extend_from_slice(&(len as u32).to_le_bytes());
    h.extend_from_slice(&(len as u32).to_le_bytes());
    h.extend_from_slice(&(name.len() as u16).to_le_bytes());
    h.extend_from_slice(&0u16.to_le_bytes());
    h.extend_from_slice(name.as_bytes());
    h
}

fn central_entry(name: &str, crc: u32, len: u64, local_at: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(CENTRAL_HEADER as usize + name.len());
    h.extend_from_slice(&CENTRAL_SIG.to_le_bytes());
    h.extend_from_slice(&20u16.to_le_bytes());
    h.extend_from_slice(&20u16.to_le_bytes());
    h.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // flags, method, time
    h.extend_from_slice(&DOS_DATE.to_le_bytes());
    h.extend_from_slice(&crc.to_le_bytes());
    h.extend_from_slice(&(len as u32).to_le_bytes());
    h.extend_from_slice(&(len as u32).to_le_bytes());
    h.extend_from_slice(&(name.len() as u16).to_le_bytes());
    h.extend_from_slice(&[0; 8]); // extra, comment, disk, internal attributes
    h.extend_from_slice(&0u32.to_le_bytes());
    h.extend_from_slice(&(local_at as u32).to_le_bytes());
    h.extend_from_slice(name.as_bytes());
    h
}

fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as u64)
}

fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as u64)
}

/// Where a zip's central directory is, from its end record (the file's last 22 bytes, no
/// archive comment): (offset, bytes).
pub fn npz_directory(end: &[u8]) -> Result<(u64, u64), DecodeError> {
    if u32_at(end, 0) != Some(END_SIG as u64) {
        return Err(DecodeError::Framing);
    }
    let len = u32_at(end, 12).ok_or(DecodeError::Framing)?;
    let at = u32_at(end, 16).ok_or(DecodeError::Framing)?;
    Ok((at, len))
}

/// A member found in the central directory: where its local header is, its stored bytes and
/// CRC-32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub local_at: u64,
    pub bytes: u64,
    pub crc: u32,
}

/// The member named `name` in a central directory's bytes.
pub fn npz_member(dir: &[u8], name: &[u8]) -> Result<Member, DecodeError> {
    let mut at = 0usize;
    while at + CENTRAL_HEADER as usize <= dir.len() {
        if u32_at(dir, at) != Some(CENTRAL_SIG as u64) {
            return Err(DecodeError::Framing);
        }
        let name_len = u16_at(dir, at + 28).ok_or(DecodeError::Framing)? as usize;
        let extra = u16_at(dir, at + 30).ok_or(DecodeError::Framing)? as usize;
        let comment = u16_at(dir, at + 32).ok_or(DecodeError::Framing)? as usize;
        let start = at + CENTRAL_HEADER as usize;
        if dir.get(start..start + name_len) == Some(name) {
            return Ok(Member {
                crc: u32_at(dir, at + 16).ok_or(DecodeError::Framing)? as u32,
                bytes: u32_at(dir, at + 24).ok_or(DecodeError::Framing)?,
                local_at: u32_at(dir, at + 42).ok_or(DecodeError::Framing)?,
            });
        }
        at = start + name_len + extra + comment;
    }
    Err(DecodeError::Framing)
}

/// Bytes from a member's local header to its data: the header's fixed part, name and extra.
pub fn npz_data_start(local: &[u8]) -> Result<u64, DecodeError> {
    if u32_at(local, 0) != Some(LOCAL_SIG as u64) {
        return Err(DecodeError::Framing);
    }
    let name = u16_at(local, 26).ok_or(DecodeError::Framing)?;
    let extra = u16_at(local, 28).ok_or(DecodeError::Framing)?;
    Ok(LOCAL_HEADER + name + extra)
}

/// The length of a `.npy` header (magic to the data), from its first 10 bytes.
pub fn npy_header_len(head: &[u8]) -> Result<u64, DecodeError> {
    if head.get(..6) != Some(b"\x93NUMPY") {
        return Err(DecodeError::Framing);
    }
    match head.get(6) {
        Some(1) => Ok(10 + u16_at(head, 8).ok_or(DecodeError::Framing)?),
        Some(2 | 3) => Ok(12 + u32_at(head, 8).ok_or(DecodeError::Framing)?),
        _ => Err(DecodeError::Framing),
    }
}

// ---------------------------------------------------------------- tfrecord

/// TFRecord's masked CRC-32C.
#[inline]
pub fn masked_crc32c(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Bytes of a record's header (length and its CRC) and footer (the data's CRC).
pub const RECORD_HEADER: u64 = 12;
pub const RECORD_FOOTER: u64 = 4;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(v: u64) -> u64 {
    let mut n = 1;
    let mut v = v >> 7;
    while v > 0 {
        n += 1;
        v >>= 7;
    }
    n
}

/// A `tf.train.Example` around an image of `image_bytes`, as DLIO's generator serializes it:
/// the bytes before the image, and after it (the `size` feature).
#[derive(Debug, Clone)]
pub struct ExampleLayout {
    pub before: Vec<u8>,
    pub after: Vec<u8>,
    pub image_bytes: u64,
}

impl ExampleLayout {
    pub fn new(image_bytes: u64) -> ExampleLayout {
        let n = image_bytes;
        let bytes_list = 1 + varint_len(n) + n;
        let image_feature = 1 + varint_len(bytes_list) + bytes_list;
        let image_entry = 7 + 1 + varint_len(image_feature) + image_feature;
        let mut size_entry = Vec::new();
        {
            let mut packed = Vec::new();
            varint(n, &mut packed);
            let mut int64_list = vec![0x0a];
            varint(packed.len() as u64, &mut int64_list);
            int64_list.extend_from_slice(&packed);
            let mut feature = vec![0x1a];
            varint(int64_list.len() as u64, &mut feature);
            feature.extend_from_slice(&int64_list);
            let mut entry = vec![0x0a, 4];
            entry.extend_from_slice(b"size");
            entry.push(0x12);
            varint(feature.len() as u64, &mut entry);
            entry.extend_from_slice(&feature);
            size_entry.push(0x0a);
            varint(entry.len() as u64, &mut size_entry);
            size_entry.extend_from_slice(&entry);
        }
        let features = 1 + varint_len(image_entry) + image_entry + size_entry.len() as u64;
        let mut before = vec![0x0a];
        varint(features, &mut before);
        before.push(0x0a);
        varint(image_entry, &mut before);
        before.extend_from_slice(&[0x0a, 5]);
        before.extend_from_slice(b"image");
        before.push(0x12);
        varint(image_feature, &mut before);
        before.push(0x0a);
        varint(bytes_list, &mut before);
        before.push(0x0a);
        varint(n, &mut before);
        ExampleLayout {
            before,
            after: size_entry,
            image_bytes: n,
        }
    }

    /// The serialized Example's bytes.
    pub fn data_bytes(&self) -> u64 {
        self.before.len() as u64 + self.image_bytes + self.after.len() as u64
    }

    /// Bytes of the framed record (header, Example, footer).
    pub fn record_bytes(&self) -> u64 {
        RECORD_HEADER + self.data_bytes() + RECORD_FOOTER
    }

    /// The record's header for this Example.
    pub fn header(&self) -> [u8; 12] {
        let len = self.data_bytes().to_le_bytes();
        let mut h = [0u8; 12];
        h[..8].copy_from_slice(&len);
        h[8..].copy_from_slice(&masked_crc32c(crc32c::crc32c(&len)).to_le_bytes());
        h
    }
}

/// Reads a tf.train.Example's start: the serialized Example must open with its `features`
/// field whose length accounts for the rest of the data (`data_bytes` in all).
pub fn check_example_start(data: &[u8], data_bytes: u64) -> Result<(), DecodeError> {
    if data.first() != Some(&0x0a) {
        return Err(DecodeError::Framing);
    }
    let mut v = 0u64;
    for (i, b) in data[1..].iter().take(10).enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            let consumed = 2 + i as u64;
            return if consumed + v == data_bytes {
                Ok(())
            } else {
                Err(DecodeError::Framing)
            };
        }
    }
    Err(DecodeError::Framing)
}

/// A record's length from its 12-byte header, its CRC checked.
pub fn record_length(header: &[u8]) -> Result<u64, DecodeError> {
    let len: [u8; 8] = header
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or(DecodeError::Framing)?;
    let crc = u32_at(header, 8).ok_or(DecodeError::Framing)? as u32;
    if masked_crc32c(crc32c::crc32c(&len)) != crc {
        return Err(DecodeError::Checksum);
    }
    Ok(u64::from_le_bytes(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npz_file(sample: &[u8]) -> Vec<u8> {
        let l = NpzLayout::new(sample.len() as u64);
        let mut f = l.x_head.clone();
        f.extend_from_slice(sample);
        let head = l.x_head.len() - l.x_npy_header;
        let crc = crc32fast::hash(&f[head..]);
        f[NpzLayout::X_CRC_AT as usize..NpzLayout::X_CRC_AT as usize + 4]
            .copy_from_slice(&crc.to_le_bytes());
        f.extend_from_slice(&l.y_member);
        f.extend(l.tail(crc));
        assert_eq!(f.len() as u64, l.file_bytes());
        f
    }

    #[test]
    fn an_npz_file_is_found_member_by_member_as_a_zip_reader_finds_it() {
        let sample: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let f = npz_file(&sample);
        let (cd_at, cd_len) = npz_directory(&f[f.len() - END_RECORD as usize..]).unwrap();
        let dir = &f[cd_at as usize..(cd_at + cd_len) as usize];
        let x = npz_member(dir, b"x.npy").unwrap();
        let y = npz_member(dir, b"y.npy").unwrap();
        assert_eq!(x.local_at, 0);
        let data = x.local_at + npz_data_start(&f[x.local_at as usize..]).unwrap();
        let stored = &f[data as usize..(data + x.bytes) as usize];
        assert_eq!(crc32fast::hash(stored), x.crc);
        let npy = npy_header_len(stored).unwrap();
        assert_eq!(npy % 64, 0, "the data starts 64-byte aligned");
        assert_eq!(&stored[npy as usize..], &sample[..]);
        let header = std::str::from_utf8(&stored[10..npy as usize]).unwrap();
        assert!(header.contains("'shape': (1000,)"), "{header}");
        let ydata = y.local_at + npz_data_start(&f[y.local_at as usize..]).unwrap();
        let ybytes = &f[ydata as usize..(ydata + y.bytes) as usize];
        assert_eq!(crc32fast::hash(ybytes), y.crc);
        assert_eq!(npz_member(dir, b"z.npy"), Err(DecodeError::Framing));
    }

    #[test]
    fn a_tfrecord_record_frames_an_example_whose_length_adds_up() {
        for n in [1u64, 127, 128, 114_660, 2_828_486] {
            let e = ExampleLayout::new(n);
            let h = e.header();
            assert_eq!(record_length(&h).unwrap(), e.data_bytes());
            let mut data = e.before.clone();
            data.extend(std::iter::repeat_n(9u8, n as usize));
            data.extend_from_slice(&e.after);
            assert_eq!(data.len() as u64, e.data_bytes());
            check_example_start(&data, e.data_bytes()).unwrap();
            assert_eq!(
                check_example_start(&data, e.data_bytes() + 1),
                Err(DecodeError::Framing)
            );
        }
        let mut bad = ExampleLayout::new(10).header();
        bad[0] ^= 1;
        assert_eq!(record_length(&bad), Err(DecodeError::Checksum));
    }

    #[test]
    fn the_crc_is_castagnolis_and_the_mask_is_tensorflows() {
        // The CRC-32C check value, and TensorFlow's mask: rotate right by 15, add 0xa282ead8.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(masked_crc32c(0), 0xa282_ead8);
        assert_eq!(masked_crc32c(1 << 15), 0xa282_ead9);
    }
}
