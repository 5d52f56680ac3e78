//! How each rank's record ends, and where ranks were waiting when it did.
//!
//! A rank whose record ended inside MPI calls (a signal, `MPI_Abort`, a hang noticed by the
//! recorder, a kill) left those calls as unfinished events: function, arguments, entry time.
//! From them this module says where every rank waits, on whom, for how long, and finds the
//! wait-for cycles among ranks (a deadlock): a receive or probe waits for its source, a send
//! for its destination, a `Wait` for the peers of the requests it completes (found from the
//! calls that created them), a collective for the members of its communicator that are not
//! in a collective on that communicator.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mpiscope_mpispec::Family;
use mpiscope_trace::{BatchJob, CommKind, Ending, Event, ListKind, RunDir, Slot, Tables, PEER_ANY};
use serde::Serialize;

use crate::symbols::Symbolizer;
use crate::AnalyzeError;

/// A call a thread was inside when its rank's record ended.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Waiting {
    /// World rank.
    pub rank: u32,
    /// Thread index in the rank.
    pub thread: u16,
    /// MPI function.
    pub function: String,
    /// Peer (world rank) of a point-to-point call: the source of a receive, the
    /// destination of a send; `-1` any source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<i64>,
    /// Tag, when the call has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<i64>,
    /// The communicator: `MPI_COMM_WORLD`, or `comm N (K ranks)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<String>,
    /// Where the program called it (`function file:line`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callsite: Option<String>,
    /// Entry, seconds since the run's start.
    pub since_s: f64,
    /// How long it had been inside when the record was taken, seconds.
    pub for_s: f64,
    /// The ranks it waits for.
    pub waits_for: Vec<u32>,
    /// Why these ranks: `source`, `destination`, `requests`, `collective`.
    pub because: String,
}

/// A note of the recorder (a signal the program handled, a hang noticed, tracing stopped).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NoteOut {
    /// `signal`, `hang`, `stopped`.
    pub kind: String,
    /// Seconds since the run's start.
    pub at_s: f64,
    /// Thread index.
    pub thread: u16,
    /// Signal name, for signal notes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// What happened.
    pub message: String,
}

/// How one rank's record ends.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankEnding {
    /// World rank.
    pub rank: u32,
    /// The record is whole: the rank ended tracing itself and the file reads to its end.
    pub complete: bool,
    /// One line: how it ended, or where the record stops and what is missing.
    pub how: String,
    /// The trailer's reason, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The last thing recorded, seconds since the run's start.
    pub last_s: f64,
    /// Events the recorder counted as lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    /// Notes, in order.
    pub notes: Vec<NoteOut>,
    /// Calls in progress when the record ended.
    pub waiting: Vec<Waiting>,
}

/// Every rank's ending, and the wait-for cycles among the waiting ranks.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Endings {
    /// Per rank, in rank order (ranks without a readable file are absent).
    pub ranks: Vec<RankEnding>,
    /// Ranks whose record is not whole.
    pub incomplete: Vec<u32>,
    /// Cycles of ranks each waiting for the next (rank order from the smallest).
    pub cycles: Vec<Vec<u32>>,
    /// The batch job the run was part of (from the manifest), with whether the batch
    /// system ended it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchJob>,
}

/// What one rank's pass finds.
struct RankPass {
    ending: RankEnding,
    /// Communicator of each waiting call: (key, members or empty for the world, collective).
    comms: Vec<Option<(u64, Vec<u32>, bool)>>,
}

/// A request's peer, from the call that created it.
#[derive(Clone, Copy)]
struct Req {
    peer: i64,
}

fn comm_text(tables: &Tables, id: i64) -> Option<(String, u64, Vec<u32>)> {
    let c = tables.comms.get(&u32::try_from(id).ok()?)?;
    let text = match c.kind {
        CommKind::World => "MPI_COMM_WORLD".to_owned(),
        CommKind::Own => "MPI_COMM_SELF".to_owned(),
        CommKind::Inter => format!(
            "intercommunicator {} ({} + {} ranks)",
            c.id,
            c.size,
            c.remote.len()
        ),
        CommKind::Intra => format!("communicator {} ({} ranks)", c.id, c.size),
    };
    Some((text, c.key, c.ranks.clone()))
}

