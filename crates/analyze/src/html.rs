//! A self-contained HTML report: the tables of `mpiscope report` and figures drawn as inline
//! SVG (no script, no external file): calls per function on a log scale ([Polivanov 2012]'s
//! Figure 2), time per function, compute and MPI time per rank, the distribution of compute
//! bursts, the communication matrices (point-to-point, collective, both) as heat maps, a timeline of the middle of the run's
//! communicating part, and the loop structure of each class of ranks ([Grosclaude 2012]'s notation).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::compare::{Comparison, RunSummary};
use crate::profile::Profile;
use crate::report::Report;
use crate::structure::Structure;

/// One call on the timeline: function, entry and exit (ns), clipped to the window.
pub type Span = (String, u64, u64);

/// MPI calls of each rank's main thread within a time window, for the timeline figure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// Window start and end, ns since the run's epoch.
    pub from: u64,
    /// End.
    pub to: u64,
    /// Per rank: (function, enter, exit), clipped to the window.
    pub ranks: Vec<(u32, Vec<Span>)>,
}

/// At most this many calls per rank in the timeline.
const TIMELINE_CALLS: usize = 3000;

/// Reads the calls of `run` that overlap `[from, to)` (at most a few thousand per rank).
pub fn timeline(
    run: &mpiscope_trace::RunDir,
    from: u64,
    to: u64,
) -> Result<Timeline, crate::AnalyzeError> {
    let mut t = Timeline {
        from,
        to,
        ranks: Vec::new(),
    };
    for (rank, path) in &run.rank_files {
        let mut reader = mpiscope_trace::RankReader::open(path)?;
        let mut calls = Vec::new();
        let mut names: std::collections::HashMap<u32, String> = std::collections::HashMap::new();
        while let Some(ev) = reader.next_event() {
            if ev.t_enter >= to || calls.len() >= TIMELINE_CALLS {
                break;
            }
            if ev.thread != 0 || ev.t_exit < from {
                continue;
            }
            let name = names
                .entry(ev.call)
                .or_insert_with(|| reader.tables().call_name(ev.call).into_owned());
            calls.push((name.clone(), ev.t_enter.max(from), ev.t_exit.min(to)));
        }
        t.ranks.push((*rank, calls));
    }
    Ok(t)
}

/// A timeline of the middle of the communicating part of the run: the range from the first to
/// the last communication call of rank 0 (point-to-point, collective, completion, probe; not
/// `MPI_Init` and `MPI_Finalize`), a twentieth of it (at most 20 ms) from its middle. `None`
/// when rank 0 communicates too little to place a window.
pub fn timeline_of_main_part(
    run: &mpiscope_trace::RunDir,
) -> Result<Option<Timeline>, crate::AnalyzeError> {
    let Some((_, path)) = run.rank_files.first() else {
        return Ok(None);
    };
    let mut reader = mpiscope_trace::RankReader::open(path)?;
    let mut comm: std::collections::HashMap<u32, bool> = std::collections::HashMap::new();
    let (mut start, mut end) = (u64::MAX, 0u64);
    while let Some(ev) = reader.next_event() {
        let communicates = *comm.entry(ev.call).or_insert_with(|| {
            matches!(
                mpiscope_mpispec::group(&reader.tables().call_name(ev.call)),
                mpiscope_mpispec::Group::P2p
                    | mpiscope_mpispec::Group::Collective
                    | mpiscope_mpispec::Group::Completion
                    | mpiscope_mpispec::Group::Probe
            )
        });
        if communicates {
            start = start.min(ev.t_enter);
            end = end.max(ev.t_exit);
        }
    }
    if end <= start {
        return Ok(None);
    }
    let width = ((end - start) / 20).clamp(1, 20_000_000);
    let from = start + (end - start) / 2;
    timeline(run, from, from + width).map(Some)
}

