//! The communication plans of one panel step, rank by rank: the messages of the panel
//! broadcast (the six HPL_bcast variants), of a panel column's pivot exchange
//! (HPL_pdmxswp) and of the row swaps (HPL_pdlaswp00T's binary exchange, HPL_pdlaswp01T's
//! spread-roll), peers given as positions in the process row or column.

use crate::dat::Bcast;

use super::grid::{add, ip2_mask, sub};

/// One message of a communication pattern, peers given as positions (process column for
/// broadcasts, process row for swaps and pivots).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// A blocking send (`sync`: MPI_Ssend).
    Send {
        /// Peer position.
        peer: u32,
        /// Bytes.
        bytes: u64,
        /// Synchronous.
        sync: bool,
    },
    /// A blocking receive.
    Recv {
        /// Peer position.
        peer: u32,
        /// Bytes.
        bytes: u64,
    },
    /// Send and receive with the same peer at once (HPL_sdrv, the rolls' Issend + Recv).
    Exchange {
        /// Peer to send to.
        to: u32,
        /// Bytes sent.
        send: u64,
        /// Peer to receive from.
        from: u32,
        /// Bytes received.
        recv: u64,
        /// Synchronous send.
        sync: bool,
    },
}

/// A rank's part in one panel broadcast: the column it must see a message from before
/// starting (`None`: it starts at once, the root) and its messages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BcastPlan {
    /// The `Iprobe` source (a process column), `None` for the root, a lone column, or the
    /// long variants (whose probe HPL disables: they receive at once).
    pub probe: Option<u32>,
    /// Messages once the probe succeeded.
    pub msgs: Vec<Msg>,
}

/// HPL_bcast's messages for process column `me` of `q`, root `root`, `len` doubles.
pub fn bcast_plan(kind: Bcast, q: u32, root: u32, me: u32, len: u64) -> BcastPlan {
    let mut plan = BcastPlan::default();
    if q <= 1 {
        return plan;
    }
    let bytes = len * 8;
    let next = add(me, 1, q);
    let prev = sub(me, 1, q);
    let send = |peer| Msg::Send {
        peer,
        bytes,
        sync: false,
    };
    let recv = |peer| Msg::Recv { peer, bytes };
    match kind {
        Bcast::OneRing => {
            if me == root {
                plan.msgs.push(send(next));
            } else {
                plan.probe = Some(prev);
                plan.msgs.push(recv(prev));
                if next != root {
                    plan.msgs.push(send(next));
                }
            }
        }
        Bcast::OneRingM => {
            if me == root {
                plan.msgs.push(send(next));
                if q > 2 {
                    plan.msgs.push(send(add(next, 1, q)));
                }
            } else {
                let partner = if q > 2 && sub(prev, 1, q) == root {
                    root
                } else {
                    prev
                };
                plan.probe = Some(partner);
                plan.msgs.push(recv(partner));
                if prev != root && next != root {
                    plan.msgs.push(send(next));
                }
            }
        }
        Bcast::TwoRing | Bcast::TwoRingM => {
            let modified = kind == Bcast::TwoRingM;
            let roo2 = add(root, q.div_ceil(2), q);
            if me == root {
                plan.msgs.push(send(next));
                if q > 2 {
                    if modified && add(next, 1, q) != roo2 {
                        plan.msgs.push(send(add(next, 1, q)));
                    }
                    plan.msgs.push(send(roo2));
                }
            } else {
                let from_root = prev == root || me == roo2 || (modified && sub(prev, 1, q) == root);
                let partner = if from_root { root } else { prev };
                plan.probe = Some(partner);
                plan.msgs.push(recv(partner));
                if next != roo2 && next != root && !(modified && prev == root) {
                    plan.msgs.push(send(next));
                }
            }
        }
        Bcast::Long => long_plan(&mut plan, q, root, me, len, false),
        Bcast::LongM => long_plan(&mut plan, q, root, me, len, true),
    }
    plan
}

