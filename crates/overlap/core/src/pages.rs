//! Page arithmetic for protecting a user receive buffer ([Li 2010] section 4.1.2).
//!
//! Only the pages lying entirely inside the buffer are protected: the unaligned first and last
//! pages may hold other data of the application, so the sub-messages touching them are completed
//! before the collective returns. A protected page may be shared by several sub-messages; it is
//! released only when none of them is pending. Ranges are half-open `[start, end)` byte addresses,
//! sorted and disjoint, merged so that one `mprotect` covers each.

use crate::Error;

/// A half-open address range `[start, end)`.
pub type Range = (usize, usize);

fn check(page: usize) -> Result<(), Error> {
    if page == 0 || !page.is_power_of_two() {
        return Err(Error::BadPageSize(page));
    }
    Ok(())
}

/// The whole pages inside `[addr, addr + len)`, or `None` when there is none.
pub fn protectable(addr: usize, len: usize, page: usize) -> Result<Option<Range>, Error> {
    check(page)?;
    let lo = addr.div_ceil(page) * page;
    let hi = (addr + len) / page * page;
    Ok((lo < hi).then_some((lo, hi)))
}

/// Whether the sub-message `[start, end)` touches a page of the buffer that stays unprotected
/// (outside `protected`), so it must be completed before the collective returns.
pub fn touches_unprotected(sub: Range, protected: Option<Range>) -> bool {
    match protected {
        None => sub.0 < sub.1,
        Some((lo, hi)) => sub.0 < lo || sub.1 > hi,
    }
}

/// The parts of `protected` that no pending sub-message shares a page with, merged.
pub fn releasable(protected: Range, pending: &[Range], page: usize) -> Result<Vec<Range>, Error> {
    check(page)?;
    let mut blocked: Vec<Range> = pending
        .iter()
        .filter(|r| r.0 < r.1)
        .map(|&(s, e)| (s / page * page, e.div_ceil(page) * page))
        .collect();
    blocked.sort_unstable();
    Ok(subtract(&[protected], &blocked))
}

/// `a` minus `b`, both sorted by start (`b` may overlap itself); the result is sorted, disjoint,
/// merged and drops empty ranges.
pub fn subtract(a: &[Range], b: &[Range]) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    for &(mut s, e) in a {
        for &(bs, be) in b {
            if be <= s || bs >= e {
                continue;
            }
            if bs > s {
                push_merged(&mut out, (s, bs));
            }
            s = s.max(be);
            if s >= e {
                break;
            }
        }
        if s < e {
            push_merged(&mut out, (s, e));
        }
    }
    out
}

fn push_merged(out: &mut Vec<Range>, r: Range) {
    match out.last_mut() {
        Some(last) if last.1 >= r.0 => last.1 = last.1.max(r.1),
        _ => out.push(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: usize = 4096;

    #[test]
    fn protectable_whole_pages_only() {
        assert_eq!(protectable(0, 3 * P, P).unwrap(), Some((0, 3 * P)));
        assert_eq!(protectable(10, 3 * P, P).unwrap(), Some((P, 3 * P)));
        assert_eq!(protectable(10, P, P).unwrap(), None);
        assert_eq!(protectable(P - 1, P + 2, P).unwrap(), Some((P, 2 * P)));
        assert_eq!(protectable(0, 1, 3), Err(Error::BadPageSize(3)));
    }

    #[test]
    fn unaligned_edges_must_complete() {
        let prot = protectable(100, 4 * P, P).unwrap();
        assert!(touches_unprotected((100, 200), prot));
        assert!(touches_unprotected((3 * P, 4 * P + 100), prot));
        assert!(!touches_unprotected((P, 2 * P + 5), prot));
        assert!(touches_unprotected((0, 1), None));
    }

    /// Brute force over pages: a page is releasable iff it is protected and no pending range
    /// intersects it.
    #[test]
    fn releasable_matches_brute_force() {
        let mut seed = 12345u64;
        let mut rnd = |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % m
        };
        for _ in 0..500 {
            let pages = 1 + rnd(12);
            let prot = (P * rnd(3), P * (3 + pages));
            let mut pending = Vec::new();
            for _ in 0..rnd(5) {
                let s = rnd(16 * P);
                pending.push((s, s + rnd(3 * P)));
            }
            let got = releasable(prot, &pending, P).unwrap();
            let mut expect = Vec::new();
            for pg in (prot.0..prot.1).step_by(P) {
                let busy = pending.iter().any(|&(s, e)| s < e && s < pg + P && e > pg);
                if !busy {
                    push_merged(&mut expect, (pg, pg + P));
                }
            }
            assert_eq!(got, expect, "prot {prot:?} pending {pending:?}");
        }
    }

    #[test]
    fn shared_page_waits_for_both() {
        // Two sub-messages share page 1; releasing the first alone frees page 0 only.
        let prot = (0, 3 * P);
        let a = (0, P + 10);
        let b = (P + 10, 3 * P);
        assert_eq!(releasable(prot, &[b], P).unwrap(), vec![(0, P)]);
        assert_eq!(releasable(prot, &[a], P).unwrap(), vec![(2 * P, 3 * P)]);
        assert_eq!(releasable(prot, &[], P).unwrap(), vec![(0, 3 * P)]);
        let before = releasable(prot, &[a, b], P).unwrap();
        assert!(before.is_empty());
        assert_eq!(
            subtract(&[(0, 10), (20, 30)], &[(5, 25)]),
            vec![(0, 5), (25, 30)]
        );
    }
}
