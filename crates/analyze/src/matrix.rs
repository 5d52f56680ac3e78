//! The communication matrix: messages and bytes from each world rank (row) to each world
//! rank (column), for point-to-point traffic, for collectives, and both together.
//!
//! Point-to-point cells are the sends the profile counted ([`crate::stats::PairTraffic`]).
//! Collective cells are the *logical* traffic of each call by MPI semantics, between world
//! ranks (communicator ranks are translated with the communicator's member list), counted
//! by the sender only so that every transfer is counted once:
//!
//! | collective | from -> to, bytes |
//! |---|---|
//! | `Bcast` | root -> each other member, the buffer |
//! | `Scatter`, `Scatterv` | root -> member `i`, its block (`sendcounts[i]`) |
//! | `Gather`, `Gatherv`, `Reduce` | each member -> root, its send buffer |
//! | `Allgather`, `Allgatherv` | each member -> each other member, its contribution |
//! | `Alltoall`, `Alltoallv`, `Alltoallw` | `i` -> `j`, the block `i` addresses to `j` |
//! | `Allreduce` | each member -> each other member, the buffer (every contribution reaches every result) |
//! | `Reduce_scatter`, `Reduce_scatter_block` | `i` -> `j`, block `j` of `i`'s buffer |
//! | `Scan`, `Exscan` | `i` -> every `j` after it (communicator rank order), the buffer |
//!
//! Each non-empty transfer is one message. These are data dependences, not the wire traffic
//! of an algorithm (a ring allreduce moves other bytes on other pairs, and what it moves
//! depends on the library's choice: replay on a platform for that). A rank never sends to
//! itself. Non-blocking forms count as their blocking ones; barriers move no data;
//! persistent collectives, neighbourhood collectives and intercommunicators are left out.
//! The matrix is dense (ranks x ranks) and only built up to [`MAX_RANKS`] ranks.

use std::collections::{BTreeMap, HashMap};

use mpiscope_mpispec::Family;
use mpiscope_trace::{CommKind, Event, ListKind, RankReader, RunDir, Slot};
use serde::Serialize;

use crate::stats::PairTraffic;
use crate::window::{RankWindows, Window};
use crate::AnalyzeError;

/// Largest run whose matrix is built (the matrices hold `6 x ranks^2` numbers).
pub const MAX_RANKS: u32 = 1024;

/// Messages and bytes from each rank (row) to each rank (column).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Traffic {
    /// `messages[from][to]`.
    pub messages: Vec<Vec<u64>>,
    /// `bytes[from][to]`.
    pub bytes: Vec<Vec<u64>>,
}

impl Traffic {
    /// All zero, `n x n`.
    pub fn zero(n: usize) -> Traffic {
        Traffic {
            messages: vec![vec![0; n]; n],
            bytes: vec![vec![0; n]; n],
        }
    }

    /// Number of ranks.
    pub fn ranks(&self) -> usize {
        self.bytes.len()
    }

    /// Total bytes.
    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().flatten().sum()
    }

    /// Total messages.
    pub fn total_messages(&self) -> u64 {
        self.messages.iter().flatten().sum()
    }

    /// Cell-wise sum of two matrices of the same size.
    pub fn plus(&self, other: &Traffic) -> Traffic {
        let add = |a: &Vec<Vec<u64>>, b: &Vec<Vec<u64>>| -> Vec<Vec<u64>> {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.iter().zip(y).map(|(u, v)| u + v).collect())
                .collect()
        };
        Traffic {
            messages: add(&self.messages, &other.messages),
            bytes: add(&self.bytes, &other.bytes),
        }
    }

    /// The non-empty cells as `(from, to, messages, bytes)`, row by row.
    pub fn cells(&self) -> Vec<(u32, u32, u64, u64)> {
        let mut v = Vec::new();
        for (i, row) in self.bytes.iter().enumerate() {
            for (j, &b) in row.iter().enumerate() {
                let m = self.messages[i][j];
                if m > 0 || b > 0 {
                    v.push((i as u32, j as u32, m, b));
                }
            }
        }
        v
    }
}

/// Collective traffic of one MPI function, summed over the run.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct FunctionTraffic {
    /// Transfers.
    pub messages: u64,
    /// Bytes.
    pub bytes: u64,
}

/// The communication matrices of a run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Matrix {
    /// Number of ranks (rows and columns).
    pub ranks: u32,
    /// Point-to-point sends.
    pub p2p: Traffic,
    /// Collectives, by the semantics in the module documentation.
    pub collective: Traffic,
    /// Both.
    pub total: Traffic,
    /// Collective traffic per function (C name).
    pub collective_by_function: BTreeMap<String, FunctionTraffic>,
}

fn pos(v: Option<i64>) -> u64 {
    v.filter(|&b| b > 0).unwrap_or(0) as u64
}

