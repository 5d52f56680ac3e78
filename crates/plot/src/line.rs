//! Line charts: series of points against a numeric axis, each series with its own colour,
//! dash and marker ([`crate::palette::series`]) and a legend, so that two series with the
//! same values are both seen; an optional reference line (ideal speedup, ...) in grey; optional
//! error bars around a series' points (a spread across ranks), in its colour, named in the
//! legend.

use std::fmt::Write as _;

use crate::palette;
use crate::scale::Scale;
use crate::svg::{self, esc};
use crate::unit::Unit;

/// An axis: its title (the quantity, without unit), the unit of its values, its scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// What the axis measures ("wall time", "ranks").
    pub title: String,
    /// Unit of the values, written in the title and on the ticks.
    pub unit: Unit,
    /// The scale.
    pub scale: Scale,
}

impl Axis {
    /// The title with its unit and, on a log axis, "log scale": `wall time (s, log scale)`.
    pub fn full_title(&self) -> String {
        let unit = self.unit.name();
        let log = if self.scale.is_log() { "log scale" } else { "" };
        match (unit.is_empty(), log.is_empty()) {
            (true, true) => self.title.clone(),
            (false, true) => format!("{} ({unit})", self.title),
            (true, false) => format!("{} ({log})", self.title),
            (false, false) => format!("{} ({unit}, {log})", self.title),
        }
    }
}

/// One named series of `(x, y)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Name in the legend and the tooltips.
    pub name: String,
    /// Points; those an axis cannot show (zero on a log axis, NaN) are left out.
    pub points: Vec<(f64, f64)>,
}

/// Vertical bars around the points of one series: from `lo` to `hi` at `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// The series (index in [`LineChart::series`]) whose colour they take.
    pub series: usize,
    /// Name in the legend and the tooltips ("rank spread: min to max").
    pub name: String,
    /// `(x, lo, hi)`.
    pub bars: Vec<(f64, f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The series, drawn in order, each in its own style.
    pub series: Vec<Series>,
    /// A reference drawn thin and grey under the series (ideal scaling), named in the legend.
    pub reference: Option<Series>,
    /// Error bars, drawn under the series' markers, each set named in the legend.
    pub bars: Vec<Bars>,
    /// Width of the whole figure, pixels.
    pub width: f64,
    /// Height of the whole figure, pixels.
    pub height: f64,
}

/// Margins around the plot area: left, right (legend), top, bottom.
const LEFT: f64 = 78.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 46.0;

