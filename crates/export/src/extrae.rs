//! Extrae's numbering of MPI calls and states in Paraver traces, so that the Paraver
//! configuration files shipped with Extrae (`cfgs/mpi/*.cfg`: MPI call, MPI call
//! duration, communications) apply to the traces [`crate::paraver`] writes.
//!
//! Extrae puts an MPI call in one of five event types by what it does, and gives each
//! function a value that is the same in every type (value 0 ends the call):
//!
//! | type | label | calls |
//! | --- | --- | --- |
//! | 50000001 | MPI Point-to-point | sends, receives, probes, waits, cancel, persistent inits |
//! | 50000002 | MPI Collective Comm | blocking, non-blocking and neighborhood collectives |
//! | 50000003 | MPI Other | init, finalize, tests, communicators, groups, topologies, datatypes, ... |
//! | 50000004 | MPI One-sided | windows and RMA transfers |
//! | 50000005 | MPI I/O | `MPI_File_open`, `_close`, `_read*`, `_write*` |
//!
//! The values follow Extrae's merger (`src/merger/paraver/MPI_EventEncoding.h`, the
//! `MPIVal` enumeration of Extrae 3.8 to 4.x: `MPI_Send` 1 ... `MPI_Get_accumulate` 172),
//! and the types its table `event_mpit2prv` (`mpi_prv_events.c`) gives each function.
//! The values 173 to 194 (`MPI_Dist_graph_create`, the neighborhood collectives,
//! `MPI_Fetch_and_op` ... `MPI_Win_flush_local_all`, the matched probes and receives,
//! `MPI_Init_thread`) are those of Extrae 4's later additions, as Dimemas's table of
//! Extrae's values lists them. One departure: Extrae's header swaps the labels of
//! `MPI_Win_start` (69) and `MPI_Win_complete` (70); here each value keeps its own
//! function's name.
//!
//! Large-count `_c` bindings and Fortran names take the value of their C function
//! (`MPI_Send_c` and `mpi_send_` are `MPI_Send`, 1). A function Extrae does not number
//! (`MPI_Exscan`, persistent collectives, `MPI_Isendrecv`, `MPI_Rput`, partitioned
//! sends, sessions, ...) goes in type [`UNNUMBERED_EVENT`], "MPI call not numbered by
//! Extrae (mpiscope)", with values given by first appearance from 1, listed in the
//! `.pcf` like Extrae's.

use mpiscope_mpispec::{Family, Group};

/// Extrae's event type of point-to-point calls.
pub const PTOP_EVENT: u32 = 50_000_001;
/// Extrae's event type of collective calls.
pub const COLLECTIVE_EVENT: u32 = 50_000_002;
/// Extrae's event type of the other MPI calls.
pub const OTHER_EVENT: u32 = 50_000_003;
/// Extrae's event type of one-sided calls.
pub const RMA_EVENT: u32 = 50_000_004;
/// Extrae's event type of MPI-IO calls.
pub const IO_EVENT: u32 = 50_000_005;
/// mpiscope's event type of the MPI calls Extrae has no value for.
pub const UNNUMBERED_EVENT: u32 = 50_000_099;

/// The event types with Extrae's labels, in the `.pcf`'s order.
pub const EVENT_TYPES: [(u32, &str); 5] = [
    (PTOP_EVENT, "MPI Point-to-point"),
    (COLLECTIVE_EVENT, "MPI Collective Comm"),
    (OTHER_EVENT, "MPI Other"),
    (RMA_EVENT, "MPI One-sided"),
    (IO_EVENT, "MPI I/O"),
];

/// Label of [`UNNUMBERED_EVENT`] in the `.pcf`.
pub const UNNUMBERED_LABEL: &str = "MPI call not numbered by Extrae (mpiscope)";

/// Extrae's state values and labels (`paraver_state.h`, the `.pcf` it writes).
pub const STATES: [(u8, &str); 18] = [
    (0, "Idle"),
    (1, "Running"),
    (2, "Not created"),
    (3, "Waiting a message"),
    (4, "Blocking Send"),
    (5, "Synchronization"),
    (6, "Test/Probe"),
    (7, "Scheduling and Fork/Join"),
    (8, "Wait/WaitAll"),
    (9, "Blocked"),
    (10, "Immediate Send"),
    (11, "Immediate Receive"),
    (12, "I/O"),
    (13, "Group Communication"),
    (14, "Tracing Disabled"),
    (15, "Others"),
    (16, "Send Receive"),
    (17, "Memory transfer"),
];