/// The timeline: one row per rank, MPI calls coloured by kind over the white of computation.
fn timeline_figure(t: &Timeline) -> String {
    if t.ranks.is_empty() || t.to <= t.from {
        return String::new();
    }
    let (w, lw, rh) = (860.0, 70.0, 16.0);
    let h = 40.0 + rh * t.ranks.len() as f64;
    let span = (t.to - t.from) as f64;
    let x = |ns: u64| lw + (w - lw - 10.0) * (ns - t.from) as f64 / span;
    let mut s = format!(
        "<figure><figcaption>Timeline of {} to {} (MPI calls: point-to-point blue, collectives orange, completion green, other grey; white is computation)</figcaption>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">",
        secs(t.from as f64 * 1e-9),
        secs(t.to as f64 * 1e-9)
    );
    for (i, (rank, calls)) in t.ranks.iter().enumerate() {
        let y = 10.0 + rh * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"l\">rank {rank}</text>\
             <rect x=\"{lw}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"#fff\" stroke=\"#ccc\"/>",
            lw - 6.0,
            y + rh * 0.7,
            w - lw - 10.0,
            rh - 3.0
        );
        for (name, a, b) in calls {
            let colour = match mpiscope_mpispec::group(name) {
                mpiscope_mpispec::Group::P2p => "#4878a8",
                mpiscope_mpispec::Group::Collective => "#e08030",
                mpiscope_mpispec::Group::Completion | mpiscope_mpispec::Group::Probe => "#40a060",
                _ => "#999999",
            };
            let _ = write!(
                s,
                "<rect x=\"{:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{}\" fill=\"{colour}\"><title>{}</title></rect>",
                x(*a),
                (x(*b) - x(*a)).max(0.5),
                rh - 3.0,
                esc(name)
            );
        }
    }
    let _ = write!(
        s,
        "<text x=\"{lw}\" y=\"{}\" class=\"t\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"t\">{}</text></svg></figure>",
        h - 8.0,
        secs(t.from as f64 * 1e-9),
        w - 10.0,
        h - 8.0,
        secs(t.to as f64 * 1e-9)
    );
    s
}

/// Escapes text for HTML and SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Seconds in a short human unit.
fn secs(v: f64) -> String {
    let a = v.abs();
    if a >= 1.0 {
        format!("{v:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", v * 1e3)
    } else if a >= 1e-6 {
        format!("{:.3} us", v * 1e6)
    } else {
        format!("{:.0} ns", v * 1e9)
    }
}

/// A horizontal bar chart: one labelled bar per `(label, value)`; `log` draws a log scale.
fn bars(title: &str, rows: &[(String, f64)], log: bool, unit: &dyn Fn(f64) -> String) -> String {
    let (w, lw, bh) = (860.0, 220.0, 18.0);
    let h = 40.0 + bh * rows.len() as f64;
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let scale = |v: f64| -> f64 {
        if max <= 0.0 || v <= 0.0 {
            return 0.0;
        }
        if log {
            (1.0 + v).log10() / (1.0 + max).log10()
        } else {
            v / max
        }
    };
    let mut s = format!(
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">",
        esc(title)
    );
    for (i, (label, v)) in rows.iter().enumerate() {
        let y = 20.0 + bh * i as f64;
        let bw = (w - lw - 130.0) * scale(*v);
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"l\">{}</text>\
             <rect x=\"{lw}\" y=\"{}\" width=\"{bw:.1}\" height=\"{}\" class=\"b\"/>\
             <text x=\"{}\" y=\"{}\" class=\"v\">{}</text>",
            lw - 6.0,
            y + bh * 0.7,
            esc(label),
            y + 2.0,
            bh - 4.0,
            lw + bw + 6.0,
            y + bh * 0.7,
            esc(&unit(*v))
        );
    }
    s += "</svg></figure>";
    s
}

/// Compute and MPI time per rank, stacked.
fn per_rank(p: &Profile) -> String {
    let (w, lw, bh) = (860.0, 80.0, 14.0);
    let n = p.per_rank.len();
    let h = 50.0 + bh * n as f64;
    let max = p
        .per_rank
        .iter()
        .map(|r| r.compute_s + r.mpi_s)
        .fold(0.0, f64::max)
        .max(1e-12);
    let mut s = String::from(
        "<figure><figcaption>Compute (blue) and MPI (orange) time per rank, from the end of \
         MPI_Init to the start of MPI_Finalize</figcaption>",
    );
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">"
    );
    for (i, r) in p.per_rank.iter().enumerate() {
        let y = 20.0 + bh * i as f64;
        let cw = (w - lw - 140.0) * r.compute_s / max;
        let mw = (w - lw - 140.0) * r.mpi_s / max;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"l\">rank {}</text>\
             <rect x=\"{lw}\" y=\"{}\" width=\"{cw:.1}\" height=\"{}\" class=\"c\"/>\
             <rect x=\"{:.1}\" y=\"{}\" width=\"{mw:.1}\" height=\"{}\" class=\"m\"/>\
             <text x=\"{:.1}\" y=\"{}\" class=\"v\">{:.0}% MPI</text>",
            lw - 6.0,
            y + bh * 0.75,
            r.rank,
            y + 1.0,
            bh - 2.0,
            lw + cw,
            y + 1.0,
            bh - 2.0,
            lw + cw + mw + 6.0,
            y + bh * 0.75,
            r.mpi_pct
        );
    }
    s += "</svg></figure>";
    s
}

