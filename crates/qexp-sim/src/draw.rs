//! Seeded draws: the same (seed, index) gives the same number on every
//! run and whatever the arrivals' order, so faults and jitter replay.

/// A number in [0, 1) from `seed` and `index` (SplitMix64: every index its
/// own well-mixed draw, independent of arrival concurrency).
pub(crate) fn unit(seed: u64, index: u64) -> f64 {
    let mut z = seed
        .wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // The top 53 bits as a fraction: exact in f64.
    (z >> 11) as f64 / (1u64 << 53) as f64
}
