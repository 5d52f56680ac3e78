//! One rank's calls and message ends, for exporters that draw messages (Chrome, Paraver).
//!
//! Sends and receives are paired without looking at other ranks: by MPI's non-overtaking
//! rule the n-th message from rank `s` to rank `d` with tag `t` on a communicator is
//! received by the n-th receive at `d` that completes with source `s` and tag `t` there
//! (whatever wildcards it was posted with). Both sides number their messages by
//! `(source, destination, tag, communicator key)`, so a message's id is the same on both.
//!
//! A send starts a message when it is called (`MPI_Send`, `Isend`, `Ssend`, `Bsend`,
//! `Rsend`, their non-blocking forms, the send half of `Sendrecv`); a receive ends one when
//! it completes: a blocking `Recv`, the receive half of `Sendrecv`, or the completion
//! (`Wait*`, `Test*` with their statuses) of an `Irecv`. A persistent request
//! (`Send_init`, `Recv_init`, ...) is a template: each `Start`/`Startall` of a send starts a
//! non-blocking message, each start of a receive posts one, completed as an `Irecv`'s.
//! Persistent collectives move no point-to-point messages.

use std::collections::HashMap;

use mpiscope_mpispec::Family;
use mpiscope_trace::{CommKind, Event, ListKind, RankReader, Slot, NO_VALUE, PEER_NULL};

/// A message: sender, receiver (world ranks), tag, communicator key, and its number among
/// the messages with the same four.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageKey {
    /// Sender's world rank.
    pub from: u32,
    /// Receiver's world rank.
    pub to: u32,
    /// Tag.
    pub tag: i64,
    /// Communicator key (shared by its members).
    pub comm: u64,
    /// Position among the messages with the same `from`, `to`, `tag`, `comm`.
    pub seq: u64,
}

impl MessageKey {
    /// A 53-bit id (exact in a JSON number) for the message.
    pub fn id(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for v in [
            u64::from(self.from),
            u64::from(self.to),
            self.tag as u64,
            self.comm,
            self.seq,
        ] {
            for b in v.to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h & ((1 << 53) - 1)
    }
}

/// What a rank's event contributes.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An MPI call (main thread or not).
    Call {
        /// Call id (rank-local; its name is the caller's `function`).
        call: u32,
        /// Thread index.
        thread: u16,
        /// Entry, ns since the run's epoch.
        enter: u64,
        /// Exit.
        exit: u64,
        /// Callsite id (rank-local).
        callsite: u32,
        /// Byte count the call records, when it has one.
        bytes: Option<i64>,
        /// Peer (world rank), when it has one.
        peer: Option<i64>,
    },
    /// A message leaves (at the send call's entry).
    Send {
        /// The message.
        key: MessageKey,
        /// When.
        time: u64,
        /// Exit of the send call (for a non-blocking send, the same call's exit).
        exit: u64,
        /// The call blocks until the message is on its way (`Send`, `Ssend`, ...).
        blocking: bool,
        /// Thread.
        thread: u16,
        /// Payload bytes.
        bytes: u64,
        /// The request of a non-blocking send (or of a started persistent one).
        request: Option<i64>,
    },
    /// A message has arrived (at the exit of the call that completed the receive).
    Recv {
        /// The message.
        key: MessageKey,
        /// When.
        time: u64,
        /// When the receive was posted (entry of `Recv` or `Irecv`).
        posted: u64,
        /// Entry of the call that completed it (`Recv` itself, or the `Wait`/`Test`).
        blocked_from: u64,
        /// Thread.
        thread: u16,
        /// Payload bytes.
        bytes: u64,
        /// The request completed (of an `Irecv`, or of a started persistent receive).
        request: Option<i64>,
    },
}

/// Walks one rank: every recorded call, message start and message end, in file order.
pub struct RankWalk {
    rank: u32,
    sent: HashMap<(u32, i64, u64), u64>,
    received: HashMap<(u32, i64, u64), u64>,
    /// Posted receives: request id -> (communicator key, time posted).
    posted: HashMap<i64, (u64, u64)>,
    /// Persistent point-to-point requests: request id -> what each start does.
    templates: HashMap<i64, Template>,
    /// Per call id, what its calls do to messages (classified once).
    roles: HashMap<u32, Role>,
}