/// HPL_bcast_blong / blonM: a binary-tree scatter of `len` doubles in pieces, then a
/// ring allgather ("roll") of the pieces; blonM first gives the whole panel to root + 1,
/// which then leaves, and runs the rest among the other `q - 1` columns.
fn long_plan(plan: &mut BcastPlan, q: u32, root: u32, me: u32, len: u64, modified: bool) {
    let total = len as i64;
    // Participants, their distances and the column of a distance.
    let (size, mydist) = if modified {
        if me == root {
            plan.msgs.push(Msg::Send {
                peer: add(root, 1, q),
                bytes: len * 8,
                sync: true,
            });
        } else if sub(me, 1, q) == root {
            // HPL disabled this probe ("causes problems when lookahead is on ... a hang
            // on some machines"): root + 1 receives at once, blocking.
            plan.msgs.push(Msg::Recv {
                peer: root,
                bytes: len * 8,
            });
            return;
        }
        if q == 2 {
            return;
        }
        let d = if me == root { 0 } else { sub(me, root, q) - 1 };
        (q - 1, d)
    } else {
        (q, sub(me, root, q))
    };
    let col = |d: u32| -> u32 {
        if modified && d != 0 {
            add(root, d + 1, q)
        } else {
            add(root, d, q)
        }
    };
    let npm1 = size - 1;
    let (mut ip2, mut mask) = ip2_mask(npm1);
    let count = (total / i64::from(size)).max(1);
    let mut indx = ip2;
    let mut mydist2 = mydist;
    loop {
        mask ^= ip2;
        if mydist & mask == 0 {
            let ibuf = i64::from(indx) * count;
            let mut lbuf = total - ibuf;
            if indx + ip2 < size {
                lbuf = lbuf.min(i64::from(ip2) * count);
            }
            let bytes = lbuf.max(0) as u64 * 8;
            let partner = mydist ^ ip2;
            if mydist & ip2 != 0 {
                // No probe: HPL_bcast_blong and blonM have their Iprobe under `#if 0`
                // (HPL 2.3), so a receiver blocks in the spread at its first HPL_bcast
                // call and rolls at once.
                plan.msgs.push(Msg::Recv {
                    peer: col(partner),
                    bytes,
                });
            } else if partner < size {
                plan.msgs.push(Msg::Send {
                    peer: col(partner),
                    bytes,
                    sync: true,
                });
            }
        }
        if mydist2 < ip2 {
            ip2 >>= 1;
            indx = indx.wrapping_sub(ip2);
        } else {
            mydist2 -= ip2;
            ip2 >>= 1;
            indx += ip2;
        }
        if ip2 == 0 {
            break;
        }
    }
    // The roll: npm1 steps alternating between the two neighbours.
    let (prev, next) = (col(sub(mydist, 1, size)), col(add(mydist, 1, size)));
    let piece = |i: u32| -> u64 {
        let start = i64::from(i) * count;
        let end = if i == npm1 { total } else { start + count };
        (end.min(total) - start).max(0) as u64 * 8
    };
    for k in 0..npm1 {
        let l = k >> 1;
        let (s, r, peer) = if (mydist + k) & 1 != 0 {
            (add(mydist, l, size), sub(mydist, l + 1, size), prev)
        } else {
            (sub(mydist, l, size), add(mydist, l + 1, size), next)
        };
        plan.msgs.push(Msg::Exchange {
            to: peer,
            send: piece(s),
            from: peer,
            recv: piece(r),
            sync: true,
        });
    }
}

/// The pivot rows (of `jb`) held by the process row at distance `d` of `p` from the
/// current row: the model spreads them evenly.
pub fn share(jb: u64, p: u32, d: u32) -> u64 {
    jb / u64::from(p) + u64::from(u64::from(d) < jb % u64::from(p))
}

