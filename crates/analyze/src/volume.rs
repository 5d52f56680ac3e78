//! Bytes moved by a call, from its recorded arguments and MPI semantics.
//!
//! `sent` and `received` count payload bytes passing through the call's buffers at the API,
//! for this rank: a `Send` sends its buffer, a `Recv` receives what its status says (or its
//! buffer size when the status was not decoded), an `Irecv` is credited with its posted
//! buffer, a collective sends its send buffer and receives its receive buffer (a `Bcast` or a
//! `Reduce` moves its one buffer: the root sends or receives it, the others the reverse).
//! Persistent requests are credited when started, not when created. A send to or a receive
//! from `MPI_PROC_NULL` ([`PEER_NULL`]) moves nothing, in either half of a `Sendrecv`.

use mpiscope_mpispec::Family;
use mpiscope_trace::{Event, Slot, PEER_NULL};

/// Bytes sent and received by one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Volume {
    /// Payload bytes sent.
    pub sent: u64,
    /// Payload bytes received.
    pub received: u64,
}

impl Volume {
    /// Both directions.
    pub fn total(&self) -> u64 {
        self.sent + self.received
    }
}

fn pos(v: Option<i64>) -> u64 {
    v.filter(|&b| b > 0).unwrap_or(0) as u64
}

/// The volume of `ev`, a call to the function called `name`. `rank` is the world rank of
/// the process that made it (to tell roots from the others); `peers` the number of processes
/// a per-process count applies to (the communicator's size, or its remote group's).
pub fn volume(name: &str, ev: &Event, rank: u32, peers: u32) -> Volume {
    volume_of(&mpiscope_mpispec::classify(name), ev, rank, peers)
}

/// As [`volume`], for a function already classified.
pub fn volume_of(class: &mpiscope_mpispec::CallClass, ev: &Event, rank: u32, peers: u32) -> Volume {
    Rule::of(class).volume(ev, rank, peers)
}

/// How a function's arguments give its volume: decided once per function from its class
/// ([`Rule::of`], string comparisons), applied to every call ([`Rule::volume`], no string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Moves nothing counted here (persistent creations, waits, probes, ...).
    Nothing,
    /// Point-to-point send: its buffer, unless to the null process.
    Send,
    /// Point-to-point receive: its status, else its buffer, unless from the null process.
    Recv,
    /// Sendrecv: send buffer out unless to the null process, status or receive buffer in
    /// unless from the null process.
    Sendrecv,
    /// Sendrecv_replace: one buffer out and in (each half not with the null process).
    SendrecvReplace,
    /// Bcast: the root sends its buffer, the others receive it.
    Bcast,
    /// Reduce: everyone sends; the root also receives.
    Reduce,
    /// Allreduce, scan, exscan: the buffer out and in.
    Allreduce,
    /// Reduce_scatter_block: n receive blocks out, one in.
    ReduceScatterBlock,
    /// Reduce_scatter: the whole send buffer out, a share in.
    ReduceScatter,
    /// Alltoall: per-process counts both ways.
    Alltoall,
    /// Allgather: own block out, n in.
    Allgather,
    /// Gather: own block out, n in at the root.
    Gather,
    /// Scatter: n out at the root, one block in.
    Scatter,
    /// Other collectives: send buffer out, receive buffer in.
    Collective,
    /// One-sided put or accumulate: origin buffer out.
    Put,
    /// One-sided get: origin buffer in.
    Get,
    /// Atomic read-modify-write: both ways.
    GetAccumulate,
}

impl Rule {
    /// The rule for a classified function.
    pub fn of(class: &mpiscope_mpispec::CallClass) -> Rule {
        if class.persistent {
            return Rule::Nothing;
        }
        use Family as F;
        match class.family {
            F::Send | F::Ssend | F::Bsend | F::Rsend | F::Psend => Rule::Send,
            F::Recv | F::Mrecv | F::Precv => Rule::Recv,
            F::Sendrecv => Rule::Sendrecv,
            F::SendrecvReplace => Rule::SendrecvReplace,
            F::Bcast => Rule::Bcast,
            F::Reduce => Rule::Reduce,
            F::Allreduce | F::Scan | F::Exscan => Rule::Allreduce,
            F::ReduceScatterBlock => Rule::ReduceScatterBlock,
            F::ReduceScatter => Rule::ReduceScatter,
            F::Alltoall => Rule::Alltoall,
            F::Allgather => Rule::Allgather,
            F::Gather => Rule::Gather,
            F::Scatter => Rule::Scatter,
            _ if class.collective => Rule::Collective,
            F::Put | F::Rput | F::Accumulate | F::Raccumulate => Rule::Put,
            F::Get | F::Rget => Rule::Get,
            F::GetAccumulate | F::RgetAccumulate | F::FetchAndOp | F::CompareAndSwap => {
                Rule::GetAccumulate
            }
            _ => Rule::Nothing,
        }
    }

