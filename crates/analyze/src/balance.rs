//! Load balance and waiting: who waits on whom, and for how long (Scalasca's wait states,
//! from a trace of an unmodified program), plus a placement hint from the message matrix.
//!
//! * **Imbalance**: `(max / mean - 1) x 100` of the ranks' compute time and of their MPI
//!   time.
//! * **Late sender** and **late receiver**: the time a rank spends blocked in one call on
//!   point-to-point messages (a blocking receive or send, `Sendrecv`, `Wait`, `Waitall`,
//!   `Waitany`, `Waitsome`) before its latest partner was ready, counted once per call and
//!   attributed to that partner: a late sender when it is the matching send that was
//!   called last, a late receiver when it is a receive that was posted last while a
//!   blocking send waited for it ([`crate::waits`] says the rule exactly).
//! * **Collective wait**: in each instance of a blocking collective (the n-th call on a
//!   communicator, on every member), the time each rank spent before the last one arrived,
//!   at most its time in the call.
//! * **Placement**: with `K` ranks per node, the point-to-point bytes that cross nodes with
//!   ranks placed in order (`rank / K`), and with a greedy grouping of the heaviest pairs.
//!
//! Messages are paired with [`crate::messages`]; the whole run's message ends, blocked
//! calls and collective instances are held in memory.

use std::collections::HashMap;

use mpiscope_trace::RunDir;
use serde::Serialize;

use crate::stats::{PairTraffic, RankStats};
pub use crate::waits::WaitOn;
use crate::waits::{Ends, Instance};
use crate::AnalyzeError;

/// Waiting of one rank.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RankWaits {
    /// World rank.
    pub rank: u32,
    /// Blocked in calls that a late sender ended, seconds (each call once).
    pub late_sender_s: f64,
    /// Blocked in calls that a late receiver ended, seconds (each call once).
    pub late_receiver_s: f64,
    /// Waiting in collectives for the last rank to arrive, seconds.
    pub collective_wait_s: f64,
}

/// Waiting in one collective function.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CollectiveWait {
    /// MPI function.
    pub function: String,
    /// Instances (calls on all members counted once).
    pub instances: u64,
    /// Total wait over ranks, seconds.
    pub seconds: f64,
}

/// A placement hint.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Placement {
    /// Ranks per node assumed.
    pub ranks_per_node: u32,
    /// Point-to-point bytes between nodes with ranks in order.
    pub in_order_inter_node_bytes: u64,
    /// The same with the suggested placement.
    pub suggested_inter_node_bytes: u64,
    /// Node of each rank in the suggestion.
    pub node_of_rank: Vec<u32>,
}

/// The balance report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Balance {
    /// `(max / mean - 1) x 100` of compute time per rank.
    pub compute_imbalance_pct: f64,
    /// The same of MPI time.
    pub mpi_imbalance_pct: f64,
    /// Late-sender waiting, all ranks, seconds.
    pub late_sender_s: f64,
    /// Late-receiver waiting, all ranks, seconds.
    pub late_receiver_s: f64,
    /// Collective waiting, all ranks, seconds.
    pub collective_wait_s: f64,
    /// Per rank.
    pub per_rank: Vec<RankWaits>,
    /// The largest waits of one rank on another, most first (at most 20).
    pub waits: Vec<WaitOn>,
    /// Per collective function, most waiting first.
    pub collectives: Vec<CollectiveWait>,
    /// With `--ranks-per-node`.
    pub placement: Option<Placement>,
}

