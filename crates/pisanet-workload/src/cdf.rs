//! Flow-size distributions given as an empirical CDF.
//!
//! Owns: parsing and validating the text form, the built-in distributions,
//! sampling, the exact mean and the inverse CDF.
//!
//! Guarantees: a [`Cdf`] that exists is valid (at least one point, sizes and
//! probabilities non-decreasing, probabilities in [0, 1], the last one exactly
//! 1.0, the largest size at least 1 byte), so sampling never fails or panics.
//!
//! The distribution is piecewise linear between points, as HPCC's
//! `traffic_gen` (alibaba-edu/High-Precision-Congestion-Control) samples it:
//! the points (s_0, p_0) .. (s_k, p_k) put probability p_0 on exactly s_0
//! and spread p_i - p_{i-1} uniformly over [s_{i-1}, s_i].

use pisanet_engine::SimRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Slack allowed on the last probability (files written with rounding).
const LAST_P_TOLERANCE: f64 = 1e-6;
/// Largest size accepted in float notation ("1e6"); f64 is exact below 2^53.
const MAX_FLOAT_SIZE: f64 = 9_007_199_254_740_992.0;

/// An empirical flow-size distribution: points (size_bytes, cumulative probability).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<(u64, f64)>", into = "Vec<(u64, f64)>")]
pub struct Cdf {
    points: Vec<(u64, f64)>,
}

/// Names accepted by [`Cdf::builtin`].
pub const BUILTIN_CDFS: [&str; 2] = ["websearch", "datamining"];

// Web search: DCTCP paper (Alizadeh et al., SIGCOMM 2010); the file names its provenance.
const WEBSEARCH: &str = include_str!("../data/websearch.cdf");
// Data mining: VL2 paper (Greenberg et al., SIGCOMM 2009); the file names its provenance.
const DATAMINING: &str = include_str!("../data/datamining.cdf");

impl Cdf {
    /// Parses the text form: one point per line, `size_bytes cumulative_probability`,
    /// separated by whitespace; `#` starts a comment; blank lines are ignored.
    ///
    /// `origin` names the source in errors, e.g. `workload.cdf (/path/x.cdf)`.
    /// Every error is one line: `<origin> line <n>: <what is wrong>`.
    pub fn parse(text: &str, origin: &str) -> Result<Cdf, String> {
        // A UTF-8 byte-order mark is not data.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut points: Vec<(u64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |msg: String| format!("{origin} line {line_no}: {msg}");
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 2 {
                return Err(at(format!(
                    "expected 'size_bytes cumulative_probability', got '{line}'"
                )));
            }
            let size = parse_size(fields[0]).map_err(at)?;
            let p = parse_probability(fields[1]).map_err(at)?;
            check_next(points.last().copied(), (size, p)).map_err(at)?;
            points.push((size, p));
            last_line = line_no;
        }
        if points.is_empty() {
            return Err(format!(
                "{origin}: no points; expected lines 'size_bytes cumulative_probability'"
            ));
        }
        finish(points).map_err(|msg| format!("{origin} line {last_line}: {msg}"))
    }

    /// Builds a CDF from points (size_bytes, cumulative probability), with the
    /// same rules as [`Cdf::parse`]; errors name the point by index.
    pub fn from_points(points: Vec<(u64, f64)>) -> Result<Cdf, String> {
        if points.is_empty() {
            return Err("cdf: no points; need at least one (size_bytes, probability)".into());
        }
        for (i, &(size, p)) in points.iter().enumerate() {
            let at = |msg: String| format!("cdf point {i}: {msg}");
            if !(0.0..=1.0).contains(&p) {
                return Err(at(format!("probability must be in [0, 1], got {p}")));
            }
            let prev = if i == 0 { None } else { Some(points[i - 1]) };
            check_next(prev, (size, p)).map_err(at)?;
        }
        let last = points.len() - 1;
        finish(points).map_err(|msg| format!("cdf point {last}: {msg}"))
    }

    /// A built-in distribution by name (see [`BUILTIN_CDFS`]):
    /// `websearch` (DCTCP paper) or `datamining` (VL2 paper).
    pub fn builtin(name: &str) -> Option<Cdf> {
        let (text, origin) = match name {
            "websearch" => (WEBSEARCH, "builtin websearch.cdf"),
            "datamining" => (DATAMINING, "builtin datamining.cdf"),
            _ => return None,
        };
        // NOTE: the embedded files are checked by the tests; a parse failure
        // here would be a build defect, reported as "not found" rather than a panic.
        Cdf::parse(text, origin).ok()
    }

    /// The points (size_bytes, cumulative probability), the last probability exactly 1.0.
    pub fn points(&self) -> &[(u64, f64)] {
        &self.points
    }

    /// The smallest size (the first point's).
    pub fn min_bytes(&self) -> u64 {
        self.points[0].0
    }

    /// The largest size (the last point's).
    pub fn max_bytes(&self) -> u64 {
        self.points[self.points.len() - 1].0
    }

    /// Draws one flow size: the inverse CDF at U ~ uniform [0, 1), linearly
    /// interpolated between points, rounded to the nearest byte and at least 1
    /// byte (a zero-byte flow would never finish). One `f64` draw from `rng`.
    pub fn sample(&self, rng: &mut SimRng) -> u64 {
        let u: f64 = rng.gen();
        (self.inverse(u).round() as u64).max(1)
    }

    /// The exact mean of the piecewise-linear distribution, in bytes:
    /// `p_0 * s_0 + sum_i (p_i - p_{i-1}) * (s_{i-1} + s_i) / 2`.
    ///
    /// [`Cdf::sample`]'s rounding and 1-byte floor move the sampled mean by
    /// less than one byte.
    pub fn mean_bytes(&self) -> f64 {
        let (s0, p0) = self.points[0];
        let mut mean = p0 * s0 as f64;
        for w in self.points.windows(2) {
            let ((sa, pa), (sb, pb)) = (w[0], w[1]);
            mean += (pb - pa) * (sa as f64 + sb as f64) / 2.0;
        }
        mean
    }

    /// The inverse CDF at `p` (clamped to [0, 1]): the smallest size whose
    /// cumulative probability reaches `p`, interpolated, rounded to the nearest
    /// byte. `quantile(0.9)` is P4TE's short/large threshold (section 4.1.3).
    pub fn quantile(&self, p: f64) -> u64 {
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        self.inverse(p).round() as u64
    }

    /// inf { x : F(x) >= u }, with F piecewise linear between the points.
    fn inverse(&self, u: f64) -> f64 {
        let i = self.points.partition_point(|&(_, p)| p < u);
        if i == 0 {
            return self.points[0].0 as f64;
        }
        if i == self.points.len() {
            // Only for u > 1, which callers never pass.
            return self.max_bytes() as f64;
        }
        // p_{i-1} < u <= p_i, so the segment has positive probability.
        let (sa, pa) = self.points[i - 1];
        let (sb, pb) = self.points[i];
        sa as f64 + (sb as f64 - sa as f64) * ((u - pa) / (pb - pa))
    }
}

