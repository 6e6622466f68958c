//! Typed units: simulated time in picoseconds, sizes in bytes, rates in bits per second.
//!
//! Every quantity that crosses a module boundary uses one of these newtypes
//! ([`Time`], [`Bytes`], [`Rate`]); domain conversions live here
//! (`rate.tx_time(bytes)`, `rate.bytes_in(time)`), so no caller does unit
//! arithmetic on bare integers. Conventions follow `CONVENTIONS.md`: 1 KB =
//! 1,000 B, 1 Gbps = 10^9 bit/s, time is an integer count of picoseconds.
//!
//! Human-readable forms ("40Gbps", "1.5us", "120KB") parse with
//! [`Time::parse`], [`Bytes::parse`] and [`Rate::parse`].

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// Simulated time, an integer count of picoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A size in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A bit rate in bits per second.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;
pub const PS_PER_MS: u64 = 1_000_000_000;
pub const PS_PER_S: u64 = 1_000_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    pub const fn ps(v: u64) -> Time {
        Time(v)
    }
    pub const fn ns(v: u64) -> Time {
        Time(v * PS_PER_NS)
    }
    pub const fn us(v: u64) -> Time {
        Time(v * PS_PER_US)
    }
    pub const fn ms(v: u64) -> Time {
        Time(v * PS_PER_MS)
    }
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * PS_PER_S as f64).round() as u64)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / PS_PER_US as f64
    }
    pub fn saturating_sub(self, o: Time) -> Time {
        Time(self.0.saturating_sub(o.0))
    }
    /// Multiply by a real factor, rounding to the nearest picosecond.
    pub fn mul_f64(self, f: f64) -> Time {
        Time((self.0 as f64 * f).round().max(0.0) as u64)
    }
    /// Parse "10us", "1.5 ms", "200ns", "3ps", "0.001s" or a bare number of picoseconds.
    pub fn parse(s: &str) -> Result<Time, String> {
        let (num, unit) = split_number(s)?;
        let mult = match unit.to_ascii_lowercase().as_str() {
            "" | "ps" => 1.0,
            "ns" => PS_PER_NS as f64,
            "us" | "µs" => PS_PER_US as f64,
            "ms" => PS_PER_MS as f64,
            "s" => PS_PER_S as f64,
            u => return Err(format!("unknown time unit '{u}' (use ps, ns, us, ms or s)")),
        };
        let v = num * mult;
        if !(v.is_finite()) || v < 0.0 || v > u64::MAX as f64 {
            return Err(format!("time '{s}' is out of range"));
        }
        Ok(Time(v.round() as u64))
    }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    pub const fn new(v: u64) -> Bytes {
        Bytes(v)
    }
    pub fn bits(self) -> u64 {
        self.0 * 8
    }
    /// Parse "120KB", "1.5MB", "64KiB", "1500B", "1500" (bytes). 1 KB = 1000 B.
    pub fn parse(s: &str) -> Result<Bytes, String> {
        let (num, unit) = split_number(s)?;
        let mult: f64 = match unit {
            "" | "B" | "b" => 1.0,
            "KB" | "kB" | "kb" | "Kb" => 1e3,
            "MB" | "mb" => 1e6,
            "GB" | "gb" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            u => return Err(format!("unknown size unit '{u}' (use B, KB, MB, GB, KiB, MiB)")),
        };
        let v = num * mult;
        if !(v.is_finite()) || v < 0.0 || v > u64::MAX as f64 {
            return Err(format!("size '{s}' is out of range"));
        }
        Ok(Bytes(v.round() as u64))
    }
}

impl Rate {
    pub const fn bps(v: u64) -> Rate {
        Rate(v)
    }
    pub const fn gbps(v: u64) -> Rate {
        Rate(v * 1_000_000_000)
    }
    pub const fn mbps(v: u64) -> Rate {
        Rate(v * 1_000_000)
    }
    pub fn as_gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Serialization time of `b` bytes at this rate, rounded up to the next picosecond.
    #[inline]
    pub fn tx_time(self, b: Bytes) -> Time {
        debug_assert!(self.0 > 0);
        let num = b.0 as u128 * 8 * PS_PER_S as u128;
        let r = self.0 as u128;
        Time(num.div_ceil(r) as u64)
    }
    /// Bytes this rate carries in `t` (rounded down).
    pub fn bytes_in(self, t: Time) -> Bytes {
        Bytes((self.0 as u128 * t.0 as u128 / (8 * PS_PER_S as u128)) as u64)
    }
    /// Bandwidth-delay product of this rate over `rtt`.
    pub fn bdp(self, rtt: Time) -> Bytes {
        self.bytes_in(rtt)
    }
    /// Parse "40Gbps", "100G", "1.5 Mbps", "10e9" (bit/s).
    pub fn parse(s: &str) -> Result<Rate, String> {
        let (num, unit) = split_number(s)?;
        let u = unit.to_ascii_lowercase();
        let u = u.trim_end_matches("ps").trim_end_matches("bit/s");
        let mult = match u {
            "" | "b" => 1.0,
            "k" | "kb" => 1e3,
            "m" | "mb" => 1e6,
            "g" | "gb" => 1e9,
            "t" | "tb" => 1e12,
            _ => return Err(format!("unknown rate unit in '{s}' (use bps, Kbps, Mbps, Gbps, Tbps)")),
        };
        let v = num * mult;
        if !(v.is_finite()) || v < 0.0 || v > u64::MAX as f64 {
            return Err(format!("rate '{s}' is out of range"));
        }
        Ok(Rate(v.round() as u64))
    }
}

