//! The `[[workload]]` tables as serde sees them, before validation.
//!
//! Each pattern has a `deny_unknown_fields` struct whose fields are all optional at the
//! serde level; requiredness, ranges and cross-field rules are checked when the raw
//! struct is turned into a validated pattern (`patterns.rs`), where each error can name
//! its field and say how to fix it. [`parse_table`] deserializes one table and maps a
//! serde failure to the field that caused it.

use super::cdf::{CdfFormat, CdfUnit, Reading};
use super::error::WorkloadError;
use crate::units::{Bytes, Time, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};
use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::fmt;

/// A `{min = .., max = ..}` table.
#[derive(Deserialize, Clone, Copy, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RangeOf<T> {
    pub min: T,
    pub max: T,
}

/// `deadline = {min = "5ms", max = "25ms"}` (uniform) or `deadline = "10ms"` (fixed: the
/// same as `min = max`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeadlineVal(pub RangeOf<Time>);

impl<'de> Deserialize<'de> for DeadlineVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.is_object() {
            RangeOf::<Time>::deserialize(v).map(DeadlineVal).map_err(de::Error::custom)
        } else {
            let t = Time::deserialize(v).map_err(de::Error::custom)?;
            Ok(DeadlineVal(RangeOf { min: t, max: t }))
        }
    }
}

/// `hosts = "all"` or `hosts = [0, 1, 2]`.
#[derive(Clone, Debug)]
pub(crate) enum HostsVal {
    All,
    List(Vec<u32>),
}

impl<'de> Deserialize<'de> for HostsVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HostsVal;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "\"all\" or a list of host indices")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HostsVal, E> {
                if s == "all" {
                    Ok(HostsVal::All)
                } else {
                    Err(E::invalid_value(Unexpected::Str(s), &self))
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<HostsVal, A::Error> {
                let mut v = Vec::new();
                while let Some(h) = seq.next_element::<u32>()? {
                    v.push(h);
                }
                Ok(HostsVal::List(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// `senders = 8` (random distinct senders per round) or `senders = [1, 2, 3]`.
#[derive(Clone, Debug)]
pub(crate) enum SendersVal {
    Count(u64),
    List(Vec<u32>),
}

impl<'de> Deserialize<'de> for SendersVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SendersVal;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "a number of senders or a list of host indices")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<SendersVal, E> {
                Ok(SendersVal::Count(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<SendersVal, E> {
                u64::try_from(n).map(SendersVal::Count).map_err(|_| E::invalid_value(Unexpected::Signed(n), &self))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SendersVal, A::Error> {
                let mut v = Vec::new();
                while let Some(h) = seq.next_element::<u32>()? {
                    v.push(h);
                }
                Ok(SendersVal::List(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// How `left_right` splits the hosts.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Split {
    /// First half of the host indices vs the second half.
    Hosts,
    /// First half of the racks vs the second half.
    Racks,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Hosts => "hosts",
            Split::Racks => "racks",
        }
    }
}

/// Unit of bare numbers in the time columns of an `explicit` flow file.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TimeUnit {
    Ps,
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::Ps => "ps",
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "us",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }
    pub fn picoseconds(self) -> u64 {
        match self {
            TimeUnit::Ps => 1,
            TimeUnit::Ns => PS_PER_NS,
            TimeUnit::Us => PS_PER_US,
            TimeUnit::Ms => PS_PER_MS,
            TimeUnit::S => PS_PER_S,
        }
    }
}

/// The flow-size fields shared by the patterns that draw sizes.
#[derive(Clone, Debug, Default)]
pub(crate) struct SizeFields {
    pub size: Option<Bytes>,
    pub uniform: Option<RangeOf<Bytes>>,
    pub cdf: Option<String>,
    pub cdf_reading: Option<Reading>,
    pub cdf_format: Option<CdfFormat>,
    pub cdf_unit: Option<CdfUnit>,
    pub cdf_packet_size: Option<Bytes>,
}

/// Move the flow-size fields out of a raw pattern struct.
macro_rules! size_fields {
    ($r:expr) => {
        $crate::workload::raw::SizeFields {
            size: $r.size,
            uniform: $r.uniform,
            cdf: $r.cdf,
            cdf_reading: $r.cdf_reading,
            cdf_format: $r.cdf_format,
            cdf_unit: $r.cdf_unit,
            cdf_packet_size: $r.cdf_packet_size,
        }
    };
}
pub(crate) use size_fields;

/// `pattern = "poisson"`: all-to-all Poisson arrivals at a load.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPoisson {
    pub load: Option<f64>,
    pub hosts: Option<HostsVal>,
    pub receivers: Option<Vec<u32>>,
    pub flows: Option<u64>,
    pub duration: Option<Time>,
    pub start: Option<Time>,
    pub deadline: Option<DeadlineVal>,
    pub size: Option<Bytes>,
    pub uniform: Option<RangeOf<Bytes>>,
    pub cdf: Option<String>,
    pub cdf_reading: Option<Reading>,
    pub cdf_format: Option<CdfFormat>,
    pub cdf_unit: Option<CdfUnit>,
    pub cdf_packet_size: Option<Bytes>,
}

/// `pattern = "left_right"`: Poisson from one half of the hosts to the other.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLeftRight {
    pub load: Option<f64>,
    pub split: Option<Split>,
    pub flows: Option<u64>,
    pub duration: Option<Time>,
    pub start: Option<Time>,
    pub deadline: Option<DeadlineVal>,
    pub size: Option<Bytes>,
    pub uniform: Option<RangeOf<Bytes>>,
    pub cdf: Option<String>,
    pub cdf_reading: Option<Reading>,
    pub cdf_format: Option<CdfFormat>,
    pub cdf_unit: Option<CdfUnit>,
    pub cdf_packet_size: Option<Bytes>,
}

/// `pattern = "incast"`: rounds of many senders to one receiver.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIncast {
    pub receiver: Option<u32>,
    pub senders: Option<SendersVal>,
    pub flows_per_sender: Option<u64>,
    pub rounds: Option<u64>,
    pub round_interval: Option<Time>,
    pub rounds_per_second: Option<f64>,
    pub load: Option<f64>,
    pub barrier: Option<bool>,
    pub gap: Option<Time>,
    pub persistent: Option<bool>,
    pub start: Option<Time>,
    pub jitter: Option<Time>,
    pub deadline: Option<DeadlineVal>,
    pub size: Option<Bytes>,
    pub uniform: Option<RangeOf<Bytes>>,
    pub cdf: Option<String>,
    pub cdf_reading: Option<Reading>,
    pub cdf_format: Option<CdfFormat>,
    pub cdf_unit: Option<CdfUnit>,
    pub cdf_packet_size: Option<Bytes>,
}

/// `pattern = "permutation"`: every host sends one flow to another, no host receives twice.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPermutation {
    pub hosts: Option<HostsVal>,
    pub shift: Option<i64>,
    pub start: Option<Time>,
    pub deadline: Option<DeadlineVal>,
    pub size: Option<Bytes>,
    pub uniform: Option<RangeOf<Bytes>>,
    pub cdf: Option<String>,
    pub cdf_reading: Option<Reading>,
    pub cdf_format: Option<CdfFormat>,
    pub cdf_unit: Option<CdfUnit>,
    pub cdf_packet_size: Option<Bytes>,
}

/// `pattern = "background"`: long-lived flows.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBackground {
    pub pairs: Option<Vec<[u32; 2]>>,
    pub count: Option<u64>,
    pub hosts: Option<HostsVal>,
    pub size: Option<Bytes>,
    pub start: Option<Time>,
}

/// `pattern = "explicit"`: a CSV flow list.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawExplicit {
    pub file: Option<String>,
    pub time_unit: Option<TimeUnit>,
}

