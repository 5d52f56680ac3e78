//! The data of the interactive timeline: every rank's MPI calls over the whole run, at the
//! levels of detail a browser can draw for 1,024 ranks and 10 M events.
//!
//! One pass per rank (ranks in parallel, memory independent of the trace length except for
//! what is embedded) gives:
//! * per rank, `buckets` equal slices of the run with the fraction of each spent in MPI and
//!   the function that took most of it: the zoomed-out view, and the aggregate lanes of
//!   groups of ranks (the script builds coarser levels from these);
//! * the calls themselves (start, duration, function) of as many ranks as fit in
//!   `max_spans`, chosen evenly over the ranks (all of them when the run is small): the
//!   zoomed-in view;
//! * the point-to-point messages between those ranks, paired as [`crate::messages`] pairs
//!   them (non-overtaking order), every `stride`-th one when there are more than
//!   `max_messages`: the message lines.
//!
//! What is left out is counted, and the page says so. [`Timeline::html`] writes the section:
//! the controls, the canvas, the legend and the data (base64 of LEB128 varints), read by
//! `timeline.js`.

use std::collections::HashMap;
use std::fmt::Write as _;

use mpiscope_plot::palette;
use mpiscope_plot::svg::esc;
use mpiscope_trace::RunDir;

use crate::messages::{Item, RankWalk};
use crate::profile::Profile;
use crate::AnalyzeError;

/// The timeline's script.
const TIMELINE_JS: &str = include_str!("timeline.js");

/// Function index of "no MPI" in a bucket.
const NONE: u8 = 255;
/// At most this many functions are told apart; the others are "other MPI".
const MAX_FUNCTIONS: usize = 250;

/// How much the timeline embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineOptions {
    /// Calls embedded at full detail, at most.
    pub max_spans: u64,
    /// Message lines embedded, at most.
    pub max_messages: u64,
    /// Slices of the run per rank in the zoomed-out view (0: chosen from the rank count).
    pub buckets: usize,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            max_spans: 2_000_000,
            max_messages: 300_000,
            buckets: 0,
        }
    }
}

/// One rank's calls at full detail: (start relative to the run's start, duration, function).
pub type Spans = Vec<(u64, u64, u8)>;

/// The timeline of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    /// Start of the run (earliest call entry), ns since the run's epoch.
    pub start: u64,
    /// End of the run (latest call exit).
    pub end: u64,
    /// Function names by index (the page's order); index `functions.len()` is "other MPI".
    pub functions: Vec<String>,
    /// World ranks, one lane each, in order.
    pub ranks: Vec<u32>,
    /// Slices per rank.
    pub buckets: usize,
    /// Per rank and slice: the function that took most of it ([`NONE`]: no MPI).
    pub fid: Vec<u8>,
    /// Per rank and slice: the fraction in MPI, 0 to 255.
    pub mpi: Vec<u8>,
    /// Per rank: its calls, when embedded at full detail.
    pub detail: Vec<Option<Spans>>,
    /// Messages between ranks at full detail: (sender, send time, receiver, receive time),
    /// times relative to `start`, by send time.
    pub messages: Vec<(u32, u64, u32, u64)>,
    /// Main-thread calls in the run.
    pub spans_total: u64,
    /// Messages between ranks at full detail, before thinning.
    pub messages_total: u64,
    /// One message in `message_stride` is embedded.
    pub message_stride: u64,
    /// Per rank: seconds in each function (by index, "other MPI" last) on the first thread,
    /// `MPI_Init` and `MPI_Finalize` left out (the per-rank chart's split of MPI time).
    pub per_rank_fn: Vec<Vec<f64>>,
    /// The application time: earliest end of `MPI_Init`, latest start of `MPI_Finalize`
    /// (relative to `start`), when the run has both.
    pub app: Option<(u64, u64)>,
}

/// The page's order of functions: most time first, then most calls, then by name.
pub fn function_order(p: &Profile) -> Vec<String> {
    let mut f: Vec<(&String, &crate::stats::CallStats)> = p.calls.iter().collect();
    f.sort_by(|a, b| {
        b.1.time_s
            .total_cmp(&a.1.time_s)
            .then(b.1.count.cmp(&a.1.count))
            .then(a.0.cmp(b.0))
    });
    f.into_iter().map(|(n, _)| n.clone()).collect()
}

/// What one rank's pass gives.
struct RankPart {
    fid: Vec<u8>,
    mpi: Vec<u8>,
    spans: Option<Spans>,
    spans_total: u64,
    sends: Vec<(u64, u64)>,
    recvs: Vec<(u64, u32, u64)>,
    init_end: Option<u64>,
    fin_start: Option<u64>,
    fn_time: Vec<f64>,
}

