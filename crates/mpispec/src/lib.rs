//! Knowledge of the MPI standard that needs no MPI library: how functions group, which are
//! collectives, and what family a name belongs to once its binding variants are stripped
//! (`MPI_Iallreduce`, `MPI_Allreduce_init` and `MPI_Allreduce_c` are all `allreduce`).
//!
//! The preload library uses the groups for include/exclude filters; the analyses and
//! exporters use the families ([`Family`]) to give calls their meaning.

mod family;

pub use family::Family;

/// A coarse group of MPI functions, used by filters (`MPISCOPE_EXCLUDE=probe`) and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// Point-to-point sends and receives (blocking, non-blocking, persistent, matched).
    P2p,
    /// `Probe`, `Iprobe`, `Mprobe`, `Improbe`.
    Probe,
    /// Request completion and management: `Wait*`, `Test*`, `Start*`, `Request_*`, `Cancel`.
    Completion,
    /// Collective operations, blocking, non-blocking, persistent and neighborhood.
    Collective,
    /// Communicators, groups and process topologies.
    Comm,
    /// Datatypes, packing, addresses.
    Datatype,
    /// One-sided communication and windows.
    Rma,
    /// MPI-IO.
    Io,
    /// The tools interface (`MPI_T_*`).
    Tools,
    /// Environment: init, finalize, timers, errors, attributes, info, sessions and the rest.
    Other,
}

impl Group {
    /// Every group.
    pub const ALL: [Group; 10] = [
        Group::P2p,
        Group::Probe,
        Group::Completion,
        Group::Collective,
        Group::Comm,
        Group::Datatype,
        Group::Rma,
        Group::Io,
        Group::Tools,
        Group::Other,
    ];

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Group::P2p => "p2p",
            Group::Probe => "probe",
            Group::Completion => "completion",
            Group::Collective => "collective",
            Group::Comm => "comm",
            Group::Datatype => "datatype",
            Group::Rma => "rma",
            Group::Io => "io",
            Group::Tools => "tools",
            Group::Other => "other",
        }
    }

    /// The group called `name`.
    pub fn from_name(name: &str) -> Option<Group> {
        Group::ALL
            .iter()
            .copied()
            .find(|g| g.name().eq_ignore_ascii_case(name))
    }
}

/// What the other predicates say of one function, computed once (callers that look at
/// every event of a trace cache it per call id instead of re-parsing the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallClass {
    /// [`Family::of`].
    pub family: Family,
    /// [`is_nonblocking`].
    pub nonblocking: bool,
    /// [`is_persistent`].
    pub persistent: bool,
    /// [`is_collective`].
    pub collective: bool,
    /// [`group`].
    pub group: Group,
}

/// Classifies the function called `name`.
pub fn classify(name: &str) -> CallClass {
    CallClass {
        family: Family::of(name),
        nonblocking: is_nonblocking(name),
        persistent: is_persistent(name),
        collective: is_collective(name),
        group: group(name),
    }
}

/// The family of an MPI function: its lower-case name without the `MPI_`/`PMPI_` prefix and
/// without the non-blocking `I`, persistent `_init` and large-count `_c` variants
/// ([`Family::of`] gives it as a value).
///
/// ```
/// assert_eq!(mpiscope_mpispec::family("MPI_Iallreduce"), "allreduce");
/// assert_eq!(mpiscope_mpispec::family("MPI_Send_init"), "send");
/// assert_eq!(mpiscope_mpispec::family("mpi_waitall_"), "waitall");
/// assert_eq!(mpiscope_mpispec::family("MPI_Bcast_c"), "bcast");
/// assert_eq!(mpiscope_mpispec::family("MPI_Info_get"), "info_get");
/// ```
pub fn family(name: &str) -> String {
    let bare = bare_lower(name);
    let s = bare.strip_suffix("_c").unwrap_or(&bare);
    let s = s
        .strip_suffix("_init")
        .filter(|_| s != "init_thread")
        .unwrap_or(s);
    if let Some(rest) = s.strip_prefix('i') {
        if Family::from_name(rest).folds_immediate() {
            return rest.to_owned();
        }
    }
    s.to_owned()
}

/// True for the non-blocking variant (`MPI_Isend`, `MPI_Iallreduce`, `MPI_Improbe`, `MPI_Imrecv`).
pub fn is_nonblocking(name: &str) -> bool {
    let f = family(name);
    let bare = bare_lower(name);
    bare != f && bare.trim_end_matches("_c").starts_with('i') && !bare.ends_with("_init")
}

/// True for the persistent variant (`MPI_Send_init`, `MPI_Allreduce_init`).
pub fn is_persistent(name: &str) -> bool {
    let bare = bare_lower(name);
    let bare = bare.strip_suffix("_c").unwrap_or(&bare);
    bare.ends_with("_init") && bare != "init"
}

fn bare_lower(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let s = lower
        .strip_prefix("pmpi_")
        .or_else(|| lower.strip_prefix("mpi_"))
        .unwrap_or(&lower);
    s.trim_end_matches('_').to_owned()
}

/// True when the function is a collective operation (any variant).
pub fn is_collective(name: &str) -> bool {
    Family::of(name).is_collective()
}