/// The callsites across ranks: totals, and the time per rank (min, mean, max, COV over
/// the ranks that called there).
fn callsites(p: &Profile) -> String {
    let mut s = String::from(
        "<h2>Callsites</h2><p>Time per rank over the ranks that called there; COV: standard \
         deviation over mean.</p><table><tr><th>Location</th><th>Function</th><th>Ranks</th>\
         <th>Calls</th><th>Time</th><th>Mean</th><th>Min per rank</th><th>Mean per rank</th>\
         <th>Max per rank</th><th>COV</th></tr>",
    );
    for c in p.callsites.iter().take(40) {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{:.3}</td></tr>",
            esc(c.location.as_deref().unwrap_or("?")),
            esc(&c.function),
            c.ranks,
            c.count,
            secs(c.time_s),
            secs(c.mean_s),
            secs(c.rank_min_s),
            secs(c.rank_mean_s),
            secs(c.rank_max_s),
            c.rank_cov
        );
    }
    s += "</table>";
    s
}

/// Messages by size class, point-to-point and collective.
fn message_sizes(p: &Profile) -> String {
    if p.message_sizes.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h2>Message sizes</h2><p>Point-to-point: messages sent; collective: calls by buffer \
         size.</p><table><tr><th>From</th><th>Point-to-point</th><th>Collective</th></tr>",
    );
    for b in &p.message_sizes {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&b.label),
            b.p2p,
            b.collective
        );
    }
    s += "</table>";
    s
}

/// The ranks: wall time, application time (end of MPI_Init to start of MPI_Finalize) and
/// MPI and compute time within it, MPI_Init and MPI_Finalize apart; the sums.
fn ranks_table(p: &Profile) -> String {
    let mut s = String::from(
        "<h2>Ranks</h2><p>App: from the end of MPI_Init to the start of MPI_Finalize; MPI, \
         compute and MPI% are within it.</p><table><tr><th>Rank</th><th>Host</th><th>Wall</th>\
         <th>App</th><th>MPI</th><th>Compute</th><th>MPI%</th><th>MPI_Init</th>\
         <th>MPI_Finalize</th><th>Granularity</th><th>Burst harmonic mean</th></tr>",
    );
    for r in &p.per_rank {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{:.1}%</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td></tr>",
            r.rank,
            esc(&r.host),
            secs(r.wall_s),
            secs(r.app_s),
            secs(r.mpi_s),
            secs(r.compute_s),
            r.mpi_pct,
            secs(r.init_s),
            secs(r.finalize_s),
            r.granularity,
            secs(r.burst_harmonic_mean_s)
        );
    }
    let t = &p.totals;
    let _ = write!(
        s,
        "<tr><td>all</td><td></td><td></td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td>\
         <td>{}</td><td>{}</td><td></td><td></td></tr></table>",
        secs(t.app_s),
        secs(t.mpi_s),
        secs(t.compute_s),
        t.mpi_pct,
        secs(t.init_s),
        secs(t.finalize_s)
    );
    s
}