/// What every rank's pass shares.
struct Ctx<'a> {
    start: u64,
    end: u64,
    buckets: usize,
    index: HashMap<&'a str, u8>,
    other: u8,
    detail: &'a [bool],
    ranks: &'a HashMap<u32, usize>,
}

/// The ranks embedded at full detail: all when their calls fit in `max`, else evenly
/// spaced ones whose calls fit.
fn detail_ranks(events: &[u64], max: u64) -> Vec<bool> {
    let total: u64 = events.iter().sum();
    if total <= max {
        return vec![true; events.len()];
    }
    let mut out = vec![false; events.len()];
    let stride = total.div_ceil(max.max(1)).max(1) as usize;
    let mut used = 0u64;
    for i in (0..events.len()).step_by(stride) {
        if used + events[i] > max {
            break;
        }
        used += events[i];
        out[i] = true;
    }
    out
}

/// Reads the timeline of `run`, whose report's statistics are `p` (the functions' order,
/// the ranks' event counts and the time range come from them).
pub fn timeline(
    run: &RunDir,
    p: &Profile,
    options: &TimelineOptions,
) -> Result<Timeline, AnalyzeError> {
    let functions: Vec<String> = function_order(p).into_iter().take(MAX_FUNCTIONS).collect();
    let start = p.per_rank.iter().map(|r| r.first_ns).min().unwrap_or(0);
    let end = p
        .per_rank
        .iter()
        .map(|r| r.last_ns)
        .max()
        .unwrap_or(0)
        .max(start + 1);
    let ranks: Vec<u32> = run.rank_files.iter().map(|(r, _)| *r).collect();
    let events: Vec<u64> = ranks
        .iter()
        .map(|r| {
            p.per_rank
                .iter()
                .find(|s| s.rank == *r)
                .map_or(0, |s| s.events)
        })
        .collect();
    let detail = detail_ranks(&events, options.max_spans);
    let buckets = if options.buckets > 0 {
        options.buckets
    } else {
        (2_000_000 / ranks.len().max(1)).clamp(512, 4096)
    };
    let lane: HashMap<u32, usize> = ranks.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let ctx = Ctx {
        start,
        end,
        buckets,
        index: functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.as_str(), i as u8))
            .collect(),
        other: functions.len() as u8,
        detail: &detail,
        ranks: &lane,
    };
    let parts = crate::parallel::per_rank(run, |reader, rank| rank_pass(reader, rank, &ctx));
    let mut t = Timeline {
        start,
        end,
        functions,
        buckets,
        ..Timeline::default()
    };
    let mut sends: HashMap<u64, (u32, u64)> = HashMap::new();
    let mut recvs: Vec<(u64, u32, u64)> = Vec::new();
    for (rank, part) in parts {
        let part = part?;
        t.ranks.push(rank);
        t.fid.extend_from_slice(&part.fid);
        t.mpi.extend_from_slice(&part.mpi);
        t.detail.push(part.spans);
        t.spans_total += part.spans_total;
        t.per_rank_fn.push(part.fn_time);
        sends.extend(part.sends.into_iter().map(|(id, at)| (id, (rank, at))));
        recvs.extend(part.recvs);
        if let (Some(i), Some(f)) = (part.init_end, part.fin_start) {
            let (a, b) = t.app.unwrap_or((u64::MAX, 0));
            t.app = Some((a.min(i), b.max(f)));
        }
    }
    let mut messages: Vec<(u32, u64, u32, u64)> = recvs
        .into_iter()
        .filter_map(|(id, to, tr)| sends.get(&id).map(|&(from, ts)| (from, ts, to, tr)))
        .collect();
    messages.sort_by_key(|m| (m.1, m.0, m.2));
    t.messages_total = messages.len() as u64;
    t.message_stride = t
        .messages_total
        .div_ceil(options.max_messages.max(1))
        .max(1);
    if t.message_stride > 1 {
        let stride = t.message_stride as usize;
        messages = messages.into_iter().step_by(stride).collect();
    }
    t.messages = messages;
    t.app = t.app.filter(|(a, b)| a < b);
    Ok(t)
}