/// HPL_pdmxswp's messages for one panel column: process row `me` of `p`, current row
/// `cur`, panel width `jb`. Peers are process rows.
pub fn pivot_plan(p: u32, cur: u32, me: u32, jb: u64) -> Vec<Msg> {
    let mut out = Vec::new();
    if p <= 1 {
        return out;
    }
    let (cnt_, cnt0) = ((jb + 4) * 8, (2 * jb + 4) * 8);
    let n0 = jb * 8;
    let (ip2, _) = ip2_mask(p);
    let hdim = ip2.trailing_zeros();
    let size_ = p - ip2;
    let mydist = sub(me, cur, p);
    let row = |d: u32| add(d, cur, p);
    let partner = mydist ^ ip2;
    let np2 = size_ != 0 && partner < p;
    if np2 {
        if mydist & ip2 != 0 {
            if mydist == ip2 {
                out.push(exch(row(partner), cnt_, n0));
            } else {
                out.push(Msg::Send {
                    peer: row(partner),
                    bytes: cnt_,
                    sync: false,
                });
            }
        } else if mydist == 0 {
            out.push(exch(row(partner), n0, cnt_));
        } else {
            out.push(Msg::Recv {
                peer: row(partner),
                bytes: cnt_,
            });
        }
    }
    if mydist < ip2 {
        for k in 0..hdim {
            let (s, r) = if mydist >> (k + 1) == 0 {
                if mydist >> k == 0 {
                    (cnt0, cnt_)
                } else {
                    (cnt_, cnt0)
                }
            } else {
                (cnt_, cnt_)
            };
            out.push(exch(row(mydist ^ (1 << k)), s, r));
        }
    } else if size_ > 1 {
        tree_bcast(
            &mut out,
            size_,
            sub(me, row(ip2), p),
            |d| add(row(ip2), d, p),
            n0,
        );
    }
    if np2 {
        if mydist & ip2 != 0 {
            out.push(Msg::Recv {
                peer: row(partner),
                bytes: cnt_,
            });
        } else {
            out.push(Msg::Send {
                peer: row(partner),
                bytes: cnt_,
                sync: false,
            });
        }
    }
    out
}

fn exch(peer: u32, send: u64, recv: u64) -> Msg {
    Msg::Exchange {
        to: peer,
        send,
        from: peer,
        recv,
        sync: false,
    }
}

/// HPL's binomial tree broadcast among `size` positions (distance `mydis` from the root),
/// top bit first; `pos` maps a distance to a peer.
fn tree_bcast(out: &mut Vec<Msg>, size: u32, mydis: u32, pos: impl Fn(u32) -> u32, bytes: u64) {
    let (mut ip2, mut mask) = ip2_mask(size - 1);
    loop {
        mask ^= ip2;
        if mydis & mask == 0 {
            let partner = mydis ^ ip2;
            if mydis & ip2 != 0 {
                out.push(Msg::Recv {
                    peer: pos(partner),
                    bytes,
                });
            } else if partner < size {
                out.push(Msg::Send {
                    peer: pos(partner),
                    bytes,
                    sync: false,
                });
            }
        }
        ip2 >>= 1;
        if ip2 == 0 {
            break;
        }
    }
}

