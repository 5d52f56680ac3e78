//! Tests of the selectors' decision boundaries, of message counts and sizes in known cases
//! (including the cases the design note describes), of the nested calls and SimGrid-abort
//! detection, and of the laziness of linear algorithms at 65,536 ranks.

use super::*;

fn args(kind: Collective, size: u32, rank: u32, count: u64) -> CollArgs {
    CollArgs {
        kind,
        size,
        rank,
        root: 0,
        count,
        recv_count: count,
        dtype_size: 1,
        recv_dtype_size: 1,
        send_counts: Vec::new(),
        recv_counts: Vec::new(),
    }
}

fn vargs(kind: Collective, size: u32, rank: u32, counts: &[u64]) -> CollArgs {
    let mut a = args(kind, size, rank, counts[rank as usize]);
    a.recv_counts = counts.to_vec();
    if kind == Collective::Alltoallv {
        a.send_counts = counts.to_vec();
    }
    a
}

fn ompi(kind: Collective, p: u32, bytes: u64) -> &'static str {
    algorithm_name(&args(kind, p, 0, bytes), Selector::Ompi, None).unwrap()
}

fn mpich(kind: Collective, p: u32, bytes: u64) -> &'static str {
    algorithm_name(&args(kind, p, 0, bytes), Selector::Mpich, None).unwrap()
}

fn ops(a: &CollArgs, sel: Selector, forced: Option<&str>) -> Vec<POp> {
    let mut prog = program(a, sel, forced).unwrap();
    let mut v = Vec::new();
    while let Some(op) = prog.next_op() {
        v.push(op);
    }
    v
}

/// (peer, bytes) of every send (blocking or not) of a rank.
fn sends(v: &[POp]) -> Vec<(u32, u64)> {
    v.iter()
        .filter_map(|op| match *op {
            POp::Send { peer, bytes, .. } | POp::Isend { peer, bytes, .. } => Some((peer, bytes)),
            _ => None,
        })
        .collect()
}

/// (peer, bytes) of every receive of a rank.
fn recvs(v: &[POp]) -> Vec<(u32, u64)> {
    v.iter()
        .filter_map(|op| match *op {
            POp::Recv { peer, bytes, .. } | POp::Irecv { peer, bytes, .. } => Some((peer, bytes)),
            _ => None,
        })
        .collect()
}

/// Total sends of all ranks.
fn total_messages(
    make: impl Fn(u32) -> CollArgs,
    p: u32,
    sel: Selector,
    forced: Option<&str>,
) -> usize {
    (0..p)
        .map(|r| sends(&ops(&make(r), sel, forced)).len())
        .sum()
}

#[test]
fn ompi_barrier_table() {
    use Collective::Barrier as B;
    assert_eq!(ompi(B, 3, 0), "ompi_recursivedoubling");
    assert_eq!(ompi(B, 4, 0), "ompi_basic_linear");
    assert_eq!(ompi(B, 7, 0), "ompi_basic_linear");
    assert_eq!(ompi(B, 8, 0), "ompi_recursivedoubling");
    assert_eq!(ompi(B, 63, 0), "ompi_recursivedoubling");
    assert_eq!(ompi(B, 64, 0), "ompi_bruck");
    assert_eq!(ompi(B, 256, 0), "ompi_tree");
    assert_eq!(ompi(B, 512, 0), "ompi_bruck");
    assert_eq!(ompi(B, 1024, 0), "ompi_tree");
    assert_eq!(ompi(B, 4096, 0), "ompi_bruck");
}

