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

/// Row `numerator` ÷ row `denominator` in each round: two rows measured side by side
/// in one round share that round's machine load, so their ratio cancels most of it.
pub fn per_round_ratios(numerator: &[f64], denominator: &[f64]) -> Vec<f64> {
    numerator
        .iter()
        .zip(denominator)
        .map(|(n, d)| n / d)
        .collect()
}

/// The median of per-round figures and their interquartile range.
#[derive(Debug, Clone, Copy)]
pub struct Spread {
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        Spread {
            median: median(values),
            p25: quantile(values, 0.25),
            p75: quantile(values, 0.75),
        }
    }

    /// `1.032×` and `1.010–1.050`, for a table.
    pub fn cells(&self) -> [String; 2] {
        [
            format!("{:.3}×", self.median),
            format!("{:.3}–{:.3}", self.p25, self.p75),
        ]
    }

    /// `1.032× (p25–p75 1.010–1.050)`, for a target line.
    pub fn described(&self) -> String {
        format!(
            "{:.3}× (p25–p75 {:.3}–{:.3})",
            self.median, self.p25, self.p75
        )
    }
}
