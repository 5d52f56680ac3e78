//! Point-to-point wait states, each blocked interval counted once.
//!
//! A *blocked interval* is one call a rank spends waiting on messages: a blocking receive
//! or send (`Recv`, `Send`, `Ssend`, ...), the two halves of a `Sendrecv`, or a completion
//! (`Wait`, `Waitall`, `Waitany`, `Waitsome`, a `Test*` that completed a receive). Each
//! message the call was waiting on offers the moment its partner was ready:
//!
//! * a receive (`Recv`, `Sendrecv`'s receive, an `Irecv` the call completed): the entry of
//!   the matching send, a **late sender** when it comes after the call's entry;
//! * a blocking send (`Send`, `Sendrecv`'s send, ...) that returned only after its receive
//!   was posted: when the receive was posted, a **late receiver** when it comes after the
//!   call's entry (an eager send that returned before the receive was posted waited on no
//!   one).
//!
//! The call could not return before the last of these moments, so its wait is
//! `min(latest ready, call exit) - call entry`, attributed once, to the partner whose message
//! was ready last, as a late sender or a late receiver after that message's side (on a tie,
//! the late sender, whose data the call needed). Never summed over the messages: a
//! `Sendrecv` whose two partners are both late, or a `Waitall` over three receives from
//! three late senders, waited once, as long as its latest partner made it. So a rank's
//! waiting never exceeds its time in those calls.
//!
//! Messages are paired with [`crate::messages`]; the whole run's message ends, blocked
//! calls and collective instances are held in memory.

use std::collections::HashMap;
use std::ops::Range;

use mpiscope_trace::{RankReader, Slot};
use serde::Serialize;

use crate::messages::{Item, MessageKey, RankWalk};
use crate::AnalyzeError;

/// One rank waiting on another.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct WaitOn {
    /// The rank that waited.
    pub waiter: u32,
    /// The rank it waited for.
    pub on: u32,
    /// `late sender` or `late receiver`.
    pub kind: String,
    /// Messages concerned: the blocked intervals that the other rank's message ended (one
    /// per interval, however many messages the call waited on).
    pub messages: u64,
    /// Total wait, seconds.
    pub seconds: f64,
}

/// One instance of a blocking collective: its function, and each member's (rank, entry,
/// exit).
pub(crate) type Instance = (String, Vec<(u32, u64, u64)>);

/// Where a send started: its rank and the send call's entry.
struct SendEnd {
    rank: u32,
    enter: u64,
}

/// Where a receive ended: its rank and when it was posted.
struct RecvEnd {
    rank: u32,
    posted: u64,
}

/// A call that waited on messages: its rank, entry and exit, and its messages (a range of
/// [`Ends::waited`]).
struct Blocked {
    rank: u32,
    enter: u64,
    exit: u64,
    waited: Range<usize>,
}

/// The message ends, blocked calls and collective instances of the whole run.
#[derive(Default)]
pub(crate) struct Ends {
    sends: HashMap<MessageKey, SendEnd>,
    recvs: HashMap<MessageKey, RecvEnd>,
    blocked: Vec<Blocked>,
    /// The messages of the blocked calls: the key, and whether the call received it (else
    /// it sent it, blocking).
    waited: Vec<(MessageKey, bool)>,
    /// By (communicator key, instance number on that communicator).
    pub(crate) instances: HashMap<(u64, u64), Instance>,
}

impl Ends {
    /// Adds the sends, receives, blocked calls and blocking collectives of `rank`'s file.
    pub(crate) fn read_rank(
        &mut self,
        rank: u32,
        path: &std::path::Path,
    ) -> Result<(), AnalyzeError> {
        let mut items = Vec::new();
        let mut reader = RankReader::open(path)?;
        let mut walk = RankWalk::new(rank);
        let mut names: HashMap<u32, (String, bool)> = HashMap::new();
        let mut coll_seq: HashMap<u64, u64> = HashMap::new();
        while let Some(ev) = reader.next_event() {
            let (name, blocking_collective) = names.entry(ev.call).or_insert_with(|| {
                let n = reader.tables().call_name(ev.call).into_owned();
                let c = mpiscope_mpispec::is_collective(&n)
                    && !mpiscope_mpispec::is_nonblocking(&n)
                    && !mpiscope_mpispec::is_persistent(&n);
                (n, c)
            });
            if *blocking_collective {
                let key = ev
                    .args
                    .get(Slot::Comm)
                    .and_then(|c| reader.tables().comms.get(&(c as u32)))
                    .map(|c| c.key);
                if let Some(key) = key {
                    let seq = coll_seq.entry(key).or_insert(0);
                    self.instances
                        .entry((key, *seq))
                        .or_insert_with(|| (name.clone(), Vec::new()))
                        .1
                        .push((rank, ev.t_enter, ev.t_exit));
                    *seq += 1;
                }
            }
            items.clear();
            walk.items(&reader, name, &ev, &mut items);
            let first = self.waited.len();
            for it in items.drain(..) {
                self.add(rank, it);
            }
            if self.waited.len() > first {
                self.blocked.push(Blocked {
                    rank,
                    enter: ev.t_enter,
                    exit: ev.t_exit,
                    waited: first..self.waited.len(),
                });
            }
        }
        Ok(())
    }