#[test]
fn ompi_bcast_table() {
    use Collective::Bcast as B;
    const KN: &str = "mvapich2_knomial_intra_node";
    assert_eq!(ompi(B, 3, 31), "ompi_pipeline");
    assert_eq!(ompi(B, 3, 32), "NTSB");
    assert_eq!(ompi(B, 3, 511), "ompi_pipeline");
    assert_eq!(ompi(B, 2, 600), KN);
    assert_eq!(ompi(B, 3, 1024), "NTSL");
    assert_eq!(ompi(B, 3, 1048575), "binomial_tree");
    assert_eq!(ompi(B, 3, 1048576), "NTSB");
    assert_eq!(ompi(B, 4, 8), "NTSB");
    assert_eq!(ompi(B, 4, 1000), "NTSB");
    assert_eq!(ompi(B, 4, 5000), "binomial_tree");
    assert_eq!(ompi(B, 4, 20000), "NTSL");
    assert_eq!(ompi(B, 4, 1048575), "NTSL");
    assert_eq!(ompi(B, 4, 1048576), "ompi_pipeline");
    assert_eq!(ompi(B, 8, 7), KN);
    assert_eq!(ompi(B, 8, 8), "NTSB");
    assert_eq!(ompi(B, 8, 64), KN);
    assert_eq!(ompi(B, 15, 32767), "binomial_tree");
    assert_eq!(ompi(B, 15, 32768), "NTSL");
    assert_eq!(ompi(B, 16, 4095), KN);
    assert_eq!(ompi(B, 16, 4096), "binomial_tree");
    assert_eq!(ompi(B, 16, 1048575), "binomial_tree");
    assert_eq!(ompi(B, 16, 1048576), "scatter_rdb_allgather");
    assert_eq!(ompi(B, 32, 2047), "binomial_tree");
    assert_eq!(ompi(B, 32, 2048), KN);
    assert_eq!(ompi(B, 100, 1), KN);
    assert_eq!(ompi(B, 128, 1), "binomial_tree");
    assert_eq!(ompi(B, 128, 2), "NTSB");
    assert_eq!(ompi(B, 128, 16384), "NTSL");
    assert_eq!(ompi(B, 128, 65536), KN);
    assert_eq!(ompi(B, 256, 16384), "ompi_split_bintree");
    assert_eq!(ompi(B, 1023, 32768), KN);
    assert_eq!(ompi(B, 1024, 524288), "scatter_rdb_allgather");
    assert_eq!(ompi(B, 2048, 262143), KN);
    assert_eq!(ompi(B, 4096, 8192), "NTSB");
    assert_eq!(ompi(B, 4096, 262144), "scatter_rdb_allgather");
}

#[test]
fn ompi_reduce_table() {
    use Collective::Reduce as R;
    assert_eq!(ompi(R, 3, 7), "ompi_basic_linear");
    assert_eq!(ompi(R, 3, 8), "ompi_binary");
    assert_eq!(ompi(R, 3, 16), "ompi_pipeline");
    assert_eq!(ompi(R, 3, 32), "ompi_basic_linear");
    assert_eq!(ompi(R, 3, 524288), "ompi_chain");
    assert_eq!(ompi(R, 3, 1048576), "ompi_pipeline");
    assert_eq!(ompi(R, 4, 8), "ompi_binary");
    assert_eq!(ompi(R, 4, 4096), "ompi_chain");
    assert_eq!(ompi(R, 4, 100000), "ompi_binomial");
    assert_eq!(ompi(R, 4, 262144), "ompi_basic_linear");
    assert_eq!(ompi(R, 4, 1048576), "ompi_basic_linear");
    assert_eq!(ompi(R, 15, 8191), "ompi_binary");
    assert_eq!(ompi(R, 15, 8192), "ompi_binomial");
    assert_eq!(ompi(R, 16, 4095), "ompi_binary");
    assert_eq!(ompi(R, 16, 4096), "ompi_binomial");
    assert_eq!(ompi(R, 300, 8192), "ompi_in_order_binary");
    assert_eq!(ompi(R, 300, 16384), "ompi_binomial");
    assert_eq!(ompi(R, 3000, 512), "ompi_in_order_binary");
    assert_eq!(ompi(R, 5000, 16), "ompi_in_order_binary");
    assert_eq!(ompi(R, 5000, 15), "ompi_binomial");
}

#[test]
fn ompi_allreduce_table() {
    use Collective::Allreduce as A;
    assert_eq!(ompi(A, 2, 7), "lr");
    assert_eq!(ompi(A, 2, 8), "rdb");
    assert_eq!(ompi(A, 3, 4096), "lr");
    assert_eq!(ompi(A, 3, 65536), "ompi_ring_segmented");
    assert_eq!(ompi(A, 3, 262144), "rab_rdb");
    assert_eq!(ompi(A, 4, 8), "lr");
    assert_eq!(ompi(A, 4, 16), "rdb");
    assert_eq!(ompi(A, 4, 1000), "rdb");
    assert_eq!(ompi(A, 4, 8192), "rab_rdb");
    assert_eq!(ompi(A, 16, 63), "ompi_ring_segmented");
    assert_eq!(ompi(A, 16, 64), "rdb");
    assert_eq!(ompi(A, 16, 4095), "rdb");
    assert_eq!(ompi(A, 16, 4096), "rab_rdb");
    assert_eq!(ompi(A, 32, 127), "ompi_ring_segmented");
    assert_eq!(ompi(A, 64, 262143), "rdb");
    assert_eq!(ompi(A, 128, 131071), "redbcast");
    assert_eq!(ompi(A, 128, 131072), "rdb");
    assert_eq!(ompi(A, 2048, 4095), "ompi_ring_segmented");
    assert_eq!(ompi(A, 4096, 16384), "rdb");
}

