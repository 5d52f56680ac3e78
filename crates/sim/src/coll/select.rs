//! Decision rules of the two selectors.
//!
//! * [`Selector::Ompi`]: Open MPI's `tuned` fixed decision rules as SimGrid 3.32's
//!   `smpi_openmpi_selector.cpp` transcribes them (design note §7, tables in §7.4–§7.12),
//!   commutative branch (replay's `MPI_OP_NULL` counts as commutative). gatherv, scatterv,
//!   scan and exscan have one fixed algorithm.
//! * [`Selector::Mpich`]: MPICH 3.3's `MPIR_*_intra_auto` rules with the default CVARs
//!   (SMP-aware paths off), the same as MPICH 4's default `coll_selection.json` for
//!   intra-communicators apart from allreduce's short-message bound (we keep 3.3's 2 KiB).
//! * [`Selector::OpenMpi4`]: the `ompi` tables (Open MPI 4.1's `coll_tuned_decision_fixed.c`,
//!   which SimGrid transcribes), with a broadcast's `basic_linear` (SimGrid's `NTSL`, a
//!   chain) run as Open MPI runs it, the root sending to every rank (`flattree`); the
//!   builders leave their segments out under this selector ([`super::Cx::segment`]).
//!
//! The message size `S` is computed as SimGrid does: bytes of the buffer (bcast, reduce,
//! allreduce), the per-peer send block (alltoall, allgather), the root's receive block or the
//! other ranks' send block (gather; reversed for scatter), the sum of the receive counts
//! (reduce_scatter) and the per-rank average (allgatherv).

use super::ops::{floor_pow2, is_pow2};
use super::{CollArgs, Collective, Selector};

/// The algorithm `selector` picks for these arguments.
pub(crate) fn choose(a: &CollArgs, selector: Selector) -> &'static str {
    match selector {
        Selector::Ompi => ompi(a),
        Selector::Mpich => mpich(a),
        Selector::OpenMpi4 => match (a.kind, ompi(a)) {
            // Open MPI's basic linear bcast: the root isends to every rank.
            (Collective::Bcast, "NTSL") => "flattree",
            (_, name) => name,
        },
    }
}