/// `pattern = "hpcc"`: an HPCC `flow.txt`.
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHpcc {
    pub file: Option<String>,
}

/// The field names serde accepts for the struct `T` (read from its derived `Deserialize`).
pub(crate) fn struct_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Grab(Option<&'static [&'static str]>);
    impl<'de> Deserializer<'de> for &mut Grab {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(de::Error::custom("fields recorded"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut g = Grab(None);
    // The error is expected: deserialization stops as soon as the field list is known.
    let _ = T::deserialize(&mut g);
    g.0.unwrap_or(&[])
}

/// What a field's value should look like, for error messages.
pub(crate) fn expected_form(field: &str) -> &'static str {
    match field {
        "load" => "a number strictly between 0 and 1, e.g. load = 0.5",
        "flows" | "rounds" | "count" => "a positive whole number",
        "duration" | "start" | "jitter" | "round_interval" => {
            "a time: a string with a unit such as \"10ms\" or \"1.5us\""
        }
        "size" | "cdf_packet_size" => "a size: a string with a unit such as \"64KB\" or \"1500B\"",
        "uniform" => "a table {min = \"2KB\", max = \"198KB\"}",
        "deadline" => {
            "a table {min = \"1ms\", max = \"5ms\"} (uniform) or a time such as \"10ms\" (fixed), relative to the flow's start"
        }
        "hosts" => "\"all\" or a list of host indices, e.g. [0, 1, 2]",
        "senders" => "a number of random senders per round or a list of host indices",
        "receiver" => "a host index",
        "cdf" => "a shipped CDF name such as \"websearch\" or a path to a CDF file",
        "cdf_reading" => "\"linear\" or \"step\"",
        "cdf_format" => "\"auto\", \"pct\", \"frac\", \"ns2\" or \"homa\"",
        "cdf_unit" => "\"bytes\", \"KB\" or \"packets\"",
        "split" => "\"hosts\" or \"racks\"",
        "pairs" => "a list of [src, dst] host pairs, e.g. [[0, 1], [2, 3]]",
        "shift" => "a whole number of hosts",
        "rounds_per_second" => "a positive number of rounds per second",
        "file" => "a path to the flow file, relative to the scenario",
        "time_unit" => "\"ps\", \"ns\", \"us\", \"ms\" or \"s\"",
        _ => "a value of the form docs/workloads.md gives",
    }
}

/// Deserialize the table `obj` (without its `pattern` key) into `T`, naming the field on error.
pub(crate) fn parse_table<T: DeserializeOwned>(
    obj: &Map<String, Value>,
    prefix: &str,
    pattern: &str,
) -> Result<T, WorkloadError> {
    let allowed = struct_fields::<T>();
    let mut table = obj.clone();
    table.remove("pattern");
    if let Some(k) = table.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(WorkloadError::UnknownField {
            field: format!("{prefix}.{k}"),
            pattern: pattern.to_string(),
            allowed: allowed.to_vec(),
        });
    }
    serde_json::from_value::<T>(Value::Object(table.clone())).map_err(|whole| {
        // Every field is optional, so a table with just the culprit fails on its own.
        for (k, v) in &table {
            let single: Map<String, Value> = std::iter::once((k.clone(), v.clone())).collect();
            if let Err(e) = serde_json::from_value::<T>(Value::Object(single)) {
                return WorkloadError::InvalidValue {
                    field: format!("{prefix}.{k}"),
                    message: e.to_string(),
                    expected: expected_form(k).to_string(),
                };
            }
        }
        WorkloadError::InvalidValue {
            field: prefix.to_string(),
            message: whole.to_string(),
            expected: "a table of the fields docs/workloads.md lists for this pattern".to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn introspection_lists_the_serde_fields() {
        assert_eq!(struct_fields::<RawHpcc>(), &["file"]);
        assert!(struct_fields::<RawPoisson>().contains(&"cdf_packet_size"));
        assert!(struct_fields::<RawIncast>().contains(&"rounds_per_second"));
    }

    #[test]
    fn errors_point_at_the_field() {
        let t = json!({"pattern": "poisson", "load": "high", "flows": 5});
        let e = parse_table::<RawPoisson>(t.as_object().unwrap(), "workload[3]", "poisson").unwrap_err();
        assert_eq!(e.field(), "workload[3].load");
        assert!(matches!(e, WorkloadError::InvalidValue { .. }));
        let t = json!({"duration": "10 parsecs"});
        let e = parse_table::<RawPoisson>(t.as_object().unwrap(), "workload[0]", "poisson").unwrap_err();
        assert_eq!(e.field(), "workload[0].duration");
        assert!(e.to_string().contains("parsecs"), "{e}");
        let t = json!({"deadline": {"min": "1ms", "mx": "2ms"}});
        let e = parse_table::<RawPoisson>(t.as_object().unwrap(), "workload[0]", "poisson").unwrap_err();
        assert_eq!(e.field(), "workload[0].deadline");
        let t = json!({"lod": 0.5});
        let e = parse_table::<RawPoisson>(t.as_object().unwrap(), "workload[0]", "poisson").unwrap_err();
        assert!(matches!(&e, WorkloadError::UnknownField { field, .. } if field == "workload[0].lod"));
        assert!(e.to_string().contains("load"), "{e}");
    }

    #[test]
    fn values_accept_numbers_and_strings() {
        let t = json!({"senders": 4, "size": "64KB", "start": "1000ps", "round_interval": "10us"});
        let r: RawIncast = parse_table(t.as_object().unwrap(), "w", "incast").unwrap();
        assert!(matches!(r.senders, Some(SendersVal::Count(4))));
        assert_eq!(r.size, Some(Bytes(64_000)));
        assert_eq!(r.start, Some(Time(1000)));
        assert_eq!(r.round_interval, Some(Time::us(10)));
        let t = json!({"senders": [1, 2], "hosts": "all"});
        let r: RawIncast =
            parse_table(&json!({"senders": [1, 2]}).as_object().unwrap().clone(), "w", "incast").unwrap();
        assert!(matches!(r.senders, Some(SendersVal::List(ref v)) if v == &[1, 2]));
        let r: RawPermutation =
            parse_table(&json!({"hosts": "all"}).as_object().unwrap().clone(), "w", "permutation").unwrap();
        assert!(matches!(r.hosts, Some(HostsVal::All)));
        let e = parse_table::<RawIncast>(t.as_object().unwrap(), "w", "incast").unwrap_err();
        assert_eq!(e.field(), "w.hosts");
    }
}
