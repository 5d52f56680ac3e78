//! The page's frame: the head (style, the shared script), the run header, sortable tables
//! and the end of the page with the self-check hooks.

use std::fmt::Write as _;

use mpiscope_plot::svg::esc;
use mpiscope_plot::unit;
use mpiscope_trace::RunDir;

/// The script every page carries: sortable tables, the error hook, the self-check.
const PAGE_JS: &str = include_str!("page.js");

/// What a reader needs to know about the run before any number: what ran, when, on what.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunHeader {
    /// The run directory as given.
    pub dir: String,
    /// The command line (launcher included when known).
    pub command: String,
    /// When it started (RFC 3339, UTC).
    pub date: String,
    /// The MPI library and its version string.
    pub mpi: String,
    /// Distinct hosts, in order of first rank.
    pub hosts: Vec<String>,
    /// Ranks.
    pub ranks: u32,
    /// Bytes of the rank files and the manifest.
    pub trace_bytes: u64,
    /// The mpiscope version that recorded the run, and the trace format.
    pub recorder: String,
    /// The clock and how ranks were aligned.
    pub clock: String,
    /// The launcher's exit status, when known.
    pub exit_status: Option<i32>,
}

impl RunHeader {
    /// The header of `run` (from its manifest; what a run without one lacks stays empty).
    pub fn of(run: &RunDir) -> RunHeader {
        let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let mut h = RunHeader {
            dir: run.path.display().to_string(),
            ranks: run.ranks(),
            trace_bytes: run.rank_files.iter().map(|(_, p)| size(p)).sum::<u64>()
                + size(&run.path.join(mpiscope_trace::MANIFEST_FILE)),
            ..RunHeader::default()
        };
        if let Some(m) = &run.manifest {
            h.command = m.command.join(" ");
            if h.command.is_empty() {
                h.command = m.executable.clone();
            }
            h.date = m.start_time.clone();
            h.mpi = format!(
                "{} (MPI {}): {}",
                m.mpi.flavour,
                m.mpi.standard,
                m.mpi.version.lines().next().unwrap_or("").trim()
            );
            h.hosts = m.hosts.clone();
            h.recorder = format!(
                "mpiscope {}, trace format {}",
                m.recorder_version, m.format_version
            );
            h.clock = format!(
                "{}, resolution {}, {}",
                m.clock.source,
                unit::seconds(m.clock.resolution_ns * 1e-9),
                m.clock.alignment
            );
            h.exit_status = m.exit_status;
        }
        h
    }

    /// The header as a definition list (`id="run-header"`, each value with a `data-key`).
    pub fn html(&self, events: u64, calls: u64) -> String {
        let unknown = |v: &str| {
            if v.is_empty() {
                "(not recorded: no manifest)".to_owned()
            } else {
                v.to_owned()
            }
        };
        let hosts = if self.hosts.is_empty() {
            unknown("")
        } else if self.hosts.len() <= 8 {
            format!("{}: {}", self.hosts.len(), self.hosts.join(", "))
        } else {
            format!(
                "{}: {}, ... {}",
                self.hosts.len(),
                self.hosts[..6].join(", "),
                self.hosts[self.hosts.len() - 1]
            )
        };
        let rows: [(&str, &str, String); 10] = [
            ("command", "Command", unknown(&self.command)),
            ("date", "Started", unknown(&self.date)),
            ("mpi", "MPI library", unknown(&self.mpi)),
            ("ranks", "Ranks", self.ranks.to_string()),
            ("hosts", "Hosts", hosts),
            (
                "trace",
                "Trace",
                format!(
                    "{} ({}), {events} events, {calls} calls",
                    self.dir,
                    unit::bytes(self.trace_bytes as f64)
                ),
            ),
            ("recorder", "Recorded by", unknown(&self.recorder)),
            ("clock", "Clock", unknown(&self.clock)),
            (
                "exit",
                "Exit status",
                self.exit_status
                    .map_or_else(|| "(not recorded)".into(), |c| c.to_string()),
            ),
            (
                "analyzed",
                "Report by",
                format!("mpiscope {}", env!("CARGO_PKG_VERSION")),
            ),
        ];
        let mut s = String::from("<dl id=\"run-header\">");
        for (key, name, value) in rows {
            let _ = write!(
                s,
                "<dt>{name}</dt><dd data-key=\"{key}\">{}</dd>",
                esc(&value)
            );
        }
        s += "</dl>";
        s
    }
}

