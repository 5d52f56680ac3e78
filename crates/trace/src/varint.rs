//! LEB128 variable-length integers and zigzag mapping.
//!
//! Every integer in an event block is a varint: seven payload bits per byte, the high bit set
//! on every byte but the last. Signed values go through zigzag first so that small negative
//! numbers stay short (`-1` is one byte).

/// Largest number of bytes a `u64` varint takes.
pub const MAX_VARINT_LEN: usize = 10;

/// Maps a signed integer to an unsigned one so that values near zero are small.
#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Writes `v` at `buf[pos..]` and returns the new position.
///
/// Panics if fewer than [`len`]`(v)` bytes remain.
#[inline]
pub fn put(buf: &mut [u8], mut pos: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        buf[pos] = (v as u8) | 0x80;
        v >>= 7;
        pos += 1;
    }
    buf[pos] = v as u8;
    pos + 1
}

/// Writes `v` at `buf[pos..]` without bounds checks; returns the new position.
///
/// # Safety
/// `buf.len() - pos >= MAX_VARINT_LEN`.
#[inline(always)]
pub unsafe fn put_unchecked(buf: &mut [u8], mut pos: usize, mut v: u64) -> usize {
    let p = buf.as_mut_ptr();
    while v >= 0x80 {
        *p.add(pos) = (v as u8) | 0x80;
        v >>= 7;
        pos += 1;
    }
    *p.add(pos) = v as u8;
    pos + 1
}

/// Number of bytes [`put`] writes for `v`.
#[inline]
pub fn len(v: u64) -> usize {
    // 1 + floor(bits/7); bits of 0 counts as one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended inside the varint.
    Truncated,
    /// More than ten bytes, or bits beyond 64.
    Overflow,
}

/// Reads a varint from `buf[*pos..]`, advancing `pos`.
#[inline]
pub fn get(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    let mut shift = 0u32;
    let mut out = 0u64;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err(VarintError::Truncated);
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(VarintError::Overflow);
        }
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
        shift += 7;
        if shift > 63 {
            return Err(VarintError::Overflow);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        let mut b = [0u8; 16];
        assert_eq!(put(&mut b, 0, 0), 1);
        assert_eq!(b[0], 0);
        assert_eq!(put(&mut b, 0, 300), 2);
        assert_eq!(&b[..2], &[0xac, 0x02]);
        assert_eq!(put(&mut b, 0, u64::MAX), 10);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
    }

    #[test]
    fn rejects_overlong() {
        let b = [0xffu8; 11];
        assert_eq!(get(&b, &mut 0), Err(VarintError::Overflow));
        let b = [0x80u8, 0x80];
        assert_eq!(get(&b, &mut 0), Err(VarintError::Truncated));
    }

    proptest! {
        #[test]
        fn round_trip(v: u64) {
            let mut b = [0u8; MAX_VARINT_LEN];
            let n = put(&mut b, 0, v);
            prop_assert_eq!(n, len(v));
            let mut p = 0;
            prop_assert_eq!(get(&b[..n], &mut p), Ok(v));
            prop_assert_eq!(p, n);
        }

        #[test]
        fn zigzag_round_trip(v: i64) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