fn rank_pass(
    mut reader: mpiscope_trace::RankReader<std::io::BufReader<std::fs::File>>,
    rank: u32,
    size: u32,
    symbols: &mut Symbolizer,
) -> RankPass {
    let (live, open) = pending(&mut reader);
    let end: Ending = reader.ending();
    let tables = reader.tables();
    let to_s = |ns: u64| ns as f64 / 1e9;
    let mut waiting = Vec::new();
    let mut comms = Vec::new();
    for ev in &open {
        let name = tables.call_name(ev.call).into_owned();
        let comm = ev.args.get(Slot::Comm).and_then(|c| comm_text(tables, c));
        let collective = mpiscope_mpispec::is_collective(&name);
        let (waits_for, because) = waits_for(ev, &name, collective, &live, rank, size);
        comms.push(
            comm.as_ref()
                .map(|(_, key, members)| (*key, members.clone(), collective)),
        );
        waiting.push(Waiting {
            rank,
            thread: ev.thread,
            function: name,
            peer: ev.args.get(Slot::Peer),
            tag: ev.args.get(Slot::Tag),
            comm: comm.map(|c| c.0),
            callsite: (ev.callsite != 0)
                .then(|| symbols.describe(tables, ev.callsite))
                .flatten(),
            since_s: to_s(ev.t_enter),
            for_s: to_s(ev.t_exit.saturating_sub(ev.t_enter)),
            waits_for: waits_for.into_iter().collect(),
            because,
        });
    }
    let notes = reader
        .notes()
        .iter()
        .map(|n| NoteOut {
            kind: n.kind.clone(),
            at_s: to_s(n.time_ns),
            thread: n.thread,
            signal: n.signal.clone(),
            message: n.message.clone(),
        })
        .collect();
    RankPass {
        ending: RankEnding {
            rank,
            complete: end.complete,
            how: end.describe(),
            reason: end.reason.clone(),
            last_s: to_s(end.last_ns),
            lost: end.lost,
            notes,
            waiting,
        },
        comms,
    }
}

/// Reads a rank's events: the requests still pending at the end (by id), and the calls
/// in progress.
fn pending(
    reader: &mut mpiscope_trace::RankReader<std::io::BufReader<std::fs::File>>,
) -> (HashMap<i64, Req>, Vec<Event>) {
    let mut live: HashMap<i64, Req> = HashMap::new();
    let mut open: Vec<Event> = Vec::new();
    while let Some((ev, tables)) = reader.next_with_tables() {
        if ev.unfinished {
            open.push(ev.clone());
            continue;
        }
        let name = tables.call_name(ev.call);
        let group = mpiscope_mpispec::group(&name);
        if group == mpiscope_mpispec::Group::Completion {
            // A test that found nothing complete leaves its requests pending.
            let tested = Family::of(&name).is_test();
            if !tested || ev.args.get(Slot::Flag).unwrap_or(0) != 0 {
                for c in ev.completions() {
                    live.remove(&c.request);
                }
            }
        } else if let Some(r) = ev.args.get(Slot::Request) {
            live.insert(
                r,
                Req {
                    peer: ev
                        .args
                        .get(Slot::Peer)
                        .unwrap_or(mpiscope_trace::PEER_UNKNOWN),
                },
            );
        }
    }
    (live, open)
}

