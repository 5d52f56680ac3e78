//! Function families as a type.
//!
//! [`crate::family`] names the family of any MPI function as a string (`MPI_Issend_c` is
//! `ssend`). [`Family`] is the same answer as a value, for the families the tools give a
//! meaning to: sends and receives, probes, request completion, collectives, one-sided
//! transfers, initialization and finalization. Every other function (communicators,
//! datatypes, I/O, attributes, ...) is [`Family::Other`]. Code that acts on a family
//! matches on the variant, so a misspelt family is a compile error rather than a branch
//! that never runs.
//!
//! One table, in the `families!` invocation below, ties each variant to its name; the
//! name lookup, [`Family::name`] and [`Family::ALL`] are generated from it.

/// Declares [`Family`], its name table and the lookup from a name.
macro_rules! families {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// The family of an MPI function: what it does once the non-blocking `I`, the
        /// persistent `_init` and the large-count `_c` variants are folded in
        /// (`MPI_Iallreduce`, `MPI_Allreduce_init` and `MPI_Allreduce_c` are all
        /// [`Family::Allreduce`]).
        ///
        /// ```
        /// use mpiscope_mpispec::Family;
        /// assert_eq!(Family::of("MPI_Issend"), Family::Ssend);
        /// assert_eq!(Family::of("mpi_waitall_"), Family::Waitall);
        /// assert_eq!(Family::of("MPI_Bcast_init_c"), Family::Bcast);
        /// assert_eq!(Family::of("MPI_Comm_split"), Family::Other);
        /// assert_eq!(Family::Sendrecv.name(), "sendrecv");
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Family {
            $($(#[$doc])* $variant,)*
            /// Any other function: its meaning is not one the tools act on.
            Other,
        }

        impl Family {
            /// Every family with a name (all but [`Family::Other`]), in declaration order.
            pub const ALL: &'static [Family] = &[$(Family::$variant,)*];

            /// The family's name, as [`crate::family`] spells it (`"other"` for
            /// [`Family::Other`]).
            pub fn name(self) -> &'static str {
                match self {
                    $(Family::$variant => $name,)*
                    Family::Other => "other",
                }
            }

            /// The family named `name` (a [`crate::family`] result), or [`Family::Other`].
            pub fn from_name(name: &str) -> Family {
                match name {
                    $($name => Family::$variant,)*
                    _ => Family::Other,
                }
            }
        }
    };
}