impl Balance {
    /// The balance as terminal text: imbalance and waiting, the largest waits, the
    /// collectives waited in, and the placement suggestion.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\nBalance: compute imbalance {:.1}%, MPI imbalance {:.1}% ((max / mean - 1) over ranks); \
             waiting: late sender {:.6} s, late receiver {:.6} s, in collectives {:.6} s",
            self.compute_imbalance_pct,
            self.mpi_imbalance_pct,
            self.late_sender_s,
            self.late_receiver_s,
            self.collective_wait_s
        );
        for w in self.waits.iter().take(5) {
            let _ = writeln!(
                s,
                "  rank {} waited {:.6} s on rank {} ({}, {} messages)",
                w.waiter, w.seconds, w.on, w.kind, w.messages
            );
        }
        for c in self.collectives.iter().take(5) {
            let _ = writeln!(
                s,
                "  {}: {:.6} s waiting for the last rank over {} calls",
                c.function, c.seconds, c.instances
            );
        }
        if let Some(p) = &self.placement {
            let _ = writeln!(
                s,
                "  placement, {} ranks per node: {} inter-node bytes in rank order, {} with nodes {:?}",
                p.ranks_per_node,
                p.in_order_inter_node_bytes,
                p.suggested_inter_node_bytes,
                p.node_of_rank
            );
        }
        s
    }
}