/// What a call does to point-to-point messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Starts one when called (`Send`, `Isend`, `Ssend`, ...; blocking or not).
    Send { blocking: bool },
    /// Sends one and receives one (`Sendrecv`, `Sendrecv_replace`).
    SendRecv,
    /// Receives one before returning (`Recv`, `Mrecv`).
    Recv,
    /// Posts a receive completed later (`Irecv`, `Imrecv`).
    PostRecv,
    /// May complete posted receives (`Wait*`, `Test*`).
    Completion,
    /// Makes a persistent point-to-point request (`Send_init`, `Recv_init`, ...).
    Persistent { send: bool },
    /// Starts persistent requests (`Start`, `Startall`).
    Start,
    /// Nothing (collectives, persistent collectives, local calls).
    None,
}

/// One side of a message as a call gives it: the peer (world rank; negative for none),
/// tag, communicator key and bytes.
#[derive(Debug, Clone, Copy)]
struct Half {
    peer: i64,
    tag: i64,
    comm: u64,
    bytes: u64,
}

/// A persistent point-to-point request, as made: what each of its starts does.
#[derive(Debug, Clone, Copy)]
struct Template {
    send: bool,
    /// The message side (peer negative: `MPI_PROC_NULL`, or any source).
    half: Half,
}

impl Role {
    /// `family` folds the non-blocking forms into the blocking ones (`MPI_Irecv` is
    /// `recv`): the non-blocking flag tells them apart again.
    fn of(function: &str) -> Role {
        let c = mpiscope_mpispec::classify(function);
        let f = c.family;
        if c.persistent {
            if c.collective || c.group != mpiscope_mpispec::Group::P2p {
                Role::None
            } else {
                Role::Persistent {
                    send: !matches!(f, Family::Recv | Family::Precv),
                }
            }
        } else if matches!(f, Family::Start | Family::Startall) {
            Role::Start
        } else if f.is_send() {
            Role::Send {
                blocking: !c.nonblocking,
            }
        } else if matches!(f, Family::Sendrecv | Family::SendrecvReplace) {
            Role::SendRecv
        } else if matches!(f, Family::Recv | Family::Mrecv) {
            if c.nonblocking {
                Role::PostRecv
            } else {
                Role::Recv
            }
        } else if f.is_wait() || f.is_test() {
            Role::Completion
        } else {
            Role::None
        }
    }
}

impl RankWalk {
    /// A walk of world rank `rank`.
    pub fn new(rank: u32) -> RankWalk {
        RankWalk {
            rank,
            sent: HashMap::new(),
            received: HashMap::new(),
            posted: HashMap::new(),
            templates: HashMap::new(),
            roles: HashMap::new(),
        }
    }

    fn comm_key<R: std::io::Read>(reader: &RankReader<R>, ev: &Event) -> Option<(u64, bool)> {
        let id = ev.args.get(Slot::Comm)?;
        let c = reader.tables().comms.get(&(id as u32))?;
        Some((c.key, c.kind == CommKind::Inter))
    }

    fn send_item(
        &mut self,
        m: Half,
        ev: &Event,
        blocking: bool,
        request: Option<i64>,
    ) -> Option<Item> {
        let Half {
            peer: to,
            tag,
            comm,
            bytes,
        } = m;
        if to < 0 {
            return None;
        }
        let n = self.sent.entry((to as u32, tag, comm)).or_insert(0);
        let key = MessageKey {
            from: self.rank,
            to: to as u32,
            tag,
            comm,
            seq: *n,
        };
        *n += 1;
        Some(Item::Send {
            key,
            time: ev.t_enter,
            exit: ev.t_exit,
            blocking,
            thread: ev.thread,
            bytes,
            request,
        })
    }

    fn recv_item(
        &mut self,
        m: Half,
        posted: u64,
        ev: &Event,
        request: Option<i64>,
    ) -> Option<Item> {
        let Half {
            peer: from,
            tag,
            comm,
            bytes,
        } = m;
        if from < 0 || tag == NO_VALUE || from == NO_VALUE {
            return None;
        }
        let n = self.received.entry((from as u32, tag, comm)).or_insert(0);
        let key = MessageKey {
            from: from as u32,
            to: self.rank,
            tag,
            comm,
            seq: *n,
        };
        *n += 1;
        Some(Item::Recv {
            key,
            time: ev.t_exit,
            posted,
            blocked_from: ev.t_enter,
            thread: ev.thread,
            bytes,
            request,
        })
    }

