//! What OTF2 says of an MPI function: its region role, and for a blocking collective the
//! `OTF2_CollectiveOp` its `MpiCollectiveEnd` names.

use mpiscope_mpispec::{Family, Group};

use super::ffi;

/// The region role of `function`: barrier, one-to-all (broadcast, scatter), all-to-one
/// (gather, reduce), all-to-all (the other collectives), point-to-point, or a function.
pub(super) fn role(function: &str) -> u8 {
    let c = mpiscope_mpispec::classify(function);
    if c.family == Family::Barrier {
        return ffi::ROLE_BARRIER;
    }
    if c.collective {
        return match c.family {
            Family::Bcast | Family::Scatter | Family::Scatterv => ffi::ROLE_COLL_ONE2ALL,
            Family::Gather | Family::Gatherv | Family::Reduce => ffi::ROLE_COLL_ALL2ONE,
            Family::Allreduce
            | Family::Allgather
            | Family::Allgatherv
            | Family::Alltoall
            | Family::Alltoallv
            | Family::Alltoallw
            | Family::ReduceScatter
            | Family::ReduceScatterBlock
            | Family::NeighborAllgather
            | Family::NeighborAllgatherv
            | Family::NeighborAlltoall
            | Family::NeighborAlltoallv
            | Family::NeighborAlltoallw => ffi::ROLE_COLL_ALL2ALL,
            _ => ffi::ROLE_COLL_OTHER,
        };
    }
    if c.group == Group::P2p {
        ffi::ROLE_POINT2POINT
    } else {
        ffi::ROLE_FUNCTION
    }
}

/// The collective operation of a blocking collective `function` (`None` for anything
/// else, non-blocking collectives included: their work is not inside the call).
pub(super) fn op(function: &str) -> Option<u8> {
    let c = mpiscope_mpispec::classify(function);
    if !c.collective || c.nonblocking || c.persistent {
        return None;
    }
    family_op(c.family)
}

/// The collective operation of a non-blocking collective `function` (`MPI_Ibcast`, ...;
/// `None` for anything else, persistent collectives included).
pub(super) fn nonblocking_op(function: &str) -> Option<u8> {
    let c = mpiscope_mpispec::classify(function);
    if !c.collective || !c.nonblocking || c.persistent {
        return None;
    }
    family_op(c.family)
}

/// `OTF2_CollectiveOp` of a collective family.
fn family_op(family: Family) -> Option<u8> {
    Some(match family {
        Family::Barrier => 0,
        Family::Bcast => 1,
        Family::Gather => 2,
        Family::Gatherv => 3,
        Family::Scatter => 4,
        Family::Scatterv => 5,
        Family::Allgather | Family::NeighborAllgather => 6,
        Family::Allgatherv | Family::NeighborAllgatherv => 7,
        Family::Alltoall | Family::NeighborAlltoall => 8,
        Family::Alltoallv | Family::NeighborAlltoallv => 9,
        Family::Alltoallw | Family::NeighborAlltoallw => 10,
        Family::Allreduce => 11,
        Family::Reduce => 12,
        Family::ReduceScatter => 13,
        Family::Scan => 14,
        Family::Exscan => 15,
        Family::ReduceScatterBlock => 16,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_ops() {
        assert_eq!(role("MPI_Barrier"), ffi::ROLE_BARRIER);
        assert_eq!(role("MPI_Bcast"), ffi::ROLE_COLL_ONE2ALL);
        assert_eq!(role("MPI_Scatterv"), ffi::ROLE_COLL_ONE2ALL);
        assert_eq!(role("MPI_Reduce"), ffi::ROLE_COLL_ALL2ONE);
        assert_eq!(role("MPI_Gather"), ffi::ROLE_COLL_ALL2ONE);
        assert_eq!(role("MPI_Allreduce"), ffi::ROLE_COLL_ALL2ALL);
        assert_eq!(role("MPI_Alltoall"), ffi::ROLE_COLL_ALL2ALL);
        assert_eq!(role("MPI_Isend"), ffi::ROLE_POINT2POINT);
        assert_eq!(role("MPI_Comm_rank"), ffi::ROLE_FUNCTION);
        assert_eq!(op("MPI_Barrier"), Some(0));
        assert_eq!(op("MPI_Bcast"), Some(1));
        assert_eq!(op("MPI_Allreduce"), Some(11));
        assert_eq!(op("MPI_Reduce_scatter_block"), Some(16));
        assert_eq!(op("MPI_Ibcast"), None);
        assert_eq!(nonblocking_op("MPI_Ibcast"), Some(1));
        assert_eq!(nonblocking_op("MPI_Ibarrier"), Some(0));
        assert_eq!(nonblocking_op("MPI_Ialltoallv"), Some(9));
        assert_eq!(nonblocking_op("MPI_Bcast"), None);
        assert_eq!(nonblocking_op("MPI_Isend"), None);
        assert_eq!(op("MPI_Send"), None);
    }
}
