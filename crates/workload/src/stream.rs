//! A copyable random stream that is a counter (splitmix64 over a running sum), so that a
//! written block's stream can be repeated as fio copies its `frand_state`, and a stream's
//! state `n` draws on computed without drawing ([`crate::working_set`]'s pages).

/// What each draw of a [`Stream`] adds to its counter.
pub(crate) const STREAM_STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// A copyable random stream (splitmix64), so that a block's stream can be repeated as fio
/// copies its `frand_state`; a counter, so that its state `n` draws on is `n` steps on.
#[derive(Debug, Clone, Copy)]
pub struct Stream(pub(crate) u64);

impl Stream {
    #[inline]
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(STREAM_STEP);
        storlab_model::seed::splitmix64(self.0)
    }
    /// A seed as fio's `__get_next_seed` makes one on a 64-bit machine from its default
    /// 32-bit tausworthe generator: the product of two 32-bit draws.
    #[inline]
    pub(crate) fn seed32(&mut self) -> u64 {
        (self.next() >> 32).wrapping_mul(self.next() >> 32)
    }
}