    /// The volume of `ev` under this rule (see [`volume`] for `rank` and `peers`).
    #[inline]
    pub fn volume(self, ev: &Event, rank: u32, peers: u32) -> Volume {
        let n = u64::from(peers.max(1));
        let a = &ev.args;
        let to_null = || a.get(Slot::Peer) == Some(PEER_NULL);
        // The receive half of a combined call names its source in its own slot.
        let from_null = || a.get(Slot::RecvPeer) == Some(PEER_NULL);
        let is_root = || {
            a.get(Slot::Root)
                .is_some_and(|r| r == i64::from(rank) || r == mpiscope_trace::PEER_ROOT)
        };
        let bytes = || pos(a.get(Slot::Bytes));
        let rbytes = || pos(a.get(Slot::RecvBytes));
        let v = |sent: u64, received: u64| Volume { sent, received };
        // An intercommunicator's rooted collective: the root (`MPI_ROOT`) only sends
        // (broadcast, scatter) or only receives (reduce, gather) across; the other
        // processes of its group (`MPI_PROC_NULL`) take no part.
        let root_arg = a.get(Slot::Root);
        let rooted = matches!(
            self,
            Rule::Bcast | Rule::Reduce | Rule::Gather | Rule::Scatter
        );
        if rooted && root_arg == Some(PEER_NULL) {
            return Volume::default();
        }
        if rooted && root_arg == Some(mpiscope_trace::PEER_ROOT) {
            return match self {
                Rule::Bcast => v(bytes(), 0),
                Rule::Reduce => v(0, bytes()),
                Rule::Gather => v(0, rbytes() * n),
                _ => v(bytes() * n, 0),
            };
        }
        match self {
            Rule::Nothing => Volume::default(),
            Rule::Send => v(if to_null() { 0 } else { bytes() }, 0),
            Rule::Recv if to_null() => Volume::default(),
            Rule::Recv => v(0, pos(a.get(Slot::StatusBytes).or(a.get(Slot::Bytes)))),
            Rule::Sendrecv => v(
                if to_null() { 0 } else { bytes() },
                if from_null() {
                    0
                } else {
                    pos(a.get(Slot::StatusBytes).or(a.get(Slot::RecvBytes)))
                },
            ),
            Rule::SendrecvReplace => v(
                if to_null() { 0 } else { bytes() },
                if from_null() {
                    0
                } else {
                    pos(a.get(Slot::StatusBytes).or(a.get(Slot::Bytes)))
                },
            ),
            Rule::Bcast if is_root() => v(bytes(), 0),
            Rule::Bcast => v(0, bytes()),
            Rule::Reduce if is_root() => v(bytes(), bytes()),
            Rule::Reduce => v(bytes(), 0),
            Rule::Allreduce => v(bytes(), bytes()),
            Rule::ReduceScatterBlock => v(rbytes() * n, rbytes()),
            // Bytes is the sum of the per-process counts: the whole send buffer.
            Rule::ReduceScatter => v(bytes(), bytes() / n),
            // Per-process counts.
            Rule::Alltoall => v(bytes() * n, rbytes() * n),
            Rule::Allgather => v(bytes(), rbytes() * n),
            Rule::Gather => v(bytes(), if is_root() { rbytes() * n } else { 0 }),
            Rule::Scatter => v(if is_root() { bytes() * n } else { 0 }, rbytes()),
            Rule::Collective => v(bytes(), rbytes()),
            Rule::Put => v(bytes(), 0),
            Rule::Get => v(0, bytes()),
            Rule::GetAccumulate => v(bytes(), bytes()),
        }
    }
}

