//! What a simulation tells a user: the makespan, where each rank's time went, the busiest
//! links, the energy, and optionally a timeline for Perfetto.

use std::io::Write;

use serde::Serialize;

use crate::platform::Platform;
use crate::result::{SimResult, Span};

/// A link's load.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkLoad {
    /// Link name.
    pub link: String,
    /// Bytes carried.
    pub bytes: f64,
    /// Bytes carried / (bandwidth × makespan).
    pub utilization: f64,
}

/// Per-rank summary.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankSummary {
    /// Rank.
    pub rank: u32,
    /// Host it ran on.
    pub host: String,
    /// When it finished, seconds.
    pub end_s: f64,
    /// Computing, seconds.
    pub compute_s: f64,
    /// In MPI while its messages moved, seconds.
    pub comm_s: f64,
    /// In MPI waiting for peers, seconds.
    pub wait_s: f64,
}

/// A callsite's share of MPI time.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallsiteSummary {
    /// Callsite id (from the trace; 0 unknown).
    pub callsite: u32,
    /// MPI calls made there, all ranks (one per traced call).
    pub calls: u64,
    /// MPI actions simulated for those calls (a `Sendrecv` is a send, a receive and a wait).
    pub actions: u64,
    /// Seconds spent blocked in them, summed over ranks.
    pub seconds: f64,
    /// The rank with the largest mean time per call here.
    pub slowest_rank: u32,
    /// That rank's mean seconds per call.
    pub slowest_rank_mean_s: f64,
    /// The MPI function called there, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    /// The message size (bytes), when callsites are split by size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Where it is (`file:line`, or object file and offset), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// The summary of a simulation.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Simulated time of the whole run, seconds.
    pub makespan_s: f64,
    /// Ranks.
    pub ranks: u32,
    /// Per rank.
    pub per_rank: Vec<RankSummary>,
    /// Busiest links first (at most 20).
    pub top_links: Vec<LinkLoad>,
    /// Callsites by MPI time, largest first.
    pub callsites: Vec<CallsiteSummary>,
    /// Energy of the hosts used, joules (idle power over the makespan plus dynamic power
    /// while computing).
    pub energy_j: f64,
    /// Actions executed.
    pub actions: u64,
    /// Messages.
    pub messages: u64,
    /// Wall-clock time of the simulation, seconds.
    pub wall_s: f64,
    /// Events replayed: the actions of every rank (the same count as `actions`, under the
    /// name replay benchmarks use).
    pub events: u64,
    /// Events replayed per wall-clock second of the simulation (`events / wall_s`; 0 for
    /// no wall time).
    pub events_per_second: f64,
}

impl Report {
    /// Summarizes `result`; `hosts` is the placement of ranks.
    pub fn new(platform: &Platform, result: &SimResult, hosts: &[u32], wall_s: f64) -> Report {
        let makespan = result.makespan_s;
        let per_rank = result
            .ranks
            .iter()
            .enumerate()
            .map(|(i, r)| RankSummary {
                rank: i as u32,
                host: hosts
                    .get(i)
                    .and_then(|&h| platform.hosts.get(h as usize))
                    .map(|h| h.name.clone())
                    .unwrap_or_default(),
                end_s: r.end_s,
                compute_s: r.compute_s,
                comm_s: r.comm_s,
                wait_s: r.wait_s,
            })
            .collect();
        let mut top_links: Vec<LinkLoad> = result
            .link_bytes
            .iter()
            .filter_map(|&(l, b)| {
                let link = platform.links.get(l as usize)?;
                Some(LinkLoad {
                    link: link.name.clone(),
                    bytes: b,
                    utilization: if makespan > 0.0 {
                        b / (link.bandwidth * makespan)
                    } else {
                        0.0
                    },
                })
            })
            .collect();
        top_links.sort_by(|a, b| {
            b.utilization
                .total_cmp(&a.utilization)
                .then(a.link.cmp(&b.link))
        });
        top_links.truncate(20);
        let mut used: Vec<u32> = hosts.to_vec();
        used.sort_unstable();
        used.dedup();
        let energy_j = used
            .iter()
            .filter_map(|&h| {
                let host = platform.hosts.get(h as usize)?;
                let busy = result.host_busy_s.get(h as usize).copied().unwrap_or(0.0);
                Some(host.watts_idle * makespan + (host.watts_max - host.watts_idle) * busy)
            })
            .sum();
        let mut callsites: Vec<CallsiteSummary> = result
            .callsites
            .iter()
            .map(|c| CallsiteSummary {
                callsite: c.callsite,
                calls: c.calls,
                actions: c.actions,
                seconds: c.seconds,
                slowest_rank: c.slowest_rank,
                slowest_rank_mean_s: c.slowest_rank_mean_s,
                function: None,
                bytes: None,
                location: None,
            })
            .collect();
        callsites.sort_by(|a, b| {
            b.seconds
                .total_cmp(&a.seconds)
                .then(a.callsite.cmp(&b.callsite))
        });
        Report {
            makespan_s: makespan,
            ranks: result.ranks.len() as u32,
            per_rank,
            top_links,
            callsites,
            energy_j,
            actions: result.actions,
            messages: result.messages,
            wall_s,
            events: result.actions,
            events_per_second: if wall_s > 0.0 {
                result.actions as f64 / wall_s
            } else {
                0.0
            },
        }
    }