/// Picks the first entry whose bound `s` is below: `table` is `(bound, algorithm)`, the last
/// entry's bound is ignored (it is the "else").
fn pick(s: u64, table: &[(u64, &'static str)]) -> &'static str {
    for &(bound, alg) in &table[..table.len() - 1] {
        if s < bound {
            return alg;
        }
    }
    table[table.len() - 1].1
}

const ELSE: u64 = u64::MAX;

fn ompi(a: &CollArgs) -> &'static str {
    let p = a.size;
    match a.kind {
        Collective::Barrier => match p {
            0..=3 => "ompi_recursivedoubling",
            4..=7 => "ompi_basic_linear",
            8..=63 => "ompi_recursivedoubling",
            64..=255 => "ompi_bruck",
            256..=511 => "ompi_tree",
            512..=1023 => "ompi_bruck",
            1024..=4095 => "ompi_tree",
            _ => "ompi_bruck",
        },
        Collective::Bcast => ompi_bcast(p, a.bytes()),
        Collective::Reduce => ompi_reduce(p, a.bytes()),
        Collective::Allreduce => ompi_allreduce(p, a.bytes()),
        Collective::Alltoall => ompi_alltoall(p, a.bytes()),
        Collective::Alltoallv => match p {
            0..=3 => "pair",
            4..=63 => "ompi_basic_linear",
            64..=127 => "pair",
            128..=255 => "ompi_basic_linear",
            256..=1023 => "pair",
            _ => "ompi_basic_linear",
        },
        Collective::Allgather => ompi_allgather(p, a.bytes()),
        Collective::Allgatherv => {
            let total: u64 = a
                .recv_counts
                .iter()
                .map(|c| c.saturating_mul(a.dtype_size))
                .sum();
            ompi_allgatherv(p, total / p as u64)
        }
        Collective::Gather => {
            let s = if a.rank == a.root {
                a.recv_count.saturating_mul(a.recv_dtype_size)
            } else {
                a.bytes()
            };
            ompi_gather(p, s)
        }
        Collective::Scatter => {
            let s = if a.rank == a.root {
                a.bytes()
            } else {
                a.recv_count.saturating_mul(a.recv_dtype_size)
            };
            ompi_scatter(p, s)
        }
        Collective::ReduceScatter => {
            let total: u64 = a
                .recv_counts
                .iter()
                .sum::<u64>()
                .saturating_mul(a.dtype_size);
            ompi_reduce_scatter(p, total)
        }
        Collective::Gatherv | Collective::Scatterv | Collective::Scan | Collective::Exscan => {
            "linear"
        }
    }
}

/// Open MPI bcast (note §7.5).
pub(crate) fn ompi_bcast(p: u32, s: u64) -> &'static str {
    const PIPE: &str = "ompi_pipeline";
    const NTSB: &str = "NTSB";
    const NTSL: &str = "NTSL";
    const BIN: &str = "binomial_tree";
    const KN: &str = "mvapich2_knomial_intra_node";
    const SRA: &str = "scatter_rdb_allgather";
    const SPLIT: &str = "ompi_split_bintree";
    match p {
        0..=3 => pick(
            s,
            &[
                (32, PIPE),
                (256, NTSB),
                (512, PIPE),
                (1024, KN),
                (32768, NTSL),
                (131072, NTSB),
                (262144, PIPE),
                (524288, NTSL),
                (1048576, BIN),
                (ELSE, NTSB),
            ],
        ),
        4..=7 => pick(
            s,
            &[
                (64, NTSB),
                (128, BIN),
                (2048, NTSB),
                (8192, BIN),
                (1048576, NTSL),
                (ELSE, PIPE),
            ],
        ),
        8..=15 => pick(
            s,
            &[
                (8, KN),
                (64, NTSB),
                (4096, KN),
                (16384, NTSB),
                (32768, BIN),
                (ELSE, NTSL),
            ],
        ),
        16..=31 => pick(s, &[(4096, KN), (1048576, BIN), (ELSE, SRA)]),
        32..=63 => pick(s, &[(2048, BIN), (ELSE, KN)]),
        64..=127 => KN,
        128..=255 => pick(
            s,
            &[
                (2, BIN),
                (16384, NTSB),
                (32768, NTSL),
                (65536, NTSB),
                (ELSE, KN),
            ],
        ),
        256..=1023 => pick(s, &[(16384, KN), (32768, SPLIT), (ELSE, KN)]),
        1024..=2047 => pick(s, &[(524288, KN), (ELSE, SRA)]),
        2048..=4095 => pick(s, &[(262144, KN), (ELSE, SRA)]),
        _ => pick(s, &[(8192, KN), (16384, NTSB), (262144, KN), (ELSE, SRA)]),
    }
}

/// Open MPI reduce, commutative branch (note §7.6).
pub(crate) fn ompi_reduce(p: u32, s: u64) -> &'static str {
    const LIN: &str = "ompi_basic_linear";
    const CHAIN: &str = "ompi_chain";
    const PIPE: &str = "ompi_pipeline";
    const BIN: &str = "ompi_binary";
    const BNM: &str = "ompi_binomial";
    const IOB: &str = "ompi_in_order_binary";
    match p {
        0..=3 => pick(
            s,
            &[
                (8, LIN),
                (16, BIN),
                (32, PIPE),
                (262144, LIN),
                (524288, PIPE),
                (1048576, CHAIN),
                (ELSE, PIPE),
            ],
        ),
        4..=7 => pick(
            s,
            &[
                (4096, BIN),
                (65536, CHAIN),
                (262144, BNM),
                (524288, LIN),
                (1048576, BNM),
                (ELSE, LIN),
            ],
        ),
        8..=15 => pick(s, &[(8192, BIN), (ELSE, BNM)]),
        16..=31 => pick(s, &[(4096, BIN), (ELSE, BNM)]),
        32..=255 => BNM,
        256..=511 => pick(s, &[(8192, BNM), (16384, IOB), (ELSE, BNM)]),
        512..=2047 => BNM,
        2048..=4095 => pick(
            s,
            &[
                (512, BNM),
                (1024, IOB),
                (8192, BNM),
                (16384, IOB),
                (ELSE, BNM),
            ],
        ),
        _ => pick(
            s,
            &[
                (16, BNM),
                (32, IOB),
                (1024, BNM),
                (2048, IOB),
                (8192, BNM),
                (16384, IOB),
                (ELSE, BNM),
            ],
        ),
    }
}