/// The ranks the call in progress `ev` (of function `name`) of `rank` waits for, and why:
/// the members of a collective (left to the cycle search), the peers of the requests it
/// completes, its source or destination.
fn waits_for(
    ev: &Event,
    name: &str,
    collective: bool,
    live: &HashMap<i64, Req>,
    rank: u32,
    size: u32,
) -> (BTreeSet<u32>, String) {
    let mut waits_for = BTreeSet::new();
    let mut because = String::new();
    let everyone = |set: &mut BTreeSet<u32>| set.extend((0..size).filter(|&r| r != rank));
    let add = |set: &mut BTreeSet<u32>, p: i64| {
        if p >= 0 && (p as u64) < u64::from(size) && p as u32 != rank {
            set.insert(p as u32);
        }
    };
    let peer = ev.args.get(Slot::Peer);
    if collective {
        because = "collective".into();
    } else if let Some(ids) = ev
        .list(ListKind::Requests)
        .map(|l| l.to_vec())
        .or_else(|| ev.args.get(Slot::Request).map(|r| vec![r]))
        .filter(|_| mpiscope_mpispec::group(name) == mpiscope_mpispec::Group::Completion)
    {
        because = "requests".into();
        for id in ids {
            match live.get(&id) {
                Some(r) if r.peer == PEER_ANY => everyone(&mut waits_for),
                Some(r) => add(&mut waits_for, r.peer),
                None => {}
            }
        }
    } else if let Some(p) = peer {
        let recv = matches!(
            Family::of(name),
            Family::Recv
                | Family::Probe
                | Family::Mprobe
                | Family::Sendrecv
                | Family::SendrecvReplace
        );
        because = if recv { "source" } else { "destination" }.into();
        if p == PEER_ANY {
            everyone(&mut waits_for);
        } else {
            add(&mut waits_for, p);
        }
        if let Some(rp) = ev.args.get(Slot::RecvPeer) {
            because = "destination and source".into();
            if rp == PEER_ANY {
                everyone(&mut waits_for);
            } else {
                add(&mut waits_for, rp);
            }
        }
    }
    (waits_for, because)
}

/// Reads every rank's ending and waiting calls, and finds the wait-for cycles.
pub fn endings(run: &RunDir) -> Result<Endings, AnalyzeError> {
    let size = run.ranks();
    let results = crate::parallel::per_rank(run, |rd, rank| {
        let mut symbols = Symbolizer::new();
        Ok(rank_pass(rd, rank, size, &mut symbols))
    });
    let mut passes = Vec::new();
    for (_, r) in results {
        // A rank that cannot be read is reported by the profile's warnings.
        if let Ok(p) = r {
            passes.push(p);
        }
    }
    // Collectives wait for the members of their communicator that are not in a collective
    // on it (by key, the same on every member).
    let mut in_collective: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
    for p in &passes {
        for (w, c) in p.ending.waiting.iter().zip(&p.comms) {
            if let Some((key, _, true)) = c {
                in_collective.entry(*key).or_default().insert(w.rank);
            }
        }
    }
    for p in &mut passes {
        for (w, c) in p.ending.waiting.iter_mut().zip(&p.comms) {
            if let Some((key, members, true)) = c {
                let members: Vec<u32> = if members.is_empty() {
                    (0..size).collect()
                } else {
                    members.clone()
                };
                let there = in_collective.get(key);
                w.waits_for = members
                    .into_iter()
                    .filter(|&m| m != w.rank && !there.is_some_and(|s| s.contains(&m)))
                    .collect();
            }
        }
    }
    let ranks: Vec<RankEnding> = passes.into_iter().map(|p| p.ending).collect();
    let incomplete = ranks
        .iter()
        .filter(|r| !r.complete)
        .map(|r| r.rank)
        .collect();
    let cycles = cycles(&ranks);
    Ok(Endings {
        ranks,
        incomplete,
        cycles,
        batch: run.manifest.as_ref().and_then(|m| m.batch.clone()),
    })
}