#[test]
fn ompi_alltoall_table() {
    use Collective::Alltoall as A;
    assert_eq!(ompi(A, 2, 1), "pair");
    assert_eq!(ompi(A, 2, 2), "basic_linear");
    assert_eq!(ompi(A, 2, 4), "pair");
    assert_eq!(ompi(A, 2, 1048576), "pair");
    assert_eq!(ompi(A, 4, 8), "basic_linear");
    assert_eq!(ompi(A, 4, 524287), "basic_linear");
    assert_eq!(ompi(A, 4, 600000), "pair");
    assert_eq!(ompi(A, 6, 1048576), "basic_linear");
    assert_eq!(ompi(A, 16, 3), "basic_linear");
    assert_eq!(ompi(A, 16, 8), "bruck");
    assert_eq!(ompi(A, 16, 512), "basic_linear");
    assert_eq!(ompi(A, 64, 1023), "bruck");
    assert_eq!(ompi(A, 64, 262144), "pair");
    assert_eq!(ompi(A, 300, 32768), "pair");
    assert_eq!(ompi(A, 5000, 2047), "bruck");
}

#[test]
fn ompi_other_tables() {
    use Collective::*;
    let alltoallv = |p| {
        algorithm_name(
            &vargs(Alltoallv, p, 0, &vec![1; p as usize]),
            Selector::Ompi,
            None,
        )
        .unwrap()
    };
    assert_eq!(alltoallv(3), "pair");
    assert_eq!(alltoallv(4), "ompi_basic_linear");
    assert_eq!(alltoallv(64), "pair");
    assert_eq!(alltoallv(128), "ompi_basic_linear");
    assert_eq!(ompi(Allgather, 2, 1000), "pair");
    assert_eq!(ompi(Allgather, 31, 100000), "rdb");
    assert_eq!(ompi(Allgather, 32, 1023), "rdb");
    assert_eq!(ompi(Allgather, 32, 1024), "ompi_neighborexchange");
    assert_eq!(ompi(Allgather, 32, 65536), "ring");
    assert_eq!(ompi(Allgather, 300, 64), "bruck");
    let agv = |p: u32, c: u64| {
        algorithm_name(
            &vargs(Allgatherv, p, 0, &vec![c; p as usize]),
            Selector::Ompi,
            None,
        )
        .unwrap()
    };
    assert_eq!(agv(2, 2047), "mpich_ring");
    assert_eq!(agv(2, 2048), "pair");
    assert_eq!(agv(4, 100), "GB");
    assert_eq!(agv(4, 256), "ompi_neighborexchange");
    assert_eq!(agv(4, 5000), "mpich_ring");
    assert_eq!(agv(16, 1000), "ompi_bruck");
    assert_eq!(agv(16, 100), "GB");
    assert_eq!(agv(16, 262144), "mpich_ring");
    // per-rank average with integer division: 1023 / 4 = 255 -> GB, 1024 / 4 = 256 -> neighbor
    let agv4 =
        |c: &[u64]| algorithm_name(&vargs(Allgatherv, 4, 0, c), Selector::Ompi, None).unwrap();
    assert_eq!(agv4(&[1, 1, 1, 1020]), "GB");
    assert_eq!(agv4(&[1, 1, 1, 1021]), "ompi_neighborexchange");
    assert_eq!(ompi(Gather, 3, 1), "ompi_linear_sync");
    assert_eq!(ompi(Gather, 3, 2), "ompi_basic_linear");
    assert_eq!(ompi(Gather, 4, 1000), "ompi_binomial");
    assert_eq!(ompi(Gather, 4, 1024), "ompi_basic_linear");
    assert_eq!(ompi(Gather, 4, 262144), "ompi_linear_sync");
    assert_eq!(ompi(Gather, 16, 1 << 30), "ompi_binomial");
    assert_eq!(ompi(Scatter, 3, 1), "ompi_linear_nb");
    assert_eq!(ompi(Scatter, 4, 1000), "ompi_binomial");
    assert_eq!(ompi(Scatter, 4, 100000), "ompi_linear_nb");
    assert_eq!(ompi(Scatter, 16, 1000), "ompi_binomial");
    assert_eq!(ompi(Scatter, 16, 16384), "ompi_basic_linear");
    assert_eq!(ompi(Scatter, 16, 32768), "ompi_linear_nb");
    let rs = |p: u32, counts: &[u64]| {
        algorithm_name(&vargs(ReduceScatter, p, 0, counts), Selector::Ompi, None).unwrap()
    };
    assert_eq!(rs(2, &[500, 500]), "ompi_ring");
    assert_eq!(rs(2, &[50000, 50000]), "ompi_butterfly");
    assert_eq!(rs(4, &[1, 1, 1, 1]), "default");
    assert_eq!(rs(4, &[2, 2, 2, 2]), "ompi_basic_recursivehalving");
    assert_eq!(rs(4, &[2, 2, 2, 1]), "default");
    assert_eq!(rs(4, &[100000, 100000, 100000, 100000]), "ompi_ring");
    for k in [Scan, Exscan] {
        assert_eq!(ompi(k, 8, 10), "linear");
    }
    for k in [Gatherv, Scatterv] {
        let mut a = vargs(k, 8, 0, &[10; 8]);
        a.send_counts = a.recv_counts.clone();
        assert_eq!(algorithm_name(&a, Selector::Ompi, None).unwrap(), "linear");
    }
}