fn imbalance(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    if v.is_empty() {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let max = v.iter().copied().fold(0.0, f64::max);
    if mean > 0.0 {
        (max / mean - 1.0) * 100.0
    } else {
        0.0
    }
}

/// Computes the balance of `run`; `ranks` and `p2p` come from its profile.
pub fn balance(
    run: &RunDir,
    ranks: &[RankStats],
    p2p: &[PairTraffic],
    ranks_per_node: Option<u32>,
) -> Result<Balance, AnalyzeError> {
    let n = run.ranks() as usize;
    let mut b = Balance {
        compute_imbalance_pct: imbalance(ranks.iter().map(|r| r.compute_s)),
        mpi_imbalance_pct: imbalance(ranks.iter().map(|r| r.mpi_s)),
        per_rank: (0..n as u32)
            .map(|rank| RankWaits {
                rank,
                ..RankWaits::default()
            })
            .collect(),
        ..Balance::default()
    };
    let mut ends = Ends::default();
    for (rank, path) in &run.rank_files {
        ends.read_rank(*rank, path)?;
    }
    // Sums in integer nanoseconds: the result does not depend on hash order.
    let mut late_sender = vec![0u64; n];
    let mut late_receiver = vec![0u64; n];
    let mut in_collectives = vec![0u64; n];
    b.waits = ends.message_waits(&mut late_sender, &mut late_receiver);
    b.collectives = collective_waits(std::mem::take(&mut ends.instances), &mut in_collectives);
    for (r, w) in b.per_rank.iter_mut().enumerate() {
        w.late_sender_s = ns(late_sender[r]);
        w.late_receiver_s = ns(late_receiver[r]);
        w.collective_wait_s = ns(in_collectives[r]);
    }
    b.late_sender_s = ns(late_sender.iter().sum());
    b.late_receiver_s = ns(late_receiver.iter().sum());
    b.collective_wait_s = ns(in_collectives.iter().sum());
    if let Some(k) = ranks_per_node.filter(|&k| k > 0) {
        b.placement = Some(placement(n, k, p2p));
    }
    Ok(b)
}

fn ns(v: u64) -> f64 {
    v as f64 * 1e-9
}

/// The time each member of each collective instance waited for the last one to arrive,
/// added to each rank's total; returns the waits per function, most first.
fn collective_waits(
    instances: HashMap<(u64, u64), Instance>,
    in_collectives: &mut [u64],
) -> Vec<CollectiveWait> {
    let mut by_function: HashMap<String, (u64, u64)> = HashMap::new();
    for (function, calls) in instances.into_values() {
        let last = calls.iter().map(|c| c.1).max().unwrap_or(0);
        let mut total = 0;
        for &(rank, enter, exit) in &calls {
            let wait = last.min(exit).saturating_sub(enter);
            in_collectives[rank as usize] += wait;
            total += wait;
        }
        let e = by_function.entry(function).or_default();
        e.0 += 1;
        e.1 += total;
    }
    let mut waits: Vec<CollectiveWait> = by_function
        .into_iter()
        .map(|(function, (instances, t))| CollectiveWait {
            function,
            instances,
            seconds: ns(t),
        })
        .collect();
    waits.sort_by(|a, c| {
        c.seconds
            .total_cmp(&a.seconds)
            .then(a.function.cmp(&c.function))
    });
    waits
}

/// Inter-node bytes of a placement.
fn inter_node(node: &[u32], p2p: &[PairTraffic]) -> u64 {
    p2p.iter()
        .filter(|t| node.get(t.from as usize) != node.get(t.to as usize))
        .map(|t| t.bytes)
        .sum()
}

/// Greedy placement: heaviest pairs first, groups of at most `k` ranks merged while they
/// fit, then groups packed into nodes of `k` (largest first).
fn placement(n: usize, k: u32, p2p: &[PairTraffic]) -> Placement {
    let k = k as usize;
    let in_order: Vec<u32> = (0..n).map(|r| (r / k) as u32).collect();
    let mut weight: HashMap<(u32, u32), u64> = HashMap::new();
    for t in p2p
        .iter()
        .filter(|t| t.from != t.to && (t.from as usize) < n && (t.to as usize) < n)
    {
        *weight
            .entry((t.from.min(t.to), t.from.max(t.to)))
            .or_default() += t.bytes;
    }
    let mut edges: Vec<((u32, u32), u64)> = weight.into_iter().collect();
    edges.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut group: Vec<usize> = (0..n).collect();
    let mut members: Vec<Vec<u32>> = (0..n as u32).map(|r| vec![r]).collect();
    for ((a, b), _) in edges {
        let (ga, gb) = (group[a as usize], group[b as usize]);
        if ga == gb || members[ga].len() + members[gb].len() > k {
            continue;
        }
        let moved = std::mem::take(&mut members[gb]);
        for &r in &moved {
            group[r as usize] = ga;
        }
        members[ga].extend(moved);
    }
    let mut groups: Vec<Vec<u32>> = members.into_iter().filter(|m| !m.is_empty()).collect();
    groups.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let mut fill: Vec<usize> = Vec::new();
    let mut node = vec![0u32; n];
    for g in groups {
        let slot = match fill.iter().position(|&f| f + g.len() <= k) {
            Some(i) => i,
            None => {
                fill.push(0);
                fill.len() - 1
            }
        };
        fill[slot] += g.len();
        for r in g {
            node[r as usize] = slot as u32;
        }
    }
    let (before, after) = (inter_node(&in_order, p2p), inter_node(&node, p2p));
    // Never suggest worse than the order the ranks already have.
    let (node, after) = if after <= before {
        (node, after)
    } else {
        (in_order, before)
    };
    Placement {
        ranks_per_node: k as u32,
        in_order_inter_node_bytes: before,
        suggested_inter_node_bytes: after,
        node_of_rank: node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(from: u32, to: u32, bytes: u64) -> PairTraffic {
        PairTraffic {
            from,
            to,
            messages: 1,
            bytes,
        }
    }

    #[test]
    fn imbalance_percent() {
        assert_eq!(imbalance([1.0, 1.0].into_iter()), 0.0);
        assert!((imbalance([1.0, 3.0].into_iter()) - 50.0).abs() < 1e-12);
        assert_eq!(imbalance(std::iter::empty()), 0.0);
    }

    #[test]
    fn placement_groups_heavy_pairs() {
        // 0-2 and 1-3 talk: in order (0,1 | 2,3) everything crosses; grouped, nothing does.
        let p2p = [
            t(0, 2, 100),
            t(2, 0, 100),
            t(1, 3, 50),
            t(3, 1, 50),
            t(0, 1, 1),
        ];
        let p = placement(4, 2, &p2p);
        assert_eq!(p.in_order_inter_node_bytes, 300);
        assert_eq!(p.suggested_inter_node_bytes, 1);
        assert_eq!(p.node_of_rank[0], p.node_of_rank[2]);
        assert_eq!(p.node_of_rank[1], p.node_of_rank[3]);
        assert_ne!(p.node_of_rank[0], p.node_of_rank[1]);
        // A ring is already well placed in order: never worse.
        let ring = [t(0, 1, 10), t(1, 2, 10), t(2, 3, 10), t(3, 0, 10)];
        let p = placement(4, 2, &ring);
        assert!(p.suggested_inter_node_bytes <= p.in_order_inter_node_bytes);
    }
}