families! {
    /// `MPI_Send`, `MPI_Isend`, `MPI_Send_init`.
    Send = "send",
    /// `MPI_Ssend`, `MPI_Issend`, `MPI_Ssend_init`: completes once the receive has started.
    Ssend = "ssend",
    /// `MPI_Bsend`, `MPI_Ibsend`, `MPI_Bsend_init`.
    Bsend = "bsend",
    /// `MPI_Rsend`, `MPI_Irsend`, `MPI_Rsend_init`.
    Rsend = "rsend",
    /// `MPI_Recv`, `MPI_Irecv`, `MPI_Recv_init`.
    Recv = "recv",
    /// `MPI_Sendrecv`, `MPI_Isendrecv`.
    Sendrecv = "sendrecv",
    /// `MPI_Sendrecv_replace`, `MPI_Isendrecv_replace`.
    SendrecvReplace = "sendrecv_replace",
    /// `MPI_Mrecv`, `MPI_Imrecv`: the receive of a matched message.
    Mrecv = "mrecv",
    /// `MPI_Psend_init`: partitioned send.
    Psend = "psend",
    /// `MPI_Precv_init`: partitioned receive.
    Precv = "precv",
    /// `MPI_Probe`, `MPI_Iprobe`.
    Probe = "probe",
    /// `MPI_Mprobe`.
    Mprobe = "mprobe",
    /// `MPI_Improbe` (its own family: `mprobe` has no `I` form in the folding).
    Improbe = "improbe",
    /// `MPI_Wait`.
    Wait = "wait",
    /// `MPI_Waitall`.
    Waitall = "waitall",
    /// `MPI_Waitany`.
    Waitany = "waitany",
    /// `MPI_Waitsome`.
    Waitsome = "waitsome",
    /// `MPI_Test`.
    Test = "test",
    /// `MPI_Testall`.
    Testall = "testall",
    /// `MPI_Testany`.
    Testany = "testany",
    /// `MPI_Testsome`.
    Testsome = "testsome",
    /// `MPI_Test_cancelled`.
    TestCancelled = "test_cancelled",
    /// `MPI_Request_get_status`: a test that leaves the request in place.
    RequestGetStatus = "request_get_status",
    /// `MPI_Request_free`.
    RequestFree = "request_free",
    /// `MPI_Start`.
    Start = "start",
    /// `MPI_Startall`.
    Startall = "startall",
    /// `MPI_Cancel`.
    Cancel = "cancel",
    /// `MPI_Barrier`, `MPI_Ibarrier`, `MPI_Barrier_init`.
    Barrier = "barrier",
    /// Broadcast.
    Bcast = "bcast",
    /// Reduction to a root.
    Reduce = "reduce",
    /// Reduction to every rank.
    Allreduce = "allreduce",
    /// Gather to a root.
    Gather = "gather",
    /// Gather with per-rank counts.
    Gatherv = "gatherv",
    /// Scatter from a root.
    Scatter = "scatter",
    /// Scatter with per-rank counts.
    Scatterv = "scatterv",
    /// Gather to every rank.
    Allgather = "allgather",
    /// Gather to every rank with per-rank counts.
    Allgatherv = "allgatherv",
    /// All-to-all exchange.
    Alltoall = "alltoall",
    /// All-to-all with per-peer counts.
    Alltoallv = "alltoallv",
    /// All-to-all with per-peer counts and datatypes.
    Alltoallw = "alltoallw",
    /// Reduction scattered in per-rank counts.
    ReduceScatter = "reduce_scatter",
    /// Reduction scattered in equal blocks.
    ReduceScatterBlock = "reduce_scatter_block",
    /// Inclusive prefix reduction.
    Scan = "scan",
    /// Exclusive prefix reduction.
    Exscan = "exscan",
    /// Neighborhood gather.
    NeighborAllgather = "neighbor_allgather",
    /// Neighborhood gather with per-neighbor counts.
    NeighborAllgatherv = "neighbor_allgatherv",
    /// Neighborhood all-to-all.
    NeighborAlltoall = "neighbor_alltoall",
    /// Neighborhood all-to-all with per-neighbor counts.
    NeighborAlltoallv = "neighbor_alltoallv",
    /// Neighborhood all-to-all with per-neighbor counts and datatypes.
    NeighborAlltoallw = "neighbor_alltoallw",
    /// One-sided put.
    Put = "put",
    /// One-sided put with a request.
    Rput = "rput",
    /// One-sided get.
    Get = "get",
    /// One-sided get with a request.
    Rget = "rget",
    /// One-sided accumulate.
    Accumulate = "accumulate",
    /// One-sided accumulate with a request.
    Raccumulate = "raccumulate",
    /// One-sided fetch and accumulate.
    GetAccumulate = "get_accumulate",
    /// One-sided fetch and accumulate with a request.
    RgetAccumulate = "rget_accumulate",
    /// One-sided atomic fetch and operate on one element.
    FetchAndOp = "fetch_and_op",
    /// One-sided atomic compare and swap.
    CompareAndSwap = "compare_and_swap",
    /// `MPI_Init`.
    Init = "init",
    /// `MPI_Init_thread`.
    InitThread = "init_thread",
    /// `MPI_Finalize`.
    Finalize = "finalize",
}

impl Family {
    /// The family of the function called `name` (any binding: `MPI_Isend`, `mpi_isend_`).
    pub fn of(name: &str) -> Family {
        Family::from_name(&crate::family(name))
    }

    /// A collective operation (blocking, non-blocking, persistent or neighborhood).
    pub fn is_collective(self) -> bool {
        use Family::*;
        matches!(
            self,
            Barrier
                | Bcast
                | Reduce
                | Allreduce
                | Gather
                | Gatherv
                | Scatter
                | Scatterv
                | Allgather
                | Allgatherv
                | Alltoall
                | Alltoallv
                | Alltoallw
                | ReduceScatter
                | ReduceScatterBlock
                | Scan
                | Exscan
        ) || self.is_neighbor()
    }