/// HPL_pdlaswp00T's messages (binary exchange): row `me` of `p`, current row `cur`,
/// `jb` pivot rows, `n` local columns. Phases are separated by `None` (where HPL polls
/// the broadcast).
pub fn swap00_plan(p: u32, cur: u32, me: u32, jb: u64, n: u64) -> Vec<Option<Msg>> {
    let mut out = Vec::new();
    if p <= 1 {
        return out;
    }
    let ldw = n + 1;
    let usize_ = jb * n * 8;
    let mydist = sub(me, cur, p);
    let row = |d: u32| add(d, cur, p);
    // llen[d]: the rows row distance d contributes, as this rank sees them.
    let mut llen: Vec<u64> = (0..p).map(|d| share(jb, p, d)).collect();
    if mydist == 0 {
        llen[0] = 0;
    }
    let (ip2, _) = ip2_mask(p);
    let hdim = ip2.trailing_zeros();
    let size_ = p - ip2;
    out.push(None);
    let partner = mydist ^ ip2;
    let np2 = size_ != 0 && partner < p;
    if np2 {
        if mydist == 0 {
            out.push(Some(exch(
                row(partner),
                usize_,
                llen[partner as usize] * ldw * 8,
            )));
        } else if mydist == ip2 {
            out.push(Some(exch(
                row(partner),
                llen[mydist as usize] * ldw * 8,
                usize_,
            )));
        } else if mydist & ip2 != 0 {
            out.push(Some(Msg::Send {
                peer: row(partner),
                bytes: llen[mydist as usize] * ldw * 8,
                sync: false,
            }));
        } else {
            out.push(Some(Msg::Recv {
                peer: row(partner),
                bytes: llen[partner as usize] * ldw * 8,
            }));
        }
    }
    for i in 1..size_ {
        llen[i as usize] += llen[(i + ip2) as usize];
    }
    out.push(None);
    if mydist < ip2 {
        // Before exchange k, distance d holds the rows of its aligned group of 2^k
        // distances (each exchange merges two groups): sums of a prefix table.
        let mut prefix = vec![0u64; ip2 as usize + 1];
        for d in 0..ip2 as usize {
            prefix[d + 1] = prefix[d] + llen[d];
        }
        let held = |d: u32, group: u32| {
            let lo = (d & !(group - 1)) as usize;
            prefix[lo + group as usize] - prefix[lo]
        };
        for k in 0..hdim {
            let ipow = 1u32 << k;
            let partner = mydist ^ ipow;
            let (mine, theirs) = (held(mydist, ipow), held(partner, ipow));
            let m = if mydist >> (k + 1) == 0 {
                if mydist >> k == 0 {
                    exch(row(partner), usize_, theirs * ldw * 8)
                } else {
                    exch(row(partner), mine * ldw * 8, usize_)
                }
            } else {
                exch(row(partner), mine * ldw * 8, theirs * ldw * 8)
            };
            out.push(Some(m));
            out.push(None);
        }
    } else if size_ > 1 {
        let mut tree = Vec::new();
        tree_bcast(&mut tree, size_, mydist - ip2, |d| row(ip2 + d), usize_);
        for m in tree {
            out.push(Some(m));
            out.push(None);
        }
    }
    if np2 {
        if mydist & ip2 != 0 {
            out.push(Some(Msg::Recv {
                peer: row(partner),
                bytes: usize_,
            }));
        } else {
            out.push(Some(Msg::Send {
                peer: row(partner),
                bytes: usize_,
                sync: false,
            }));
        }
    }
    out.push(None);
    out
}

/// HPL_pdlaswp01T's messages (spread then roll of U): the current row scatters each row's
/// part of U down a binary tree (HPL_spreadT), then `p - 1` ring steps give every row all
/// of U (HPL_rollT). Empty pieces are not sent, as in HPL.
pub fn swap01_plan(p: u32, cur: u32, me: u32, jb: u64, n: u64) -> Vec<Option<Msg>> {
    let mut out = Vec::new();
    if p <= 1 {
        return out;
    }
    let mydist = sub(me, cur, p);
    let row = |d: u32| add(d, cur, p);
    let piece = |d: u32| share(jb, p, d) * n * 8;
    // Spread: the holder of distances lo..hi hands hi-half to its first member.
    out.push(None);
    let (mut lo, mut hi) = (0u32, p);
    while hi - lo > 1 {
        let (half, _) = ip2_mask(hi - lo - 1);
        let mid = lo + half;
        let bytes: u64 = (mid..hi).map(piece).sum();
        if mydist == lo {
            if bytes > 0 {
                out.push(Some(Msg::Send {
                    peer: row(mid),
                    bytes,
                    sync: false,
                }));
            }
            hi = mid;
        } else if mydist == mid {
            if bytes > 0 {
                out.push(Some(Msg::Recv {
                    peer: row(lo),
                    bytes,
                }));
            }
            lo = mid;
        } else if mydist > mid {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    out.push(None);
    // Roll.
    let (prev, next) = (row(sub(mydist, 1, p)), row(add(mydist, 1, p)));
    for k in 0..p - 1 {
        let l = k >> 1;
        let (s, r, peer) = if (mydist + k) & 1 != 0 {
            (add(mydist, l, p), sub(mydist, l + 1, p), prev)
        } else {
            (sub(mydist, l, p), add(mydist, l + 1, p), next)
        };
        let (sb, rb) = (piece(s), piece(r));
        match (sb > 0, rb > 0) {
            (true, true) => out.push(Some(Msg::Exchange {
                to: peer,
                send: sb,
                from: peer,
                recv: rb,
                sync: false,
            })),
            (true, false) => out.push(Some(Msg::Send {
                peer,
                bytes: sb,
                sync: false,
            })),
            (false, true) => out.push(Some(Msg::Recv { peer, bytes: rb })),
            (false, false) => {}
        }
        out.push(None);
    }
    out
}

#[cfg(test)]
mod tests;
