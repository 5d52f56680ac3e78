//! LibNBC-style schedule tables: a collective becomes rounds of point-to-point items; every item of
//! a round may be in flight at once, and a round starts only when the previous one has completed.

use crate::Error;

/// One point-to-point step, with offsets into the staging send / receive buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// Send `len` bytes at `offset` of the staging send buffer to `peer`.
    Send {
        /// Destination rank in the communicator.
        peer: usize,
        /// Byte offset in the staging send buffer.
        offset: usize,
        /// Byte count.
        len: usize,
    },
    /// Receive `len` bytes from `peer` at `offset` of the staging receive buffer.
    Recv {
        /// Source rank in the communicator.
        peer: usize,
        /// Byte offset in the staging receive buffer (and in the user's receive buffer).
        offset: usize,
        /// Byte count.
        len: usize,
    },
    /// Local copy from the staging send buffer to the receive buffer (a rank's own block).
    Copy {
        /// Offset in the staging send buffer.
        from: usize,
        /// Offset in the receive buffer.
        to: usize,
        /// Byte count.
        len: usize,
    },
}

/// Rounds of items; a barrier separates consecutive rounds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schedule {
    /// The rounds, in execution order.
    pub rounds: Vec<Vec<Item>>,
}

impl Schedule {
    /// Every receive item with its round, in schedule order (the sub-messages a fault may wait on).
    pub fn receives(&self) -> impl Iterator<Item = (usize, Item)> + '_ {
        self.rounds.iter().enumerate().flat_map(|(r, items)| {
            items
                .iter()
                .filter(|i| matches!(i, Item::Recv { .. } | Item::Copy { .. }))
                .map(move |i| (r, *i))
        })
    }
}

/// Alltoall of `block` bytes per peer at `rank` of `size`, as a linear schedule of `window` rounds
/// at most: the own block is copied first, then round k exchanges with the peers at distance
/// k*w+1 .. (k+1)*w (send to rank+d, receive from rank-d), so every peer is served and the
/// number of requests in flight is bounded by `2 * window_peers`.
pub fn alltoall(
    rank: usize,
    size: usize,
    block: usize,
    window_peers: usize,
) -> Result<Schedule, Error> {
    if size == 0 || rank >= size {
        return Err(Error::BadRank { rank, size });
    }
    let w = window_peers.max(1);
    let mut rounds = vec![vec![Item::Copy {
        from: rank * block,
        to: rank * block,
        len: block,
    }]];
    let mut d = 1;
    while d < size {
        let mut round = Vec::new();
        for dist in d..(d + w).min(size) {
            let to = (rank + dist) % size;
            let from = (rank + size - dist) % size;
            round.push(Item::Recv {
                peer: from,
                offset: from * block,
                len: block,
            });
            round.push(Item::Send {
                peer: to,
                offset: to * block,
                len: block,
            });
        }
        rounds.push(round);
        d += w;
    }
    Ok(Schedule { rounds })
}

/// Alltoall in access order ([Li 2010], section 5.2.2) with every rank on one node: round `k`
/// is a scatter from rank `order[k]`; see [`alltoall_ordered_on_nodes`].
pub fn alltoall_ordered(
    rank: usize,
    size: usize,
    block: usize,
    order: &[usize],
) -> Result<Schedule, Error> {
    alltoall_ordered_on_nodes(rank, size, block, order, &vec![0; size])
}

