//! Units of the scenario format: exact integer nanoseconds, bytes and bytes per second.
//!
//! Durations are written `"250ns"`, `"5us"`, `"1.5ms"`, `"2s"`, `"1m"`; sizes `"512B"`, `"4KB"`
//! (powers of 1000) or `"64MiB"` (powers of 1024); bandwidths `"25GB/s"` or `"100Gbit/s"`.
//! Values are parsed with exact decimal arithmetic, so `"1.5ms"` is exactly 1_500_000 ns.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

pub use ringside_proto::time::{fmt_ms, fmt_time, later, Nanos, NEVER};

/// A duration in exact nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub Nanos);

/// A size in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(pub u64);

/// A bandwidth in bytes per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bandwidth(pub u64);

/// Why a unit string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

/// Splits `"1.5ms"` into an exact decimal (mantissa, decimal places) and the unit suffix.
fn split_number(s: &str) -> Result<(u128, u32, &str), UnitError> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(UnitError(format!("`{s}` does not start with a number")));
    }
    let mut mantissa: u128 = 0;
    let mut decimals = 0u32;
    let mut seen_dot = false;
    let mut digits = 0;
    for c in num.chars() {
        match c {
            '_' => {}
            '.' if !seen_dot => seen_dot = true,
            '.' => return Err(UnitError(format!("`{s}` has two decimal points"))),
            d => {
                digits += 1;
                if digits > 30 {
                    return Err(UnitError(format!("`{s}` has too many digits")));
                }
                mantissa = mantissa * 10 + u128::from(d.to_digit(10).unwrap_or(0));
                if seen_dot {
                    decimals += 1;
                }
            }
        }
    }
    if digits == 0 {
        return Err(UnitError(format!("`{s}` does not start with a number")));
    }
    Ok((mantissa, decimals, unit.trim()))
}

/// `mantissa / 10^decimals * scale`, which must be an integer that fits in u64.
fn scaled(
    s: &str,
    mantissa: u128,
    decimals: u32,
    scale: u128,
    what: &str,
) -> Result<u64, UnitError> {
    let num = mantissa
        .checked_mul(scale)
        .ok_or_else(|| UnitError(format!("`{s}` is too large")))?;
    let den = 10u128.pow(decimals);
    if num % den != 0 {
        return Err(UnitError(format!("`{s}` is not a whole number of {what}")));
    }
    u64::try_from(num / den).map_err(|_| UnitError(format!("`{s}` is too large")))
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    /// The longest duration a scenario or a flag may give: a million hours (about 114 years).
    /// Virtual time itself reaches about 5.1 million hours, so that a few such durations
    /// added together still fit; sums beyond that saturate to "never" (see [`later`]).
    pub const MAX: Duration = Duration(1_000_000 * 3_600_000_000_000);

    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (m, d, unit) = split_number(s)?;
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" | "min" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => {
                return Err(UnitError(format!(
                    "`{s}` needs a unit: ns, us, ms, s, m or h (e.g. \"5us\")"
                )))
            }
            other => {
                return Err(UnitError(format!(
                    "unknown duration unit `{other}` in `{s}`: use ns, us, ms, s, m or h"
                )))
            }
        };
        let d = scaled(s, m, d, scale, "nanoseconds").map(Duration)?;
        if d > Duration::MAX {
            return Err(UnitError(format!(
                "`{s}` is longer than the longest duration accepted, 1000000h"
            )));
        }
        Ok(d)
    }

    pub fn as_nanos(self) -> Nanos {
        self.0
    }
}

impl fmt::Display for Duration {
    /// The largest unit that represents the value exactly, e.g. `25ms`, `1500us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
            if ns != 0 && ns.is_multiple_of(scale) {
                return write!(f, "{}{unit}", ns / scale);
            }
        }
        write!(f, "{ns}ns")
    }
}

