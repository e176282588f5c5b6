//! Seeds that every machine draws alike: splitmix64 rounds mix a run's seed with the numbers
//! that name a thread, a target or a point, and FNV-1a turns a name into such a number.
//! Workloads derive their generators' seeds from these, and verified writes their target ids.

/// splitmix64's output function (Steele, Lea and Flood, 2014): a bijection on u64 whose every
/// output bit depends on every input bit.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Mixes `parts` into `seed`, one splitmix64 round each: different tuples give unrelated seeds,
/// the same tuple the same seed on every machine.
pub fn mix_seed(seed: u64, parts: &[u64]) -> u64 {
    parts
        .iter()
        .fold(splitmix64(seed), |h, &p| splitmix64(h ^ splitmix64(p)))
}

/// A name as a number for [`mix_seed`] (64-bit FNV-1a: stable across builds, unlike std's hasher).
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