#[test]
fn mpich_tables() {
    use Collective::*;
    assert_eq!(mpich(Barrier, 7, 0), "ompi_bruck");
    assert_eq!(mpich(Bcast, 7, 1 << 20), "binomial_tree");
    assert_eq!(mpich(Bcast, 16, 12287), "binomial_tree");
    assert_eq!(mpich(Bcast, 16, 12288), "scatter_rdb_allgather");
    assert_eq!(mpich(Bcast, 16, 524288), "scatter_LR_allgather");
    assert_eq!(mpich(Bcast, 12, 12288), "scatter_LR_allgather");
    assert_eq!(mpich(Allreduce, 16, 2048), "rdb");
    assert_eq!(mpich(Allreduce, 16, 2049), "mpich_rab");
    assert_eq!(mpich(Reduce, 16, 2048), "binomial");
    assert_eq!(mpich(Reduce, 16, 2049), "scatter_gather");
    assert_eq!(mpich(Alltoall, 8, 256), "bruck");
    assert_eq!(mpich(Alltoall, 7, 256), "mpich_scattered");
    assert_eq!(mpich(Alltoall, 8, 32768), "mpich_scattered");
    assert_eq!(mpich(Alltoall, 8, 32769), "mpich_pairwise");
    assert_eq!(mpich(Allgather, 16, 32767), "rdb");
    assert_eq!(mpich(Allgather, 16, 32768), "mpich_ring");
    assert_eq!(mpich(Allgather, 10, 8191), "bruck");
    assert_eq!(mpich(Allgather, 10, 8192), "mpich_ring");
    assert_eq!(mpich(Gather, 10, 8192), "ompi_binomial");
    assert_eq!(mpich(Scatter, 10, 8192), "mpich_binomial");
    assert_eq!(mpich(Scan, 10, 8), "rdb");
    let rs = |counts: &[u64]| {
        algorithm_name(
            &vargs(ReduceScatter, counts.len() as u32, 0, counts),
            Selector::Mpich,
            None,
        )
        .unwrap()
    };
    assert_eq!(rs(&[131071, 1, 1, 1]), "mpich_rhalving");
    assert_eq!(rs(&[131072, 131072, 131072, 131072]), "mpich_pair");
    // MPICH returns at once on empty calls
    assert!(ops(&args(Bcast, 8, 3, 0), Selector::Mpich, None).is_empty());
}