/// Burst histogram: vertical bars over log-scale buckets.
fn burst_histogram(p: &Profile) -> String {
    let b = &p.bursts.histogram;
    if b.is_empty() {
        return String::new();
    }
    // Regroup by power of two for a readable axis.
    let pow_of = |from: u64| {
        if from == 0 {
            0
        } else {
            63 - u64::from(from.leading_zeros())
        }
    };
    let (lo, hi) = (pow_of(b[0].from), pow_of(b[b.len() - 1].from));
    let mut by_pow: Vec<(u64, u64)> = (lo..=hi).map(|p| (p, 0)).collect();
    for x in b {
        by_pow[(pow_of(x.from) - lo) as usize].1 += x.count;
    }
    let (w, h, pad) = (860.0, 240.0, 40.0);
    let max = by_pow.iter().map(|x| x.1).max().unwrap_or(1) as f64;
    let bw = (w - 2.0 * pad) / by_pow.len() as f64;
    let mut s = format!(
        "<figure><figcaption>Compute bursts between MPI calls: {} bursts, harmonic mean {}, median {}</figcaption>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">",
        p.bursts.count,
        secs(p.bursts.harmonic_mean_s),
        secs(p.bursts.median_s)
    );
    for (i, (pow, c)) in by_pow.iter().enumerate() {
        let bh = (h - 2.0 * pad) * (1.0 + *c as f64).log10() / (1.0 + max).log10().max(1e-9);
        let x = pad + bw * i as f64;
        let _ = write!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" class=\"b\"><title>{c} bursts from {}</title></rect>",
            h - pad - bh,
            (bw - 2.0).max(1.0),
            secs((1u64 << pow) as f64 * 1e-9)
        );
        if i % 2 == 0 {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{}\" class=\"t\">{}</text>",
                x,
                h - pad + 14.0,
                secs((1u64 << pow) as f64 * 1e-9)
            );
        }
    }
    s += "</svg></figure>";
    s
}

/// One rank x rank heat map of `cells` (`(from, to, messages, bytes)`), sender in rows,
/// shaded in `rgb` on a log scale of bytes.
fn heatmap(caption: &str, n: usize, cells: &[(u32, u32, u64, u64)], rgb: (u8, u8, u8)) -> String {
    if cells.is_empty() || n == 0 || n > 256 {
        return String::new();
    }
    let cell = (640.0 / n as f64).clamp(2.0, 40.0);
    let size = cell * n as f64 + 60.0;
    let max = cells.iter().map(|c| c.3).max().unwrap_or(1).max(1) as f64;
    let mut s = format!(
        "<figure><figcaption>{}</figcaption>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{size}\" role=\"img\">\
         <rect x=\"40\" y=\"20\" width=\"{}\" height=\"{}\" class=\"g\"/>",
        esc(caption),
        cell * n as f64,
        cell * n as f64
    );
    for &(from, to, messages, bytes) in cells {
        let level = ((1.0 + bytes as f64).ln() / (1.0 + max).ln()).clamp(0.05, 1.0);
        let _ = write!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{cell:.1}\" height=\"{cell:.1}\" fill=\"rgb({},{},{})\" fill-opacity=\"{level:.3}\"><title>{from} -> {to}: {messages} messages, {bytes} bytes</title></rect>",
            40.0 + cell * f64::from(to),
            20.0 + cell * f64::from(from),
            rgb.0,
            rgb.1,
            rgb.2,
        );
    }
    s += "</svg></figure>";
    s
}

/// The communication matrices as heat maps (up to 256 ranks): point-to-point (blue),
/// collective (green) and both (purple) when [`crate::matrix`] was computed, else the
/// point-to-point pairs of the profile.
fn matrix(r: &Report) -> String {
    let p = &r.profile;
    let n = p.ranks as usize;
    let Some(m) = &r.matrix else {
        let cells: Vec<_> = p
            .p2p
            .iter()
            .map(|t| (t.from, t.to, t.messages, t.bytes))
            .collect();
        return heatmap(
            "Point-to-point bytes, sender (row) to receiver (column); darker is more",
            n,
            &cells,
            P2P_RGB,
        );
    };
    let mut s = heatmap(
        "Point-to-point bytes, sender (row) to receiver (column); darker is more",
        n,
        &m.p2p.cells(),
        P2P_RGB,
    );
    s += &heatmap(
        "Collective bytes by MPI semantics (bcast root to members, gather members to root, \
         alltoall i to j, allreduce each to each), sender (row) to receiver (column)",
        n,
        &m.collective.cells(),
        COLLECTIVE_RGB,
    );
    s += &heatmap(
        "All bytes (point-to-point and collective), sender (row) to receiver (column)",
        n,
        &m.total.cells(),
        TOTAL_RGB,
    );
    s
}