impl Size {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (m, d, unit) = split_number(s)?;
        let scale: u128 = match unit {
            "B" => 1,
            "KB" | "kB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            "TiB" => 1 << 40,
            "" => {
                return Err(UnitError(format!(
                    "`{s}` needs a unit: B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (e.g. \"64MiB\")"
                )))
            }
            other => {
                return Err(UnitError(format!(
                    "unknown size unit `{other}` in `{s}`: \
                     use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"
                )))
            }
        };
        scaled(s, m, d, scale, "bytes").map(Size)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, scale) in [
            ("GiB", 1u64 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
            ("GB", 1_000_000_000),
            ("MB", 1_000_000),
            ("KB", 1_000),
        ] {
            if b != 0 && b.is_multiple_of(scale) {
                return write!(f, "{}{unit}", b / scale);
            }
        }
        write!(f, "{b}B")
    }
}

impl Bandwidth {
    pub fn parse(s: &str) -> Result<Self, UnitError> {
        let (m, d, unit) = split_number(s)?;
        // bits are converted to bytes by an exact division by 8 after scaling
        let (scale, bits): (u128, bool) = match unit {
            "B/s" => (1, false),
            "KB/s" | "kB/s" => (1_000, false),
            "MB/s" => (1_000_000, false),
            "GB/s" => (1_000_000_000, false),
            "TB/s" => (1_000_000_000_000, false),
            "KiB/s" => (1 << 10, false),
            "MiB/s" => (1 << 20, false),
            "GiB/s" => (1 << 30, false),
            "bit/s" => (1, true),
            "Kbit/s" => (1_000, true),
            "Mbit/s" => (1_000_000, true),
            "Gbit/s" => (1_000_000_000, true),
            "Tbit/s" => (1_000_000_000_000, true),
            other => {
                return Err(UnitError(format!(
                    "unknown bandwidth unit `{other}` in `{s}`: use B/s, KB/s, MB/s, GB/s, GiB/s, Mbit/s, Gbit/s or Tbit/s"
                )))
            }
        };
        let what = if bits {
            "bytes/s (bits must make whole bytes)"
        } else {
            "bytes/s"
        };
        let bytes = if bits {
            let bits = scaled(s, m, d, scale, "bits/s")?;
            if bits % 8 != 0 {
                return Err(UnitError(format!("`{s}` is not a whole number of {what}")));
            }
            bits / 8
        } else {
            scaled(s, m, d, scale, what)?
        };
        if bytes == 0 {
            return Err(UnitError(format!("`{s}`: a bandwidth must be positive")));
        }
        Ok(Bandwidth(bytes))
    }

    pub fn bytes_per_sec(self) -> u64 {
        self.0
    }

    /// Time to move `bytes` at this bandwidth, rounded up to whole nanoseconds.
    pub fn transfer_ns(self, bytes: u64) -> Nanos {
        if bytes <= 18_000_000_000 {
            // bytes * 1e9 fits in u64
            return (bytes * 1_000_000_000).div_ceil(self.0.max(1));
        }
        let num = u128::from(bytes) * 1_000_000_000;
        let bw = u128::from(self.0.max(1));
        u64::try_from(num.div_ceil(bw)).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, scale) in [
            ("TB/s", 1_000_000_000_000u64),
            ("GB/s", 1_000_000_000),
            ("MB/s", 1_000_000),
            ("KB/s", 1_000),
        ] {
            if b.is_multiple_of(scale) {
                return write!(f, "{}{unit}", b / scale);
            }
        }
        write!(f, "{b}B/s")
    }
}