    /// A terminal summary.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "makespan {:.9} s ({} ranks, {} actions, {} messages)",
            self.makespan_s, self.ranks, self.actions, self.messages
        );
        let energy = if self.energy_j > 0.0 {
            format!("{:.3} J", self.energy_j)
        } else {
            "n/a (no host power in the platform)".to_owned()
        };
        let _ = writeln!(
            s,
            "simulated in {:.3} s ({:.0} actions/s); energy {energy}",
            self.wall_s,
            self.actions as f64 / self.wall_s.max(1e-9),
        );
        let n = self.per_rank.len().max(1) as f64;
        let (c, m, w) = self.per_rank.iter().fold((0.0, 0.0, 0.0), |a, r| {
            (a.0 + r.compute_s, a.1 + r.comm_s, a.2 + r.wait_s)
        });
        let _ = writeln!(
            s,
            "mean per rank: compute {:.6} s, communication {:.6} s, waiting {:.6} s",
            c / n,
            m / n,
            w / n
        );
        if self.per_rank.len() <= 32 {
            let _ = writeln!(
                s,
                "\n{:>6} {:<14} {:>12} {:>12} {:>12} {:>12}",
                "rank", "host", "end (s)", "compute", "comm", "wait"
            );
            for r in &self.per_rank {
                let _ = writeln!(
                    s,
                    "{:>6} {:<14} {:>12.6} {:>12.6} {:>12.6} {:>12.6}",
                    r.rank, r.host, r.end_s, r.compute_s, r.comm_s, r.wait_s
                );
            }
        }
        if !self.top_links.is_empty() {
            let _ = writeln!(
                s,
                "\n{:<32} {:>14} {:>12}",
                "busiest links", "bytes", "utilization"
            );
            for l in self.top_links.iter().take(10) {
                let _ = writeln!(
                    s,
                    "{:<32} {:>14.0} {:>11.1}%",
                    l.link,
                    l.bytes,
                    100.0 * l.utilization
                );
            }
        }
        let sites: Vec<&CallsiteSummary> = self
            .callsites
            .iter()
            .filter(|c| c.callsite != 0)
            .take(10)
            .collect();
        if !sites.is_empty() {
            let _ = writeln!(
                s,
                "\n{:>12} {:>12} {:>14} {:>16}  callsite",
                "calls", "actions", "MPI time (s)", "slowest (us/call)"
            );
            for c in sites {
                let mut what = c.function.clone().unwrap_or_default();
                if let Some(b) = c.bytes {
                    what += &format!(" {b} B");
                }
                if !what.is_empty() {
                    what += " at ";
                }
                what += &c
                    .location
                    .clone()
                    .unwrap_or_else(|| format!("#{}", c.callsite));
                let _ = writeln!(
                    s,
                    "{:>12} {:>12} {:>14.6} {:>16.3}  {what}",
                    c.calls,
                    c.actions,
                    c.seconds,
                    c.slowest_rank_mean_s * 1e6,
                );
            }
        }
        s
    }
}

/// Writes a timeline as Chrome trace JSON (open in Perfetto or chrome://tracing), streamed.
/// Each span is named by what the rank did and, when `callsite_name` knows its callsite, by
/// that too (`send (panel broadcast)`); its callsite is in its `args`.
pub fn write_chrome_trace(
    timeline: &[Span],
    callsite_name: &dyn Fn(u32) -> Option<&'static str>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{{\"otherData\":{{\"generator\":\"mpiscope\"}},\"traceEvents\":["
    )?;
    let mut first = true;
    for s in timeline {
        if !first {
            writeln!(out, ",")?;
        }
        first = false;
        let name = match callsite_name(s.callsite) {
            Some(c) => format!("{} ({c})", s.name),
            None => s.name.to_string(),
        };
        write!(
            out,
            "{{\"name\":\"{name}\",\"ph\":\"X\",\"pid\":0,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"callsite\":{}}}}}",
            s.rank,
            s.start_s * 1e6,
            (s.end_s - s.start_s) * 1e6,
            s.callsite
        )?;
    }
    writeln!(out, "\n]}}")
}