    /// Keeps the end of a message that `rank`'s walk found, and notes it as waited on when
    /// its call blocks for it.
    fn add(&mut self, rank: u32, it: Item) {
        match it {
            Item::Send {
                key,
                time,
                blocking,
                ..
            } => {
                self.sends.insert(key, SendEnd { rank, enter: time });
                if blocking {
                    self.waited.push((key, false));
                }
            }
            Item::Recv { key, posted, .. } => {
                self.recvs.insert(key, RecvEnd { rank, posted });
                self.waited.push((key, true));
            }
            Item::Call { .. } => {}
        }
    }

    /// What ended the wait of `b`: the latest moment a partner was ready, whether that
    /// partner was a sender, and its rank. `None` when no message of `b` was paired.
    fn cause(&self, b: &Blocked) -> Option<(u64, bool, u32)> {
        let mut best: Option<(u64, bool, u32)> = None;
        for (key, received) in &self.waited[b.waited.clone()] {
            let candidate = if *received {
                let Some(s) = self.sends.get(key) else {
                    continue;
                };
                (s.enter, true, s.rank)
            } else {
                let Some(r) = self.recvs.get(key) else {
                    continue;
                };
                // A send that returned before its receive was posted waited on no one.
                if b.exit <= r.posted {
                    continue;
                }
                (r.posted, false, r.rank)
            };
            // The latest first; on a tie the late sender, then the lowest rank.
            let later = |c: (u64, bool, u32), o: (u64, bool, u32)| {
                c.0.cmp(&o.0)
                    .then(c.1.cmp(&o.1))
                    .then(o.2.cmp(&c.2))
                    .is_gt()
            };
            if best.is_none_or(|o| later(candidate, o)) {
                best = Some(candidate);
            }
        }
        best
    }

    /// The wait of every blocked call, attributed once to what ended it and added to the
    /// waiter's late-sender or late-receiver total (integer ns); returns the twenty largest
    /// waits of one rank on another.
    pub(crate) fn message_waits(
        &self,
        late_sender: &mut [u64],
        late_receiver: &mut [u64],
    ) -> Vec<WaitOn> {
        let mut pairs: HashMap<(u32, u32, bool), (u64, u64)> = HashMap::new();
        for b in &self.blocked {
            let Some((ready, is_late_sender, on)) = self.cause(b) else {
                continue;
            };
            let wait = ready.min(b.exit).saturating_sub(b.enter);
            if wait > 0 {
                let e = pairs.entry((b.rank, on, is_late_sender)).or_default();
                e.0 += 1;
                e.1 += wait;
            }
        }
        let mut waits = Vec::new();
        for (&(waiter, on, is_late_sender), &(m, t)) in &pairs {
            let totals = if is_late_sender {
                &mut *late_sender
            } else {
                &mut *late_receiver
            };
            if let Some(total) = totals.get_mut(waiter as usize) {
                *total += t;
            }
            waits.push(WaitOn {
                waiter,
                on,
                kind: if is_late_sender {
                    "late sender"
                } else {
                    "late receiver"
                }
                .into(),
                messages: m,
                seconds: t as f64 * 1e-9,
            });
        }
        waits.sort_by(|a, c| {
            c.seconds
                .total_cmp(&a.seconds)
                .then((a.waiter, a.on).cmp(&(c.waiter, c.on)))
                .then(a.kind.cmp(&c.kind))
        });
        waits.truncate(20);
        waits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{write_run, RankFile};
    use mpiscope_trace::ListKind;

    /// Late-sender and late-receiver totals per rank (ns), and the waits of one rank on
    /// another, of a synthetic run of `size` ranks.
    fn waits(size: u32, f: impl FnMut(u32, &mut RankFile)) -> (Vec<u64>, Vec<u64>, Vec<WaitOn>) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        write_run(dir.path(), size, f);
        let mut ends = Ends::default();
        for rank in 0..size {
            let path = dir.path().join(mpiscope_trace::rank_file_name(rank));
            ends.read_rank(rank, &path).expect("reads");
        }
        let (mut ls, mut lr) = (vec![0; size as usize], vec![0; size as usize]);
        let on = ends.message_waits(&mut ls, &mut lr);
        (ls, lr, on)
    }