/// A time per byte, LogGP's G: a duration that may be a fraction of a nanosecond
/// (`"0.04ns"`, `"6ns"`), or the bandwidth it amounts to (`"25GB/s"` is 0.04 ns per byte).
/// Kept exact, as a fraction of nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PerByte {
    /// `num / den` nanoseconds per byte, in lowest terms (`den` divides a power of ten).
    Time { num: u64, den: u64 },
    /// One byte every 1/bandwidth.
    Rate(Bandwidth),
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl PerByte {
    pub const ZERO: PerByte = PerByte::Time { num: 0, den: 1 };

    pub fn parse(s: &str) -> Result<Self, UnitError> {
        if s.trim_end().ends_with("/s") {
            return Bandwidth::parse(s).map(PerByte::Rate);
        }
        let (m, d, unit) = split_number(s)?;
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "" => {
                return Err(UnitError(format!(
                    "`{s}` needs a unit: a time per byte such as \"0.04ns\" or a bandwidth \
                     such as \"25GB/s\""
                )))
            }
            other => {
                return Err(UnitError(format!(
                    "unknown unit `{other}` in `{s}`: use ns, us, ms or s per byte, or a \
                     bandwidth such as \"25GB/s\""
                )))
            }
        };
        let num = m
            .checked_mul(scale)
            .ok_or_else(|| UnitError(format!("`{s}` is too large")))?;
        let den = 10u128.pow(d);
        let k = gcd(num, den).max(1);
        let (num, den) = (num / k, den / k);
        match (u64::try_from(num), u64::try_from(den)) {
            (Ok(num), Ok(den)) => Ok(PerByte::Time { num, den }),
            _ => Err(UnitError(format!("`{s}` is too large or too precise"))),
        }
    }

    /// The time `bytes` take at this rate, rounded up to whole nanoseconds (saturating).
    pub fn ns_for(self, bytes: u64) -> Nanos {
        match self {
            PerByte::Rate(bw) => bw.transfer_ns(bytes),
            PerByte::Time { num, den } => {
                let t = (u128::from(bytes) * u128::from(num)).div_ceil(u128::from(den.max(1)));
                u64::try_from(t).unwrap_or(u64::MAX)
            }
        }
    }
}

impl Default for PerByte {
    fn default() -> Self {
        PerByte::ZERO
    }
}

impl fmt::Display for PerByte {
    /// Whole nanoseconds as a duration (`6ns`, `2us`), fractions as exact decimal nanoseconds
    /// (`0.04ns`), rates as a bandwidth.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PerByte::Rate(bw) => bw.fmt(f),
            PerByte::Time { num, den: 1 } => Duration(num).fmt(f),
            PerByte::Time { num, den } => {
                // den divides 10^k: write num / den with k decimals, trailing zeros dropped
                let mut k = 0u32;
                while !10u128.pow(k).is_multiple_of(u128::from(den)) && k < 38 {
                    k += 1;
                }
                let scaled = u128::from(num) * (10u128.pow(k) / u128::from(den));
                let (int, frac) = (scaled / 10u128.pow(k), scaled % 10u128.pow(k));
                let frac = format!("{frac:0width$}", width = k as usize);
                write!(f, "{int}.{}ns", frac.trim_end_matches('0'))
            }
        }
    }
}