#[test]
fn known_message_counts() {
    use Collective::*;
    let a = |k, p| move |r| args(k, p, r, 1000);
    // binomial bcast at 16 ranks: 15 messages
    assert_eq!(
        total_messages(a(Bcast, 16), 16, Selector::Ompi, Some("binomial_tree")),
        15
    );
    // recursive doubling allreduce at 8 ranks: 8 * 3 = 24 messages
    assert_eq!(
        total_messages(a(Allreduce, 8), 8, Selector::Ompi, Some("rdb")),
        24
    );
    // ring allgather at 5 ranks: 5 * 4 = 20 messages
    assert_eq!(
        total_messages(a(Allgather, 5), 5, Selector::Ompi, Some("ring")),
        20
    );
    assert_eq!(
        total_messages(a(Allgather, 5), 5, Selector::Ompi, Some("mpich_ring")),
        20
    );
    // pairwise alltoall at 4 ranks: 12 messages of count * dtype bytes
    for r in 0..4 {
        let mut x = args(Alltoall, 4, r, 250);
        x.dtype_size = 8;
        x.recv_dtype_size = 8;
        let s = sends(&ops(&x, Selector::Ompi, Some("pair")));
        assert_eq!(s.len(), 3);
        assert!(s
            .iter()
            .all(|&(peer, b)| b == 2000 && peer == r ^ (peer ^ r)));
        assert_eq!(
            s.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![r ^ 1, r ^ 2, r ^ 3]
        );
    }
    // flat alltoallv with zero counts at 4 ranks still sends 12 empty messages
    let zeros = [0u64; 4];
    assert_eq!(
        total_messages(|r| vargs(Alltoallv, 4, r, &zeros), 4, Selector::Ompi, None),
        12
    );
    // but MPICH's scattered skips them
    assert_eq!(
        total_messages(|r| vargs(Alltoallv, 4, r, &zeros), 4, Selector::Mpich, None),
        0
    );
    // barrier: linear at 4 ranks (6), recursive doubling at 16 (64), bruck at 5 (15)
    assert_eq!(total_messages(a(Barrier, 4), 4, Selector::Ompi, None), 6);
    assert_eq!(total_messages(a(Barrier, 16), 16, Selector::Ompi, None), 64);
    assert_eq!(
        total_messages(a(Barrier, 5), 5, Selector::Ompi, Some("bruck")),
        15
    );
    // scan: p(p-1)/2 messages
    assert_eq!(total_messages(a(Scan, 16), 16, Selector::Ompi, None), 120);
}