/// Per-peer byte counts from a counts list times a datatype size (one size, or a list of
/// per-peer sizes).
fn per_peer(counts: Option<&[i64]>, size: u64, sizes: Option<&[i64]>) -> Option<Vec<u64>> {
    let counts = counts?;
    Some(
        counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let s = match sizes {
                    Some(s) => pos(s.get(i).copied()),
                    None => size,
                };
                pos(Some(c)) * s
            })
            .collect(),
    )
}

/// Calls `send(to, bytes)` for every transfer that the collective call `ev` (of `family`)
/// made by world rank `me` sends, by the semantics of the module documentation. `members`
/// are the communicator's world ranks in communicator rank order. Transfers to `me` itself
/// and empty ones are not reported.
pub fn collective_sends(
    family: Family,
    ev: &Event,
    me: u32,
    members: &[u32],
    mut send: impl FnMut(u32, u64),
) {
    let a = &ev.args;
    let Some(my) = members.iter().position(|&m| m == me) else {
        return;
    };
    let mut to = |peer: u32, bytes: u64| {
        if peer != me && bytes > 0 {
            send(peer, bytes);
        }
    };
    let root = a
        .get(Slot::Root)
        .filter(|&r| r >= 0)
        .map(|r| r as u32)
        .filter(|r| members.contains(r));
    let bytes = pos(a.get(Slot::Bytes));
    let dtsize = pos(a.get(Slot::DtypeSize));
    let rdtsize = pos(a.get(Slot::RecvDtypeSize));
    // With MPI_IN_PLACE the send side is not recorded: the receive side says the same.
    let send_or_recv = if bytes > 0 {
        bytes
    } else {
        pos(a.get(Slot::RecvBytes))
    };
    let mut each = |sizes: &[u64]| {
        for (&m, &b) in members.iter().zip(sizes) {
            to(m, b);
        }
    };
    match family {
        Family::Bcast | Family::Scatter if root == Some(me) => {
            each(&vec![bytes; members.len()]);
        }
        Family::Scatterv if root == Some(me) => {
            if let Some(v) = per_peer(ev.list(ListKind::SendCounts), dtsize, None) {
                each(&v);
            }
        }
        Family::Gather | Family::Gatherv | Family::Reduce => {
            if let Some(r) = root {
                to(r, bytes);
            }
        }
        Family::Allgather | Family::Alltoall | Family::Allreduce => {
            each(&vec![send_or_recv; members.len()])
        }
        Family::Allgatherv => {
            let mine = if bytes > 0 {
                bytes
            } else {
                per_peer(ev.list(ListKind::RecvCounts), rdtsize, None)
                    .and_then(|v| v.get(my).copied())
                    .unwrap_or(0)
            };
            each(&vec![mine; members.len()]);
        }
        Family::Alltoallv => {
            let v = per_peer(ev.list(ListKind::SendCounts), dtsize, None)
                .or_else(|| per_peer(ev.list(ListKind::RecvCounts), rdtsize, None));
            if let Some(v) = v {
                each(&v);
            }
        }
        Family::Alltoallw => {
            let v = per_peer(
                ev.list(ListKind::SendCounts),
                0,
                ev.list(ListKind::SendTypeSizes),
            )
            .or_else(|| {
                per_peer(
                    ev.list(ListKind::RecvCounts),
                    0,
                    ev.list(ListKind::RecvTypeSizes),
                )
            });
            if let Some(v) = v {
                each(&v);
            }
        }
        Family::ReduceScatterBlock => each(&vec![pos(a.get(Slot::RecvBytes)); members.len()]),
        Family::ReduceScatter => {
            if let Some(v) = per_peer(ev.list(ListKind::RecvCounts), dtsize, None) {
                each(&v);
            }
        }
        Family::Scan | Family::Exscan => {
            for &m in &members[my + 1..] {
                to(m, send_or_recv);
            }
        }
        _ => {}
    }
}

/// One rank's row of the collective matrix, and its per-function totals.
struct Row {
    rank: u32,
    row: Vec<(u64, u64)>,
    by_function: HashMap<String, FunctionTraffic>,
}

/// How a call id is handled: its C name and family, or `None` when it is not a collective
/// the matrix counts.
type Kind = Option<(String, Family)>;