/// A cell of a sortable table: text, or a number shown in a unit and sorted by its value.
pub enum Cell {
    /// Sorted as text.
    Text(String),
    /// Sorted by the number, shown as the text.
    Num(f64, String),
}

/// A number in a unit.
pub fn num(v: f64, u: mpiscope_plot::Unit) -> Cell {
    Cell::Num(v, u.format(v))
}

/// An integer.
pub fn int(v: u64) -> Cell {
    Cell::Num(v as f64, v.to_string())
}

/// Text.
pub fn text(v: impl Into<String>) -> Cell {
    Cell::Text(v.into())
}

/// A table whose columns sort when their header is clicked; `foot` (totals) stays below.
pub fn table(id: &str, head: &[&str], rows: &[Vec<Cell>], foot: Option<&[Cell]>) -> String {
    let mut s = format!("<table class=\"sortable\" id=\"{id}\"><thead><tr>");
    for h in head {
        let _ = write!(s, "<th title=\"click to sort\">{}</th>", esc(h));
    }
    s += "</tr></thead><tbody>";
    let row = |s: &mut String, r: &[Cell]| {
        s.push_str("<tr>");
        for c in r {
            match c {
                Cell::Text(t) => {
                    let _ = write!(s, "<td>{}</td>", esc(t));
                }
                Cell::Num(v, t) => {
                    let _ = write!(s, "<td class=\"n\" data-v=\"{v:e}\">{}</td>", esc(t));
                }
            }
        }
        s.push_str("</tr>");
    };
    for r in rows {
        row(&mut s, r);
    }
    s += "</tbody>";
    if let Some(f) = foot {
        s += "<tfoot>";
        row(&mut s, f);
        s += "</tfoot>";
    }
    s += "</table>";
    s
}

/// A figure with its caption.
pub fn figure(id: &str, caption: &str, svg: &str) -> String {
    if svg.is_empty() {
        return String::new();
    }
    format!(
        "<figure id=\"{id}\"><figcaption>{}</figcaption>{svg}</figure>",
        esc(caption)
    )
}

/// The page's head (title, style, script) and its heading.
pub fn start(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"mpiscope\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}}\
         h2{{margin-top:32px;border-bottom:1px solid #ccc}}\
         table{{border-collapse:collapse;font-size:13px;margin:8px 0}}td,th{{padding:2px 8px;text-align:left;border-bottom:1px solid #ddd}}\
         td.n{{text-align:right;font-variant-numeric:tabular-nums}}th{{cursor:pointer;background:#f2f2f2;user-select:none}}\
         th.asc::after{{content:' \\25B2'}}th.desc::after{{content:' \\25BC'}}tfoot td{{font-weight:bold}}\
         figure{{margin:16px 0}}figcaption{{font-weight:bold;margin-bottom:4px}}\
         dl#run-header{{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:14px}}dt{{font-weight:bold}}dd{{margin:0;word-break:break-all}}\
         pre{{font-size:12px;background:#f6f6f6;padding:8px;overflow-x:auto}}.warning{{color:#a00}}\
         #timeline-box{{border:1px solid #ccc;padding:6px}}#timeline-box button{{margin-right:4px}}#tl-status{{font-size:12px;color:#444;min-height:16px}}\
         .legend span{{display:inline-block;margin-right:12px;font-size:12px}}.legend i{{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}}\
         </style><script>{js}</script></head><body>\
         <h1>{t}</h1>",
        t = esc(title),
        js = PAGE_JS
    )
}

/// The end of the page: the self-check's and the error hook's output places.
pub fn end() -> &'static str {
    "<div id=\"js-errors\" data-count=\"0\"></div><div id=\"selftest\"></div></body></html>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_sort_by_value_and_keep_totals_below() {
        let t = table(
            "t",
            &["Function", "Time"],
            &[vec![
                text("MPI_Send"),
                num(0.0025, mpiscope_plot::Unit::Seconds),
            ]],
            Some(&[text("all"), int(3)]),
        );
        assert!(
            t.contains("<td class=\"n\" data-v=\"2.5e-3\">2.500 ms</td>"),
            "{t}"
        );
        assert!(t.contains("<tfoot><tr><td>all</td>"));
        let h = RunHeader {
            command: "mpirun -np 4 ./a <x>".into(),
            ranks: 4,
            ..RunHeader::default()
        };
        let html = h.html(10, 8);
        assert!(html.contains("<dd data-key=\"command\">mpirun -np 4 ./a &lt;x&gt;</dd>"));
        assert!(html.contains("<dd data-key=\"ranks\">4</dd>"));
        assert!(html.contains("(not recorded: no manifest)"));
    }
}