/// The strongly connected groups of two or more ranks in the wait-for graph, each listed
/// along a cycle from its smallest rank.
fn cycles(ranks: &[RankEnding]) -> Vec<Vec<u32>> {
    let mut edges: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for r in ranks {
        for w in &r.waiting {
            edges.entry(r.rank).or_default().extend(&w.waits_for);
        }
    }
    // Tarjan's algorithm, iterative.
    let nodes: Vec<u32> = edges.keys().copied().collect();
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut low: HashMap<u32, usize> = HashMap::new();
    let mut on_stack: BTreeSet<u32> = BTreeSet::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    let mut next = 0usize;
    for &start in &nodes {
        if index.contains_key(&start) {
            continue;
        }
        let mut work: Vec<(u32, Vec<u32>)> = Vec::new();
        let succ = |n: u32| -> Vec<u32> {
            edges
                .get(&n)
                .map(|s| {
                    s.iter()
                        .copied()
                        .filter(|m| edges.contains_key(m))
                        .collect()
                })
                .unwrap_or_default()
        };
        index.insert(start, next);
        low.insert(start, next);
        next += 1;
        stack.push(start);
        on_stack.insert(start);
        work.push((start, succ(start)));
        while let Some((n, mut rest)) = work.pop() {
            if let Some(m) = rest.pop() {
                work.push((n, rest));
                if let std::collections::hash_map::Entry::Vacant(e) = index.entry(m) {
                    e.insert(next);
                    low.insert(m, next);
                    next += 1;
                    stack.push(m);
                    on_stack.insert(m);
                    work.push((m, succ(m)));
                } else if on_stack.contains(&m) {
                    let l = low[&n].min(index[&m]);
                    low.insert(n, l);
                }
                continue;
            }
            if low[&n] == index[&n] {
                let mut comp = Vec::new();
                while let Some(x) = stack.pop() {
                    on_stack.remove(&x);
                    comp.push(x);
                    if x == n {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort_unstable();
                    out.push(comp);
                }
            }
            if let Some((parent, _)) = work.last() {
                let l = low[parent].min(low[&n]);
                low.insert(*parent, l);
            }
        }
    }
    out.sort();
    out
}

impl Endings {
    /// Were there ranks inside MPI calls, or incomplete records, worth a section?
    pub fn is_notable(&self) -> bool {
        self.batch.as_ref().is_some_and(|b| b.ended.is_some())
            || !self.incomplete.is_empty()
            || self
                .ranks
                .iter()
                .any(|r| !r.waiting.is_empty() || !r.notes.is_empty())
    }

    /// The text section of `mpiscope report`.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        if !self.is_notable() {
            return s;
        }
        let _ = writeln!(s, "\nHow the record ends:");
        if let Some(b) = &self.batch {
            if let (Some(text), Some(details)) = (b.describe_end(), b.end_details()) {
                let _ = writeln!(s, "  {text}: {details}.");
            }
        }
        for r in &self.ranks {
            let _ = writeln!(s, "  rank {}: {}", r.rank, r.how);
            for n in &r.notes {
                let _ = writeln!(
                    s,
                    "    at {:.6} s: {}{}{}",
                    n.at_s,
                    n.kind,
                    n.signal
                        .as_deref()
                        .map(|x| format!(" {x}"))
                        .unwrap_or_default(),
                    if n.message.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", n.message)
                    }
                );
            }
        }
        let waiting: Vec<&Waiting> = self.ranks.iter().flat_map(|r| &r.waiting).collect();
        if !waiting.is_empty() {
            let _ = writeln!(s, "\nWhere ranks were waiting when the record ended:");
            for w in &waiting {
                let _ = writeln!(s, "  {}", w.describe());
            }
        }
        for c in &self.cycles {
            let parts: Vec<String> = c
                .iter()
                .filter_map(|r| {
                    waiting
                        .iter()
                        .find(|w| w.rank == *r && !w.waits_for.is_empty())
                        .map(|w| w.short())
                })
                .collect();
            let _ = writeln!(s, "  deadlock: {}", parts.join("; "));
        }
        s
    }
}

impl Waiting {
    fn whom(&self) -> String {
        match self.waits_for.as_slice() {
            [] => "nobody known".into(),
            [one] => format!("rank {one}"),
            many if many.len() <= 8 => format!(
                "ranks {}",
                many.iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            many => format!(
                "{} ranks ({} to {})",
                many.len(),
                many[0],
                many[many.len() - 1]
            ),
        }
    }

    /// `rank 0 waits for rank 1 in MPI_Recv at main faults.c:81`.
    pub fn short(&self) -> String {
        format!(
            "rank {} waits for {} in {}{}",
            self.rank,
            self.whom(),
            self.function,
            self.callsite
                .as_deref()
                .map(|c| format!(" at {c}"))
                .unwrap_or_default()
        )
    }

    /// One line with everything known of the call.
    pub fn describe(&self) -> String {
        let mut d = Vec::new();
        if let Some(p) = self.peer {
            d.push(if p == PEER_ANY {
                "any source".to_owned()
            } else {
                format!("peer {p}")
            });
        }
        if let Some(t) = self.tag {
            d.push(if t == -1 {
                "any tag".to_owned()
            } else {
                format!("tag {t}")
            });
        }
        if let Some(c) = &self.comm {
            d.push(c.clone());
        }
        format!(
            "{}{} ({}), for {:.3} s since {:.6} s{}",
            self.short(),
            if self.thread > 0 {
                format!(" [thread {}]", self.thread)
            } else {
                String::new()
            },
            if d.is_empty() {
                "no arguments known".to_owned()
            } else {
                d.join(", ")
            },
            self.for_s,
            self.since_s,
            if self.because.is_empty() {
                String::new()
            } else {
                format!("; waits on its {}", self.because)
            }
        )
    }
}

/// Whether a command's input is whole: per rank, from [`mpiscope_trace::skim_ending`].
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct InputState {
    /// Every rank's record is whole.
    pub complete: bool,
    /// Per rank of the run, in rank order.
    pub ranks: Vec<RankInput>,
}

/// One rank's record, as a command's input.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankInput {
    /// World rank.
    pub rank: u32,
    /// The record is whole.
    pub complete: bool,
    /// The rank ended the way programs end (`MPI_Finalize`, exit), not by a signal, an
    /// abort, a hang or a stop of tracing.
    pub normal: bool,
    /// How it ends, or what is missing.
    pub how: String,
}