/// Colour of the point-to-point heat map.
pub const P2P_RGB: (u8, u8, u8) = (8, 48, 107);
/// Colour of the collective heat map.
pub const COLLECTIVE_RGB: (u8, u8, u8) = (0, 109, 44);
/// Colour of the heat map of both.
pub const TOTAL_RGB: (u8, u8, u8) = (84, 39, 143);

/// The page's head (title, style) and its heading.
fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"mpiscope\"><title>{t}</title><style>\
         body{{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}}\
         table{{border-collapse:collapse;font-size:13px}}td,th{{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}}\
         td:first-child,th:first-child{{text-align:left}}figure{{margin:16px 0}}figcaption{{font-weight:bold;margin-bottom:4px}}\
         .l,.v,.t{{font-size:11px;fill:#222}}.b{{fill:#4878a8}}.c{{fill:#4878a8}}.m{{fill:#e08030}}.g{{fill:#f4f4f4}}\
         pre{{font-size:12px;background:#f6f6f6;padding:8px;overflow-x:auto}}</style></head><body>\
         <h1>{t}</h1>",
        t = esc(title)
    )
}

/// The whole report as one HTML page.
pub fn report(
    title: &str,
    r: &Report,
    structure: Option<&Structure>,
    timeline: Option<&Timeline>,
) -> String {
    let p = &r.profile;
    let mut s = page_start(title);
    let _ = write!(s, "<p>{} ranks, {} recorded events.</p>", p.ranks, p.events);
    let mut by_count: Vec<(String, f64)> = p
        .calls
        .iter()
        .map(|(n, c)| (n.clone(), c.count as f64))
        .collect();
    by_count.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_count.truncate(30);
    s += &bars("Calls per function (log scale)", &by_count, true, &|v| {
        format!("{v:.0}")
    });
    let mut by_time: Vec<(String, f64)> =
        p.calls.iter().map(|(n, c)| (n.clone(), c.time_s)).collect();
    by_time.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_time.truncate(30);
    s += &bars("Time in each function, all ranks", &by_time, false, &secs);
    s += &per_rank(p);
    s += &burst_histogram(p);
    s += &matrix(r);
    if let Some(t) = timeline {
        s += &timeline_figure(t);
    }
    // Tables.
    s += "<h2>Functions</h2><table><tr><th>Function</th><th>Calls</th><th>Time</th><th>Mean</th><th>Median</th><th>p99</th><th>Max</th><th>Bytes</th></tr>";
    let mut rows: Vec<_> = p.calls.iter().collect();
    rows.sort_by(|a, b| b.1.time_s.total_cmp(&a.1.time_s));
    for (n, c) in rows {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(n),
            c.count,
            secs(c.time_s),
            secs(c.mean_s),
            secs(c.median_s),
            secs(c.p99_s),
            secs(c.max_s),
            c.bytes
        );
    }
    let _ = write!(
        s,
        "</table><p>Median and p99 come from log histograms: within {:.2}% of the exact value, \
         never outside [min, max].</p>",
        100.0 * p.percentile_rel_error
    );
    s += &callsites(p);
    s += &message_sizes(p);
    s += &ranks_table(p);
    if let Some(st) = structure {
        let text = st.to_text();
        // Long structures (irregular polling loops) are cut: the full text is `mpiscope
        // structure`'s.
        let mut cut: String = text.lines().take(400).collect::<Vec<_>>().join("\n");
        if text.lines().count() > 400 {
            cut += "\n... (mpiscope structure prints the rest)";
        }
        let _ = write!(s, "<h2>Loop structure</h2><pre>{}</pre>", esc(&cut));
    }
    for w in &p.warnings {
        let _ = write!(s, "<p class=\"warning\">warning: {}</p>", esc(w));
    }
    s += "</body></html>\n";
    s
}

/// Colours of the curves of the scaling page, in series order.
pub const CURVE_RGB: [(u8, u8, u8); 8] = [
    (72, 120, 168),
    (224, 128, 48),
    (0, 109, 44),
    (84, 39, 143),
    (200, 40, 40),
    (110, 110, 110),
    (160, 120, 0),
    (0, 150, 170),
];

