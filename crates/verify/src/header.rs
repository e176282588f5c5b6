//! The header of a verified block, at its start (40 bytes, little-endian):
//!
//! | bytes | field |
//! | --- | --- |
//! | 0..8 | magic `STLBVRFY` |
//! | 8..16 | target id (64-bit FNV-1a of the target's name in the study) |
//! | 16..24 | offset of the block in the target, bytes |
//! | 24..32 | generation of the write |
//! | 32..36 | block size, bytes |
//! | 36..40 | crc32c (Castagnoli, as fio's `verify=crc32c`) of the whole block with this field zeroed |
//!
//! Every further 512-byte sector of the block starts with the generation again (8 bytes), so
//! that a write torn at any sector boundary leaves sectors of two generations, which the
//! checksum tells apart even when the rest of the data is the same. The other bytes are the
//! workload's write data (random or the pattern), untouched.

/// The first 8 bytes of every verified block.
pub const MAGIC: [u8; 8] = *b"STLBVRFY";
/// Bytes of the header.
pub const HEADER_BYTES: usize = 40;
/// Every sector of this size after the first starts with the generation.
pub const SECTOR_BYTES: usize = 512;
const CRC_AT: usize = 36;

/// A header as read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub target_id: u64,
    pub offset: u64,
    pub generation: u64,
    pub block_bytes: u32,
    pub crc: u32,
}

#[inline]
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// crc32c of `block` as if its checksum field were zero.
#[inline]
pub fn block_crc(block: &[u8]) -> u32 {
    let c = crc32c::crc32c(&block[..CRC_AT]);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    crc32c::crc32c_append(c, &block[HEADER_BYTES..])
}

/// Stamps `block` (at least [`HEADER_BYTES`] long) for a write of `generation` at `offset`:
/// header, sector stamps and checksum. Allocates nothing.
#[inline]
pub fn stamp(block: &mut [u8], target_id: u64, offset: u64, generation: u64) {
    block[..8].copy_from_slice(&MAGIC);
    put_u64(block, 8, target_id);
    put_u64(block, 16, offset);
    put_u64(block, 24, generation);
    let block_bytes = block.len() as u32;
    block[32..36].copy_from_slice(&block_bytes.to_le_bytes());
    let mut at = SECTOR_BYTES;
    while at + 8 <= block.len() {
        put_u64(block, at, generation);
        at += SECTOR_BYTES;
    }
    let crc = block_crc(block);
    block[CRC_AT..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
}

/// The header of `block`, or None when it has none (wrong magic: foreign data).
pub fn parse(block: &[u8]) -> Option<Header> {
    if block.len() < HEADER_BYTES || block[..8] != MAGIC {
        return None;
    }
    let mut crc = [0u8; 4];
    crc.copy_from_slice(&block[CRC_AT..HEADER_BYTES]);
    let mut size = [0u8; 4];
    size.copy_from_slice(&block[32..36]);
    Some(Header {
        target_id: get_u64(block, 8),
        offset: get_u64(block, 16),
        generation: get_u64(block, 24),
        block_bytes: u32::from_le_bytes(size),
        crc: u32::from_le_bytes(crc),
    })
}

/// The header's checksum matches the block's content.
pub fn crc_ok(block: &[u8], h: &Header) -> bool {
    h.block_bytes as usize == block.len() && block_crc(block) == h.crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_block_reads_back_and_any_changed_sector_breaks_its_checksum() {
        let mut b = vec![0x5au8; 4096];
        stamp(&mut b, 7, 8192, 42);
        let h = parse(&b).unwrap();
        assert_eq!(
            h,
            Header {
                target_id: 7,
                offset: 8192,
                generation: 42,
                block_bytes: 4096,
                crc: h.crc
            }
        );
        assert!(crc_ok(&b, &h));
        // The crc is of the whole block with the field zeroed.
        let mut zeroed = b.clone();
        zeroed[36..40].fill(0);
        assert_eq!(crc32c::crc32c(&zeroed), h.crc);
        // A tear: the second half from an older generation of the same data.
        let mut old = vec![0x5au8; 4096];
        stamp(&mut old, 7, 8192, 41);
        let mut torn = b.clone();
        torn[2048..].copy_from_slice(&old[2048..]);
        assert!(!crc_ok(&torn, &parse(&torn).unwrap()));
        // Foreign data has no header.
        assert!(parse(&[0u8; 4096]).is_none());
    }
}