fn rank_row<R: std::io::Read>(
    mut reader: RankReader<R>,
    rank: u32,
    n: usize,
    window: &Window,
) -> Row {
    let mut r = Row {
        rank,
        row: vec![(0, 0); n],
        by_function: HashMap::new(),
    };
    let mut kinds: HashMap<u32, Kind> = HashMap::new();
    let mut world: Vec<u32> = Vec::new();
    while let Some((ev, tables)) = reader.next_with_tables() {
        let kind = kinds.entry(ev.call).or_insert_with(|| {
            let name = tables.call_name(ev.call).into_owned();
            let c = mpiscope_mpispec::classify(&name);
            let counted =
                mpiscope_mpispec::is_collective(&name) && !c.persistent && !c.family.is_neighbor();
            counted.then_some((name, c.family))
        });
        let Some((name, family)) = kind else { continue };
        if !window.contains(ev.t_enter) {
            continue;
        }
        let Some(comm) = ev
            .args
            .get(Slot::Comm)
            .and_then(|c| tables.comms.get(&(c as u32)))
        else {
            continue;
        };
        let members: &[u32] = match comm.kind {
            CommKind::World => {
                if world.len() != comm.size as usize {
                    world = (0..comm.size).collect();
                }
                &world
            }
            CommKind::Intra | CommKind::Own => &comm.ranks,
            CommKind::Inter => continue,
        };
        let row = &mut r.row;
        let mut f = FunctionTraffic::default();
        collective_sends(*family, ev, rank, members, |to, b| {
            if let Some(c) = row.get_mut(to as usize) {
                c.0 += 1;
                c.1 += b;
                f.messages += 1;
                f.bytes += b;
            }
        });
        if f.messages > 0 {
            let e = r.by_function.entry(name.clone()).or_default();
            e.messages += f.messages;
            e.bytes += f.bytes;
        }
    }
    r
}

/// Builds the matrices of `run` from its point-to-point pairs (from the profile of the same
/// window) and a pass over every rank's collectives, ranks read on all cores. `None` above
/// [`MAX_RANKS`] ranks.
pub fn matrix(
    run: &RunDir,
    p2p: &[PairTraffic],
    window: &Window,
) -> Result<Option<Matrix>, AnalyzeError> {
    matrix_in(run, p2p, &RankWindows::same(*window))
}

/// As [`matrix`], each rank's collectives counted within its own window (a phase's).
pub fn matrix_in(
    run: &RunDir,
    p2p: &[PairTraffic],
    windows: &RankWindows,
) -> Result<Option<Matrix>, AnalyzeError> {
    let ranks = run.ranks();
    if ranks == 0 || ranks > MAX_RANKS {
        return Ok(None);
    }
    let n = ranks as usize;
    let rows =
        crate::parallel::per_rank(run, |rd, rank| Ok(rank_row(rd, rank, n, &windows.of(rank))));
    let mut m = Matrix {
        ranks,
        p2p: Traffic::zero(n),
        collective: Traffic::zero(n),
        ..Matrix::default()
    };
    for t in p2p {
        if (t.from as usize) < n && (t.to as usize) < n {
            m.p2p.messages[t.from as usize][t.to as usize] += t.messages;
            m.p2p.bytes[t.from as usize][t.to as usize] += t.bytes;
        }
    }
    for (_, r) in rows {
        let r = r?;
        let Some(i) = Some(r.rank as usize).filter(|&i| i < n) else {
            continue;
        };
        for (j, (msgs, bytes)) in r.row.into_iter().enumerate() {
            m.collective.messages[i][j] += msgs;
            m.collective.bytes[i][j] += bytes;
        }
        for (name, f) in r.by_function {
            let e = m.collective_by_function.entry(name).or_default();
            e.messages += f.messages;
            e.bytes += f.bytes;
        }
    }
    m.total = m.p2p.plus(&m.collective);
    Ok(Some(m))
}

/// At most this many ranks get the matrices printed in the text report.
const TEXT_RANKS: usize = 16;

fn short_bytes(b: u64) -> String {
    const U: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b}")
    } else if v < 10.0 {
        format!("{v:.1}{}", U[i])
    } else {
        format!("{v:.0}{}", U[i])
    }
}

fn table(s: &mut String, title: &str, t: &Traffic) {
    use std::fmt::Write;
    let _ = writeln!(s, "\n{title}, bytes (row sends to column):");
    let _ = write!(s, "{:>8}", "");
    for j in 0..t.ranks() {
        let _ = write!(s, " {j:>7}");
    }
    let _ = writeln!(s);
    for (i, row) in t.bytes.iter().enumerate() {
        let _ = write!(s, "{i:>8}");
        for &b in row {
            let _ = write!(
                s,
                " {:>7}",
                if b == 0 { ".".into() } else { short_bytes(b) }
            );
        }
        let _ = writeln!(s);
    }
}