/// Volume of a persistent request's creation call, credited each time it is started.
pub fn persistent_volume(name: &str, ev: &Event, rank: u32, peers: u32) -> Volume {
    let base = name.strip_suffix("_c").unwrap_or(name);
    let plain = base.strip_suffix("_init").unwrap_or(base);
    volume(plain, ev, rank, peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(args: &[(Slot, i64)]) -> Event {
        crate::testutil::event(args, &[])
    }

    #[test]
    fn p2p() {
        assert_eq!(
            volume("MPI_Send", &ev(&[(Slot::Peer, 1), (Slot::Bytes, 80)]), 0, 4),
            Volume {
                sent: 80,
                received: 0
            }
        );
        assert_eq!(
            volume(
                "MPI_Send",
                &ev(&[(Slot::Peer, PEER_NULL), (Slot::Bytes, 80)]),
                0,
                4
            ),
            Volume::default()
        );
        assert_eq!(
            volume(
                "MPI_Recv",
                &ev(&[(Slot::Bytes, 800), (Slot::StatusBytes, 80)]),
                0,
                4
            ),
            Volume {
                sent: 0,
                received: 80
            }
        );
        assert_eq!(
            volume("MPI_Irecv", &ev(&[(Slot::Bytes, 800)]), 0, 4),
            Volume {
                sent: 0,
                received: 800
            }
        );
        assert_eq!(
            volume("MPI_Send_init", &ev(&[(Slot::Bytes, 800)]), 0, 4),
            Volume::default()
        );
        assert_eq!(
            persistent_volume("MPI_Send_init", &ev(&[(Slot::Bytes, 8)]), 0, 4),
            Volume {
                sent: 8,
                received: 0
            }
        );
    }

    /// The halo exchange of `examples/halo.c`: the end ranks send to or receive from the null
    /// process in one half of each `Sendrecv`; that half moves nothing.
    #[test]
    fn sendrecv_with_the_null_process() {
        let half = |peer: i64, rpeer: i64, st: Option<i64>| {
            let mut a = vec![
                (Slot::Peer, peer),
                (Slot::Bytes, 8),
                (Slot::RecvPeer, rpeer),
                (Slot::RecvBytes, 8),
            ];
            a.extend(st.map(|b| (Slot::StatusBytes, b)));
            ev(&a)
        };
        let v = |sent, received| Volume { sent, received };
        assert_eq!(
            volume("MPI_Sendrecv", &half(PEER_NULL, 1, Some(8)), 0, 4),
            v(0, 8)
        );
        assert_eq!(
            volume("MPI_Sendrecv", &half(1, PEER_NULL, Some(0)), 0, 4),
            v(8, 0)
        );
        // Without a decoded status the receive buffer would be credited: not from null.
        assert_eq!(
            volume("MPI_Sendrecv", &half(1, PEER_NULL, None), 0, 4),
            v(8, 0)
        );
        assert_eq!(volume("MPI_Sendrecv", &half(2, 1, None), 0, 4), v(8, 8));
        assert_eq!(
            volume("MPI_Sendrecv", &half(PEER_NULL, PEER_NULL, None), 0, 4),
            v(0, 0)
        );
        let replace = |peer: i64, rpeer: i64| {
            ev(&[
                (Slot::Peer, peer),
                (Slot::Bytes, 16),
                (Slot::RecvPeer, rpeer),
            ])
        };
        assert_eq!(
            volume("MPI_Sendrecv_replace", &replace(PEER_NULL, 3), 0, 4),
            v(0, 16)
        );
        assert_eq!(
            volume("MPI_Sendrecv_replace", &replace(3, PEER_NULL), 0, 4),
            v(16, 0)
        );
        assert_eq!(
            volume("MPI_Isendrecv", &half(PEER_NULL, 1, None), 0, 4),
            v(0, 8)
        );
    }

    #[test]
    fn collectives() {
        let b = ev(&[(Slot::Bytes, 100), (Slot::Root, 2)]);
        assert_eq!(
            volume("MPI_Bcast", &b, 2, 4),
            Volume {
                sent: 100,
                received: 0
            }
        );
        assert_eq!(
            volume("MPI_Bcast", &b, 0, 4),
            Volume {
                sent: 0,
                received: 100
            }
        );
        assert_eq!(
            volume("MPI_Reduce", &b, 0, 4),
            Volume {
                sent: 100,
                received: 0
            }
        );
        assert_eq!(
            volume("MPI_Allreduce", &ev(&[(Slot::Bytes, 8)]), 0, 4),
            Volume {
                sent: 8,
                received: 8
            }
        );
        let g = ev(&[(Slot::Bytes, 8), (Slot::RecvBytes, 8)]);
        assert_eq!(
            volume("MPI_Allgather", &g, 0, 4),
            Volume {
                sent: 8,
                received: 32
            }
        );
        assert_eq!(
            volume("MPI_Iallgather", &g, 0, 4),
            Volume {
                sent: 8,
                received: 32
            }
        );
        assert_eq!(
            volume("MPI_Alltoall", &g, 0, 4),
            Volume {
                sent: 32,
                received: 32
            }
        );
        let gv = ev(&[(Slot::Bytes, 8), (Slot::RecvBytes, 40), (Slot::Root, 0)]);
        assert_eq!(
            volume("MPI_Gatherv", &gv, 0, 4),
            Volume {
                sent: 8,
                received: 40
            }
        );
    }

    /// On an intercommunicator, the root (`MPI_ROOT`) of a broadcast or scatter only sends,
    /// of a reduce or gather only receives; the rest of its group (`MPI_PROC_NULL`) moves
    /// nothing; the other group's processes (the root as a rank) as in an intracommunicator.
    #[test]
    fn intercommunicator_roots() {
        use mpiscope_trace::PEER_ROOT;
        let call = |name: &str, root: i64| {
            let e = ev(&[(Slot::Root, root), (Slot::Bytes, 8), (Slot::RecvBytes, 8)]);
            let v = volume(name, &e, 5, 3);
            (v.sent, v.received)
        };
        assert_eq!(call("MPI_Bcast", PEER_ROOT), (8, 0));
        assert_eq!(call("MPI_Scatter", PEER_ROOT), (24, 0));
        assert_eq!(call("MPI_Reduce", PEER_ROOT), (0, 8));
        assert_eq!(call("MPI_Gather", PEER_ROOT), (0, 24));
        for name in [
            "MPI_Bcast",
            "MPI_Scatter",
            "MPI_Reduce",
            "MPI_Gather",
            "MPI_Ibcast",
        ] {
            assert_eq!(call(name, PEER_NULL), (0, 0), "{name}");
        }
        assert_eq!(call("MPI_Bcast", 0), (0, 8));
        assert_eq!(call("MPI_Reduce", 0), (8, 0));
    }
}
