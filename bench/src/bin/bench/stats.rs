//! Quantiles of per-round figures.

/// The `q` quantile (0–1) by linear interpolation; NaN for no values.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = q * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    let frac = position - low as f64;
    sorted[low] * (1.0 - frac) + sorted[high] * frac
}

/// The median.
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}