/// Skims how every rank's record ends (block headers only: fast), so that a command can
/// say which ranks end early, and where, before its results are trusted.
pub fn skim(run: &RunDir) -> InputState {
    let mut ranks = Vec::new();
    for rank in 0..run.ranks() {
        let file = run.rank_files.iter().find(|(r, _)| *r == rank);
        let odd = run.not_files.iter().find(|(r, _)| *r == rank);
        let (complete, normal, how) = match file {
            None if odd.is_some() => (
                false,
                false,
                format!(
                    "{} is {}: not read",
                    mpiscope_trace::rank_file_name(rank),
                    odd.map(|(_, k)| k.as_str()).unwrap_or("")
                ),
            ),
            None => (
                false,
                false,
                "no rank file: nothing of this rank was recorded".to_owned(),
            ),
            Some((_, path)) => match mpiscope_trace::skim_ending(path) {
                Ok(e) => (
                    e.complete,
                    matches!(e.reason.as_deref(), Some("finalize" | "exit")),
                    e.describe(),
                ),
                Err(e) => (false, false, format!("unreadable: {e}")),
            },
        };
        ranks.push(RankInput {
            rank,
            complete,
            normal,
            how,
        });
    }
    InputState {
        complete: ranks.iter().all(|r| r.complete),
        ranks,
    }
}

impl InputState {
    /// One warning per rank whose record is not whole or that did not end normally (at most
    /// `max`, then a count).
    pub fn warnings(&self, max: usize) -> Vec<String> {
        let bad: Vec<&RankInput> = self
            .ranks
            .iter()
            .filter(|r| !r.complete || !r.normal)
            .collect();
        let mut out: Vec<String> = bad
            .iter()
            .take(max)
            .map(|r| format!("rank {}: {}", r.rank, r.how))
            .collect();
        if bad.len() > max {
            out.push(format!(
                "{} more ranks whose record is not whole (see `mpiscope report`)",
                bad.len() - max
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiscope_trace::{BatchEnd, BatchEndCause};

    #[test]
    fn a_job_ended_by_the_batch_system_is_said_first() {
        let mut e = Endings {
            batch: Some(BatchJob {
                system: "slurm".into(),
                job_id: "12".into(),
                time_limit_s: Some(60),
                end_unix_s: Some(1000),
                ended: None,
            }),
            ..Endings::default()
        };
        // A job that ended by itself says nothing.
        assert!(!e.is_notable());
        assert_eq!(e.to_text(), "");
        if let Some(b) = e.batch.as_mut() {
            b.ended = Some(BatchEnd {
                cause: BatchEndCause::TimeLimit,
                signal: "SIGTERM".into(),
                signal_unix_s: 1014.2,
                evidence: "job state COMPLETING, reason TimeLimit".into(),
            });
        }
        assert!(e.is_notable());
        assert_eq!(
            e.to_text(),
            "\nHow the record ends:\n  The job was ended by SLURM at its time limit (job 12, 0:01:00): \
             SIGTERM to mpiscope trace 14 s after the job's end time; job state COMPLETING, reason TimeLimit.\n"
        );
    }
}
