//! Bytes moved by a call, from its recorded arguments and MPI semantics.
//!
//! `sent` and `received` count payload bytes passing through the call's buffers at the API,
//! for this rank: a `Send` sends its buffer, a `Recv` receives what its status says (or its
//! buffer size when the status was not decoded), an `Irecv` is credited with its posted
//! buffer, a collective sends its send buffer and receives its receive buffer (a `Bcast` or a
//! `Reduce` moves its one buffer: the root sends or receives it, the others the reverse).
//! Persistent requests are credited when started, not when created.

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
    let n = u64::from(peers.max(1));
    let fam = &class.family;
    let a = &ev.args;
    let to_null = a.get(Slot::Peer) == Some(PEER_NULL);
    let is_root = a
        .get(Slot::Root)
        .is_some_and(|r| r == i64::from(rank) || r == mpiscope_trace::PEER_ROOT);
    let persistent_init = class.persistent;
    let v = |sent: u64, received: u64| Volume { sent, received };
    match fam.as_str() {
        _ if persistent_init => Volume::default(),
        "send" | "ssend" | "bsend" | "rsend" | "psend" => {
            v(if to_null { 0 } else { pos(a.get(Slot::Bytes)) }, 0)
        }
        "recv" | "mrecv" | "precv" => {
            if to_null {
                return Volume::default();
            }
            v(0, pos(a.get(Slot::StatusBytes).or(a.get(Slot::Bytes))))
        }
        "sendrecv" => v(
            pos(a.get(Slot::Bytes)),
            pos(a.get(Slot::StatusBytes).or(a.get(Slot::RecvBytes))),
        ),
        "sendrecv_replace" => v(
            pos(a.get(Slot::Bytes)),
            pos(a.get(Slot::StatusBytes).or(a.get(Slot::Bytes))),
        ),
        "bcast" => {
            let b = pos(a.get(Slot::Bytes));
            if is_root {
                v(b, 0)
            } else {
                v(0, b)
            }
        }
        "reduce" => {
            let b = pos(a.get(Slot::Bytes));
            if is_root {
                v(b, b)
            } else {
                v(b, 0)
            }
        }
        "allreduce" | "scan" | "exscan" => {
            let b = pos(a.get(Slot::Bytes));
            v(b, b)
        }
        "reduce_scatter_block" => {
            let b = pos(a.get(Slot::RecvBytes));
            v(b * n, b)
        }
        // Bytes is the sum of the per-process counts: the whole send buffer.
        "reduce_scatter" => v(pos(a.get(Slot::Bytes)), pos(a.get(Slot::Bytes)) / n),
        // Per-process counts.
        "alltoall" => v(pos(a.get(Slot::Bytes)) * n, pos(a.get(Slot::RecvBytes)) * n),
        "allgather" => v(pos(a.get(Slot::Bytes)), pos(a.get(Slot::RecvBytes)) * n),
        "gather" => v(
            pos(a.get(Slot::Bytes)),
            if is_root {
                pos(a.get(Slot::RecvBytes)) * n
            } else {
                0
            },
        ),
        "scatter" => v(
            if is_root {
                pos(a.get(Slot::Bytes)) * n
            } else {
                0
            },
            pos(a.get(Slot::RecvBytes)),
        ),
        _ if class.collective => v(pos(a.get(Slot::Bytes)), pos(a.get(Slot::RecvBytes))),
        // One-sided: origin buffer out for put/accumulate, in for get.
        "put" | "rput" | "accumulate" | "raccumulate" => v(pos(a.get(Slot::Bytes)), 0),
        "get" | "rget" => v(0, pos(a.get(Slot::Bytes))),
        "get_accumulate" | "rget_accumulate" | "fetch_and_op" | "compare_and_swap" => {
            v(pos(a.get(Slot::Bytes)), pos(a.get(Slot::Bytes)))
        }
        _ => Volume::default(),
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
}