/// One rank's pass: slices, calls when at full detail, message ends.
fn rank_pass(
    mut reader: mpiscope_trace::RankReader<std::io::BufReader<std::fs::File>>,
    rank: u32,
    ctx: &Ctx,
) -> Result<RankPart, AnalyzeError> {
    let nb = ctx.buckets;
    let nf = usize::from(ctx.other) + 1;
    let width = (ctx.end - ctx.start) as f64 / nb as f64;
    let mut acc = vec![0f64; nb * nf];
    let full = ctx.ranks.get(&rank).is_some_and(|&i| ctx.detail[i]);
    let mut spans = full.then(Vec::new);
    let mut part = RankPart {
        fid: Vec::new(),
        mpi: Vec::new(),
        spans: None,
        spans_total: 0,
        sends: Vec::new(),
        recvs: Vec::new(),
        init_end: None,
        fin_start: None,
        fn_time: vec![0.0; nf],
    };
    let mut walk = RankWalk::new(rank);
    let mut items = Vec::new();
    let mut names: HashMap<u32, (String, u8)> = HashMap::new();
    while let Some(ev) = reader.next_event() {
        let (name, f) = names
            .entry(ev.call)
            .or_insert_with(|| {
                let n = reader.tables().call_name(ev.call).into_owned();
                let f = ctx.index.get(n.as_str()).copied().unwrap_or(ctx.other);
                (n, f)
            })
            .clone();
        if full {
            items.clear();
            walk.items(&reader, &name, &ev, &mut items);
            for it in &items {
                match it {
                    Item::Send { key, time, .. } if ctx.ranks.contains_key(&key.to) => {
                        part.sends.push((key.id(), time.saturating_sub(ctx.start)));
                    }
                    Item::Recv { key, time, .. } => {
                        part.recvs
                            .push((key.id(), rank, time.saturating_sub(ctx.start)));
                    }
                    _ => {}
                }
            }
        }
        if ev.thread != 0 {
            continue;
        }
        part.spans_total += 1;
        if name.starts_with("MPI_Init") {
            part.init_end = Some(ev.t_exit.saturating_sub(ctx.start));
        } else if name == "MPI_Finalize" {
            part.fin_start = Some(ev.t_enter.saturating_sub(ctx.start));
        } else {
            part.fn_time[usize::from(f)] += ev.duration() as f64 * 1e-9;
        }
        let (a, b) = (ev.t_enter.max(ctx.start), ev.t_exit.min(ctx.end));
        if let Some(s) = &mut spans {
            if ev.t_enter >= ctx.start && ev.t_enter <= ctx.end {
                s.push((ev.t_enter - ctx.start, b.saturating_sub(a), f));
            }
        }
        if b <= a {
            continue;
        }
        let (x0, x1) = ((a - ctx.start) as f64, (b - ctx.start) as f64);
        let i0 = ((x0 / width) as usize).min(nb - 1);
        let i1 = ((x1 / width) as usize).min(nb - 1);
        for i in i0..=i1 {
            let lo = i as f64 * width;
            let overlap = x1.min(lo + width) - x0.max(lo);
            if overlap > 0.0 {
                acc[i * nf + usize::from(f)] += overlap;
            }
        }
    }
    for i in 0..nb {
        let row = &acc[i * nf..(i + 1) * nf];
        let total: f64 = row.iter().sum();
        let (best, _) = row
            .iter()
            .enumerate()
            .fold((0, 0.0), |b, (k, &v)| if v > b.1 { (k, v) } else { b });
        part.fid.push(if total > 0.0 { best as u8 } else { NONE });
        part.mpi
            .push((255.0 * (total / width).min(1.0)).round() as u8);
    }
    if let Some(s) = &mut spans {
        s.sort_by_key(|x| x.0);
    }
    part.spans = spans;
    Ok(part)
}

/// Appends `v` as an unsigned LEB128 varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Base64 (standard alphabet, padded).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                s.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

impl Timeline {
    /// Calls embedded at full detail.
    pub fn spans_embedded(&self) -> u64 {
        self.detail.iter().flatten().map(|s| s.len() as u64).sum()
    }

    /// The data as JSON for the script (safe inside a `<script>` element).
    fn data_json(&self) -> String {
        let mut detail = serde_json::Map::new();
        for (i, d) in self.detail.iter().enumerate() {
            if let Some(spans) = d {
                let mut b = Vec::with_capacity(spans.len() * 5);
                let mut prev = 0;
                for &(s, dur, f) in spans {
                    varint(&mut b, s - prev);
                    varint(&mut b, dur);
                    varint(&mut b, u64::from(f));
                    prev = s;
                }
                detail.insert(i.to_string(), base64(&b).into());
            }
        }
        let mut m = Vec::with_capacity(self.messages.len() * 8);
        let mut prev = 0;
        for &(from, ts, to, tr) in &self.messages {
            varint(&mut m, u64::from(from));
            varint(&mut m, u64::from(to));
            varint(&mut m, ts - prev);
            // Zigzag: a receive may end before the send starts when clocks disagree.
            let d = tr as i64 - ts as i64;
            varint(&mut m, ((d << 1) ^ (d >> 63)) as u64);
            prev = ts;
        }
        let mut colours: Vec<&str> = (0..self.functions.len()).map(palette::function).collect();
        colours.push(palette::OTHER);
        let mut names = self.functions.clone();
        names.push("other MPI".into());
        let v = serde_json::json!({
            "span_ns": self.end - self.start,
            "functions": names,
            "colours": colours,
            "compute": palette::COMPUTE,
            "ranks": self.ranks,
            "buckets": self.buckets,
            "fid": base64(&self.fid),
            "mpi": base64(&self.mpi),
            "detail": detail,
            "messages": base64(&m),
            "app": self.app.map(|(a, b)| vec![a, b]),
        });
        v.to_string().replace("</", "<\\/")
    }

