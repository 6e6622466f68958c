//! Typed units: simulated time in picoseconds, sizes in bytes, rates in bits per second.
//!
//! Every quantity that crosses a module boundary uses one of these newtypes
//! ([`Time`], [`Bytes`], [`Rate`]); domain conversions live here
//! (`rate.tx_time(bytes)`, `rate.bytes_in(time)`), so no caller does unit
//! arithmetic on bare integers. Conventions follow `docs/conventions.md`: 1 KB =
//! 1,000 B, 1 Gbps = 10^9 bit/s, time is an integer count of picoseconds.
//!
//! Human-readable forms ("40Gbps", "1.5us", "120KB") parse with
//! [`Time::parse`], [`Bytes::parse`] and [`Rate::parse`].
//!
//! The unit rule of scenario files: every time, size and rate is a string with a unit; a
//! bare number is an error that names the accepted units (a bare `10` could be 10 ps or
//! 10 s). Accepted units, exactly:
//! * times: `ps`, `ns`, `us` (or `µs`), `ms`, `s`;
//! * sizes (bytes, always an upper-case `B`): `B`, `KB`, `MB`, `GB`, `TB` (powers of 1000),
//!   `KiB`, `MiB`, `GiB` (powers of 1024). A lower-case `b` means bits in networking, so
//!   `kb` / `Kb` / `b` are rejected as ambiguous rather than guessed;
//! * rates (bits per second, always a lower-case `b`): `bps`, `Kbps` (or `kbps`), `Mbps`,
//!   `Gbps`, `Tbps`, and the same with `bit/s`. Bytes per second (`GBps`, `MB/s`) and a bare
//!   prefix (`100G`) are rejected.
//!
//! Numbers must be finite and not negative; integer parts are exact (no round trip through
//! a float), fractions round to the nearest base unit. Serialization writes the same form,
//! with the largest unit that keeps the value exact ("10us", "1500B", "40Gbps"), so a
//! normalized scenario parses back to the same values.

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
    /// Parse "10us", "1.5 ms", "200ns", "3ps", "0.001s"; a unit is required.
    pub fn parse(s: &str) -> Result<Time, String> {
        let (num, unit) = split_number(s, "time")?;
        let mult = match unit {
            "ps" => 1,
            "ns" => PS_PER_NS,
            "us" | "µs" => PS_PER_US,
            "ms" => PS_PER_MS,
            "s" => PS_PER_S,
            "" => return Err(no_unit(s, "time")),
            u => return Err(format!("unknown time unit '{u}' in '{}'; accepted: {TIME_UNITS}", s.trim())),
        };
        num.scale(mult, s, "time").map(Time)
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
    /// Parse "120KB", "1.5MB", "64KiB", "1500B"; a unit is required. 1 KB = 1000 B.
    pub fn parse(s: &str) -> Result<Bytes, String> {
        let (num, unit) = split_number(s, "size")?;
        let mult: u64 = match unit {
            "B" => 1,
            "KB" | "kB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            "" => return Err(no_unit(s, "size")),
            u if u.ends_with('b') || u.ends_with("bit") || u.ends_with("bits") => {
                return Err(format!(
                    "'{}': a lower-case 'b' means bits, and sizes are bytes; write the unit with \
                     an upper-case B (accepted: {SIZE_UNITS})",
                    s.trim()
                ))
            }
            u => return Err(format!("unknown size unit '{u}' in '{}'; accepted: {SIZE_UNITS}", s.trim())),
        };
        num.scale(mult, s, "size").map(Bytes)
    }
    /// Parse a size that may also be a bare integer count of bytes: flow-list cells and
    /// other file formats whose documentation says bytes. Scenario fields use [`Bytes::parse`].
    pub fn parse_or_bytes(s: &str) -> Result<Bytes, String> {
        match s.trim().parse::<u64>() {
            Ok(v) => Ok(Bytes(v)),
            Err(_) => Bytes::parse(s),
        }
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
    /// Parse "40Gbps", "1.5 Mbps", "100 Kbps", "10Gbit/s" (bits per second); a unit is required.
    pub fn parse(s: &str) -> Result<Rate, String> {
        let (num, unit) = split_number(s, "rate")?;
        if unit.is_empty() {
            return Err(no_unit(s, "rate"));
        }
        let prefix = unit.strip_suffix("bps").or_else(|| unit.strip_suffix("bit/s"));
        let mult: u64 = match prefix {
            Some("") => 1,
            Some("K" | "k") => 1_000,
            Some("M") => 1_000_000,
            Some("G") => 1_000_000_000,
            Some("T") => 1_000_000_000_000,
            _ if unit.ends_with("Bps") || unit.ends_with("B/s") => {
                return Err(format!("'{}': rates are bits per second, not bytes; accepted: {RATE_UNITS}", s.trim()))
            }
            _ => return Err(format!("unknown rate unit '{unit}' in '{}'; accepted: {RATE_UNITS}", s.trim())),
        };
        num.scale(mult, s, "rate").map(Rate)
    }
}

/// The accepted time units, as error messages list them.
pub const TIME_UNITS: &str = "ps, ns, us, ms, s";
/// The accepted size units.
pub const SIZE_UNITS: &str = "B, KB, MB, GB, TB (x1000), KiB, MiB, GiB (x1024)";
/// The accepted rate units.
pub const RATE_UNITS: &str = "bps, Kbps, Mbps, Gbps, Tbps";

/// The error for a quantity without a unit (`what`: "time", "size" or "rate").
fn no_unit(s: &str, what: &str) -> String {
    let (example, units) = match what {
        "time" => ("10us", TIME_UNITS),
        "size" => ("64KB", SIZE_UNITS),
        _ => ("40Gbps", RATE_UNITS),
    };
    format!("a {what} needs a unit, got '{}'; write e.g. \"{example}\" (accepted: {units})", s.trim())
}

/// The error for a number given where a `what` ("time", "size", "rate") string is required.
pub fn bare_number_error(v: impl fmt::Display, what: &str) -> String {
    let (example, units) = match what {
        "time" => ("10us", TIME_UNITS),
        "size" => ("64KB", SIZE_UNITS),
        _ => ("40Gbps", RATE_UNITS),
    };
    format!("a {what} needs a unit, got the bare number {v}; write a string such as \"{example}\" (accepted: {units})")
}

/// The number in front of a unit: its integer part exactly, a fraction as a float.
#[derive(Debug)]
struct Num {
    int: u64,
    frac: f64,
    /// The whole value as a float (for exponent forms such as "1e3").
    approx: f64,
    exact: bool,
}

impl Num {
    /// `self x mult` in base units, rounded to the nearest; an error if it does not fit u64.
    fn scale(&self, mult: u64, s: &str, what: &str) -> Result<u64, String> {
        let too_big = || format!("{what} '{}' is too large", s.trim());
        if self.exact {
            let whole = self.int.checked_mul(mult).ok_or_else(too_big)?;
            let part = (self.frac * mult as f64).round();
            return whole.checked_add(part as u64).ok_or_else(too_big);
        }
        let v = self.approx * mult as f64;
        if !v.is_finite() || v >= u64::MAX as f64 {
            return Err(too_big());
        }
        Ok(v.round() as u64)
    }
}

fn split_number<'a>(s: &'a str, what: &str) -> Result<(Num, &'a str), String> {
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
    let bad = || {
        format!(
            "{what} '{t}' does not start with a number (write e.g. {})",
            match what {
                "time" => "\"10us\"",
                "size" => "\"64KB\"",
                _ => "\"40Gbps\"",
            }
        )
    };
    if num_s.starts_with('-') {
        return Err(format!("{what} '{t}' is negative; give a value >= 0"));
    }
    let approx: f64 = num_s.parse().map_err(|_| bad())?;
    if !approx.is_finite() {
        return Err(format!("{what} '{t}' is not a finite number"));
    }
    if approx < 0.0 {
        return Err(format!("{what} '{t}' is negative; give a value >= 0"));
    }
    // Plain decimal "123" or "123.45": the integer part exactly.
    let plain =
        num_s.bytes().all(|c| c.is_ascii_digit() || c == b'.') && num_s.bytes().filter(|&c| c == b'.').count() <= 1;
    let num = if plain {
        let (i, f) = num_s.split_once('.').unwrap_or((num_s, ""));
        let int = if i.is_empty() { Some(0) } else { i.parse::<u64>().ok() };
        let frac = if f.is_empty() { 0.0 } else { format!("0.{f}").parse::<f64>().map_err(|_| bad())? };
        match int {
            Some(int) => Num { int, frac, approx, exact: true },
            None => Num { int: 0, frac: 0.0, approx, exact: false },
        }
    } else {
        Num { int: 0, frac: 0.0, approx, exact: false }
    };
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

// Scenario files write every quantity as a string with a unit ("10us", "64KB", "40Gbps"):
// a bare number is rejected with the accepted units, a non-finite one with its value.
// Serialization writes the string form with the largest exact unit (`to_unit_string`).
macro_rules! serde_unit {
    ($t:ident, $what:expr, $expecting:expr) => {
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        write!(f, "{}", $expecting)
                    }
                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$t, E> {
                        Err(E::custom(bare_number_error(v, $what)))
                    }
                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$t, E> {
                        Err(E::custom(bare_number_error(v, $what)))
                    }
                    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<$t, E> {
                        if !v.is_finite() {
                            return Err(E::custom(format!("a {} must be finite, got {v}", $what)));
                        }
                        Err(E::custom(bare_number_error(v, $what)))
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
                s.serialize_str(&self.to_unit_string())
            }
        }
    };
}
serde_unit!(Time, "time", "a time: a string with a unit such as \"10us\"");
serde_unit!(Bytes, "size", "a size: a string with a unit such as \"64KB\"");
serde_unit!(Rate, "rate", "a rate: a string with a unit such as \"40Gbps\"");