/// Alltoall in access order across nodes ([Li 2010], section 5.2.2). Every rank reads the
/// blocks in the same `order` of sources, so the block read first should be everywhere first.
/// Ranks sharing a node share its network interface: on each node only one rank sends at a
/// time, the one whose block is read earliest among the node's ranks, while the first ranks
/// of the other nodes send in parallel. Round `k` is therefore a scatter from the `k`-th rank
/// (in reading order) of every node: each of them sends its block to every other rank (and
/// copies its own), and every rank receives from all of them. `node[r]` is rank `r`'s node
/// (any labels); `order` must be a permutation of `0..size`. With one node, round `k` is a
/// scatter from `order[k]` alone.
pub fn alltoall_ordered_on_nodes(
    rank: usize,
    size: usize,
    block: usize,
    order: &[usize],
    node: &[usize],
) -> Result<Schedule, Error> {
    if size == 0 || rank >= size || node.len() != size {
        return Err(Error::BadRank { rank, size });
    }
    let mut seen = vec![false; size];
    if order.len() != size
        || order
            .iter()
            .any(|&s| s >= size || std::mem::replace(&mut seen[s], true))
    {
        return Err(Error::BadOrder(order.len(), size));
    }
    // Each rank's turn on its node: how many of the node's ranks are read before it.
    let mut turn = vec![0usize; size];
    let mut taken: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for &src in order {
        let t = taken.entry(node[src]).or_insert(0);
        turn[src] = *t;
        *t += 1;
    }
    let rounds = taken.values().copied().max().unwrap_or(0);
    let schedule = (0..rounds)
        .map(|k| {
            // This round's senders, in reading order.
            let senders: Vec<usize> = order.iter().copied().filter(|&s| turn[s] == k).collect();
            let mut items = Vec::new();
            if turn[rank] == k {
                items.push(Item::Copy {
                    from: rank * block,
                    to: rank * block,
                    len: block,
                });
                items.extend((0..size).filter(|&p| p != rank).map(|peer| Item::Send {
                    peer,
                    offset: peer * block,
                    len: block,
                }));
            }
            items.extend(
                senders
                    .iter()
                    .filter(|&&s| s != rank)
                    .map(|&src| Item::Recv {
                        peer: src,
                        offset: src * block,
                        len: block,
                    }),
            );
            items
        })
        .collect();
    Ok(Schedule { rounds: schedule })
}

/// Splits a block of `len` bytes into sub-messages `(offset, len)`: a head of at most `edge`
/// bytes, interior chunks of at most `chunk` bytes, and a tail of at most `edge` bytes. With
/// `edge` the page size, the unaligned first page of a receive buffer lies in the head of its
/// first block and the unaligned last page in the tail of its last block (blocks of at least
/// two pages), so the call completes two small messages before it returns, not two chunks.
pub fn pieces(len: usize, edge: usize, chunk: usize) -> Vec<(usize, usize)> {
    let (edge, chunk) = (edge.max(1), chunk.max(1));
    let head = len.min(edge);
    let mut out = vec![(0, head)];
    if len <= edge {
        return out;
    }
    let tail = edge.max(len - edge);
    let mut at = edge;
    while at < tail {
        let n = chunk.min(tail - at);
        out.push((at, n));
        at += n;
    }
    if tail < len {
        out.push((tail, len - tail));
    }
    out
}

/// Whether piece `piece` of `pieces` of the block that rank `source` (of `size`) sends is sent
/// ahead of the schedule: the head of rank 0's blocks and the tail of the last rank's blocks,
/// which fill the receivers' unaligned first and last pages.
pub fn is_priority(source: usize, size: usize, piece: usize, pieces: usize) -> bool {
    (source == 0 && piece == 0) || (source + 1 == size && piece + 1 == pieces)
}