fn split_number(s: &str) -> Result<(f64, &str), String> {
    let t = s.trim();
    let end = t
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' || *c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    // "1e" followed by a unit letter is ambiguous; only treat 'e' as exponent when a digit follows.
    let (mut num_s, mut rest) = t.split_at(end);
    if num_s.ends_with(['e', 'E']) {
        num_s = &num_s[..num_s.len() - 1];
        rest = &t[num_s.len()..];
    }
    let num: f64 = num_s.parse().map_err(|_| format!("'{s}' does not start with a number"))?;
    Ok((num, rest.trim()))
}

macro_rules! arith {
    ($t:ident) => {
        impl Add for $t {
            type Output = $t;
            #[inline]
            fn add(self, o: $t) -> $t {
                $t(self.0 + o.0)
            }
        }
        impl Sub for $t {
            type Output = $t;
            #[inline]
            fn sub(self, o: $t) -> $t {
                $t(self.0 - o.0)
            }
        }
        impl AddAssign for $t {
            #[inline]
            fn add_assign(&mut self, o: $t) {
                self.0 += o.0
            }
        }
        impl SubAssign for $t {
            #[inline]
            fn sub_assign(&mut self, o: $t) {
                self.0 -= o.0
            }
        }
        impl Mul<u64> for $t {
            type Output = $t;
            #[inline]
            fn mul(self, k: u64) -> $t {
                $t(self.0 * k)
            }
        }
        impl Div<u64> for $t {
            type Output = $t;
            #[inline]
            fn div(self, k: u64) -> $t {
                $t(self.0 / k)
            }
        }
    };
}
arith!(Time);
arith!(Bytes);

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= PS_PER_MS {
            write!(f, "{:.3}ms", self.0 as f64 / PS_PER_MS as f64)
        } else if self.0 >= PS_PER_US {
            write!(f, "{:.3}us", self.0 as f64 / PS_PER_US as f64)
        } else {
            write!(f, "{}ps", self.0)
        }
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Gbps", self.as_gbps_f64())
    }
}

// Scenario files write quantities either as a number in base units (picoseconds, bytes,
// bit/s) or as a string with a unit ("10us", "64KB", "40Gbps"); both deserialize here.
// Serialization writes the base-unit number.
macro_rules! serde_unit {
    ($t:ident, $what:expr) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "{}", $what)
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$t, E> {
                        Ok($t(v))
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$t, E> {
                        if v < 0 {
                            Err(E::custom(format!("must not be negative, got {v}")))
                        } else {
                            Ok($t(v as u64))
                        }
                    }
                    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<$t, E> {
                        if !v.is_finite() || v < 0.0 {
                            Err(E::custom(format!("must be a non-negative number, got {v}")))
                        } else {
                            Ok($t(v.round() as u64))
                        }
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$t, E> {
                        $t::parse(v).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(self.0)
            }
        }
    };
}
serde_unit!(Time, "a time: picoseconds as a number, or a string such as \"10us\"");
serde_unit!(Bytes, "a size: bytes as a number, or a string such as \"64KB\"");
serde_unit!(Rate, "a rate: bit/s as a number, or a string such as \"40Gbps\"");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact() {
        // 1500 B at 100 Gbps = 120 ns exactly.
        assert_eq!(Rate::gbps(100).tx_time(Bytes(1500)), Time::ns(120));
        // 1500 B at 40 Gbps = 300 ns.
        assert_eq!(Rate::gbps(40).tx_time(Bytes(1500)), Time::ns(300));
        // 64 B at 3 bps rounds up: 512/3 s = 170.666.. s
        assert_eq!(Rate::bps(3).tx_time(Bytes(64)).0, (512u64 * PS_PER_S).div_ceil(3));
    }

    #[test]
    fn parse_units() {
        assert_eq!(Time::parse("10us").unwrap(), Time::us(10));
        assert_eq!(Time::parse("1.5 ms").unwrap(), Time::us(1500));
        assert_eq!(Bytes::parse("120KB").unwrap(), Bytes(120_000));
        assert_eq!(Bytes::parse("64KiB").unwrap(), Bytes(65_536));
        assert_eq!(Rate::parse("40Gbps").unwrap(), Rate::gbps(40));
        assert_eq!(Rate::parse("100G").unwrap(), Rate::gbps(100));
        assert_eq!(Rate::parse("1e9").unwrap(), Rate::gbps(1));
        assert!(Time::parse("10 parsecs").is_err());
        assert!(Rate::parse("fast").is_err());
        assert!(Bytes::parse("-5KB").is_err());
    }

    #[test]
    fn serde_accepts_numbers_and_strings() {
        let t: Time = serde_json::from_str("\"2us\"").unwrap();
        assert_eq!(t, Time::us(2));
        let b: Bytes = serde_json::from_str("1500").unwrap();
        assert_eq!(b, Bytes(1500));
        let r: Rate = serde_json::from_str("\"10Gbps\"").unwrap();
        assert_eq!(r, Rate::gbps(10));
        assert!(serde_json::from_str::<Bytes>("-3").is_err());
    }

    #[test]
    fn bdp() {
        // 40 Gbps x 10 us = 50 KB
        assert_eq!(Rate::gbps(40).bdp(Time::us(10)), Bytes(50_000));
    }
}