/// The group of an MPI function.
///
/// ```
/// use mpiscope_mpispec::{group, Group};
/// assert_eq!(group("MPI_Iprobe"), Group::Probe);
/// assert_eq!(group("MPI_Irecv"), Group::P2p);
/// assert_eq!(group("MPI_Waitsome"), Group::Completion);
/// assert_eq!(group("MPI_Ineighbor_alltoallw"), Group::Collective);
/// assert_eq!(group("MPI_Cart_create"), Group::Comm);
/// assert_eq!(group("MPI_Type_commit"), Group::Datatype);
/// assert_eq!(group("MPI_Rget_accumulate"), Group::Rma);
/// assert_eq!(group("MPI_File_iread_at_all"), Group::Io);
/// assert_eq!(group("MPI_Wtime"), Group::Other);
/// ```
pub fn group(name: &str) -> Group {
    let f = family(name);
    let kind = Family::from_name(&f);
    if kind.is_collective() {
        return Group::Collective;
    }
    if kind.is_p2p() {
        return Group::P2p;
    }
    if kind.is_probe() {
        return Group::Probe;
    }
    let f = f.as_str();
    let starts = |p: &str| f.starts_with(p);
    if starts("wait")
        || starts("test")
        || matches!(
            f,
            "start"
                | "startall"
                | "cancel"
                | "pready"
                | "pready_range"
                | "pready_list"
                | "parrived"
        )
        || starts("request_")
        || starts("grequest_")
    {
        return Group::Completion;
    }
    if starts("comm_")
        || starts("intercomm_")
        || starts("group_")
        || starts("cart")
        || starts("graph")
        || starts("dist_graph")
        || starts("topo_")
        || matches!(
            f,
            "dims_create"
                | "open_port"
                | "close_port"
                | "lookup_name"
                | "publish_name"
                | "unpublish_name"
        )
    {
        return Group::Comm;
    }
    if starts("type_")
        || starts("pack")
        || starts("unpack")
        || matches!(
            f,
            "get_address"
                | "address"
                | "get_count"
                | "get_elements"
                | "get_elements_x"
                | "aint_add"
                | "aint_diff"
        )
    {
        return Group::Datatype;
    }
    if starts("win_")
        || matches!(
            f,
            "put"
                | "get"
                | "accumulate"
                | "get_accumulate"
                | "fetch_and_op"
                | "compare_and_swap"
                | "rput"
                | "rget"
                | "raccumulate"
                | "rget_accumulate"
                | "alloc_mem"
                | "free_mem"
        )
    {
        return Group::Rma;
    }
    if starts("file_") || f == "register_datarep" {
        return Group::Io;
    }
    if starts("t_") {
        return Group::Tools;
    }
    Group::Other
}

/// The canonical C name of a function called through any binding: `mpi_send_` and
/// `MPI_SEND` become `MPI_Send` when `c_names` holds `MPI_Send`.
pub fn c_name_of<'a>(name: &str, c_names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let want = name.trim_end_matches('_').to_ascii_lowercase();
    c_names.into_iter().find(|c| c.to_ascii_lowercase() == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(family("MPI_Ibarrier"), "barrier");
        assert_eq!(family("MPI_Init"), "init");
        assert_eq!(family("MPI_Init_thread"), "init_thread");
        assert_eq!(family("MPI_Info_create"), "info_create");
        assert_eq!(family("MPI_Iprobe"), "probe");
        assert_eq!(family("MPI_Improbe"), "improbe");
        assert_eq!(family("PMPI_Isend"), "send");
        assert_eq!(
            family("MPI_Reduce_scatter_block_init"),
            "reduce_scatter_block"
        );
        assert_eq!(family("MPI_Ineighbor_alltoallv"), "neighbor_alltoallv");
        assert_eq!(family("MPI_Probe"), "probe");
        assert_eq!(family("MPI_Psend_init"), "psend");
    }

    #[test]
    fn variants() {
        assert!(is_nonblocking("MPI_Isend"));
        assert!(is_nonblocking("MPI_Iallreduce"));
        assert!(!is_nonblocking("MPI_Info_set"));
        assert!(!is_nonblocking("MPI_Init"));
        assert!(!is_nonblocking("MPI_Send_init"));
        assert!(is_persistent("MPI_Send_init"));
        assert!(is_persistent("MPI_Bcast_init"));
        assert!(!is_persistent("MPI_Init"));
        assert!(is_collective("MPI_Ialltoallv"));
        assert!(!is_collective("MPI_Reduce_local"));
    }

    #[test]
    fn groups() {
        assert_eq!(group("MPI_Barrier"), Group::Collective);
        assert_eq!(group("MPI_Sendrecv_replace"), Group::P2p);
        assert_eq!(group("MPI_Test_cancelled"), Group::Completion);
        assert_eq!(group("MPI_Win_create"), Group::Rma);
        assert_eq!(group("MPI_T_pvar_read"), Group::Tools);
        assert_eq!(group("MPI_Init_thread"), Group::Other);
        assert_eq!(Group::from_name("P2P"), Some(Group::P2p));
    }

    #[test]
    fn c_names() {
        let names = ["MPI_Send", "MPI_Sendrecv"];
        assert_eq!(c_name_of("mpi_send_", names), Some("MPI_Send"));
        assert_eq!(c_name_of("MPI_SENDRECV", names), Some("MPI_Sendrecv"));
        assert_eq!(c_name_of("mpi_bcast_", names), None);
    }
}