#[test]
fn patterns_of_the_design_note() {
    use Collective::*;
    // bcast 4096 B at 16 ranks, binomial: root sends to 8, 4, 2, 1 in that order
    let root = sends(&ops(&args(Bcast, 16, 0, 4096), Selector::Ompi, None));
    assert_eq!(root, vec![(8, 4096), (4, 4096), (2, 4096), (1, 4096)]);
    // bcast 20000 B at 4 ranks: NTSL, 2 segments of 8192 with tags tag+i, remainder 3616
    // broadcast by the selector (binomial)
    let a = args(Bcast, 4, 0, 20000);
    assert_eq!(
        algorithms_used(&a, Selector::Ompi, None).unwrap(),
        vec!["NTSL", "binomial_tree"]
    );
    let r0 = ops(&a, Selector::Ompi, None);
    assert_eq!(
        r0[..2],
        [
            POp::Isend {
                peer: 1,
                bytes: 8192,
                tag: tag::BCAST
            },
            POp::Isend {
                peer: 1,
                bytes: 8192,
                tag: tag::BCAST + 1
            }
        ]
    );
    assert_eq!(sends(&r0)[2..], [(2, 3616), (1, 3616)]);
    // reduce 10000 B at 16 ranks: binomial with 1 KiB segments (10 of them)
    let leaf = ops(&args(Reduce, 16, 15, 10000), Selector::Ompi, None);
    assert_eq!(sends(&leaf).len(), 10);
    assert_eq!(sends(&leaf)[9], (14, 10000 - 9 * 1024));
    // reduce 100000 B at 16 ranks: binomial, unsegmented
    assert_eq!(
        sends(&ops(&args(Reduce, 16, 15, 100000), Selector::Ompi, None)),
        vec![(14, 100000)]
    );
    // reduce 10000 B at 4 ranks: chain fanout 2 (0 <- 1 <- 2 and 0 <- 3), 64 KiB segments
    assert_eq!(
        recvs(&ops(&args(Reduce, 4, 0, 10000), Selector::Ompi, None)),
        vec![(1, 10000), (3, 10000)]
    );
    assert_eq!(
        sends(&ops(&args(Reduce, 4, 2, 10000), Selector::Ompi, None)),
        vec![(1, 10000)]
    );
    // allreduce 8 B at 4 ranks: lr, 6 sendrecvs of 2 B
    let lr = ops(&args(Allreduce, 4, 1, 8), Selector::Ompi, None);
    assert_eq!(sends(&lr), vec![(2, 2); 6]);
    // allreduce 4096 B at 16 ranks: rab_rdb, halves 2048..256 then back
    let rab = ops(&args(Allreduce, 16, 0, 4096), Selector::Ompi, None);
    assert_eq!(
        sends(&rab).iter().map(|x| x.1).collect::<Vec<_>>(),
        vec![2048, 1024, 512, 256, 256, 512, 1024, 2048]
    );
    // alltoall 8 B at 16 ranks: bruck, 4 steps of 8 blocks of 8 B
    let br = ops(&args(Alltoall, 16, 0, 8), Selector::Ompi, None);
    assert_eq!(sends(&br), vec![(1, 64), (2, 64), (4, 64), (8, 64)]);
    // gather 1000 B at 4 ranks: binomial, 1->0 and 3->2, then 2->0 with 2000 B
    assert_eq!(
        sends(&ops(&args(Gather, 4, 2, 1000), Selector::Ompi, None)),
        vec![(0, 2000)]
    );
    assert_eq!(
        recvs(&ops(&args(Gather, 4, 0, 1000), Selector::Ompi, None)),
        vec![(1, 1000), (2, 2000)]
    );
    // reduce_scatter counts 2,2,2,2 at 4 ranks: recursive halving, 4 B then 2 B
    let rh = ops(
        &vargs(ReduceScatter, 4, 0, &[2, 2, 2, 2]),
        Selector::Ompi,
        None,
    );
    assert_eq!(sends(&rh), vec![(2, 4), (1, 2)]);
    // counts 1,1,1,1: flat reduce of 4 B to 0, then scatterv of 1 B
    let d1 = ops(
        &vargs(ReduceScatter, 4, 1, &[1, 1, 1, 1]),
        Selector::Ompi,
        None,
    );
    assert_eq!((sends(&d1), recvs(&d1)), (vec![(0, 4)], vec![(0, 1)]));
    // 2 ranks, 50000 + 50000: butterfly, one sendrecv of 50000 B each way
    let bf = ops(
        &vargs(ReduceScatter, 2, 0, &[50000, 50000]),
        Selector::Ompi,
        None,
    );
    assert_eq!(
        (sends(&bf), recvs(&bf)),
        (vec![(1, 50000)], vec![(1, 50000)])
    );
    // allgatherv at 4 ranks, 100 each: GB = gatherv to 0 then bcast of 100 B (not 400)
    let gb = vargs(Allgatherv, 4, 0, &[100; 4]);
    assert_eq!(
        algorithms_used(&gb, Selector::Ompi, None).unwrap(),
        vec!["GB", "linear", "binomial_tree"]
    );
    assert_eq!(
        sends(&ops(&gb, Selector::Ompi, None)),
        vec![(2, 100), (1, 100)]
    );
    // scan 1000 B at 4 ranks: rank 3 receives from 0, 1, 2
    assert_eq!(
        recvs(&ops(&args(Scan, 4, 3, 1000), Selector::Ompi, None)),
        vec![(0, 1000), (1, 1000), (2, 1000)]
    );
    // scatter_rdb_allgather at 16 ranks, 1 MiB: root scatters 8 pieces of 64 KiB to 8, ...
    let sra = ops(&args(Bcast, 16, 0, 1048576), Selector::Ompi, None);
    assert_eq!(
        sends(&sra)[..4],
        [(8, 524288), (4, 262144), (2, 131072), (1, 65536)]
    );
}

