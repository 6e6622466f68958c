//! Deterministic random numbers: one scenario seed, independent named streams.
//!
//! Every random choice in a run draws from a stream derived from the scenario seed and
//! a fixed stream identifier ([`Rng::stream`]), so adding draws in one component (say,
//! the workload) never shifts the numbers another component (say, ECMP salt or a
//! transport's jitter) sees. The generator is xoshiro256** seeded through SplitMix64;
//! no external crate, no global state.

/// Stream identifiers used by the core. Transports pick their own above 1000.
pub mod streams {
    pub const WORKLOAD: u64 = 1;
    pub const ROUTING: u64 = 2;
    pub const TRANSPORT: u64 = 3;
    /// Switch queue policies: the run's queue seed, from which each port derives its own
    /// stream (`queue::PortCtx::rng`).
    pub const QUEUE: u64 = 4;
    /// `[[pause]]` rules that pick flows or hosts at random (`pause::resolve`).
    pub const PAUSE: u64 = 5;
}

#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

#[inline]
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let s = [splitmix(&mut x), splitmix(&mut x), splitmix(&mut x), splitmix(&mut x)];
        Rng { s }
    }
    /// An independent stream for component `stream` of the run seeded with `seed`.
    pub fn stream(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mixed = splitmix(&mut x);
        Rng::new(mixed ^ stream)
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
    /// Uniform in (0, 1]: safe for `-ln(u)`.
    #[inline]
    pub fn f64_open0(&mut self) -> f64 {
        1.0 - self.f64()
    }
    /// Uniform integer in [0, n). `n` must be > 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        // Lemire's multiply-shift with rejection for exact uniformity.
        let mut m = (self.next_u64() as u128) * (n as u128);
        let mut lo = m as u64;
        if lo < n {
            let t = n.wrapping_neg() % n;
            while lo < t {
                m = (self.next_u64() as u128) * (n as u128);
                lo = m as u64;
            }
        }
        (m >> 64) as u64
    }
    /// Exponential with the given mean.
    #[inline]
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.f64_open0().ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn deterministic_and_independent() {
        let a: Vec<u64> = (0..5).map(|_| 0).scan(Rng::stream(7, 1), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..5).map(|_| 0).scan(Rng::stream(7, 1), |r, _| Some(r.next_u64())).collect();
        let c: Vec<u64> = (0..5).map(|_| 0).scan(Rng::stream(7, 2), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
    #[test]
    fn uniform_moments() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| r.f64()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
        let em: f64 = (0..n).map(|_| r.exp(3.0)).sum::<f64>() / n as f64;
        assert!((em - 3.0).abs() < 0.05, "{em}");
        let mut counts = [0u32; 7];
        for _ in 0..70_000 {
            counts[r.below(7) as usize] += 1;
        }
        for c in counts {
            assert!((c as i64 - 10_000).abs() < 500, "{counts:?}");
        }
    }
}