/// One labelled series of a curve figure: a value per run (`None` where it has none).
type Series = (String, Vec<Option<f64>>);

/// A line chart of `series` against the rank counts `xs` (spaced on a log2 scale); `log`
/// draws the values on a log10 scale (non-positive values are left out).
fn curves(
    caption: &str,
    xs: &[u32],
    series: &[Series],
    log: bool,
    unit: &dyn Fn(f64) -> String,
) -> String {
    let (w, h, left, right, top, bottom) = (860.0, 300.0, 80.0, 220.0, 20.0, 40.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let shown = |v: f64| v.is_finite() && (!log || v > 0.0);
    let values: Vec<f64> = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied())
        .filter(|&v| shown(v))
        .collect();
    if xs.is_empty() || values.is_empty() {
        return String::new();
    }
    let f = |v: f64| if log { v.log10() } else { v };
    let (mut lo, mut hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(f(v)), b.max(f(v)))
        });
    if !log {
        lo = lo.min(0.0);
    }
    if hi - lo < 1e-12 {
        hi = lo + 1.0;
        if log {
            lo -= 0.5;
            hi -= 0.5;
        }
    }
    let lx = |r: u32| f64::from(r.max(1)).log2();
    let (x0, x1) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &r| {
            (a.min(lx(r)), b.max(lx(r)))
        });
    let px = |r: u32| {
        if x1 > x0 {
            left + pw * (lx(r) - x0) / (x1 - x0)
        } else {
            left + pw / 2.0
        }
    };
    let py = |v: f64| top + ph * (1.0 - (f(v) - lo) / (hi - lo));
    let back = |t: f64| if log { 10f64.powf(t) } else { t };
    let mut s = format!(
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">\
         <rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" class=\"g\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"t\">{}</text>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"t\">{}</text>",
        esc(caption),
        left - 6.0,
        top + 10.0,
        esc(&unit(back(hi))),
        left - 6.0,
        top + ph,
        esc(&unit(back(lo))),
    );
    for &r in xs {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" class=\"t\">{r} ranks</text>",
            px(r),
            h - bottom + 16.0
        );
    }
    for (i, (label, v)) in series.iter().enumerate() {
        let (cr, cg, cb) = CURVE_RGB[i % CURVE_RGB.len()];
        let colour = format!("rgb({cr},{cg},{cb})");
        let points: Vec<(u32, f64)> = xs
            .iter()
            .zip(v)
            .filter_map(|(&r, v)| v.filter(|&v| shown(v)).map(|v| (r, v)))
            .collect();
        let line: Vec<String> = points
            .iter()
            .map(|&(r, v)| format!("{:.1},{:.1}", px(r), py(v)))
            .collect();
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"3\"/>",
            line.join(" ")
        );
        for &(r, v) in &points {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{colour}\"><title>{} at {r} ranks: {}</title></circle>",
                px(r),
                py(v),
                esc(label),
                esc(&unit(v))
            );
        }
        let ly = top + 16.0 * i as f64;
        let _ = write!(
            s,
            "<rect x=\"{}\" y=\"{ly}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{}\" class=\"l\">{}</text>",
            w - right + 16.0,
            w - right + 34.0,
            ly + 10.0,
            esc(label)
        );
    }
    s += "</svg></figure>";
    s
}

