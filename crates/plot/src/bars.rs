//! Bar charts: one horizontal bar per labelled row (counts, times), bars stacked per row
//! (compute and the MPI functions of each rank), and histograms (vertical bars over
//! buckets). Every chart has a value axis with ticks in its unit and a title.

use std::fmt::Write as _;

use crate::line::Axis;
use crate::scale::Scale;
use crate::svg::{self, esc};
use crate::unit::Unit;

/// One row of a bar chart: label, the parts stacked from the left (a single part for plain
/// bars), each with its colour.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Label at the left (a function, a rank).
    pub label: String,
    /// `(value, colour, what)` drawn left to right; `what` names the part in the tooltip.
    pub parts: Vec<(f64, String, String)>,
    /// Text after the bar (a total, a share).
    pub note: String,
}

/// Horizontal bars (stacked when rows have several parts) against `axis` (its scale over
/// the row totals), with `legend` (name, colour) above when it is not empty.
pub fn horizontal(rows: &[Row], axis: &Axis, legend: &[(String, String)]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let label_w = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4) as f64
        * 6.5
        + 14.0;
    let (w, bh) = (860.0, if rows.len() > 40 { 9.0 } else { 16.0 });
    let top = if legend.is_empty() { 8.0 } else { 30.0 };
    let pw = w - label_w - 120.0;
    let h = top + bh * rows.len() as f64 + 44.0;
    let mut s = svg::open(w, h);
    let mut lx = label_w;
    for (name, colour) in legend {
        let _ = write!(
            s,
            "<rect x=\"{lx}\" y=\"8\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
        );
        svg::text(&mut s, lx + 16.0, 18.0, "start", name);
        lx += 30.0 + 6.5 * name.chars().count() as f64;
    }
    let sc = &axis.scale;
    let x = |v: f64| {
        if sc.shows(v) {
            label_w + pw * sc.at(v).clamp(0.0, 1.0)
        } else {
            label_w
        }
    };
    let bottom = top + bh * rows.len() as f64;
    for t in sc.ticks() {
        let tx = x(t);
        let _ = write!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{top}\" x2=\"{tx:.1}\" y2=\"{bottom}\" stroke=\"#e4e4e4\"/>"
        );
        svg::text(&mut s, tx, bottom + 14.0, "middle", &axis.unit.format(t));
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + bh * i as f64;
        if bh >= 12.0 || i % 4 == 0 {
            svg::text(&mut s, label_w - 6.0, y + bh * 0.75, "end", &r.label);
        }
        let mut acc = 0.0;
        for (v, colour, what) in &r.parts {
            let (a, b) = (x(acc), x(acc + v));
            acc += v;
            let _ = write!(
                s,
                "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{colour}\"><title>{}: {} {}</title></rect>",
                y + 1.0,
                (b - a).max(0.0),
                bh - 2.0,
                esc(&r.label),
                esc(what),
                esc(&axis.unit.format(*v))
            );
        }
        if !r.note.is_empty() && bh >= 12.0 {
            svg::text(&mut s, x(acc) + 6.0, y + bh * 0.75, "start", &r.note);
        }
    }
    svg::htitle(
        &mut s,
        label_w + pw / 2.0,
        bottom + 34.0,
        &axis.full_title(),
    );
    s += "</svg>";
    s
}

/// A histogram: one vertical bar per bucket `(from, to, count)` (buckets in order, `from`
/// in `x_unit`), the counts on a log axis, a tick under every other bucket.
pub fn histogram(buckets: &[(f64, f64, u64)], x_title: &str, x_unit: Unit) -> String {
    if buckets.is_empty() {
        return String::new();
    }
    let (w, h, left, top, bottom) = (860.0, 260.0, 78.0, 10.0, 50.0);
    let (pw, ph) = (w - left - 20.0, h - top - bottom);
    let y = Axis {
        title: "count".into(),
        unit: Unit::Count,
        scale: Scale::log10(buckets.iter().map(|b| b.2 as f64).chain([1.0])),
    };
    let bw = pw / buckets.len() as f64;
    let mut s = svg::open(w, h);
    for t in y.scale.ticks() {
        let ty = top + ph * (1.0 - y.scale.at(t));
        let _ = write!(
            s,
            "<line x1=\"{left}\" y1=\"{ty:.1}\" x2=\"{}\" y2=\"{ty:.1}\" stroke=\"#e4e4e4\"/>",
            left + pw
        );
        svg::text(&mut s, left - 5.0, ty + 4.0, "end", &Unit::Count.format(t));
    }
    for (i, (from, to, c)) in buckets.iter().enumerate() {
        let bx = left + bw * i as f64;
        let bh = if *c > 0 {
            ph * y.scale.at(*c as f64).max(0.02)
        } else {
            0.0
        };
        let _ = write!(
            s,
            "<rect x=\"{bx:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\"><title>{c} from {} to {}</title></rect>",
            top + ph - bh,
            (bw - 1.0).max(1.0),
            crate::palette::COMPUTE,
            esc(&x_unit.format(*from)),
            esc(&x_unit.format(*to))
        );
        if i % 2 == 0 || buckets.len() <= 12 {
            svg::text(&mut s, bx, top + ph + 14.0, "start", &x_unit.format(*from));
        }
    }
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#444\"/>"
    );
    svg::htitle(
        &mut s,
        left + pw / 2.0,
        h - 8.0,
        &format!("{x_title} ({}, log scale)", x_unit.name()),
    );
    svg::vtitle(&mut s, 16.0, top + ph / 2.0, &y.full_title());
    s += "</svg>";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacked_rows_and_histogram() {
        let axis = Axis {
            title: "time".into(),
            unit: Unit::Seconds,
            scale: Scale::linear([3.0]),
        };
        let rows = vec![Row {
            label: "rank 0".into(),
            parts: vec![
                (1.0, "#4878a8".into(), "compute".into()),
                (2.0, "#e08030".into(), "MPI_Send".into()),
            ],
            note: "67% MPI".into(),
        }];
        let svg = horizontal(&rows, &axis, &[("compute".into(), "#4878a8".into())]);
        assert!(
            svg.contains("<title>rank 0: MPI_Send 2.000 s</title>"),
            "{svg}"
        );
        assert!(svg.contains(">time (s)<") && svg.contains(">67% MPI<"));
        let h = histogram(&[(1e-6, 2e-6, 10), (2e-6, 4e-6, 0)], "burst", Unit::Seconds);
        assert!(
            h.contains("<title>10 from 1.000 us to 2.000 us</title>"),
            "{h}"
        );
        assert!(h.contains(">burst (s, log scale)<") && h.contains(">count (count, log scale)<"));
        assert!(histogram(&[], "b", Unit::Seconds).is_empty());
    }
}
