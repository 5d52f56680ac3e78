//! Process grid arithmetic: the block-cyclic distribution of HPL_numroc, and positions on
//! a ring of process rows or columns (distances from a root, the hypercube dimensions of
//! HPL's binary exchanges).

/// HPL_numroc with the first block on process 0: how many of the indices `0..n` (blocks
/// of `nb`, dealt cyclically) process `proc` of `nprocs` owns.
pub fn numroc(n: u64, nb: u64, proc: u32, nprocs: u32) -> u64 {
    let (proc, nprocs) = (u64::from(proc), u64::from(nprocs));
    let blocks = n / nb;
    let base = blocks / nprocs * nb;
    let extra = blocks % nprocs;
    if proc < extra {
        base + nb
    } else if proc == extra {
        base + n % nb
    } else {
        base
    }
}

/// How many of the indices `start..end` process `proc` owns.
pub fn local(start: u64, end: u64, nb: u64, proc: u32, nprocs: u32) -> u64 {
    if end <= start {
        return 0;
    }
    numroc(end, nb, proc, nprocs) - numroc(start, nb, proc, nprocs)
}

/// Position `b` steps after `a` on a ring of `n` (process rows or columns).
pub(super) fn add(a: u32, b: u32, n: u32) -> u32 {
    (a + b) % n
}

/// Position `b` steps before `a` on a ring of `n`; with `b` the origin, `a`'s distance
/// from it.
pub(super) fn sub(a: u32, b: u32, n: u32) -> u32 {
    (a + n - b % n) % n
}

/// Largest power of two <= `k` (1 for k <= 1) and the matching mask (2 ip2 - 1).
pub(super) fn ip2_mask(k: u32) -> (u32, u32) {
    let (mut ip2, mut mask, mut k) = (1u32, 1u32, k);
    while k > 1 {
        k >>= 1;
        ip2 <<= 1;
        mask = (mask << 1) | 1;
    }
    (ip2, mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numroc_deals_blocks_cyclically() {
        // N = 10, NB = 3, 2 processes: blocks [0,3) [6,9) on 0 (6), [3,6) [9,10) on 1 (4).
        assert_eq!(numroc(10, 3, 0, 2), 6);
        assert_eq!(numroc(10, 3, 1, 2), 4);
        // Columns 3..10 (7 of them): process 0 has 6,7,8; process 1 has 3,4,5,9.
        assert_eq!(local(3, 10, 3, 0, 2), 3);
        assert_eq!(local(3, 10, 3, 1, 2), 4);
    }
}