/// Open MPI allreduce, commutative branch (note §7.7).
pub(crate) fn ompi_allreduce(p: u32, s: u64) -> &'static str {
    const RB: &str = "redbcast";
    const RDB: &str = "rdb";
    const LR: &str = "lr";
    const RS: &str = "ompi_ring_segmented";
    const RAB: &str = "rab_rdb";
    match p {
        0..=3 => pick(
            s,
            &[
                (8, LR),
                (4096, RDB),
                (8192, LR),
                (16384, RDB),
                (65536, LR),
                (262144, RS),
                (ELSE, RAB),
            ],
        ),
        4..=7 => pick(s, &[(16, LR), (8192, RDB), (ELSE, RAB)]),
        8..=15 => pick(s, &[(8192, RDB), (ELSE, RAB)]),
        16..=31 => pick(s, &[(64, RS), (4096, RDB), (ELSE, RAB)]),
        32..=63 => pick(s, &[(128, RS), (ELSE, RAB)]),
        64..=127 => pick(s, &[(262144, RDB), (ELSE, RAB)]),
        128..=255 => pick(s, &[(131072, RB), (262144, RDB), (ELSE, RAB)]),
        256..=511 => pick(s, &[(4096, RB), (ELSE, RAB)]),
        512..=2047 => pick(s, &[(2048, RB), (16384, RDB), (ELSE, RAB)]),
        2048..=4095 => pick(s, &[(2048, RB), (4096, RS), (16384, RDB), (ELSE, RAB)]),
        _ => pick(s, &[(2048, RB), (16384, RS), (32768, RDB), (ELSE, RAB)]),
    }
}

/// Open MPI alltoall (note §7.8; `linear`, `linear_sync` and `two_proc` are all
/// `basic_linear` in SimGrid).
pub(crate) fn ompi_alltoall(p: u32, s: u64) -> &'static str {
    const LIN: &str = "basic_linear";
    const PAIR: &str = "pair";
    const BRUCK: &str = "bruck";
    match p {
        2 => pick(
            s,
            &[
                (2, PAIR),
                (4, LIN),
                (16, PAIR),
                (64, LIN),
                (256, PAIR),
                (4096, LIN),
                (32768, PAIR),
                (262144, LIN),
                (1048576, LIN),
                (ELSE, PAIR),
            ],
        ),
        0..=7 => pick(s, &[(524288, LIN), (1048576, PAIR), (ELSE, LIN)]),
        8..=15 => LIN,
        16..=31 => pick(s, &[(4, LIN), (512, BRUCK), (ELSE, LIN)]),
        32..=63 => pick(s, &[(512, BRUCK), (ELSE, LIN)]),
        64..=127 => pick(s, &[(1024, BRUCK), (262144, LIN), (ELSE, PAIR)]),
        128..=255 => pick(s, &[(1024, BRUCK), (262144, LIN), (ELSE, PAIR)]),
        256..=511 => pick(s, &[(1024, BRUCK), (32768, LIN), (ELSE, PAIR)]),
        512..=1023 => pick(s, &[(512, BRUCK), (262144, LIN), (ELSE, PAIR)]),
        1024..=2047 => pick(s, &[(512, BRUCK), (ELSE, LIN)]),
        2048..=4095 => pick(s, &[(1024, BRUCK), (ELSE, LIN)]),
        _ => pick(s, &[(2048, BRUCK), (ELSE, LIN)]),
    }
}

/// Open MPI allgather (note §7.9).
pub(crate) fn ompi_allgather(p: u32, s: u64) -> &'static str {
    const RDB: &str = "rdb";
    const BRUCK: &str = "bruck";
    const RING: &str = "ring";
    const NE: &str = "ompi_neighborexchange";
    match p {
        0..=1 => RDB,
        2 => "pair",
        3..=31 => RDB,
        32..=63 => pick(s, &[(1024, RDB), (65536, NE), (ELSE, RING)]),
        64..=127 => pick(s, &[(512, RDB), (65536, NE), (ELSE, RING)]),
        128..=255 => pick(
            s,
            &[
                (512, RDB),
                (131072, NE),
                (524288, RING),
                (1048576, NE),
                (ELSE, RING),
            ],
        ),
        256..=511 => pick(
            s,
            &[
                (32, RDB),
                (128, BRUCK),
                (1024, RDB),
                (131072, NE),
                (524288, RING),
                (1048576, NE),
                (ELSE, RING),
            ],
        ),
        512..=1023 => pick(s, &[(64, RDB), (256, BRUCK), (2048, RDB), (ELSE, NE)]),
        1024..=2047 => pick(
            s,
            &[
                (4, RDB),
                (8, BRUCK),
                (16, RDB),
                (32, BRUCK),
                (256, RDB),
                (512, BRUCK),
                (4096, RDB),
                (ELSE, NE),
            ],
        ),
        2048..=4095 => pick(
            s,
            &[
                (32, BRUCK),
                (128, RDB),
                (512, BRUCK),
                (4096, RDB),
                (ELSE, NE),
            ],
        ),
        _ => pick(
            s,
            &[
                (2, RDB),
                (8, BRUCK),
                (16, RDB),
                (512, BRUCK),
                (4096, RDB),
                (ELSE, NE),
            ],
        ),
    }
}

