//! Rank x rank heat maps: sender in rows, receiver in columns, rank labels on both axes, a
//! colour scale (log of the value) with its ticks beside the map. Above 256 ranks, ranks are
//! grouped into blocks (labelled `first-last`) and a block's cell sums its ranks' cells.

use std::fmt::Write as _;

use crate::svg::{self, esc};
use crate::unit::Unit;

/// At most this many rows and columns are drawn; more ranks are grouped.
pub const MAX_CELLS: usize = 256;

/// A heat map of `cells` `(from, to, messages, bytes)` over `n` ranks, shaded in `rgb` by
/// bytes on a log scale.
pub fn heatmap(n: usize, cells: &[(u32, u32, u64, u64)], rgb: (u8, u8, u8)) -> String {
    if cells.is_empty() || n == 0 {
        return String::new();
    }
    let group = n.div_ceil(MAX_CELLS);
    let blocks = n.div_ceil(group);
    let mut grid: std::collections::BTreeMap<(usize, usize), (u64, u64)> = Default::default();
    for &(f, t, m, b) in cells {
        let e = grid
            .entry((f as usize / group, t as usize / group))
            .or_default();
        e.0 += m;
        e.1 += b;
    }
    let max = grid.values().map(|v| v.1).max().unwrap_or(0).max(1) as f64;
    let min = grid
        .values()
        .map(|v| v.1)
        .filter(|b| *b > 0)
        .min()
        .unwrap_or(1) as f64;
    let side = 560.0_f64.min(40.0 * blocks as f64).max(120.0);
    let cell = side / blocks as f64;
    let (left, top) = (70.0, 34.0);
    let (w, h) = (left + side + 160.0, top + side + 40.0);
    let name = |b: usize| {
        if group == 1 {
            b.to_string()
        } else {
            format!("{}-{}", b * group, ((b + 1) * group).min(n) - 1)
        }
    };
    // Labels every `step` blocks, at least 14 px apart.
    let step = (14.0 / cell).ceil().max(1.0) as usize;
    let mut s = svg::open(w, h);
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{side}\" height=\"{side}\" fill=\"#fff\" stroke=\"#444\"/>"
    );
    for b in (0..blocks).step_by(step) {
        let c = cell * (b as f64 + 0.5);
        svg::text(&mut s, left - 4.0, top + c + 4.0, "end", &name(b));
        svg::text(&mut s, left + c, top - 4.0, "middle", &name(b));
    }
    let level = |bytes: u64| -> f64 {
        if max <= min {
            1.0
        } else {
            0.15 + 0.85 * ((bytes as f64).ln() - min.ln()) / (max.ln() - min.ln())
        }
    };
    for (&(f, t), &(messages, bytes)) in &grid {
        if bytes == 0 && messages == 0 {
            continue;
        }
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{cell:.2}\" height=\"{cell:.2}\" fill=\"rgb({},{},{})\" fill-opacity=\"{:.3}\"><title>{} -> {}: {messages} messages, {bytes} bytes</title></rect>",
            left + cell * t as f64,
            top + cell * f as f64,
            rgb.0,
            rgb.1,
            rgb.2,
            if bytes == 0 { 0.1 } else { level(bytes) },
            name(f),
            name(t),
        );
    }
    let who = if group == 1 { "rank" } else { "ranks" };
    svg::htitle(
        &mut s,
        left + side / 2.0,
        top + side + 26.0,
        &format!("receiver {who}"),
    );
    svg::vtitle(&mut s, 14.0, top + side / 2.0, &format!("sender {who}"));
    scale_bar(
        &mut s,
        left + side + 30.0,
        top,
        side.min(240.0),
        rgb,
        min,
        max,
    );
    s += "</svg>";
    s
}

/// The colour scale: a vertical gradient from the smallest to the largest value, with
/// ticks at both ends and the middle (log scale).
fn scale_bar(s: &mut String, x: f64, y: f64, h: f64, rgb: (u8, u8, u8), min: f64, max: f64) {
    let steps = 24;
    for i in 0..steps {
        let f = i as f64 / (steps - 1) as f64;
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{:.1}\" width=\"16\" height=\"{:.2}\" fill=\"rgb({},{},{})\" fill-opacity=\"{:.3}\"/>",
            y + h * (1.0 - f) - h / steps as f64,
            h / steps as f64 + 0.3,
            rgb.0,
            rgb.1,
            rgb.2,
            0.15 + 0.85 * f
        );
    }
    let _ = write!(
        s,
        "<rect x=\"{x}\" y=\"{y}\" width=\"16\" height=\"{h}\" fill=\"none\" stroke=\"#444\"/>"
    );
    let mid = (min.ln() + (max.ln() - min.ln()) / 2.0).exp();
    let ticks: &[(f64, f64)] = if max > min {
        &[(max, y + 4.0), (mid, y + h / 2.0 + 4.0), (min, y + h)]
    } else {
        &[(max, y + 4.0)]
    };
    for &(v, ty) in ticks {
        svg::text(s, x + 22.0, ty, "start", &Unit::Bytes.format(v.round()));
    }
    let _ = write!(
        s,
        "<text transform=\"translate({:.1},{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        x + 100.0,
        y + h / 2.0,
        esc("bytes (log scale)")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_scale_and_groups() {
        let svg = heatmap(4, &[(2, 0, 4, 136), (0, 1, 1, 8)], (8, 48, 107));
        assert!(
            svg.contains("<title>2 -> 0: 4 messages, 136 bytes</title>"),
            "{svg}"
        );
        assert!(svg.contains(">sender rank<") && svg.contains(">receiver rank<"));
        assert!(svg.contains(">136 B<") && svg.contains(">8 B<"));
        let big = heatmap(
            1024,
            &[(0, 1, 1, 8), (3, 2, 1, 8), (1023, 0, 2, 16)],
            (8, 48, 107),
        );
        // Ranks 0-3 form one block: its cell sums two cells.
        assert!(
            big.contains("<title>0-3 -> 0-3: 2 messages, 16 bytes</title>"),
            "{big}"
        );
        assert!(big.contains("<title>1020-1023 -> 0-3: 2 messages, 16 bytes</title>"));
        assert!(big.contains(">sender ranks<"));
        assert!(heatmap(4, &[], (0, 0, 0)).is_empty());
    }
}
