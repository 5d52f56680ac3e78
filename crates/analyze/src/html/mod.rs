//! Self-contained HTML pages (no network, no external file): the report of a run
//! (`mpiscope report --html`) and the comparison of runs (`mpiscope compare --html`).
//!
//! The report has everything the text report has, with a run header first; its tables sort
//! when a header is clicked, its figures (drawn by `mpiscope_plot`, one palette: a function
//! has the same colour on every figure and on the timeline) have axis titles with units, and
//! its timeline is interactive (zoom, pan, rank selection, message lines) and stays usable
//! for 1,024 ranks and 10 M events (levels of detail, aggregate lanes, see [`timeline`]).
//!
//! * [`page`]: the frame: head, style, the shared script (`page.js`: sortable tables, the
//!   error hook, the `#selftest` check), the run header, tables;
//! * [`sections`]: the report's tables;
//! * [`figures`]: the report's figures;
//! * [`timeline`]: the timeline's data and section (`timeline.js`);
//! * [`scaling`]: the comparison page ([Polivanov 2012]'s scaling study).

pub mod figures;
pub mod page;
pub mod scaling;
pub mod sections;
pub mod timeline;

use std::fmt::Write as _;

use mpiscope_plot::svg::esc;

pub use page::RunHeader;
pub use scaling::scaling;
pub use timeline::{timeline, Timeline, TimelineOptions};

use crate::report::Report;
use crate::structure::Structure;

/// Lines of the loop structure shown (the rest is `mpiscope structure`'s).
const STRUCTURE_LINES: usize = 400;

/// The whole report as one HTML page: header, summary, timeline, figures, tables, balance,
/// endings, loop structure, warnings.
pub fn report(
    title: &str,
    header: &RunHeader,
    r: &Report,
    structure: Option<&Structure>,
    timeline: Option<&Timeline>,
) -> String {
    let p = &r.profile;
    let order = timeline::function_order(p);
    let calls: u64 = p.calls.values().map(|c| c.count).sum();
    let mut s = page::start(title);
    s += &header.html(p.events, calls);
    s += "<p id=\"load-time\"></p>";
    s += "<nav>Sections: <a href=\"#timeline\">timeline</a> · <a href=\"#figures\">figures</a> · \
          <a href=\"#functions\">functions</a> · <a href=\"#callsites\">callsites</a> · \
          <a href=\"#sizes\">message sizes</a> · <a href=\"#pairs\">pairs</a> · \
          <a href=\"#ranks\">ranks</a> · <a href=\"#balance\">balance</a> · \
          <a href=\"#endings\">endings</a> · <a href=\"#structure\">loops</a></nav>";
    let phase = crate::window::Resolved {
        phase: p.phase,
        ranges: p.phase_ranges.clone(),
    }
    .to_text();
    if !phase.is_empty() {
        let _ = write!(s, "<pre class=\"phase\">{}</pre>", esc(phase.trim_end()));
    }
    if p.burst_min_gap_s > 0.0 {
        let _ = write!(
            s,
            "<p>Bursts shorter than {:.3} us are left out of the burst statistics.</p>",
            p.burst_min_gap_s * 1e6
        );
    }
    s += &sections::summary(p);
    for w in &p.warnings {
        let _ = write!(s, "<p class=\"warning\">warning: {}</p>", esc(w));
    }
    if let Some(t) = timeline {
        s += &t.html();
    }
    s += "<h2 id=\"figures\">Figures</h2>";
    s += &figures::functions(p, &order);
    let empty = Vec::new();
    s += &figures::per_rank(p, &order, timeline.map_or(&empty, |t| &t.per_rank_fn));
    s += &figures::bursts(p);
    s += &figures::matrices(r);
    s += &sections::functions(p, &order);
    s += &sections::callsites(p);
    s += &sections::messages(p);
    s += &sections::collectives(r);
    s += &sections::ranks(p);
    if let Some(b) = &r.balance {
        s += &sections::balance(b);
    }
    if let Some(e) = &r.endings {
        let _ = write!(
            s,
            "<h2 id=\"endings\">How the records end</h2><pre>{}</pre>",
            esc(e.to_text().trim_matches('\n'))
        );
    }
    if let Some(st) = structure {
        let text = st.to_text();
        let mut cut: String = text
            .lines()
            .take(STRUCTURE_LINES)
            .collect::<Vec<_>>()
            .join("\n");
        if text.lines().count() > STRUCTURE_LINES {
            cut += "\n... (mpiscope structure prints the rest)";
        }
        let _ = write!(
            s,
            "<h2 id=\"structure\">Loop structure</h2><pre>{}</pre>",
            esc(&cut)
        );
    }
    s += page::end();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_without_data_is_whole() {
        let html = report(
            "run <1>",
            &RunHeader::default(),
            &Report::default(),
            None,
            None,
        );
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<h1>run &lt;1&gt;</h1>"));
        assert!(html.contains("<meta name=\"generator\" content=\"mpiscope\">"));
        assert!(html.ends_with("</body></html>\n"));
        assert!(!html.contains("src=\"http"));
    }
}