macro_rules! string_unit_serde {
    ($ty:ty, $expecting:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl de::Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        <$ty>::parse(v).map_err(|e| E::custom(e.0))
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

string_unit_serde!(Duration, "a duration string such as \"5us\" or \"1.5ms\"");
string_unit_serde!(Size, "a size string such as \"512B\", \"4KB\" or \"64MiB\"");
string_unit_serde!(
    Bandwidth,
    "a bandwidth string such as \"25GB/s\" or \"100Gbit/s\""
);
string_unit_serde!(
    PerByte,
    "a time per byte such as \"0.04ns\", or a bandwidth such as \"25GB/s\""
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_per_byte_may_be_fractional_or_a_bandwidth() {
        let g = PerByte::parse("0.04ns").unwrap();
        assert_eq!(g, PerByte::Time { num: 1, den: 25 });
        assert_eq!(g.to_string(), "0.04ns");
        assert_eq!(g.ns_for(1000), 40);
        assert_eq!(g.ns_for(1), 1, "rounds up");
        let bw = PerByte::parse("25GB/s").unwrap();
        assert_eq!(bw.ns_for(1000), 40);
        assert_eq!(bw.to_string(), "25GB/s");
        assert_eq!(PerByte::parse("6ns").unwrap().to_string(), "6ns");
        assert_eq!(PerByte::parse("6ns").unwrap().ns_for(3), 18);
        assert_eq!(PerByte::parse("0.0125ns").unwrap().to_string(), "0.0125ns");
        assert_eq!(PerByte::parse("1.5us").unwrap().to_string(), "1500ns");
        assert_eq!(PerByte::parse("2.50ns").unwrap().to_string(), "2.5ns");
        assert_eq!(PerByte::parse("0ns").unwrap().ns_for(u64::MAX), 0);
        assert_eq!(PerByte::parse("1s").unwrap().ns_for(u64::MAX), u64::MAX);
        for bad in ["", "0.04", "1x", "0.04ns/s", "1e3ns", "-1ns"] {
            assert!(PerByte::parse(bad).is_err(), "{bad:?} accepted");
        }
        for text in ["0.04ns", "6ns", "25GB/s", "0.333ns", "100Gbit/s"] {
            let g = PerByte::parse(text).unwrap();
            assert_eq!(PerByte::parse(&g.to_string()).unwrap(), g, "{text}");
        }
    }

    #[test]
    fn durations_are_exact() {
        assert_eq!(Duration::parse("250ns").unwrap().0, 250);
        assert_eq!(Duration::parse("5us").unwrap().0, 5_000);
        assert_eq!(Duration::parse("1.5ms").unwrap().0, 1_500_000);
        assert_eq!(Duration::parse("2s").unwrap().0, 2_000_000_000);
        assert_eq!(Duration::parse("1m").unwrap().0, 60_000_000_000);
        assert_eq!(Duration::parse("0s").unwrap().0, 0);
        assert!(Duration::parse("1.5ns").is_err());
        assert!(Duration::parse("5").is_err());
        assert!(Duration::parse("5 parsecs").is_err());
        assert!(Duration::parse("ms").is_err());
        assert!(Duration::parse("1.2.3s").is_err());
    }

    #[test]
    fn sizes_and_bandwidths() {
        assert_eq!(Size::parse("512B").unwrap().0, 512);
        assert_eq!(Size::parse("4KB").unwrap().0, 4_000);
        assert_eq!(Size::parse("64MiB").unwrap().0, 64 << 20);
        assert_eq!(Bandwidth::parse("25GB/s").unwrap().0, 25_000_000_000);
        assert_eq!(Bandwidth::parse("100Gbit/s").unwrap().0, 12_500_000_000);
        assert!(Bandwidth::parse("0GB/s").is_err());
        assert!(Bandwidth::parse("3bit/s").is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["250ns", "5us", "1500us", "2s", "25ms"] {
            let d = Duration::parse(s).unwrap();
            assert_eq!(Duration::parse(&d.to_string()).unwrap(), d);
        }
        for s in ["512B", "4KB", "64MiB", "1000B"] {
            let v = Size::parse(s).unwrap();
            assert_eq!(Size::parse(&v.to_string()).unwrap(), v);
        }
        for s in ["25GB/s", "100Gbit/s", "7B/s"] {
            let v = Bandwidth::parse(s).unwrap();
            assert_eq!(Bandwidth::parse(&v.to_string()).unwrap(), v);
        }
    }

    #[test]
    fn transfer_time_rounds_up() {
        let bw = Bandwidth::parse("1GB/s").unwrap();
        assert_eq!(bw.transfer_ns(1), 1);
        assert_eq!(bw.transfer_ns(1000), 1000);
        let bw = Bandwidth::parse("3B/s").unwrap();
        assert_eq!(bw.transfer_ns(1), 333_333_334);
    }
}