impl TryFrom<Vec<(u64, f64)>> for Cdf {
    type Error = String;
    fn try_from(points: Vec<(u64, f64)>) -> Result<Self, String> {
        Cdf::from_points(points)
    }
}

impl From<Cdf> for Vec<(u64, f64)> {
    fn from(cdf: Cdf) -> Self {
        cdf.points
    }
}

/// A size in bytes: a whole number >= 0, in integer or float notation ("1e6").
fn parse_size(field: &str) -> Result<u64, String> {
    if let Ok(v) = field.parse::<u64>() {
        return Ok(v);
    }
    match field.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX_FLOAT_SIZE => {
            Ok(v as u64)
        }
        _ => Err(format!(
            "size must be a whole number of bytes >= 0, got '{field}'"
        )),
    }
}

fn parse_probability(field: &str) -> Result<f64, String> {
    match field.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(format!(
            "probability must be a number in [0, 1], got '{field}'"
        )),
    }
}

/// Checks that `next` may follow `prev`: both coordinates non-decreasing.
fn check_next(prev: Option<(u64, f64)>, next: (u64, f64)) -> Result<(), String> {
    let Some((ps, pp)) = prev else { return Ok(()) };
    let (s, p) = next;
    if s < ps {
        return Err(format!("sizes must be non-decreasing ({s} after {ps})"));
    }
    if p < pp {
        return Err(format!(
            "probabilities must be non-decreasing ({p} after {pp})"
        ));
    }
    Ok(())
}

/// Checks the whole-distribution rules and pins the last probability to 1.0.
fn finish(mut points: Vec<(u64, f64)>) -> Result<Cdf, String> {
    let last = points.len() - 1;
    let (s, p) = points[last];
    if (p - 1.0).abs() > LAST_P_TOLERANCE {
        return Err(format!("last probability must be 1.0, got {p}"));
    }
    if s < 1 {
        return Err(format!("largest size must be at least 1 byte, got {s}"));
    }
    // Probabilities are <= 1, so pinning the last one keeps them non-decreasing.
    points[last].1 = 1.0;
    Ok(Cdf { points })
}

#[cfg(test)]
#[path = "cdf_tests.rs"]
mod tests;