#[test]
fn simgrid_aborts_are_reported() {
    use Collective::*;
    let abort = |a: &CollArgs| simgrid_abort(a, Selector::Ompi, None).unwrap();
    assert!(abort(&args(Bcast, 16, 0, 1000)).is_some());
    assert!(abort(&args(Bcast, 16, 0, 4096)).is_none());
    assert!(abort(&args(Bcast, 2, 0, 600)).is_some());
    // NTSL remainder 232 B at 8 ranks -> k-nomial; remainder 7232 -> NTSB
    assert!(abort(&args(Bcast, 8, 0, 33000)).is_some());
    assert!(abort(&args(Bcast, 8, 0, 40000)).is_none());
    assert_eq!(
        algorithms_used(&args(Bcast, 8, 0, 40000), Selector::Ompi, None).unwrap(),
        vec!["NTSL", "NTSB"]
    );
    // allreduce below 64 B at 16 ranks: ring_segmented -> lr -> redbcast -> k-nomial bcast
    for s in [1, 8, 10, 63] {
        let a = args(Allreduce, 16, 0, s);
        assert!(abort(&a).is_some(), "{s}");
        let used = algorithms_used(&a, Selector::Ompi, None).unwrap();
        if s < 16 {
            assert_eq!(
                used,
                vec![
                    "ompi_ring_segmented",
                    "lr",
                    "redbcast",
                    "ompi_binary",
                    "mvapich2_knomial_intra_node"
                ]
            );
        } else {
            // lr runs, then its remainder (63 mod 16 = 15) goes through the selector again
            assert_eq!(
                used[..4],
                ["ompi_ring_segmented", "lr", "ompi_ring_segmented", "lr"]
            );
            assert_eq!(used.last(), Some(&"mvapich2_knomial_intra_node"));
        }
    }
    assert!(abort(&args(Allreduce, 16, 0, 64)).is_none());
    // allgatherv GB at 16 ranks with 100 B each -> bcast of 100 B -> k-nomial
    assert!(abort(&vargs(Allgatherv, 16, 0, &[100; 16])).is_some());
    assert!(abort(&vargs(Allgatherv, 4, 0, &[100; 4])).is_none());
    // pair with non-powers of two
    assert!(abort(&vargs(Alltoallv, 3, 0, &[1000; 3])).is_some());
    assert!(abort(&vargs(Alltoallv, 2, 0, &[1000; 2])).is_none());
    assert!(abort(&args(Alltoall, 6, 0, 600000)).is_some());
    assert!(abort(&args(Alltoall, 4, 0, 600000)).is_none());
    // the MPICH selector never goes there
    assert!(
        simgrid_abort(&args(Bcast, 16, 0, 1000), Selector::Mpich, None)
            .unwrap()
            .is_none()
    );
}

#[test]
fn forced_names_and_errors() {
    use Collective::*;
    let a = args(Bcast, 8, 0, 100);
    assert_eq!(
        algorithm_name(&a, Selector::Ompi, Some("binomial")).unwrap(),
        "binomial_tree"
    );
    assert_eq!(
        algorithm_name(&a, Selector::Ompi, Some("ntsl")).unwrap(),
        "NTSL"
    );
    assert!(matches!(
        algorithm_name(&a, Selector::Ompi, Some("nope")),
        Err(CollError::UnknownAlgorithm { .. })
    ));
    // a forced bcast also applies to the remainder of NTSL
    assert_eq!(
        algorithms_used(&args(Bcast, 4, 0, 20000), Selector::Ompi, Some("NTSL")).unwrap(),
        vec!["NTSL", "NTSL"]
    );
    // a forced allreduce does not force the reduce and bcast of redbcast
    assert_eq!(
        algorithms_used(
            &args(Allreduce, 4, 0, 1000),
            Selector::Ompi,
            Some("redbcast")
        )
        .unwrap(),
        vec!["redbcast", "ompi_binary", "NTSB"]
    );
    let mut bad = args(Bcast, 4, 4, 1);
    assert!(matches!(
        program(&bad, Selector::Ompi, None),
        Err(CollError::BadArgs { .. })
    ));
    bad.rank = 0;
    bad.root = 9;
    assert!(matches!(
        program(&bad, Selector::Ompi, None),
        Err(CollError::BadArgs { .. })
    ));
    let mut v = vargs(Alltoallv, 4, 0, &[1; 4]);
    v.send_counts.pop();
    assert!(matches!(
        program(&v, Selector::Ompi, None),
        Err(CollError::BadArgs { .. })
    ));
    for kind in [
        Barrier, Bcast, Reduce, Allreduce, Alltoall, Gather, Scatter, Allgather, Scan,
    ] {
        for &name in algorithms(kind) {
            assert!(ops(&args(kind, 1, 0, 100), Selector::Ompi, Some(name)).is_empty());
        }
    }
}