/// State 1: between MPI calls.
pub const RUNNING: u8 = 1;

/// Point-to-point calls: (value, name without `MPI_`).
const PTOP: &[(u32, &str)] = &[
    (1, "Send"),
    (2, "Recv"),
    (3, "Isend"),
    (4, "Irecv"),
    (5, "Wait"),
    (6, "Waitall"),
    (33, "Bsend"),
    (34, "Ssend"),
    (35, "Rsend"),
    (36, "Ibsend"),
    (37, "Issend"),
    (38, "Irsend"),
    (40, "Cancel"),
    (41, "Sendrecv"),
    (42, "Sendrecv_replace"),
    (59, "Waitany"),
    (60, "Waitsome"),
    (61, "Probe"),
    (62, "Iprobe"),
    (112, "Bsend_init"),
    (116, "Recv_init"),
    (117, "Send_init"),
    (121, "Rsend_init"),
    (122, "Ssend_init"),
    (190, "Mprobe"),
    (191, "Improbe"),
    (192, "Mrecv"),
    (193, "Imrecv"),
];

/// Collective calls.
const COLLECTIVE: &[(u32, &str)] = &[
    (7, "Bcast"),
    (8, "Barrier"),
    (9, "Reduce"),
    (10, "Allreduce"),
    (11, "Alltoall"),
    (12, "Alltoallv"),
    (13, "Gather"),
    (14, "Gatherv"),
    (15, "Scatter"),
    (16, "Scatterv"),
    (17, "Allgather"),
    (18, "Allgatherv"),
    (30, "Scan"),
    (80, "Reduce_scatter"),
    (154, "Ireduce"),
    (155, "Iallreduce"),
    (156, "Ibarrier"),
    (157, "Ibcast"),
    (158, "Ialltoall"),
    (159, "Ialltoallv"),
    (160, "Iallgather"),
    (161, "Iallgatherv"),
    (162, "Igather"),
    (163, "Igatherv"),
    (164, "Iscatter"),
    (165, "Iscatterv"),
    (166, "Ireduce_scatter"),
    (167, "Iscan"),
    (168, "Reduce_scatter_block"),
    (169, "Ireduce_scatter_block"),
    (170, "Alltoallw"),
    (171, "Ialltoallw"),
    (174, "Neighbor_allgather"),
    (175, "Ineighbor_allgather"),
    (176, "Neighbor_allgatherv"),
    (177, "Ineighbor_allgatherv"),
    (178, "Neighbor_alltoall"),
    (179, "Ineighbor_alltoall"),
    (180, "Neighbor_alltoallv"),
    (181, "Ineighbor_alltoallv"),
    (182, "Neighbor_alltoallw"),
    (183, "Ineighbor_alltoallw"),
];

/// One-sided calls.
const RMA: &[(u32, &str)] = &[
    (63, "Win_create"),
    (64, "Win_free"),
    (65, "Put"),
    (66, "Get"),
    (67, "Accumulate"),
    (68, "Win_fence"),
    (69, "Win_start"),
    (70, "Win_complete"),
    (71, "Win_post"),
    (72, "Win_wait"),
    (73, "Win_test"),
    (74, "Win_lock"),
    (75, "Win_unlock"),
    (172, "Get_accumulate"),
    (184, "Fetch_and_op"),
    (185, "Compare_and_swap"),
    (186, "Win_flush"),
    (187, "Win_flush_all"),
    (188, "Win_flush_local"),
    (189, "Win_flush_local_all"),
];

/// MPI-IO calls.
const IO: &[(u32, &str)] = &[
    (141, "File_open"),
    (142, "File_close"),
    (143, "File_read"),
    (144, "File_read_all"),
    (145, "File_write"),
    (146, "File_write_all"),
    (147, "File_read_at"),
    (148, "File_read_at_all"),
    (149, "File_write_at"),
    (150, "File_write_at_all"),
];