    /// A neighborhood collective (`MPI_Neighbor_*`).
    pub fn is_neighbor(self) -> bool {
        use Family::*;
        matches!(
            self,
            NeighborAllgather
                | NeighborAllgatherv
                | NeighborAlltoall
                | NeighborAlltoallv
                | NeighborAlltoallw
        )
    }

    /// A point-to-point send or receive ([`crate::Group::P2p`]).
    pub fn is_p2p(self) -> bool {
        use Family::*;
        matches!(
            self,
            Send | Recv
                | Ssend
                | Bsend
                | Rsend
                | Sendrecv
                | SendrecvReplace
                | Mrecv
                | Psend
                | Precv
        )
    }

    /// One message sent to one peer: standard, synchronous, buffered or ready mode (their
    /// non-blocking and persistent forms are of the same family).
    pub fn is_send(self) -> bool {
        matches!(
            self,
            Family::Send | Family::Ssend | Family::Bsend | Family::Rsend
        )
    }

    /// A probe: `MPI_Probe`, `MPI_Iprobe`, `MPI_Mprobe`, `MPI_Improbe`.
    pub fn is_probe(self) -> bool {
        matches!(self, Family::Probe | Family::Mprobe | Family::Improbe)
    }

    /// `MPI_Wait`, `MPI_Waitall`, `MPI_Waitany`, `MPI_Waitsome`.
    pub fn is_wait(self) -> bool {
        matches!(
            self,
            Family::Wait | Family::Waitall | Family::Waitany | Family::Waitsome
        )
    }

    /// `MPI_Test`, `MPI_Testall`, `MPI_Testany`, `MPI_Testsome`, `MPI_Test_cancelled`.
    pub fn is_test(self) -> bool {
        matches!(
            self,
            Family::Test
                | Family::Testall
                | Family::Testany
                | Family::Testsome
                | Family::TestCancelled
        )
    }

    /// Has a non-blocking form `MPI_I<name>` that [`crate::family`] folds into it
    /// (`MPI_Improbe` is not folded into `mprobe`).
    pub(crate) fn folds_immediate(self) -> bool {
        use Family::*;
        self.is_collective()
            || matches!(
                self,
                Send | Recv | Ssend | Bsend | Rsend | Sendrecv | SendrecvReplace | Mrecv | Probe
            )
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &f in Family::ALL {
            assert_eq!(Family::from_name(f.name()), f, "{f:?}");
        }
        assert_eq!(Family::from_name("comm_split"), Family::Other);
        assert_eq!(Family::from_name("other"), Family::Other);
        let mut names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Family::ALL.len(), "a name given twice");
    }

    #[test]
    fn of_functions() {
        assert_eq!(Family::of("MPI_Ibarrier"), Family::Barrier);
        assert_eq!(Family::of("MPI_Iprobe"), Family::Probe);
        assert_eq!(Family::of("MPI_Improbe"), Family::Improbe);
        assert_eq!(Family::of("MPI_Imrecv"), Family::Mrecv);
        assert_eq!(Family::of("MPI_Psend_init"), Family::Psend);
        assert_eq!(Family::of("MPI_Rget_accumulate"), Family::RgetAccumulate);
        assert_eq!(Family::of("MPI_Test_cancelled"), Family::TestCancelled);
        assert_eq!(Family::of("MPI_Init_thread"), Family::InitThread);
        assert_eq!(
            Family::of("MPI_Ineighbor_alltoallw_c"),
            Family::NeighborAlltoallw
        );
        assert_eq!(Family::of("MPI_Info_get"), Family::Other);
    }

    #[test]
    fn predicates() {
        assert!(Family::Ssend.is_send() && !Family::Sendrecv.is_send());
        assert!(Family::Psend.is_p2p() && !Family::Probe.is_p2p());
        assert!(Family::NeighborAlltoall.is_collective() && Family::NeighborAlltoall.is_neighbor());
        assert!(!Family::Put.is_collective());
        assert!(Family::TestCancelled.is_test() && !Family::Testall.is_wait());
        assert!(Family::Waitsome.is_wait() && Family::Improbe.is_probe());
        assert!(!Family::Improbe.folds_immediate() && Family::Mrecv.folds_immediate());
        assert_eq!(Family::Allreduce.to_string(), "allreduce");
    }
}