/// The plot area of a panel: left, top, width, height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl LineChart {
    /// A chart of `series` with axes `x` and `y`, 860 x 320 pixels.
    pub fn new(x: Axis, y: Axis, series: Vec<Series>) -> LineChart {
        LineChart {
            x,
            y,
            series,
            reference: None,
            bars: Vec::new(),
            width: 860.0,
            height: 320.0,
        }
    }

    /// Width of the legend at the right.
    fn legend_width(&self) -> f64 {
        let longest = self
            .series
            .iter()
            .chain(self.reference.iter())
            .map(|s| s.name.chars().count())
            .chain(self.bars.iter().map(|b| b.name.chars().count()))
            .max()
            .unwrap_or(0);
        if self.series.len() + usize::from(self.reference.is_some()) + self.bars.len() <= 1 {
            20.0
        } else {
            (50.0 + 6.5 * longest as f64).min(300.0)
        }
    }

    /// The whole figure as SVG; empty when no series has a point the axes can show.
    pub fn svg(&self) -> String {
        let shown = self
            .series
            .iter()
            .any(|s| s.points.iter().any(|&(x, y)| self.visible(x, y)));
        if !shown {
            return String::new();
        }
        let lw = self.legend_width();
        let frame = Frame {
            x: LEFT,
            y: TOP,
            w: self.width - LEFT - lw,
            h: self.height - TOP - BOTTOM,
        };
        let mut s = svg::open(self.width, self.height);
        self.axes(&mut s, frame);
        self.lines(&mut s, frame);
        if lw > 20.0 {
            self.legend(&mut s, frame.x + frame.w + 12.0, frame.y);
        }
        s += "</svg>";
        s
    }

    fn visible(&self, x: f64, y: f64) -> bool {
        self.x.scale.shows(x) && self.y.scale.shows(y)
    }

    fn px(&self, f: Frame, v: f64) -> f64 {
        f.x + f.w * self.x.scale.at(v)
    }

    fn py(&self, f: Frame, v: f64) -> f64 {
        f.y + f.h * (1.0 - self.y.scale.at(v))
    }

    /// The frame, grid, ticks with their values and both axis titles.
    pub fn axes(&self, s: &mut String, f: Frame) {
        let _ = write!(
            s,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#444\"/>",
            f.x, f.y, f.w, f.h
        );
        for t in self.y.scale.ticks() {
            let y = self.py(f, t);
            if !(f.y - 0.5..=f.y + f.h + 0.5).contains(&y) {
                continue;
            }
            let _ = write!(
                s,
                "<line x1=\"{}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>",
                f.x,
                f.x + f.w
            );
            svg::text(s, f.x - 5.0, y + 4.0, "end", &self.y.unit.format(t));
        }
        for t in self.x.scale.ticks() {
            let x = self.px(f, t);
            if !(f.x - 0.5..=f.x + f.w + 0.5).contains(&x) {
                continue;
            }
            let _ = write!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#ddd\"/>",
                f.y,
                f.y + f.h
            );
            svg::text(s, x, f.y + f.h + 14.0, "middle", &self.x.unit.format(t));
        }
        svg::htitle(s, f.x + f.w / 2.0, f.y + f.h + 34.0, &self.x.full_title());
        svg::vtitle(s, f.x - 62.0, f.y + f.h / 2.0, &self.y.full_title());
    }

    /// The reference, then each series: its line (dashed after the first) and its markers,
    /// with a tooltip per point.
    pub fn lines(&self, s: &mut String, f: Frame) {
        if let Some(r) = &self.reference {
            let pts = self.path(f, r);
            let _ = write!(
                s,
                "<polyline points=\"{pts}\" fill=\"none\" stroke=\"#999\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>"
            );
        }
        self.error_bars(s, f);
        for (i, ser) in self.series.iter().enumerate() {
            let (colour, dash, marker) = palette::series(i);
            let pts = self.path(f, ser);
            if pts.contains(' ') {
                let dash = if dash.is_empty() {
                    String::new()
                } else {
                    format!(" stroke-dasharray=\"{dash}\"")
                };
                let _ = write!(
                    s,
                    "<polyline points=\"{pts}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash}><title>{}</title></polyline>",
                    esc(&ser.name)
                );
            }
            for &(x, y) in &ser.points {
                if self.visible(x, y) {
                    let tip = format!(
                        "{} at {} {}: {}",
                        ser.name,
                        self.x.unit.format(x),
                        self.x.title,
                        self.y.unit.format(y)
                    );
                    marker.draw(s, self.px(f, x), self.py(f, y), colour, &tip);
                }
            }
        }
    }

    /// The error bars: a vertical line with caps per bar both ends of which the axes show,
    /// shifted a little per series so that two series' bars at one x are both seen.
    fn error_bars(&self, s: &mut String, f: Frame) {
        for b in &self.bars {
            let (colour, _, _) = palette::series(b.series);
            let dx = 5.0 * b.series as f64;
            for &(x, lo, hi) in &b.bars {
                if !(self.visible(x, lo) && self.visible(x, hi)) {
                    continue;
                }
                let px = self.px(f, x) + dx;
                let (y0, y1) = (self.py(f, lo), self.py(f, hi));
                let tip = format!(
                    "{} at {} {}: {} to {}",
                    b.name,
                    self.x.unit.format(x),
                    self.x.title,
                    self.y.unit.format(lo),
                    self.y.unit.format(hi)
                );
                let _ = write!(
                    s,
                    "<path d=\"M{px:.1},{y0:.1}V{y1:.1}M{:.1},{y0:.1}h8M{:.1},{y1:.1}h8\" stroke=\"{colour}\" stroke-width=\"1.5\" fill=\"none\"><title>{}</title></path>",
                    px - 4.0,
                    px - 4.0,
                    esc(&tip)
                );
            }
        }
    }

    /// `x,y x,y ...` of the points of `ser` the axes show, in x order.
    fn path(&self, f: Frame, ser: &Series) -> String {
        let mut pts: Vec<(f64, f64)> = ser
            .points
            .iter()
            .copied()
            .filter(|&(x, y)| self.visible(x, y))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        pts.iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.px(f, x), self.py(f, y)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The legend from `(x, y)` down: a line sample with the marker, and the name.
    pub fn legend(&self, s: &mut String, x: f64, y: f64) {
        let mut row = 0.0;
        if let Some(r) = &self.reference {
            let ly = y + 8.0;
            let _ = write!(
                s,
                "<line x1=\"{x}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"#999\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>",
                x + 28.0
            );
            svg::text(s, x + 34.0, ly + 4.0, "start", &r.name);
            row += 1.0;
        }
        for (i, ser) in self.series.iter().enumerate() {
            let (colour, dash, marker) = palette::series(i);
            let ly = y + 8.0 + 18.0 * row;
            let _ = write!(
                s,
                "<line x1=\"{x}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\"/>",
                x + 28.0
            );
            marker.draw(s, x + 14.0, ly, colour, "");
            svg::text(s, x + 34.0, ly + 4.0, "start", &ser.name);
            row += 1.0;
        }
        for b in &self.bars {
            let (colour, _, _) = palette::series(b.series);
            let ly = y + 8.0 + 18.0 * row;
            let _ = write!(
                s,
                "<path d=\"M{:.1},{:.1}V{:.1}M{:.1},{:.1}h8M{:.1},{:.1}h8\" stroke=\"{colour}\" stroke-width=\"1.5\" fill=\"none\"/>",
                x + 14.0,
                ly - 6.0,
                ly + 6.0,
                x + 10.0,
                ly - 6.0,
                x + 10.0,
                ly + 6.0
            );
            svg::text(s, x + 34.0, ly + 4.0, "start", &b.name);
            row += 1.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart::new(
            Axis {
                title: "ranks".into(),
                unit: Unit::Count,
                scale: Scale::log2_at(&[2.0, 4.0, 8.0]),
            },
            Axis {
                title: "wall time".into(),
                unit: Unit::Seconds,
                scale: Scale::log10([1.0, 100.0]),
            },
            series,
        )
    }

    #[test]
    fn series_titles_and_legend() {
        let a = Series {
            name: "a".into(),
            points: vec![(2.0, 1.0), (4.0, 10.0), (8.0, 100.0)],
        };
        let b = Series {
            name: "b".into(),
            points: a.points.clone(),
        };
        let svg = chart(vec![a, b]).svg();
        // Two series on the same points: both drawn, the second dashed, both in the legend.
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("stroke-dasharray=\"8 4\">"), "{svg}");
        assert!(
            svg.contains(">wall time (s, log scale)<")
                && svg.contains(">ranks (count, log scale)<")
        );
        assert!(
            svg.contains("<title>a at 4 ranks: 10.000 s</title>"),
            "{svg}"
        );
        assert!(svg.contains(">100.000 s<") && svg.contains(">1.000 s<"));
        // Log2 x, log10 y: the points lie on a straight line.
        let pts = svg.split("points=\"").nth(1).unwrap();
        let pts: Vec<(f64, f64)> = pts[..pts.find('"').unwrap()]
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect();
        let slope = |i: usize| (pts[i + 1].1 - pts[i].1) / (pts[i + 1].0 - pts[i].0);
        assert!((slope(0) - slope(1)).abs() < 0.01, "{pts:?}");
    }

    #[test]
    fn error_bars_in_the_series_colour_with_their_range() {
        let a = Series {
            name: "a".into(),
            points: vec![(2.0, 10.0), (4.0, 5.0)],
        };
        let mut c = chart(vec![a]);
        c.bars.push(Bars {
            series: 0,
            name: "spread over ranks".into(),
            bars: vec![(2.0, 8.0, 20.0), (4.0, 0.0, 6.0)],
        });
        let svg = c.svg();
        // The second bar starts at 0, which a log axis cannot show: left out.
        assert_eq!(
            svg.matches("<title>spread over ranks at").count(),
            1,
            "{svg}"
        );
        assert!(
            svg.contains("spread over ranks at 2 ranks: 8.000 s to 20.000 s"),
            "{svg}"
        );
        let (colour, _, _) = palette::series(0);
        assert!(svg.contains(&format!(
            "stroke=\"{colour}\" stroke-width=\"1.5\" fill=\"none\"><title>"
        )));
        // Named in the legend.
        assert!(svg.contains(">spread over ranks</text>"), "{svg}");
    }

    #[test]
    fn hidden_points_and_empty_charts() {
        let gap = Series {
            name: "g".into(),
            points: vec![(2.0, 1.0), (4.0, f64::NAN), (8.0, 0.0)],
        };
        let svg = chart(vec![gap]).svg();
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(chart(vec![]).svg().is_empty());
    }
}