/// The other calls Extrae numbers.
const OTHER: &[(u32, &str)] = &[
    (19, "Comm_rank"),
    (20, "Comm_size"),
    (21, "Comm_create"),
    (22, "Comm_dup"),
    (23, "Comm_split"),
    (24, "Comm_group"),
    (25, "Comm_free"),
    (26, "Comm_remote_group"),
    (27, "Comm_remote_size"),
    (28, "Comm_test_inter"),
    (29, "Comm_compare"),
    (31, "Init"),
    (32, "Finalize"),
    (39, "Test"),
    (43, "Cart_create"),
    (44, "Cart_shift"),
    (45, "Cart_coords"),
    (46, "Cart_get"),
    (47, "Cart_map"),
    (48, "Cart_rank"),
    (49, "Cart_sub"),
    (50, "Cartdim_get"),
    (51, "Dims_create"),
    (52, "Graph_get"),
    (53, "Graph_map"),
    (54, "Graph_create"),
    (55, "Graph_neighbors"),
    (56, "Graphdims_get"),
    (57, "Graph_neighbors_count"),
    (58, "Topo_test"),
    (76, "Pack"),
    (77, "Unpack"),
    (78, "Op_create"),
    (79, "Op_free"),
    (81, "Attr_delete"),
    (82, "Attr_get"),
    (83, "Attr_put"),
    (84, "Group_difference"),
    (85, "Group_excl"),
    (86, "Group_free"),
    (87, "Group_incl"),
    (88, "Group_intersection"),
    (89, "Group_rank"),
    (90, "Group_range_excl"),
    (91, "Group_range_incl"),
    (92, "Group_size"),
    (93, "Group_translate_ranks"),
    (94, "Group_union"),
    (95, "Group_compare"),
    (96, "Intercomm_create"),
    (97, "Intercomm_merge"),
    (98, "Keyval_free"),
    (99, "Keyval_create"),
    (100, "Abort"),
    (101, "Error_class"),
    (102, "Errhandler_create"),
    (103, "Errhandler_free"),
    (104, "Errhandler_get"),
    (105, "Error_string"),
    (106, "Errhandler_set"),
    (107, "Get_processor_name"),
    (108, "Initialized"),
    (109, "Wtick"),
    (110, "Wtime"),
    (111, "Address"),
    (113, "Buffer_attach"),
    (114, "Buffer_detach"),
    (115, "Request_free"),
    (118, "Get_count"),
    (119, "Get_elements"),
    (120, "Pack_size"),
    (123, "Start"),
    (124, "Startall"),
    (125, "Testall"),
    (126, "Testany"),
    (127, "Test_cancelled"),
    (128, "Testsome"),
    (129, "Type_commit"),
    (130, "Type_contiguous"),
    (131, "Type_extent"),
    (132, "Type_free"),
    (133, "Type_hindexed"),
    (134, "Type_hvector"),
    (135, "Type_indexed"),
    (136, "Type_lb"),
    (137, "Type_size"),
    (138, "Type_struct"),
    (139, "Type_ub"),
    (140, "Type_vector"),
    (151, "Comm_spawn"),
    (152, "Comm_spawn_multiple"),
    (153, "Request_get_status"),
    (173, "Dist_graph_create"),
    (194, "Init_thread"),
];

/// Every numbered call, by event type.
const TABLES: [(u32, &[(u32, &str)]); 5] = [
    (PTOP_EVENT, PTOP),
    (COLLECTIVE_EVENT, COLLECTIVE),
    (OTHER_EVENT, OTHER),
    (RMA_EVENT, RMA),
    (IO_EVENT, IO),
];

/// `name` without its `MPI_`/`PMPI_` prefix, Fortran trailing underscores and large-count
/// `_c` suffix, in lower case (`mpi_send_` and `MPI_Send_c` are `send`).
fn key(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let bare = lower
        .strip_prefix("pmpi_")
        .or_else(|| lower.strip_prefix("mpi_"))
        .unwrap_or(&lower)
        .trim_end_matches('_');
    bare.strip_suffix("_c").unwrap_or(bare).to_owned()
}

/// Extrae's (event type, value) of the MPI function `name`, or `None` for a function
/// Extrae does not number.
pub fn numbering(name: &str) -> Option<(u32, u32)> {
    let k = key(name);
    TABLES.iter().find_map(|(ty, table)| {
        table
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(&k))
            .map(|&(v, _)| (*ty, v))
    })
}

/// The values of event type `ty` with their labels (`MPI_Send`), in increasing order;
/// empty for a type that is not Extrae's.
pub fn values(ty: u32) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = TABLES
        .iter()
        .filter(|(t, _)| *t == ty)
        .flat_map(|(_, table)| table.iter().map(|&(v, n)| (v, format!("MPI_{n}"))))
        .collect();
    v.sort_unstable();
    v
}