/// The scaling page of `mpiscope compare --html` ([Polivanov 2012]'s Figure 4): a table of the
/// runs, then curves against the rank count of the compute bursts' harmonic mean and mean,
/// the calls per rank and the bytes per call of the busiest functions, and the MPI time
/// fraction.
pub fn scaling(title: &str, c: &Comparison) -> String {
    let mut s = page_start(title);
    s += "<table><tr><th>Run</th><th>Ranks</th><th>Wall</th><th>MPI</th><th>Bursts per rank</th><th>Burst mean</th><th>Burst harmonic mean</th></tr>";
    for r in &c.runs {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td><td>{:.0}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.run),
            r.ranks,
            secs(r.wall_s),
            100.0 * r.mpi_fraction,
            r.bursts_per_rank,
            secs(r.burst_mean_s),
            secs(r.burst_harmonic_mean_s)
        );
    }
    s += "</table>";
    let xs: Vec<u32> = c.runs.iter().map(|r| r.ranks).collect();
    let per_run = |f: &dyn Fn(&RunSummary) -> Option<f64>| -> Vec<Option<f64>> {
        c.runs.iter().map(f).collect()
    };
    s += &curves(
        "Compute bursts between MPI calls: harmonic mean and mean (log scale)",
        &xs,
        &[
            (
                "harmonic mean".into(),
                per_run(&|r| Some(r.burst_harmonic_mean_s)),
            ),
            ("mean".into(), per_run(&|r| Some(r.burst_mean_s))),
        ],
        true,
        &secs,
    );
    let top = c.top_functions(CURVE_RGB.len());
    // One series per busy function that has values in `map` in some run.
    let by_function = |map: &dyn Fn(&RunSummary) -> &BTreeMap<String, f64>| -> Vec<Series> {
        top.iter()
            .filter(|f| c.runs.iter().any(|r| map(r).contains_key(**f)))
            .map(|f| (f.to_string(), per_run(&|r| map(r).get(*f).copied())))
            .collect()
    };
    s += &curves(
        "Calls per rank, busiest functions (log scale)",
        &xs,
        &by_function(&|r| &r.calls_per_rank),
        true,
        &|v| format!("{v:.1}"),
    );
    let bytes = by_function(&|r| &r.bytes_per_call);
    s += &curves("Bytes per call (log scale)", &xs, &bytes, true, &|v| {
        format!("{v:.0} B")
    });
    s += &curves(
        "MPI time over wall time, all ranks",
        &xs,
        &[(
            "MPI time fraction".into(),
            per_run(&|r| Some(100.0 * r.mpi_fraction)),
        )],
        false,
        &|v| format!("{v:.1}%"),
    );
    s += "</body></html>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_and_escaping() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(
            (secs(2.5), secs(0.0025), secs(2.5e-6), secs(2e-9)),
            (
                "2.500 s".into(),
                "2.500 ms".into(),
                "2.500 us".into(),
                "2 ns".into()
            )
        );
        let b = bars(
            "t",
            &[("MPI_Send".into(), 1000.0), ("MPI_Recv".into(), 10.0)],
            true,
            &|v| format!("{v}"),
        );
        assert_eq!(b.matches("<rect").count(), 2);
        assert!(
            b.contains(">MPI_Send<") && b.contains("width=\"510.0\""),
            "{b}"
        );
        let html = report("run <1>", &Report::default(), None, None);
        let t = Timeline {
            from: 1000,
            to: 3000,
            ranks: vec![(0, vec![("MPI_Send".into(), 1000, 2000)]), (1, vec![])],
        };
        let fig = timeline_figure(&t);
        assert!(
            fig.contains("fill=\"#4878a8\"><title>MPI_Send</title>")
                && fig.contains("width=\"390.00\""),
            "{fig}"
        );
        assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<h1>run &lt;1&gt;</h1>"));
    }

    #[test]
    fn scaling_curves() {
        let xs = [2, 4, 8];
        let fig = curves(
            "c",
            &xs,
            &[("a".into(), vec![Some(1.0), Some(10.0), Some(100.0)])],
            true,
            &|v| format!("{v}"),
        );
        // Log2 x, log10 y: the three points lie on the plot's diagonal.
        assert!(
            fig.contains("points=\"80.0,260.0 360.0,140.0 640.0,20.0\""),
            "{fig}"
        );
        assert_eq!(fig.matches("<circle").count(), 3);
        // A missing or non-positive value on a log scale is left out.
        let gap = curves(
            "c",
            &xs,
            &[("a".into(), vec![Some(1.0), None, Some(0.0)])],
            true,
            &|v| format!("{v}"),
        );
        assert_eq!(gap.matches("<circle").count(), 1);
        assert!(curves("c", &xs, &[], true, &|v| format!("{v}")).is_empty());
        let c = Comparison {
            runs: vec![
                RunSummary {
                    ranks: 2,
                    mpi_fraction: 0.5,
                    ..RunSummary::default()
                },
                RunSummary {
                    ranks: 4,
                    mpi_fraction: 0.25,
                    ..RunSummary::default()
                },
            ],
        };
        let page = scaling("s", &c);
        assert!(
            page.contains("MPI time fraction at 4 ranks: 25.0%"),
            "{page}"
        );
    }
}