    fn send(r: &mut RankFile, to: i64, enter: u64, exit: u64) {
        r.call(
            "MPI_Send",
            enter,
            exit,
            &[(Slot::Peer, to), (Slot::Tag, 0)],
            &[],
        );
    }

    fn recv(r: &mut RankFile, from: i64, enter: u64, exit: u64) {
        let args = [
            (Slot::Peer, from),
            (Slot::Tag, 0),
            (Slot::StatusSource, from),
        ];
        r.call("MPI_Recv", enter, exit, &args, &[]);
    }

    fn sendrecv(r: &mut RankFile, to: i64, from: i64, enter: u64, exit: u64) {
        let args = [
            (Slot::Peer, to),
            (Slot::Tag, 0),
            (Slot::RecvPeer, from),
            (Slot::RecvTag, 0),
            (Slot::StatusSource, from),
            (Slot::StatusTag, 0),
        ];
        r.call("MPI_Sendrecv", enter, exit, &args, &[]);
    }

    fn kinds(on: &[WaitOn]) -> Vec<(u32, u32, &str, u64, u64)> {
        on.iter()
            .map(|w| {
                let ns = (w.seconds * 1e9).round() as u64;
                (w.waiter, w.on, w.kind.as_str(), w.messages, ns)
            })
            .collect()
    }

    /// Rank 0's `Sendrecv` sends to rank 1 and receives from rank 2, both late: it waited
    /// once, until the later of the two (rank 2's send at 80 us), not 80 + 60 us.
    #[test]
    fn a_sendrecv_with_both_partners_late_waits_once_for_the_later() {
        let (ls, lr, on) = waits(3, |rank, r| match rank {
            0 => sendrecv(r, 1, 2, 0, 100_000),
            1 => recv(r, 0, 60_000, 100_000),
            _ => send(r, 0, 80_000, 81_000),
        });
        assert_eq!((ls, lr), (vec![80_000, 0, 0], vec![0, 0, 0]));
        assert_eq!(kinds(&on), [(0, 2, "late sender", 1, 80_000)]);
        // The receiver later than the sender: a late receiver, rank 1's 90 us.
        let (ls, lr, on) = waits(3, |rank, r| match rank {
            0 => sendrecv(r, 1, 2, 0, 100_000),
            1 => recv(r, 0, 90_000, 100_000),
            _ => send(r, 0, 50_000, 51_000),
        });
        assert_eq!((ls, lr), (vec![0, 0, 0], vec![90_000, 0, 0]));
        assert_eq!(kinds(&on), [(0, 1, "late receiver", 1, 90_000)]);
    }

    /// Two ranks exchanging with `Sendrecv` (the shape of the mdrun trace that counted each
    /// wait twice): the early rank waits once for the late one's entry, a late sender.
    #[test]
    fn a_sendrecv_exchange_counts_the_early_rank_once() {
        let (ls, lr, on) = waits(2, |rank, r| match rank {
            0 => sendrecv(r, 1, 1, 0, 60_000),
            _ => sendrecv(r, 0, 0, 50_000, 60_000),
        });
        assert_eq!((ls, lr), (vec![50_000, 0], vec![0, 0]));
        assert_eq!(kinds(&on), [(0, 1, "late sender", 1, 50_000)]);
    }