impl Matrix {
    /// Totals, the collective traffic per function and, up to 16 ranks, the collective and
    /// total byte matrices as tables.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\nCommunication matrix: point-to-point {} messages {} bytes, collective (logical) {} transfers {} bytes",
            self.p2p.total_messages(),
            self.p2p.total_bytes(),
            self.collective.total_messages(),
            self.collective.total_bytes()
        );
        let mut f: Vec<_> = self.collective_by_function.iter().collect();
        f.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(b.0)));
        for (name, t) in f {
            let _ = writeln!(
                s,
                "  {name:<26} {:>10} transfers {:>14} bytes",
                t.messages, t.bytes
            );
        }
        if (self.ranks as usize) <= TEXT_RANKS {
            if self.collective.total_bytes() > 0 {
                table(&mut s, "Collective", &self.collective);
            }
            table(&mut s, "Point-to-point and collective", &self.total);
        } else {
            let _ = writeln!(s, "  (rank x rank matrices in --json and --html)");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::event as ev;

    fn sends(family: &str, e: &Event, me: u32, members: &[u32]) -> Vec<(u32, u64)> {
        let mut v = Vec::new();
        collective_sends(Family::from_name(family), e, me, members, |to, b| {
            v.push((to, b))
        });
        v
    }

    #[test]
    fn rooted() {
        let members = [5, 2, 7];
        let b = ev(&[(Slot::Bytes, 40), (Slot::Root, 2)], &[]);
        assert_eq!(sends("bcast", &b, 2, &members), vec![(5, 40), (7, 40)]);
        assert!(sends("bcast", &b, 5, &members).is_empty());
        assert_eq!(sends("reduce", &b, 7, &members), vec![(2, 40)]);
        assert!(sends("gather", &b, 2, &members).is_empty());
        // A root outside the communicator is ignored.
        let out = ev(&[(Slot::Bytes, 40), (Slot::Root, 9)], &[]);
        assert!(sends("gather", &out, 7, &members).is_empty());
        let sv = ev(
            &[(Slot::DtypeSize, 4), (Slot::Root, 5)],
            &[(ListKind::SendCounts, &[1, 3, 5])],
        );
        assert_eq!(sends("scatterv", &sv, 5, &members), vec![(2, 12), (7, 20)]);
        assert!(sends("scatterv", &sv, 2, &members).is_empty());
    }

    #[test]
    fn all_to_all_forms() {
        let members = [0, 1, 2, 3];
        let ar = ev(&[(Slot::Bytes, 16)], &[]);
        assert_eq!(
            sends("allreduce", &ar, 1, &members),
            vec![(0, 16), (2, 16), (3, 16)]
        );
        // In place: only the receive side is recorded.
        let ag = ev(&[(Slot::RecvBytes, 12)], &[]);
        assert_eq!(sends("allgather", &ag, 0, &members).len(), 3);
        let agv = ev(
            &[(Slot::RecvDtypeSize, 8)],
            &[(ListKind::RecvCounts, &[1, 2, 3, 4])],
        );
        assert_eq!(
            sends("allgatherv", &agv, 2, &members),
            vec![(0, 24), (1, 24), (3, 24)]
        );
        let av = ev(
            &[(Slot::DtypeSize, 4)],
            &[(ListKind::SendCounts, &[1, 0, 3, 1])],
        );
        assert_eq!(sends("alltoallv", &av, 0, &members), vec![(2, 12), (3, 4)]);
        let aw = ev(
            &[],
            &[
                (ListKind::SendCounts, &[1, 1, 1, 2]),
                (ListKind::SendTypeSizes, &[4, 8, 4, 8]),
            ],
        );
        assert_eq!(
            sends("alltoallw", &aw, 0, &members),
            vec![(1, 8), (2, 4), (3, 16)]
        );
        let rs = ev(
            &[(Slot::DtypeSize, 4)],
            &[(ListKind::RecvCounts, &[1, 2, 3, 4])],
        );
        assert_eq!(
            sends("reduce_scatter", &rs, 3, &members),
            vec![(0, 4), (1, 8), (2, 12)]
        );
        let scan = ev(&[(Slot::Bytes, 8)], &[]);
        assert_eq!(sends("scan", &scan, 1, &members), vec![(2, 8), (3, 8)]);
        assert!(sends("exscan", &scan, 3, &members).is_empty());
        assert!(sends("barrier", &ev(&[], &[]), 0, &members).is_empty());
        // Not a member: nothing.
        assert!(sends("allreduce", &ar, 9, &members).is_empty());
    }

    #[test]
    fn traffic_sums_and_cells() {
        let mut a = Traffic::zero(2);
        a.bytes[0][1] = 5;
        a.messages[0][1] = 1;
        let mut b = Traffic::zero(2);
        b.bytes[0][1] = 7;
        b.messages[0][1] = 2;
        b.bytes[1][0] = 3;
        b.messages[1][0] = 1;
        let t = a.plus(&b);
        assert_eq!(t.cells(), vec![(0, 1, 3, 12), (1, 0, 1, 3)]);
        assert_eq!((t.total_bytes(), t.total_messages()), (15, 4));
        assert_eq!(short_bytes(1000), "1000");
        assert_eq!(short_bytes(4096), "4.0K");
        assert_eq!(short_bytes(50 << 20), "50M");
    }
}