/// Open MPI allgatherv, on the per-rank average `s` (note §7.9).
pub(crate) fn ompi_allgatherv(p: u32, s: u64) -> &'static str {
    const GB: &str = "GB";
    const BRUCK: &str = "ompi_bruck";
    const RING: &str = "mpich_ring";
    const NE: &str = "ompi_neighborexchange";
    const PAIR: &str = "pair";
    match p {
        2 => pick(s, &[(2048, RING), (4096, PAIR), (8192, RING), (ELSE, PAIR)]),
        0..=7 => pick(
            s,
            &[
                (256, GB),
                (4096, NE),
                (8192, RING),
                (16384, NE),
                (262144, BRUCK),
                (ELSE, NE),
            ],
        ),
        8..=15 => pick(s, &[(1024, GB), (ELSE, BRUCK)]),
        16..=31 => pick(s, &[(128, GB), (262144, BRUCK), (ELSE, RING)]),
        32..=63 => pick(s, &[(256, GB), (8192, BRUCK), (ELSE, RING)]),
        64..=127 => pick(s, &[(256, GB), (4096, BRUCK), (ELSE, RING)]),
        128..=255 => pick(s, &[(1024, BRUCK), (65536, NE), (ELSE, RING)]),
        256..=511 => pick(s, &[(1024, BRUCK), (ELSE, RING)]),
        512..=1023 => pick(
            s,
            &[
                (512, BRUCK),
                (1024, GB),
                (4096, BRUCK),
                (1048576, NE),
                (ELSE, RING),
            ],
        ),
        _ => pick(s, &[(4096, BRUCK), (ELSE, NE)]),
    }
}

/// Open MPI gather (note §7.10; `s` is rank-dependent as in SimGrid).
pub(crate) fn ompi_gather(p: u32, s: u64) -> &'static str {
    const LIN: &str = "ompi_basic_linear";
    const BNM: &str = "ompi_binomial";
    const SYNC: &str = "ompi_linear_sync";
    match p {
        0..=3 => pick(
            s,
            &[
                (2, SYNC),
                (4, LIN),
                (32768, BNM),
                (65536, LIN),
                (131072, BNM),
                (ELSE, SYNC),
            ],
        ),
        4..=7 => pick(
            s,
            &[
                (1024, BNM),
                (8192, LIN),
                (32768, BNM),
                (262144, LIN),
                (ELSE, SYNC),
            ],
        ),
        8..=255 => BNM,
        256..=511 => pick(s, &[(2048, BNM), (8192, LIN), (ELSE, BNM)]),
        _ => BNM,
    }
}

/// Open MPI scatter (note §7.10; `s` is rank-dependent as in SimGrid).
pub(crate) fn ompi_scatter(p: u32, s: u64) -> &'static str {
    const LIN: &str = "ompi_basic_linear";
    const BNM: &str = "ompi_binomial";
    const NB: &str = "ompi_linear_nb";
    match p {
        0..=3 => pick(s, &[(2, NB), (131072, LIN), (262144, NB), (ELSE, LIN)]),
        4..=7 => pick(
            s,
            &[
                (2048, BNM),
                (4096, LIN),
                (8192, BNM),
                (32768, LIN),
                (1048576, NB),
                (ELSE, LIN),
            ],
        ),
        8..=15 => pick(s, &[(16384, BNM), (1048576, NB), (ELSE, LIN)]),
        16..=31 => pick(s, &[(16384, BNM), (32768, LIN), (ELSE, NB)]),
        32..=63 => pick(s, &[(512, BNM), (8192, NB), (16384, BNM), (ELSE, NB)]),
        _ => pick(s, &[(512, BNM), (ELSE, NB)]),
    }
}