/// Extrae's state during a call of `name`: 4 blocking send, 10 immediate send, 3 waiting a
/// message (blocking receive), 11 immediate receive, 16 send-receive, 5 synchronization
/// (barrier), 8 wait, 6 test/probe, 13 group communication, 12 I/O, 15 others (init,
/// finalize, communicators, one-sided, ...).
pub fn state_of(name: &str) -> u8 {
    let f = Family::of(name);
    let nonblocking = mpiscope_mpispec::is_nonblocking(name);
    match f {
        _ if f.is_send() && nonblocking => 10,
        _ if f.is_send() => 4,
        Family::Recv | Family::Mrecv if nonblocking => 11,
        Family::Recv | Family::Mrecv => 3,
        Family::Sendrecv | Family::SendrecvReplace => 16,
        Family::Barrier => 5,
        _ if f.is_wait() => 8,
        _ if f.is_test() || f.is_probe() => 6,
        _ if f.is_collective() => 13,
        _ if mpiscope_mpispec::group(name) == Group::Io => 12,
        _ => 15,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_calls_have_extraes_numbers() {
        let table = [
            ("MPI_Send", PTOP_EVENT, 1),
            ("MPI_Recv", PTOP_EVENT, 2),
            ("MPI_Isend", PTOP_EVENT, 3),
            ("MPI_Irecv", PTOP_EVENT, 4),
            ("MPI_Wait", PTOP_EVENT, 5),
            ("MPI_Waitall", PTOP_EVENT, 6),
            ("MPI_Bcast", COLLECTIVE_EVENT, 7),
            ("MPI_Barrier", COLLECTIVE_EVENT, 8),
            ("MPI_Allreduce", COLLECTIVE_EVENT, 10),
            ("MPI_Alltoall", COLLECTIVE_EVENT, 11),
            ("MPI_Comm_rank", OTHER_EVENT, 19),
            ("MPI_Init", OTHER_EVENT, 31),
            ("MPI_Finalize", OTHER_EVENT, 32),
            ("MPI_Test", OTHER_EVENT, 39),
            ("MPI_Sendrecv", PTOP_EVENT, 41),
            ("MPI_Iallreduce", COLLECTIVE_EVENT, 155),
            ("MPI_Ialltoall", COLLECTIVE_EVENT, 158),
            ("MPI_Put", RMA_EVENT, 65),
            ("MPI_File_write_at_all", IO_EVENT, 150),
            ("MPI_Init_thread", OTHER_EVENT, 194),
        ];
        for (name, ty, value) in table {
            assert_eq!(numbering(name), Some((ty, value)), "{name}");
        }
    }

    #[test]
    fn bindings_fold_and_unnumbered_calls_fall_back() {
        assert_eq!(numbering("mpi_send_"), Some((PTOP_EVENT, 1)));
        assert_eq!(numbering("MPI_Allreduce_c"), Some((COLLECTIVE_EVENT, 10)));
        assert_eq!(numbering("PMPI_Waitall"), Some((PTOP_EVENT, 6)));
        for name in [
            "MPI_Exscan",
            "MPI_Bcast_init",
            "MPI_Isendrecv",
            "MPI_Rput",
            "foo",
        ] {
            assert_eq!(numbering(name), None, "{name}");
        }
    }

    #[test]
    fn values_are_unique_and_labelled_once() {
        let mut all: Vec<u32> = TABLES
            .iter()
            .flat_map(|(_, t)| t.iter().map(|&(v, _)| v))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a value is given twice");
        assert!(all.iter().all(|&v| (1..=194).contains(&v)));
        let p2p = values(PTOP_EVENT);
        assert_eq!(p2p[0], (1, "MPI_Send".to_string()));
        assert!(p2p.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(values(UNNUMBERED_EVENT).is_empty());
        for (ty, table) in TABLES {
            for &(v, n) in table {
                assert_eq!(numbering(&format!("MPI_{n}")), Some((ty, v)), "{n}");
            }
        }
    }

    #[test]
    fn states_of_calls() {
        assert_eq!(state_of("MPI_Send"), 4);
        assert_eq!(state_of("MPI_Isend"), 10);
        assert_eq!(state_of("MPI_Recv"), 3);
        assert_eq!(state_of("MPI_Irecv"), 11);
        assert_eq!(state_of("MPI_Sendrecv"), 16);
        assert_eq!(state_of("MPI_Waitall"), 8);
        assert_eq!(state_of("MPI_Iprobe"), 6);
        assert_eq!(state_of("MPI_Allreduce"), 13);
        assert_eq!(state_of("MPI_Barrier"), 5);
        assert_eq!(state_of("MPI_File_write"), 12);
        assert_eq!(state_of("MPI_Comm_rank"), 15);
        assert!(STATES.iter().any(|&(s, l)| s == RUNNING && l == "Running"));
    }
}