/// The largest unit of `units` (name, multiple; ascending) that divides `v`, as "<v/m><name>".
fn exact_form(v: u64, units: &[(&str, u64)]) -> String {
    let (name, m) = units.iter().rev().find(|(_, m)| v.is_multiple_of(*m) && v != 0).copied().unwrap_or(units[0]);
    format!("{}{name}", v / m)
}

impl Time {
    /// The exact string form with the largest unit that divides the value ("10us", "1500ps").
    pub fn to_unit_string(self) -> String {
        exact_form(self.0, &[("ps", 1), ("ns", PS_PER_NS), ("us", PS_PER_US), ("ms", PS_PER_MS), ("s", PS_PER_S)])
    }
}
impl Bytes {
    /// The exact string form with the largest decimal unit that divides the value.
    pub fn to_unit_string(self) -> String {
        exact_form(self.0, &[("B", 1), ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000)])
    }
}
impl Rate {
    /// The exact string form with the largest unit that divides the value ("40Gbps").
    pub fn to_unit_string(self) -> String {
        exact_form(
            self.0,
            &[("bps", 1), ("Kbps", 1_000), ("Mbps", 1_000_000), ("Gbps", 1_000_000_000), ("Tbps", 1_000_000_000_000)],
        )
    }
}

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
        assert_eq!(Rate::parse("100Gbps").unwrap(), Rate::gbps(100));
        assert_eq!(Rate::parse("1e9bps").unwrap(), Rate::gbps(1));
        assert_eq!(Rate::parse("1.5 Mbps").unwrap(), Rate(1_500_000));
        assert!(Time::parse("10 parsecs").is_err());
        assert!(Rate::parse("fast").is_err());
        assert!(Bytes::parse("-5KB").is_err());
    }

    #[test]
    fn serde_accepts_strings_with_units_only() {
        let t: Time = serde_json::from_str("\"2us\"").unwrap();
        assert_eq!(t, Time::us(2));
        let b: Bytes = serde_json::from_str("\"1500B\"").unwrap();
        assert_eq!(b, Bytes(1500));
        let r: Rate = serde_json::from_str("\"10Gbps\"").unwrap();
        assert_eq!(r, Rate::gbps(10));
        for bare in ["1500", "-3", "1.5", "0"] {
            let e = serde_json::from_str::<Bytes>(bare).unwrap_err().to_string();
            assert!(e.contains("needs a unit") && e.contains("KB"), "{bare}: {e}");
            let e = serde_json::from_str::<Time>(bare).unwrap_err().to_string();
            assert!(e.contains("needs a unit") && e.contains("ps, ns, us, ms, s"), "{bare}: {e}");
            let e = serde_json::from_str::<Rate>(bare).unwrap_err().to_string();
            assert!(e.contains("needs a unit") && e.contains("Gbps"), "{bare}: {e}");
        }
        assert!(serde_json::from_str::<Time>("\"10\"").unwrap_err().to_string().contains("needs a unit"));
    }

    #[test]
    fn bits_and_bytes_are_never_confused() {
        // A size with a lower-case b (bits) is rejected, not read as bytes.
        for s in ["20kb", "20Kb", "20b", "1Mb", "3gb", "5kbit"] {
            let e = Bytes::parse(s).unwrap_err();
            assert!(e.contains("bits"), "{s}: {e}");
        }
        assert_eq!(Bytes::parse("20KB").unwrap(), Bytes(20_000));
        assert_eq!(Bytes::parse("20kB").unwrap(), Bytes(20_000));
        // A rate in bytes per second or with a bare prefix is rejected.
        for s in ["1GBps", "10MB/s", "100G", "40", "40gbps"] {
            assert!(Rate::parse(s).is_err(), "{s}");
        }
        assert_eq!(Rate::parse("20kbps").unwrap(), Rate(20_000));
        assert_eq!(Rate::parse("20Kbps").unwrap(), Rate(20_000));
        assert_eq!(Rate::parse("10Gbit/s").unwrap(), Rate::gbps(10));
    }

    #[test]
    fn parse_is_exact_and_range_checked() {
        // Integer parts are exact, even beyond a float's 53 bits.
        assert_eq!(Time::parse("18446744073709551615ps").unwrap(), Time::MAX);
        assert!(Time::parse("18446744073709551616ps").is_err());
        assert!(Time::parse("1e30s").is_err());
        assert!(Time::parse("1e400s").is_err());
        assert_eq!(Time::parse("0.5ns").unwrap(), Time(500));
        assert_eq!(Time::parse("1e3ns").unwrap(), Time::us(1));
        for s in ["nan us", "infs", "-1us", "us", "", ".us", "1.2.3us"] {
            assert!(Time::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn unit_strings_round_trip() {
        for t in [Time(0), Time(1), Time::ns(120), Time::us(10), Time::ms(3), Time(1_500_000), Time::MAX] {
            assert_eq!(Time::parse(&t.to_unit_string()).unwrap(), t, "{}", t.to_unit_string());
        }
        assert_eq!(Time::us(10).to_unit_string(), "10us");
        for b in [Bytes(0), Bytes(1500), Bytes(120_000), Bytes(u64::MAX)] {
            assert_eq!(Bytes::parse(&b.to_unit_string()).unwrap(), b);
        }
        for r in [Rate(1), Rate::gbps(40), Rate(2_500_000), Rate(u64::MAX)] {
            assert_eq!(Rate::parse(&r.to_unit_string()).unwrap(), r);
        }
        assert_eq!(serde_json::to_string(&Rate::gbps(40)).unwrap(), "\"40Gbps\"");
    }

    #[test]
    fn bdp() {
        // 40 Gbps x 10 us = 50 KB
        assert_eq!(Rate::gbps(40).bdp(Time::us(10)), Bytes(50_000));
    }
}