/// Open MPI reduce_scatter on the total size (note §7.12).
pub(crate) fn ompi_reduce_scatter(p: u32, s: u64) -> &'static str {
    const DEF: &str = "default";
    const RH: &str = "ompi_basic_recursivehalving";
    const RING: &str = "ompi_ring";
    const BF: &str = "ompi_butterfly";
    match p {
        0..=3 => pick(s, &[(65536, RING), (131072, BF), (ELSE, RING)]),
        4..=7 => pick(s, &[(8, DEF), (262144, RH), (ELSE, RING)]),
        8..=31 => pick(s, &[(262144, RH), (ELSE, RING)]),
        32..=63 => pick(s, &[(64, DEF), (2048, RH), (524288, BF), (ELSE, RING)]),
        64..=127 => pick(
            s,
            &[(256, DEF), (512, RH), (2048, BF), (4096, RH), (ELSE, BF)],
        ),
        128..=255 => pick(s, &[(256, DEF), (512, RH), (ELSE, BF)]),
        256..=511 => pick(s, &[(256, DEF), (1024, RH), (ELSE, BF)]),
        512..=1023 => pick(
            s,
            &[(512, DEF), (2048, RH), (8192, BF), (16384, RH), (ELSE, BF)],
        ),
        1024..=2047 => pick(
            s,
            &[(512, DEF), (4096, RH), (16384, BF), (32768, RH), (ELSE, BF)],
        ),
        2048..=4095 => pick(s, &[(512, DEF), (4096, RH), (ELSE, BF)]),
        _ => pick(s, &[(1024, DEF), (8192, RH), (ELSE, BF)]),
    }
}

/// Whether MPICH returns at once for these arguments (empty message or communicator of one).
pub(crate) fn mpich_noop(a: &CollArgs) -> bool {
    match a.kind {
        Collective::Bcast | Collective::Reduce | Collective::Allreduce => a.bytes() == 0,
        Collective::Alltoall => a.recv_count == 0,
        Collective::Allgather => a.count == 0 || a.recv_count == 0,
        Collective::Allgatherv | Collective::ReduceScatter => a.recv_counts.iter().all(|&c| c == 0),
        _ => false,
    }
}

fn mpich(a: &CollArgs) -> &'static str {
    let p = a.size;
    let pof2 = floor_pow2(p.max(1)) as u64;
    match a.kind {
        Collective::Barrier => "ompi_bruck",
        Collective::Bcast => {
            let n = a.bytes();
            if n < 12288 || p < 8 {
                "binomial_tree"
            } else if n < 524288 && is_pow2(p) {
                "scatter_rdb_allgather"
            } else {
                "scatter_LR_allgather"
            }
        }
        Collective::Allreduce => {
            if a.bytes() <= 2048 || a.count < pof2 {
                "rdb"
            } else {
                "mpich_rab"
            }
        }
        Collective::Reduce => {
            if a.bytes() > 2048 && a.count >= pof2 {
                "scatter_gather"
            } else {
                "binomial"
            }
        }
        Collective::Alltoall => {
            let n = a.bytes();
            if n <= 256 && p >= 8 {
                "bruck"
            } else if n <= 32768 {
                "mpich_scattered"
            } else {
                "mpich_pairwise"
            }
        }
        Collective::Alltoallv => "mpich_scattered",
        Collective::Allgather => {
            let total = a
                .recv_count
                .saturating_mul(a.recv_dtype_size)
                .saturating_mul(p as u64);
            if total < 524288 && is_pow2(p) {
                "rdb"
            } else if total < 81920 {
                "bruck"
            } else {
                "mpich_ring"
            }
        }
        Collective::Allgatherv => {
            let total: u64 = a
                .recv_counts
                .iter()
                .sum::<u64>()
                .saturating_mul(a.recv_dtype_size);
            if total < 524288 && is_pow2(p) {
                "mpich_rdb"
            } else if total < 81920 {
                "ompi_bruck"
            } else {
                "mpich_ring_32k"
            }
        }
        Collective::Gather => "ompi_binomial",
        Collective::Scatter => "mpich_binomial",
        Collective::Gatherv | Collective::Scatterv => "linear",
        Collective::Scan | Collective::Exscan => "rdb",
        Collective::ReduceScatter => {
            let total: u64 = a
                .recv_counts
                .iter()
                .sum::<u64>()
                .saturating_mul(a.dtype_size);
            if total < 524288 {
                "mpich_rhalving"
            } else {
                "mpich_pair"
            }
        }
    }
}