    /// The section: what is shown and embedded, the controls, the canvas, the legend, the
    /// data and the script.
    pub fn html(&self) -> String {
        let n = self.ranks.len();
        let full = self.detail.iter().filter(|d| d.is_some()).count();
        let mut s = String::from("<h2 id=\"timeline\">Timeline</h2>");
        let _ = write!(
            s,
            "<p>The whole run, {} of MPI calls on the first thread of each rank ({} calls), \
             from the first call's entry to the last call's exit. Each lane is one rank (or, \
             when more ranks are shown than fit, a group of ranks: their mean MPI fraction, in \
             the colour of the function that took most of it). Zoomed out, a pixel shows the \
             fraction of its time spent in MPI (bar height) and the function that took most \
             (colour) over {} slices of the run; zoomed in, every call. Wheel or buttons to \
             zoom, drag to pan, click a lane label to show its ranks, type ranks (<code>0-15,512</code>) \
             to choose lanes. Lines join a message's send (start of the sending call) to its \
             receive (end of the call that completed it).</p>",
            mpiscope_plot::unit::seconds((self.end - self.start) as f64 * 1e-9),
            self.spans_total,
            self.buckets
        );
        let embedded = self.spans_embedded();
        let _ = write!(
            s,
            "<p id=\"tl-embedded\" data-spans-total=\"{}\" data-spans-embedded=\"{embedded}\" \
             data-detail-ranks=\"{full}\" data-messages-total=\"{}\" data-messages-embedded=\"{}\">Embedded: \
             every call of {full} of {n} ranks ({embedded} of {} calls{}); the others at the \
             resolution of the slices; {} of {} messages between those ranks{}.</p>",
            self.spans_total,
            self.messages_total,
            self.messages.len(),
            self.spans_total,
            if full < n {
                ", ranks chosen evenly; the others are drawn from their slices when zoomed in"
            } else {
                ""
            },
            self.messages.len(),
            self.messages_total,
            if self.message_stride > 1 {
                format!(" (every {}th)", self.message_stride)
            } else {
                String::new()
            }
        );
        s += "<div id=\"timeline-box\"><div class=\"controls\">\
              <button id=\"tl-in\">Zoom in</button><button id=\"tl-out\">Zoom out</button>\
              <button id=\"tl-all\">Whole run</button><button id=\"tl-app\">Application time</button> \
              Ranks: <input id=\"tl-ranks\" value=\"all\" size=\"24\"> <button id=\"tl-show\">Show</button> \
              <label><input type=\"checkbox\" id=\"tl-msgs\" checked> message lines</label></div>\
              <canvas id=\"tl-canvas\" width=\"1180\" height=\"200\" data-drawn-spans=\"0\"></canvas>\
              <div id=\"tl-status\"></div><div class=\"legend\">";
        let _ = write!(
            s,
            "<span><i style=\"background:{}\"></i>compute (no MPI call)</span>",
            palette::COMPUTE
        );
        for (i, f) in self
            .functions
            .iter()
            .enumerate()
            .take(palette::FUNCTIONS.len())
        {
            let _ = write!(
                s,
                "<span><i style=\"background:{}\"></i>{}</span>",
                palette::function(i),
                esc(f)
            );
        }
        if self.functions.len() > palette::FUNCTIONS.len() {
            let _ = write!(
                s,
                "<span><i style=\"background:{}\"></i>other MPI</span>",
                palette::OTHER
            );
        }
        s += "<span><i style=\"background:#000;height:2px\"></i>message</span></div></div>";
        let _ = write!(
            s,
            "<script type=\"application/json\" id=\"tl-data\">{}</script><script>{}</script>",
            self.data_json(),
            TIMELINE_JS
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        assert_eq!(base64(b"Man"), "TWFu");
        assert_eq!(base64(b"Ma"), "TWE=");
        assert_eq!(base64(b"M"), "TQ==");
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
    }

    #[test]
    fn detail_fits_the_budget_evenly() {
        assert_eq!(detail_ranks(&[10, 10], 100), [true, true]);
        let d = detail_ranks(&[10; 8], 40);
        assert_eq!(d.iter().filter(|x| **x).count(), 4);
        assert_eq!(d, [true, false, true, false, true, false, true, false]);
    }
}
