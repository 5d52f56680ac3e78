//! The colours of every figure. One palette: compute is always [`COMPUTE`], MPI function
//! number `i` of a page (functions ranked by time) is always [`function(i)`], on the bar
//! charts, the per-rank chart and the timeline alike; series of a line chart differ by
//! colour, dash and marker ([`series`]), so a series drawn over another stays visible.

use crate::svg::Marker;

/// Computation (time between MPI calls).
pub const COMPUTE: &str = "#4878a8";

/// MPI functions, in the order of a page's functions (most time first). None is blue, so
/// none is mistaken for compute.
pub const FUNCTIONS: [&str; 10] = [
    "#e08030", "#40a060", "#c83c3c", "#8c64b4", "#a0783c", "#d278b4", "#00a0aa", "#b4b43c",
    "#f0b428", "#6e3c28",
];

/// Functions beyond the palette, and "other MPI" sums.
pub const OTHER: &str = "#9a9a9a";

/// Colour of the `i`-th function of a page ([`OTHER`] beyond the palette).
pub fn function(i: usize) -> &'static str {
    FUNCTIONS.get(i).copied().unwrap_or(OTHER)
}

/// Colour of the point-to-point heat map.
pub const P2P_RGB: (u8, u8, u8) = (8, 48, 107);
/// Colour of the collective heat map.
pub const COLLECTIVE_RGB: (u8, u8, u8) = (0, 109, 44);
/// Colour of the heat map of both.
pub const TOTAL_RGB: (u8, u8, u8) = (84, 39, 143);

/// Colours of line-chart series, in series order.
pub const SERIES: [&str; 8] = [
    "#4878a8", "#e08030", "#006d2c", "#54278f", "#c82828", "#6e6e6e", "#a07800", "#0096aa",
];

/// Dash patterns of series, in series order (none for the first).
pub const DASHES: [&str; 4] = ["", "8 4", "3 3", "10 3 2 3"];

/// How series `i` is drawn: colour, dash pattern, marker. No two of the first 24 series
/// look alike.
pub fn series(i: usize) -> (&'static str, &'static str, Marker) {
    (
        SERIES[i % SERIES.len()],
        DASHES[(i / SERIES.len() + i) % DASHES.len()],
        Marker::ALL[i % Marker::ALL.len()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_differ() {
        let styles: Vec<_> = (0..24).map(series).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[..i] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(function(0), FUNCTIONS[0]);
        assert_eq!(function(99), OTHER);
        assert!(!FUNCTIONS.contains(&COMPUTE));
    }
}
