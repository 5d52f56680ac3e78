//! Figures of a study: line charts (SVG, with `mpiscope_plot`'s scales and series styles, so
//! a series drawn over another stays visible by its dash and marker) of one result column
//! against another, axes titled in words with their units,
//! a line per value of a `series` column, a panel per value of a `panels` column. Numeric
//! axes switch to a log scale when the largest value is 20 times the smallest or more; an x column whose
//! values are not all numbers is drawn as evenly spaced categories.
//!
//! [`render`] gathers the rows, groups and scales once (`Chart`), then writes the SVG in
//! document order: the header and title, each panel's axes then its lines (panels side by
//! side, `PANEL_W` wide each), and the legend below when there are several series.

use std::fmt::Write;

use mpiscope_plot::palette;
use mpiscope_plot::scale::Kind;
use mpiscope_plot::Scale;

use crate::study::FigureSpec;
use crate::table::Table;

const PANEL_W: f64 = 440.0;
const PANEL_H: f64 = 320.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 50.0;

/// The axis of `values`: log10 when the largest is 20 times the smallest or more.
fn scale_of(values: impl Iterator<Item = f64> + Clone) -> Scale {
    Scale::auto(values, 20.0)
}

/// A readable axis title for a result column, with its unit: `sim_wall_s` is "wall-clock
/// time of the simulation (s)", not a column name.
pub fn title_of(column: &str, log: bool) -> String {
    let base = match column {
        "time_s" => "predicted run time (s)".to_owned(),
        "gflops" => "predicted performance (Gflop/s)".to_owned(),
        "energy_j" => "predicted energy (J)".to_owned(),
        "sim_wall_s" => "wall-clock time of the simulation (s)".to_owned(),
        "value" => "value of the varied parameter".to_owned(),
        "varied" => "varied parameter".to_owned(),
        "point" => "study point".to_owned(),
        c => {
            let (name, unit) = if let Some(n) = c.strip_suffix("_s") {
                (n, " (s)")
            } else if let Some(n) = c.strip_suffix("_bytes") {
                (n, " (bytes)")
            } else if let Some(n) = c.strip_suffix("_j") {
                (n, " (J)")
            } else {
                (c, "")
            };
            format!("{}{unit}", name.replace('_', " "))
        }
    };
    if log {
        format!("{base}, log scale")
    } else {
        base
    }
}

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e5 || v.abs() < 1e-3 {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Distinct values of a column in order of first appearance (all rows when `col` is None).
fn groups(table: &Table, col: Option<usize>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in &table.rows {
        let v = col.map(|c| r[c].clone()).unwrap_or_default();
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A value that is a finite number.
fn number(v: &str) -> Option<f64> {
    v.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Where an x value `v` lies: its number (`numeric`), else its category's position.
fn position(v: &str, numeric: bool, categories: &[String]) -> f64 {
    if numeric {
        v.parse().unwrap_or(0.0)
    } else {
        categories.iter().position(|c| c == v).unwrap_or(0) as f64
    }
}

/// Width and height of a panel's plot area, inside its margins.
const PLOT_W: f64 = PANEL_W - LEFT - RIGHT;
const PLOT_H: f64 = PANEL_H - TOP - BOTTOM;

/// The SVG of `spec` over `table`; `title` is used when the figure has none. Rows whose x or
/// y is empty or not a number are skipped (categorical x excepted).
pub fn render(spec: &FigureSpec, table: &Table, title: &str) -> Result<String, String> {
    let chart = Chart::new(spec, table)?;
    let title = spec.title.as_deref().unwrap_or(title);
    let mut s = String::new();
    chart.header(&mut s, title);
    for (pi, panel) in chart.panels.iter().enumerate() {
        let ox = pi as f64 * PANEL_W + LEFT;
        chart.axes(&mut s, ox, panel);
        chart.lines(&mut s, ox, panel);
    }
    if chart.series.len() > 1 {
        chart.legend(&mut s);
    }
    s.push_str("</svg>\n");
    Ok(s)
}

/// A figure's rows, groups and scales, ready to draw.
struct Chart<'t> {
    spec: &'t FigureSpec,
    /// Columns of x and y.
    xc: usize,
    yc: usize,
    /// Columns of the series and the panels, when the figure has them.
    sc: Option<usize>,
    pc: Option<usize>,
    /// The rows whose y is a finite number.
    rows: Vec<&'t Vec<String>>,
    /// Whether every x of those rows is a number (else x is categorical).
    numeric_x: bool,
    /// The distinct x values, in order of first appearance (a categorical x's positions).
    categories: Vec<String>,
    xs: Scale,
    ys: Scale,
    /// The distinct panel and series values (one empty value when the figure has none).
    panels: Vec<String>,
    series: Vec<String>,
}

impl<'t> Chart<'t> {
    /// The chart of `spec` over `table`, or an error naming a missing column.
    fn new(spec: &'t FigureSpec, table: &'t Table) -> Result<Chart<'t>, String> {
        let col = |name: &str| {
            table
                .column(name)
                .ok_or_else(|| format!("{}: no column `{name}` in the results", spec.file))
        };
        let (xc, yc) = (col(&spec.x)?, col(&spec.y)?);
        let sc = spec.series.as_deref().map(col).transpose()?;
        let pc = spec.panels.as_deref().map(col).transpose()?;
        let rows: Vec<&Vec<String>> = table
            .rows
            .iter()
            .filter(|r| number(&r[yc]).is_some())
            .collect();
        let numeric_x = rows.iter().all(|r| r[xc].parse::<f64>().is_ok());
        let categories = groups(table, Some(xc));
        let xs = if numeric_x {
            scale_of(rows.iter().map(|r| position(&r[xc], true, &categories)))
        } else {
            Scale::fixed(-0.5, categories.len() as f64 - 0.5, Kind::Linear)
        };
        let ys = scale_of(rows.iter().filter_map(|r| number(&r[yc])));
        Ok(Chart {
            spec,
            xc,
            yc,
            sc,
            pc,
            rows,
            numeric_x,
            categories,
            xs,
            ys,
            panels: groups(table, pc),
            series: groups(table, sc),
        })
    }

    /// A row's y, when a finite number.
    fn y_of(&self, r: &[String]) -> Option<f64> {
        number(&r[self.yc])
    }

    /// A row's x: its number, or its category's position.
    fn x_of(&self, r: &[String]) -> f64 {
        position(&r[self.xc], self.numeric_x, &self.categories)
    }

    /// Horizontal position of `v` in the panel whose plot starts at `ox`.
    fn px(&self, ox: f64, v: f64) -> f64 {
        ox + self.xs.at(v) * PLOT_W
    }

    /// Vertical position of `v`.
    fn py(&self, v: f64) -> f64 {
        TOP + (1.0 - self.ys.at(v)) * PLOT_H
    }

    /// The opening tag (sized for the panels, the legend and the title), the generator
    /// marker, the background and the title.
    fn header(&self, s: &mut String, title: &str) {
        // Room for the title at about 8 px per character of 15 px text.
        let width =
            (PANEL_W * self.panels.len().max(1) as f64).max(8.0 * title.len() as f64 + 40.0);
        let height = PANEL_H + if self.series.len() > 1 { 24.0 } else { 0.0 };
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             font-family=\"sans-serif\" font-size=\"12\">\n{}\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
            crate::outdir::FIGURE_MARKER,
            width / 2.0,
            escape(title)
        );
    }

    /// A panel's title, frame, grid, tick labels and axis names.
    fn axes(&self, s: &mut String, ox: f64, panel: &str) {
        let (pw, ph) = (PLOT_W, PLOT_H);
        if let Some(name) = &self.spec.panels {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{} = {}</text>",
                ox + pw / 2.0,
                TOP - 8.0,
                escape(name),
                escape(panel)
            );
        }
        let _ = writeln!(
            s,
            "<rect x=\"{ox}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#444\"/>"
        );
        for t in self.ys.ticks() {
            let y = self.py(t);
            let _ = writeln!(
                s,
                "<line x1=\"{ox}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                ox + pw,
                ox - 4.0,
                y + 4.0,
                label(t)
            );
        }
        if self.numeric_x {
            for t in self.xs.ticks() {
                let x = self.px(ox, t);
                let _ = writeln!(
                    s,
                    "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                    TOP + ph + 16.0,
                    label(t)
                );
            }
        } else {
            for (i, c) in self.categories.iter().enumerate() {
                let _ = writeln!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                    self.px(ox, i as f64),
                    TOP + ph + 16.0,
                    escape(c)
                );
            }
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\
             <text transform=\"translate({:.1},{:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            ox + pw / 2.0,
            TOP + ph + 36.0,
            escape(&title_of(&self.spec.x, self.numeric_x && self.xs.is_log())),
            ox - 50.0,
            TOP + ph / 2.0,
            escape(&title_of(&self.spec.y, self.ys.is_log()))
        );
    }

    /// A panel's series: a line through each series' points (sorted by x), and the points.
    /// Points a log scale cannot show (zero or negative) are left out.
    fn lines(&self, s: &mut String, ox: f64, panel: &str) {
        let (pc, sc) = (self.pc, self.sc);
        for (si, name) in self.series.iter().enumerate() {
            let (color, dash, marker) = palette::series(si);
            let mut pts: Vec<(f64, f64)> = self
                .rows
                .iter()
                .filter(|r| pc.is_none_or(|c| r[c] == *panel) && sc.is_none_or(|c| r[c] == *name))
                .filter_map(|r| Some((self.x_of(r), self.y_of(r)?)))
                .filter(|(x, y)| (!self.xs.is_log() || *x > 0.0) && (!self.ys.is_log() || *y > 0.0))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let path: Vec<String> = pts
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", self.px(ox, x), self.py(y)))
                .collect();
            if pts.len() > 1 {
                let _ = writeln!(
                    s,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\"/>",
                    path.join(" ")
                );
            }
            for &(x, y) in &pts {
                let tip = format!("{} {}: {}", name, label(x), label(y));
                marker.draw(s, self.px(ox, x), self.py(y), color, tip.trim());
                s.push('\n');
            }
        }
    }

    /// The legend below the panels: the series column's name, then a swatch and a name per
    /// series.
    fn legend(&self, s: &mut String) {
        let y = PANEL_H + 8.0;
        let mut x = LEFT;
        if let Some(name) = &self.spec.series {
            let _ = writeln!(
                s,
                "<text x=\"{x}\" y=\"{}\">{}:</text>",
                y + 4.0,
                escape(name)
            );
            x += 10.0 + 7.0 * name.len() as f64;
        }
        for (si, name) in self.series.iter().enumerate() {
            let (color, dash, marker) = palette::series(si);
            let _ = writeln!(
                s,
                "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\" stroke-dasharray=\"{dash}\"/>",
                x + 24.0
            );
            marker.draw(s, x + 12.0, y, color, "");
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\">{}</text>",
                x + 30.0,
                y + 4.0,
                escape(name)
            );
            x += 44.0 + 7.0 * name.len() as f64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let row = |sw: &str, m: &str, t: &str| vec![sw.to_owned(), m.to_owned(), t.to_owned()];
        Table {
            columns: vec!["switches".into(), "mapping".into(), "time_s".into()],
            rows: vec![
                row("1", "sequential", "30"),
                row("2", "sequential", "20"),
                row("1", "random", "60"),
                row("2", "random", "40"),
            ],
        }
    }

    #[test]
    fn one_line_per_series_through_its_points() {
        let spec = FigureSpec {
            file: "f.svg".into(),
            x: "switches".into(),
            y: "time_s".into(),
            series: Some("mapping".into()),
            panels: None,
            title: None,
        };
        let svg = render(&spec, &table(), "study").unwrap();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("</title>").count(), 4, "a marker per point");
        assert!(svg.contains(">sequential<") && svg.contains(">random<"));
        // Two series, two looks: the second is dashed and has square markers.
        assert!(svg.contains("stroke-dasharray=\"8 4\"") && svg.contains("<rect x="));
        assert!(svg.contains(">predicted run time (s)<") && svg.contains(">switches<"));
        // y from 0 to 63: the random line (60) is drawn higher (smaller y) than sequential (30).
        let ys: Vec<Vec<f64>> = svg
            .lines()
            .filter(|l| l.starts_with("<polyline"))
            .map(|l| {
                let a = l.split("points=\"").nth(1).unwrap();
                a[..a.find('"').unwrap()]
                    .split(' ')
                    .map(|p| p.split_once(',').unwrap().1.parse().unwrap())
                    .collect()
            })
            .collect();
        assert!(ys[1][0] < ys[0][0] && ys[1][1] < ys[0][1], "{ys:?}");
    }

    #[test]
    fn panels_and_categories_and_errors() {
        let spec = FigureSpec {
            file: "f.svg".into(),
            x: "mapping".into(),
            y: "time_s".into(),
            series: None,
            panels: Some("switches".into()),
            title: Some("T".into()),
        };
        let svg = render(&spec, &table(), "study").unwrap();
        assert!(svg.contains("switches = 1") && svg.contains("switches = 2"));
        assert!(svg.contains(">T<"));
        let bad = FigureSpec {
            y: "gflops".into(),
            ..spec
        };
        assert!(render(&bad, &table(), "s").unwrap_err().contains("gflops"));
    }

    #[test]
    fn log_scale_over_two_decades() {
        let s = scale_of([0.1, 1.0, 10.0].into_iter());
        assert!(s.is_log());
        assert_eq!(s.ticks(), vec![0.1, 1.0, 10.0]);
        assert!((s.at(1.0) - 0.5).abs() < 1e-12);
        let s = scale_of([1.0, 3.0].into_iter());
        assert!(!s.is_log());
        assert_eq!(s.ticks().first(), Some(&0.0));
        assert_eq!(
            title_of("sim_wall_s", false),
            "wall-clock time of the simulation (s)"
        );
        assert_eq!(title_of("link_bw", true), "link bw, log scale");
        assert_eq!(title_of("latency_s", false), "latency (s)");
    }
}