/// The binomial broadcast tree over ranks relative to the root (`0` is the root): the
/// parent of `vrank` (none for the root) and its children, nearest subtree last. The parent of
/// `v` is `v` without its lowest set bit; the children of `v` are `v + 2^k` for every `2^k`
/// below `v`'s lowest set bit (every `2^k` for the root) that stays below `size`.
pub fn binomial_tree(vrank: usize, size: usize) -> (Option<usize>, Vec<usize>) {
    let parent = (vrank > 0).then(|| vrank & (vrank - 1));
    let low = if vrank == 0 {
        size.next_power_of_two()
    } else {
        1 << vrank.trailing_zeros()
    };
    let mut children = Vec::new();
    let mut k = low;
    while k > 1 {
        k /= 2;
        if vrank + k < size {
            children.push(vrank + k);
        }
    }
    (parent, children)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates every rank's schedule and checks that each (source, destination) block is sent
    /// exactly once and received exactly once, at the right offsets, by the right peer.
    #[test]
    fn alltoall_every_pair_exactly_once() {
        for size in 1..9 {
            for w in 1..5 {
                let block = 8;
                let mut sent = vec![vec![0; size]; size];
                let mut recvd = vec![vec![0; size]; size];
                for rank in 0..size {
                    let s = alltoall(rank, size, block, w).unwrap();
                    assert!(s.rounds.len() <= 1 + (size - 1).div_ceil(w));
                    for item in s.rounds.iter().flatten() {
                        match *item {
                            Item::Send { peer, offset, len } => {
                                assert_eq!((offset, len), (peer * block, block));
                                sent[rank][peer] += 1;
                            }
                            Item::Recv { peer, offset, len } => {
                                assert_eq!((offset, len), (peer * block, block));
                                recvd[peer][rank] += 1;
                            }
                            Item::Copy { from, to, len } => {
                                assert_eq!((from, to, len), (rank * block, rank * block, block));
                                sent[rank][rank] += 1;
                                recvd[rank][rank] += 1;
                            }
                        }
                    }
                }
                assert_eq!(sent, vec![vec![1; size]; size], "size {size} w {w}");
                assert_eq!(recvd, sent);
            }
        }
    }

    /// In a round, what rank r sends to rank t must be what t expects from r in the same round,
    /// otherwise the barrier between rounds could deadlock.
    #[test]
    fn alltoall_rounds_match_between_peers() {
        let size = 5;
        let scheds: Vec<_> = (0..size)
            .map(|r| alltoall(r, size, 4, 2).unwrap())
            .collect();
        for (r, s) in scheds.iter().enumerate() {
            for (k, round) in s.rounds.iter().enumerate() {
                for item in round {
                    if let Item::Send { peer, .. } = *item {
                        assert!(scheds[peer].rounds[k].contains(&Item::Recv {
                            peer: r,
                            offset: r * 4,
                            len: 4
                        }));
                    }
                }
            }
        }
        assert_eq!(scheds[0].receives().count(), size);
    }

    /// Pieces tile the block in order, heads and tails are at most `edge`, chunks at most
    /// `chunk`, and a block of two pages or more has its last `edge` bytes in its last piece.
    #[test]
    fn pieces_tile_the_block() {
        for len in [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 70_000, 1 << 20] {
            let p = pieces(len, 4096, 65536);
            let mut at = 0;
            for (i, &(o, n)) in p.iter().enumerate() {
                assert_eq!(o, at, "len {len}");
                assert!(n > 0 || len == 0);
                let limit = if i == 0 || i + 1 == p.len() {
                    4096
                } else {
                    65536
                };
                assert!(n <= limit, "len {len} piece {i} {n}");
                at += n;
            }
            assert_eq!(at, len);
            if len >= 8192 {
                assert_eq!(*p.last().unwrap(), (len - 4096, 4096));
                assert_eq!(p[0], (0, 4096));
            }
        }
        assert_eq!(
            pieces(1 << 20, 4096, 65536).len(),
            2 + (1048576 - 8192usize).div_ceil(65536)
        );
    }

    #[test]
    fn priority_pieces_are_rank0_heads_and_last_rank_tails() {
        assert!(is_priority(0, 4, 0, 5));
        assert!(!is_priority(0, 4, 4, 5));
        assert!(is_priority(3, 4, 4, 5));
        assert!(!is_priority(3, 4, 0, 5));
        assert!(!is_priority(1, 4, 0, 5));
        assert!(is_priority(0, 1, 0, 1));
    }

    /// Every non-root rank has exactly one parent, is among its parent's children, and the
    /// tree reaches every rank from the root.
    #[test]
    fn binomial_tree_spans_every_rank_once() {
        for size in 1..40 {
            let mut reached = vec![0; size];
            reached[0] = 1;
            let mut frontier = vec![0];
            while let Some(v) = frontier.pop() {
                let (_, kids) = binomial_tree(v, size);
                for c in kids {
                    assert_eq!(binomial_tree(c, size).0, Some(v), "size {size} child {c}");
                    reached[c] += 1;
                    frontier.push(c);
                }
            }
            assert_eq!(reached, vec![1; size], "size {size}");
        }
        assert_eq!(binomial_tree(0, 8), (None, vec![4, 2, 1]));
        assert_eq!(binomial_tree(4, 8), (Some(0), vec![6, 5]));
        assert_eq!(binomial_tree(6, 7), (Some(4), vec![]));
    }

    /// In the ordered schedule, round k is a scatter from order[k] on every rank.
    #[test]
    fn alltoall_ordered_rounds_are_scatters() {
        let order = [2, 0, 3, 1];
        let scheds: Vec<_> = (0..4)
            .map(|r| alltoall_ordered(r, 4, 8, &order).unwrap())
            .collect();
        for (k, &src) in order.iter().enumerate() {
            for (r, s) in scheds.iter().enumerate() {
                let round = &s.rounds[k];
                if r == src {
                    assert_eq!(round.len(), 4);
                    assert!(round.contains(&Item::Copy {
                        from: r * 8,
                        to: r * 8,
                        len: 8
                    }));
                } else {
                    assert_eq!(
                        round,
                        &vec![Item::Recv {
                            peer: src,
                            offset: src * 8,
                            len: 8
                        }]
                    );
                    assert!(scheds[src].rounds[k].contains(&Item::Send {
                        peer: r,
                        offset: r * 8,
                        len: 8
                    }));
                }
            }
        }
        assert!(alltoall_ordered(0, 4, 8, &[0, 1, 1, 3]).is_err());
        assert!(alltoall_ordered(0, 4, 8, &[0, 1, 2]).is_err());
    }

    /// Across nodes: every pair exactly once, each node's ranks send one per round in reading
    /// order, the first ranks of all nodes together, and every send has its receive in the
    /// same round.
    #[test]
    fn alltoall_ordered_on_nodes_one_sender_per_node_per_round() {
        // Nodes {0, 1}, {2, 3}, {4}; reading order 3 4 0 2 1.
        let (size, block) = (5, 8);
        let node = [7, 7, 9, 9, 5];
        let order = [3, 4, 0, 2, 1];
        let scheds: Vec<_> = (0..size)
            .map(|r| alltoall_ordered_on_nodes(r, size, block, &order, &node).unwrap())
            .collect();
        assert!(scheds.iter().all(|s| s.rounds.len() == 2));
        let senders = |k: usize| -> Vec<usize> {
            (0..size)
                .filter(|&r| {
                    scheds[r].rounds[k]
                        .iter()
                        .any(|i| matches!(i, Item::Send { .. }))
                })
                .collect()
        };
        // Round 0: the earliest-read rank of each node (3, 4, 0); round 1: the others.
        assert_eq!(senders(0), vec![0, 3, 4]);
        assert_eq!(senders(1), vec![1, 2]);
        let mut sent = vec![vec![0; size]; size];
        for (r, s) in scheds.iter().enumerate() {
            for (k, round) in s.rounds.iter().enumerate() {
                for item in round {
                    match *item {
                        Item::Send { peer, offset, len } => {
                            assert_eq!((offset, len), (peer * block, block));
                            assert!(scheds[peer].rounds[k].contains(&Item::Recv {
                                peer: r,
                                offset: r * block,
                                len: block
                            }));
                            sent[r][peer] += 1;
                        }
                        Item::Recv { peer, .. } => assert!(senders(k).contains(&peer)),
                        Item::Copy { .. } => sent[r][r] += 1,
                    }
                }
            }
        }
        assert_eq!(sent, vec![vec![1; size]; size]);
        // One node: the plain ordered schedule.
        for r in 0..size {
            assert_eq!(
                alltoall_ordered_on_nodes(r, size, block, &order, &[0; 5]).unwrap(),
                alltoall_ordered(r, size, block, &order).unwrap()
            );
        }
        assert!(alltoall_ordered_on_nodes(0, size, block, &order, &[0; 4]).is_err());
    }

    #[test]
    fn bad_rank_rejected() {
        assert_eq!(
            alltoall(3, 3, 1, 1),
            Err(Error::BadRank { rank: 3, size: 3 })
        );
        assert!(alltoall(0, 0, 1, 1).is_err());
    }
}
