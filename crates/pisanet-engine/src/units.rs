//! Config units onto the engine's types: serde adapters for the TOML keys
//! that carry their unit in the name (`*_us`, `*_ms`, `*_kb`, `*_gbps`).
//!
//! A parameter is declared once, as the type the model uses
//! (`SimTime`, `BitRate`, bytes), with the adapter naming its TOML unit:
//!
//! ```ignore
//! /// Each ToR probes every uplink this often (us).
//! #[serde(rename = "probe_interval_us", with = "pisanet_engine::units::us")]
//! #[schemars(with = "f64", range(min = 0.001, max = 1e6))]
//! pub probe_interval: SimTime,
//! ```
//!
//! Conversions round exactly as the facade always has (`SimTime::from_us_f64`,
//! `BitRate::from_gbps`, `(kb * 1000) as u64`), so a config gives the same
//! digest whichever way it is read. Ranges are checked against the JSON
//! Schema before these run (pisanet's config module); the adapters still
//! refuse a value that is not finite or is negative instead of wrapping.

use serde::{de::Error, Deserialize, Deserializer, Serializer};

use crate::{BitRate, SimTime};

fn finite_non_negative<'de, D: Deserializer<'de>>(d: D, unit: &str) -> Result<f64, D::Error> {
    let v = f64::deserialize(d)?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(D::Error::custom(format!(
            "must be a finite number >= 0 ({unit}), got {v}"
        )))
    }
}

/// `SimTime` as fractional microseconds.
pub mod us {
    use super::*;
    pub fn serialize<S: Serializer>(t: &SimTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(t.as_us_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SimTime, D::Error> {
        let v = finite_non_negative(d, "us")?;
        if v * 1e6 >= u64::MAX as f64 {
            return Err(D::Error::custom(format!(
                "must be below {} us (u64 picoseconds), got {v}",
                u64::MAX as f64 / 1e6
            )));
        }
        Ok(SimTime::from_us_f64(v))
    }
}

/// `Option<SimTime>` as fractional microseconds (absent = `None`).
pub mod opt_us {
    use super::*;
    pub fn serialize<S: Serializer>(t: &Option<SimTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&t.as_us_f64()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SimTime>, D::Error> {
        super::us::deserialize(d).map(Some)
    }
}

/// `SimTime` as fractional milliseconds.
pub mod ms {
    use super::*;
    pub fn serialize<S: Serializer>(t: &SimTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(t.as_ms_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SimTime, D::Error> {
        let v = finite_non_negative(d, "ms")?;
        if v * 1e9 >= u64::MAX as f64 {
            return Err(D::Error::custom(format!(
                "must be below {} ms (u64 picoseconds), got {v}",
                u64::MAX as f64 / 1e9
            )));
        }
        Ok(SimTime::from_us_f64(v * 1000.0))
    }
}

/// A byte count as fractional KB (1 KB = 1000 bytes), truncated to whole bytes.
pub mod kb {
    use super::*;
    pub fn serialize<S: Serializer>(b: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*b as f64 / 1000.0)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let v = finite_non_negative(d, "KB")?;
        if v * 1000.0 >= u64::MAX as f64 {
            return Err(D::Error::custom(format!(
                "must be below 1.8e16 KB, got {v}"
            )));
        }
        Ok((v * 1000.0) as u64)
    }
}

/// A `BitRate` as fractional Gb/s.
pub mod gbps {
    use super::*;
    pub fn serialize<S: Serializer>(r: &BitRate, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(r.gbps())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BitRate, D::Error> {
        let v = finite_non_negative(d, "Gb/s")?;
        if v * 1e9 >= u64::MAX as f64 {
            return Err(D::Error::custom(format!(
                "must be below 1.8e10 Gb/s, got {v}"
            )));
        }
        Ok(BitRate::from_gbps(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(with = "us")]
        a_us: SimTime,
        #[serde(with = "kb")]
        b_kb: u64,
        #[serde(with = "gbps")]
        c_gbps: BitRate,
        #[serde(with = "ms")]
        d_ms: SimTime,
    }

    #[test]
    fn round_trips_and_refuses_what_would_wrap() {
        let t: T =
            serde_json::from_str(r#"{"a_us": 1.5, "b_kb": 131.072, "c_gbps": 10, "d_ms": 2}"#)
                .unwrap();
        assert_eq!(t.a_us, SimTime::from_ns(1500));
        assert_eq!(t.b_kb, 131_072);
        assert_eq!(t.c_gbps, BitRate::from_gbps(10.0));
        assert_eq!(t.d_ms, SimTime::from_ms(2));
        let back: T = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        for bad in [
            r#"{"a_us": 1e16, "b_kb": 1, "c_gbps": 1, "d_ms": 1}"#,
            r#"{"a_us": -1, "b_kb": 1, "c_gbps": 1, "d_ms": 1}"#,
            r#"{"a_us": 1, "b_kb": 1, "c_gbps": 1e300, "d_ms": 1}"#,
            r#"{"a_us": 1, "b_kb": 1, "c_gbps": 1, "d_ms": 1e11}"#,
        ] {
            assert!(serde_json::from_str::<T>(bad).is_err(), "{bad}");
        }
    }
}
