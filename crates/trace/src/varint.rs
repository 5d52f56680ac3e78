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
#[inline(always)]
pub fn get(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    // Most values of an event (ids, small deltas, gaps of a few hundred ticks) fit one byte.
    match buf.get(*pos) {
        Some(&b) if b < 0x80 => {
            *pos += 1;
            Ok(u64::from(b))
        }
        _ => get_word(buf, pos),
    }
}

/// [`get`] for values of up to eight bytes with eight bytes readable: one load, the length
/// from the first byte without a continuation bit, and the 7-bit groups gathered by three
/// shift-and-mask steps (no loop, no branch per byte).
#[inline(always)]
fn get_word(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
    let p = *pos;
    let Some(bytes) = buf.get(p..p + 8) else {
        return get_long(buf, pos);
    };
    let word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
    let ends = !word & 0x8080_8080_8080_8080;
    if ends == 0 {
        return get_long(buf, pos);
    }
    // Bit 8k+7 is the first clear continuation bit: the value has k+1 bytes.
    let bits = ends.trailing_zeros() + 1;
    let x = if bits == 64 {
        word
    } else {
        word & ((1u64 << bits) - 1)
    } & 0x7f7f_7f7f_7f7f_7f7f;
    let x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
    let x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
    let x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
    *pos = p + (bits / 8) as usize;
    Ok(x)
}

/// Moves `pos` past `n` varints without decoding them (eight bytes at a time: one count of
/// the bytes that end a varint). Checks that each ends within the buffer; an overlong varint
/// (more than ten bytes) is not detected here: skipping is for data that will not be used.
pub fn skip(buf: &[u8], pos: &mut usize, mut n: usize) -> Result<(), VarintError> {
    while n > 0 {
        let p = *pos;
        let Some(bytes) = buf.get(p..p + 8) else {
            get_long(buf, pos)?;
            n -= 1;
            continue;
        };
        let word = u64::from_le_bytes(bytes.try_into().expect("eight bytes"));
        let mut ends = !word & 0x8080_8080_8080_8080;
        let k = ends.count_ones() as usize;
        if k == 0 {
            // Eight bytes inside one long varint (an i64::MIN marker is ten bytes).
            *pos = p + 8;
        } else if k <= n {
            // Past the last varint ending in these eight bytes.
            *pos = p + (64 - ends.leading_zeros() as usize).div_ceil(8);
            n -= k;
        } else {
            // Past the n-th.
            for _ in 1..n {
                ends &= ends - 1;
            }
            *pos = p + (ends.trailing_zeros() as usize + 1).div_ceil(8);
            n = 0;
        }
    }
    Ok(())
}

/// [`get`] for values of two bytes or more (and errors).
#[inline(never)]
fn get_long(buf: &[u8], pos: &mut usize) -> Result<u64, VarintError> {
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

        /// The one-load path reads what the byte-by-byte one reads, wherever the value
        /// lies in the buffer and whatever follows it.
        #[test]
        fn word_path_matches_byte_path(v: u64, pad in prop::collection::vec(any::<u8>(), 0..12), at in 0usize..4) {
            let mut b = vec![0xffu8; at];
            let mut enc = [0u8; MAX_VARINT_LEN];
            let n = put(&mut enc, 0, v);
            b.extend_from_slice(&enc[..n]);
            b.extend_from_slice(&pad);
            let (mut p1, mut p2) = (at, at);
            prop_assert_eq!(get(&b, &mut p1), Ok(v));
            prop_assert_eq!(get_long(&b, &mut p2), Ok(v));
            prop_assert_eq!(p1, p2);
        }

        /// Skipping n varints lands where reading n of them does.
        #[test]
        fn skip_matches_reading(vs in prop::collection::vec(prop_oneof![0u64..200, any::<u64>()], 0..40), pad in prop::collection::vec(any::<u8>(), 0..12), take in 0usize..40) {
            let mut b = Vec::new();
            for &v in &vs {
                let mut enc = [0u8; MAX_VARINT_LEN];
                let n = put(&mut enc, 0, v);
                b.extend_from_slice(&enc[..n]);
            }
            b.extend_from_slice(&pad);
            let take = take.min(vs.len());
            let mut read = 0;
            for _ in 0..take {
                get(&b, &mut read).unwrap();
            }
            let mut skipped = 0;
            prop_assert_eq!(skip(&b, &mut skipped, take), Ok(()));
            prop_assert_eq!(skipped, read);
        }

        #[test]
        fn zigzag_round_trip(v: i64) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
        }
    }
}