/// Linear algorithms at 65,536 ranks: every rank's program exists at once without holding
/// its operations (each would otherwise hold ~131,000 of them), and one rank's full program
/// has the expected length.
#[test]
fn linear_algorithms_are_lazy() {
    use Collective::*;
    const P: u32 = 65536;
    let cases: &[(Collective, &str, usize)] = &[
        (Alltoall, "basic_linear", 2 * (P as usize - 1) + 1),
        (Alltoall, "ring", 4 * (P as usize - 1)),
        (
            Alltoall,
            "mpich_scattered",
            2 * P as usize + (P as usize).div_ceil(32),
        ),
        (Allgather, "ring", 4 * (P as usize - 1)),
        (Barrier, "ompi_basic_linear", 2),
        (Scan, "linear", 2 * (P as usize - 1)),
    ];
    for &(kind, name, len) in cases {
        let mut progs: Vec<Box<dyn Program>> = (0..P)
            .map(|r| program(&args(kind, P, r, 8), Selector::Ompi, Some(name)).unwrap())
            .collect();
        for p in progs.iter_mut() {
            assert!(p.next_op().is_some());
        }
        let mut n = 1;
        let rank = if kind == Barrier { 1 } else { 0 };
        let mut one = program(&args(kind, P, rank, 8), Selector::Ompi, Some(name)).unwrap();
        while one.next_op().is_some() {
            n += 1;
        }
        assert_eq!(n - 1, len, "{kind:?} {name}");
    }
    // alltoallv with per-rank vectors: one rank's program
    let counts = vec![1u64; P as usize];
    let mut prog = program(&vargs(Alltoallv, P, 7, &counts), Selector::Ompi, None).unwrap();
    let mut n = 0;
    while prog.next_op().is_some() {
        n += 1;
    }
    assert_eq!(n, 2 * (P as usize - 1) + 1);
}

/// `openmpi4`: the `ompi` tables, buffers sent whole, a linear broadcast from the root.
#[test]
fn openmpi4_sends_buffers_whole() {
    use Collective::*;
    let o4 = Selector::OpenMpi4;
    // bcast 256 KiB at 2 ranks: basic_linear, SimGrid's NTSL in 32 segments of 8 KiB.
    let a = args(Bcast, 2, 0, 262144);
    assert_eq!(sends(&ops(&a, Selector::Ompi, None)).len(), 32);
    assert_eq!(algorithm_name(&a, o4, None).unwrap(), "flattree");
    assert_eq!(sends(&ops(&a, o4, None)), vec![(1, 262144)]);
    // bcast 32 KiB at 2 ranks: binary tree, 4 segments under ompi, one message here.
    let a = args(Bcast, 2, 0, 32768);
    assert_eq!(ompi(Bcast, 2, 32768), "NTSB");
    assert_eq!(sends(&ops(&a, Selector::Ompi, None)).len(), 4);
    assert_eq!(sends(&ops(&a, o4, None)), vec![(1, 32768)]);
    // bcast 16 KiB at 4 ranks: linear from the root to each rank, not a chain.
    assert_eq!(ompi(Bcast, 4, 16384), "NTSL");
    assert_eq!(
        sends(&ops(&args(Bcast, 4, 0, 16384), o4, None)),
        vec![(1, 16384), (2, 16384), (3, 16384)]
    );
    // reduce 256 KiB at 2 ranks: pipeline, 64 KiB segments under ompi.
    let leaf = args(Reduce, 2, 1, 262144);
    assert_eq!(sends(&ops(&leaf, Selector::Ompi, None)).len(), 4);
    assert_eq!(sends(&ops(&leaf, o4, None)), vec![(0, 262144)]);
    // reduce 32 KiB at 4 ranks: chain, one message per child, combined once each.
    let root = ops(&args(Reduce, 4, 0, 32768), o4, None);
    assert_eq!(recvs(&root), vec![(1, 32768), (3, 32768)]);
    let combined: Vec<u64> = root
        .iter()
        .filter_map(|op| match *op {
            POp::Combine(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(combined, vec![32768, 32768]);
    // The other collectives choose as ompi does.
    for (kind, p, bytes) in [(Allreduce, 2, 4096), (Allgather, 4, 64), (Gather, 2, 8)] {
        let a = args(kind, p, 0, bytes);
        assert_eq!(
            algorithm_name(&a, o4, None).unwrap(),
            ompi(kind, p, bytes),
            "{kind:?} {p} {bytes}"
        );
    }
    assert_eq!("openmpi4".parse::<Selector>(), Ok(o4));
    assert_eq!(o4.name(), "openmpi4");
}