    /// The items of `ev` (a call of `function` read by `reader`), appended to `out`.
    pub fn items<R: std::io::Read>(
        &mut self,
        reader: &RankReader<R>,
        function: &str,
        ev: &Event,
        out: &mut Vec<Item>,
    ) {
        let a = &ev.args;
        out.push(Item::Call {
            call: ev.call,
            thread: ev.thread,
            enter: ev.t_enter,
            exit: ev.t_exit,
            callsite: ev.callsite,
            bytes: a.get(Slot::Bytes),
            peer: a.get(Slot::Peer),
        });
        let role = *self
            .roles
            .entry(ev.call)
            .or_insert_with(|| Role::of(function));
        let pos = |v: Option<i64>| v.filter(|&b| b > 0).unwrap_or(0) as u64;
        if role == Role::Completion {
            return self.completions(ev, out);
        }
        if role == Role::Start {
            return self.starts(ev, out);
        }
        // Intercommunicators: peers are in the remote group, still world ranks.
        let Some((comm, _)) = Self::comm_key(reader, ev) else {
            return;
        };
        // The peer side a call names (its send, or a persistent receive's source).
        let send_half = Half {
            peer: a.get(Slot::Peer).unwrap_or(-1),
            tag: a.get(Slot::Tag).unwrap_or(0),
            comm,
            bytes: pos(a.get(Slot::Bytes)),
        };
        if let Role::Send { blocking } = role {
            let request = a.get(Slot::Request).filter(|_| !blocking);
            let item = self.send_item(send_half, ev, blocking, request);
            out.extend(item);
        } else if role == Role::SendRecv {
            let item = self.send_item(send_half, ev, true, None);
            out.extend(item);
            let from = a
                .get(Slot::StatusSource)
                .or(a.get(Slot::RecvPeer))
                .unwrap_or(-1);
            let recv = Half {
                peer: from,
                tag: a.get(Slot::StatusTag).or(a.get(Slot::RecvTag)).unwrap_or(0),
                comm,
                bytes: pos(a.get(Slot::StatusBytes).or(a.get(Slot::RecvBytes))),
            };
            let item = self.recv_item(recv, ev.t_enter, ev, None);
            out.extend(item);
        } else if role == Role::Recv {
            let from = a
                .get(Slot::StatusSource)
                .or(a.get(Slot::Peer))
                .unwrap_or(-1);
            let recv = Half {
                peer: from,
                tag: a.get(Slot::StatusTag).or(a.get(Slot::Tag)).unwrap_or(0),
                comm,
                bytes: pos(a.get(Slot::StatusBytes).or(a.get(Slot::Bytes))),
            };
            let item = self.recv_item(recv, ev.t_enter, ev, None);
            out.extend(item);
        } else if role == Role::PostRecv {
            if let Some(id) = a.get(Slot::Request) {
                self.posted.insert(id, (comm, ev.t_enter));
            }
        } else if let Role::Persistent { send } = role {
            if let Some(id) = a.get(Slot::Request) {
                self.templates.insert(
                    id,
                    Template {
                        send,
                        half: send_half,
                    },
                );
            }
        }
    }

    /// What a `Start` or `Startall` does: a message per started send, a posted receive
    /// per started receive (requests the trace did not see made are skipped).
    fn starts(&mut self, ev: &Event, out: &mut Vec<Item>) {
        for id in ev.requests() {
            let Some(t) = self.templates.get(&id).copied() else {
                continue;
            };
            if t.send {
                let item = self.send_item(t.half, ev, false, Some(id));
                out.extend(item);
            } else if t.half.peer != PEER_NULL {
                // A receive from MPI_PROC_NULL completes without a message.
                self.posted.insert(id, (t.half.comm, ev.t_enter));
            }
        }
    }

    /// The receives a `Wait*` or `Test*` completed, from its statuses.
    fn completions(&mut self, ev: &Event, out: &mut Vec<Item>) {
        let a = &ev.args;
        let mut done: Vec<(i64, i64, i64, i64)> = Vec::new();
        if let Some(id) = a.get(Slot::Request) {
            if let (Some(s), Some(t)) = (a.get(Slot::StatusSource), a.get(Slot::StatusTag)) {
                done.push((id, s, t, a.get(Slot::StatusBytes).unwrap_or(0)));
            }
        }
        if let Some(list) = ev.list(ListKind::Completions) {
            for c in list.chunks_exact(4) {
                done.push((c[0], c[1], c[2], c[3]));
            }
        }
        for (id, source, tag, bytes) in done {
            if let Some((comm, posted)) = self.posted.remove(&id) {
                let recv = Half {
                    peer: source,
                    tag,
                    comm,
                    bytes: bytes.max(0) as u64,
                };
                let item = self.recv_item(recv, posted, ev, Some(id));
                out.extend(item);
            }
        }
    }
}
