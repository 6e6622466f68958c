//! Packet-index bitmaps that grow on demand: one bit per packet of a flow, in 64-bit words,
//! covering only the indices a flow has used (a long flow's bitmap stays as short as the
//! highest index set). The receiver-driven transports keep their per-flow "received",
//! "sent", "reported delivered" and "still in the NIC" sets this way.

/// Whether bit `i` is set (an index beyond the bitmap is not).
#[inline]
pub fn get(v: &[u64], i: u64) -> bool {
    v.get((i / 64) as usize).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
}

/// Set bit `i`, growing the bitmap if needed; returns whether it was set before.
#[inline]
pub fn set(v: &mut Vec<u64>, i: u64) -> bool {
    let w = (i / 64) as usize;
    if v.len() <= w {
        v.resize(w + 1, 0);
    }
    let m = 1u64 << (i % 64);
    let was = v[w] & m != 0;
    v[w] |= m;
    was
}

/// Clear bit `i` (nothing to do beyond the bitmap).
#[inline]
pub fn clear(v: &mut [u64], i: u64) {
    if let Some(w) = v.get_mut((i / 64) as usize) {
        *w &= !(1u64 << (i % 64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_grows_to_the_index_and_reports_the_previous_bit() {
        let mut v = Vec::new();
        assert!(!get(&v, 130), "beyond the bitmap: not set");
        assert!(!set(&mut v, 130));
        assert_eq!(v.len(), 3, "130 lies in the third 64-bit word");
        assert!(set(&mut v, 130), "set twice: the second call sees it");
        assert!(get(&v, 130) && !get(&v, 129) && !get(&v, 131));
        clear(&mut v, 130);
        clear(&mut v, 10_000);
        assert!(!get(&v, 130));
        assert_eq!(v.len(), 3, "clearing never grows it");
    }
}