    /// A `Waitall` over three receives from three late senders waits for the last of them
    /// (rank 2 at 70 us, 60 us after the `Waitall` began), not for the sum of the three.
    #[test]
    fn a_waitall_over_three_late_senders_waits_for_the_latest() {
        let at = [30_000, 70_000, 50_000];
        let (ls, lr, on) = waits(4, |rank, r| {
            if rank == 0 {
                for from in 1..4i64 {
                    let args = [
                        (Slot::Peer, from),
                        (Slot::Tag, 0),
                        (Slot::Request, 10 + from),
                    ];
                    r.call(
                        "MPI_Irecv",
                        from as u64 * 100,
                        from as u64 * 100 + 50,
                        &args,
                        &[],
                    );
                }
                let done: Vec<i64> = (1..4).flat_map(|f| [10 + f, f, 0, 4]).collect();
                let lists = [(ListKind::Completions, done.as_slice())];
                r.call("MPI_Waitall", 10_000, 100_000, &[(Slot::Count, 3)], &lists);
            } else {
                let t = at[rank as usize - 1];
                send(r, 0, t, t + 1_000);
            }
        });
        assert_eq!(ls, [60_000, 0, 0, 0]);
        assert_eq!(lr, [0; 4]);
        assert_eq!(kinds(&on), [(0, 2, "late sender", 1, 60_000)]);
        // One MPI_Wait per request instead: three blocked intervals, each its own wait.
        let (ls, _, on) = waits(4, |rank, r| {
            if rank == 0 {
                for from in 1..4i64 {
                    let args = [
                        (Slot::Peer, from),
                        (Slot::Tag, 0),
                        (Slot::Request, 10 + from),
                    ];
                    r.call(
                        "MPI_Irecv",
                        from as u64 * 100,
                        from as u64 * 100 + 50,
                        &args,
                        &[],
                    );
                }
                let mut t = 10_000;
                for from in 1..4i64 {
                    let args = [
                        (Slot::Request, 10 + from),
                        (Slot::StatusSource, from),
                        (Slot::StatusTag, 0),
                    ];
                    let exit = (at[from as usize - 1] + 2_000).max(t + 1_000);
                    r.call("MPI_Wait", t, exit, &args, &[]);
                    t = exit;
                }
            } else {
                let t = at[rank as usize - 1];
                send(r, 0, t, t + 1_000);
            }
        });
        // 10 -> 30 us waits 20 us on rank 1; 32 -> 72 us waits 38 us on rank 2; rank 3's
        // message (50 us) was there before the third wait began.
        assert_eq!(ls, [58_000, 0, 0, 0]);
        assert_eq!(
            kinds(&on),
            [
                (0, 2, "late sender", 1, 38_000),
                (0, 1, "late sender", 1, 20_000)
            ]
        );
    }

    /// Persistent requests are messages too: each `Start` of a send starts one, each
    /// `Start` (or `Startall`) of a receive posts one, which the `Wait` completes; the
    /// receiver waited for the second start of the send (at 40 us) from 100 ns.
    #[test]
    fn persistent_requests_wait_as_their_starts_say() {
        let (ls, lr, on) = waits(2, |rank, r| {
            let args =
                |peer: i64, req: i64| [(Slot::Peer, peer), (Slot::Tag, 3), (Slot::Request, req)];
            if rank == 0 {
                r.call("MPI_Recv_init", 0, 10, &args(1, 20), &[]);
                for (round, t) in [(0, 20), (1, 30_000)] {
                    let start = [(ListKind::Requests, &[20i64][..])];
                    if round == 0 {
                        r.call("MPI_Start", t, t + 10, &[(Slot::Request, 20)], &[]);
                    } else {
                        r.call("MPI_Startall", t, t + 10, &[(Slot::Count, 1)], &start);
                    }
                    let done = [
                        (Slot::Request, 20),
                        (Slot::StatusSource, 1),
                        (Slot::StatusTag, 3),
                    ];
                    let exit = if round == 0 { 1_000 } else { 50_000 };
                    r.call("MPI_Wait", t + 100, exit, &done, &[]);
                }
            } else {
                r.call("MPI_Send_init", 0, 10, &args(0, 30), &[]);
                for t in [500, 40_000] {
                    r.call("MPI_Start", t, t + 10, &[(Slot::Request, 30)], &[]);
                    r.call("MPI_Wait", t + 20, t + 30, &[(Slot::Request, 30)], &[]);
                }
            }
        });
        // First round: waited 120 ns -> 500 ns for the send; second: 30.1 -> 40 us.
        assert_eq!((ls, lr), (vec![380 + 9_900, 0], vec![0, 0]));
        assert_eq!(kinds(&on), [(0, 1, "late sender", 2, 10_280)]);
    }

    /// An eager send that returned before its receive was posted waited on no one, and a
    /// message whose other end is not in the trace ends no wait.
    #[test]
    fn sends_that_did_not_wait_and_unpaired_messages_count_nothing() {
        let (ls, lr, on) = waits(2, |rank, r| match rank {
            0 => send(r, 1, 0, 1_000),
            _ => recv(r, 0, 50_000, 51_000),
        });
        assert_eq!((ls, lr, on.len()), (vec![0, 0], vec![0, 0], 0));
        let (ls, lr, on) = waits(2, |rank, r| {
            if rank == 0 {
                recv(r, 1, 0, 10_000);
            }
        });
        assert_eq!((ls, lr, on.len()), (vec![0, 0], vec![0, 0], 0));
    }
}
