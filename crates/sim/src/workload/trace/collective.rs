//! The arguments of a recorded collective call, as the collective programs read them.
//!
//! Counts are taken as recorded (negative values as 0), datatypes by their sizes (at least
//! one byte). `MPI_Alltoallw` runs as an alltoallv counted in bytes (each count times its
//! peer's datatype size); `MPI_Reduce_scatter_block` as a reduce-scatter with equal counts.
//! Per-rank count lists are cut or padded to the communicator's size, and the lists a
//! collective needs but the record lacks are filled from the scalar counts.

use mpiscope_trace::{Event, ListKind, Slot};

use crate::coll::{CollArgs, Collective};

/// The call `ev` of family `family` by rank `me` of a communicator of `size` ranks whose
/// root (rooted collectives) is `root`.
pub(super) fn args(ev: &Event, family: &str, size: u32, me: u32, root: u32) -> CollArgs {
    let a = &ev.args;
    // Every collective family but the neighborhood ones has a collective; the fallback
    // is never taken.
    let kind = Collective::of_family(family).unwrap_or(Collective::Exscan);
    let alltoallw = family == "alltoallw";
    let ds = a.get(Slot::DtypeSize).unwrap_or(1).max(1) as u64;
    let dr = a.get(Slot::RecvDtypeSize).unwrap_or(ds as i64).max(1) as u64;
    let count = a.get(Slot::Count).unwrap_or(0).max(0) as u64;
    let recv_count = a
        .get(Slot::RecvCount)
        .map(|v| v.max(0) as u64)
        .unwrap_or(count);
    let list = |k: ListKind| {
        ev.list(k)
            .map(|l| l.iter().map(|&v| v.max(0) as u64).collect::<Vec<u64>>())
            .unwrap_or_default()
    };
    let mut send_counts = list(ListKind::SendCounts);
    let mut recv_counts = list(ListKind::RecvCounts);
    if kind == Collective::Alltoallv && alltoallw {
        // Per-peer datatypes: counted in bytes.
        let st = list(ListKind::SendTypeSizes);
        let rt = list(ListKind::RecvTypeSizes);
        send_counts = in_bytes(&send_counts, &st);
        recv_counts = in_bytes(&recv_counts, &rt);
    }
    let (ds, dr) = if alltoallw { (1, 1) } else { (ds, dr) };
    let (count, recv_count) = match kind {
        Collective::ReduceScatter if family == "reduce_scatter_block" => {
            let rc = recv_count;
            recv_counts = vec![rc; size as usize];
            (rc * u64::from(size), rc)
        }
        _ => (count, recv_count),
    };
    fill(
        kind,
        size as usize,
        count,
        recv_count,
        &mut send_counts,
        &mut recv_counts,
    );
    CollArgs {
        kind,
        size,
        rank: me,
        root,
        count,
        recv_count,
        dtype_size: ds,
        recv_dtype_size: dr,
        send_counts,
        recv_counts,
    }
}

/// `counts` times the datatype sizes `types` (1 where a size is missing).
fn in_bytes(counts: &[u64], types: &[u64]) -> Vec<u64> {
    counts
        .iter()
        .zip(types.iter().chain(std::iter::repeat(&1)))
        .map(|(c, s)| c * s)
        .collect()
}

/// Per-rank lists to `n` entries, and those `kind` needs made from the scalar counts.
fn fill(
    kind: Collective,
    n: usize,
    count: u64,
    recv_count: u64,
    send_counts: &mut Vec<u64>,
    recv_counts: &mut Vec<u64>,
) {
    for v in [&mut *send_counts, &mut *recv_counts] {
        if !v.is_empty() && v.len() != n {
            v.resize(n, 0);
        }
    }
    if matches!(kind, Collective::Alltoallv) {
        if send_counts.is_empty() {
            *send_counts = vec![0; n];
        }
        if recv_counts.is_empty() {
            *recv_counts = vec![0; n];
        }
    }
    if matches!(
        kind,
        Collective::Gatherv | Collective::Allgatherv | Collective::ReduceScatter
    ) && recv_counts.is_empty()
    {
        *recv_counts = vec![recv_count; n];
    }
    if kind == Collective::Scatterv && send_counts.is_empty() {
        *send_counts = vec![count; n];
    }
}
