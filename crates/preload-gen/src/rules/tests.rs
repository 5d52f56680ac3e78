//! The plans of a few functions whose wrappers exercise each rule: a send, a rooted
//! collective, a v-collective, completion calls under both MPI spellings, and the hooks.

use super::*;
use crate::model::Param;

/// A function with parameters given as (name, type text).
fn function(name: &str, params: &[(&str, &str)]) -> Function {
    Function {
        name: name.into(),
        params: params
            .iter()
            .map(|&(n, t)| Param {
                name: n.into(),
                ty: t.parse().expect("a type"),
                ty_text: t.into(),
            })
            .collect(),
        ret: Some("c_int".parse().expect("a type")),
        ret_text: "c_int".into(),
        variadic: false,
    }
}

#[test]
fn send_records_peer_tag_count_and_peeks_its_inputs() {
    let f = function(
        "MPI_Issend",
        &[
            ("buf", "*const c_void"),
            ("count", "c_int"),
            ("datatype", "MPI_Datatype"),
            ("dest", "c_int"),
            ("tag", "c_int"),
            ("comm", "MPI_Comm"),
            ("request", "*mut MPI_Request"),
        ],
    );
    let p = plan(&f);
    assert_eq!(p.pre, ["rt::Snap::default()"]);
    assert_eq!(
        p.post,
        [
            "let __ci = __g.comm(comm);",
            "__g.peer(Slot::Peer, dest, __ci);",
            "__g.set(Slot::Tag, tag as i64);",
            "__g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, count as i64, datatype);",
            "__g.new_request(request, false, false, __ci, __ret);",
        ]
    );
    // The peek records the inputs only: never the request MPI has not written yet.
    assert_eq!(p.peek, p.post[..4]);
}

#[test]
fn scatter_counts_the_send_side_at_the_root_only() {
    let f = function(
        "MPI_Scatterv",
        &[
            ("sendbuf", "*const c_void"),
            ("sendcounts", "*const c_int"),
            ("displs", "*const c_int"),
            ("sendtype", "MPI_Datatype"),
            ("recvbuf", "*mut c_void"),
            ("recvcount", "c_int"),
            ("recvtype", "MPI_Datatype"),
            ("root", "c_int"),
            ("comm", "MPI_Comm"),
        ],
    );
    let p = plan(&f);
    assert!(p
        .post
        .contains(&"let __is_root = __g.root(root, __ci);".to_owned()));
    assert!(p.post.contains(&"if !rt::is_in_place(recvbuf as *const core::ffi::c_void) { __g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, recvcount as i64, recvtype); }".to_owned()));
    assert!(p.post.contains(&"if __is_root && !rt::is_in_place(sendbuf as *const core::ffi::c_void) { __g.counts(ListKind::SendCounts, Slot::DtypeSize, Slot::Bytes, sendcounts, sendtype, __ci); }".to_owned()));
    // Per-peer lists are not peeked (their length needs the communicator's size).
    assert!(p.peek.iter().all(|s| !s.contains("__g.counts(")));
}

#[test]
fn neighborhood_collectives_have_no_per_peer_lists() {
    let f = function(
        "MPI_Neighbor_alltoallv",
        &[
            ("sendbuf", "*const c_void"),
            ("sendcounts", "*const c_int"),
            ("sdispls", "*const c_int"),
            ("sendtype", "MPI_Datatype"),
            ("recvbuf", "*mut c_void"),
            ("recvcounts", "*const c_int"),
            ("rdispls", "*const c_int"),
            ("recvtype", "MPI_Datatype"),
            ("comm", "MPI_Comm"),
        ],
    );
    let p = plan(&f);
    assert_eq!(p.post, ["let __ci = __g.comm(comm);"]);
}

#[test]
fn waitany_uses_the_index_parameter_as_named() {
    // MPICH calls it `indx`.
    let f = function(
        "MPI_Waitany",
        &[
            ("count", "c_int"),
            ("array_of_requests", "*mut MPI_Request"),
            ("indx", "*mut c_int"),
            ("status", "*mut MPI_Status"),
        ],
    );
    let p = plan(&f);
    assert_eq!(p.pre, ["__g.req_snap_array(count, array_of_requests)"]);
    assert_eq!(p.post, ["__g.complete_any(&__s, indx, status, __ret)"]);
    assert_eq!(p.status_param.as_deref(), Some("status"));
    assert_eq!(
        p.one_based,
        [("indx".to_owned(), false, "count".to_owned())]
    );
    assert!(p.peek.is_empty());
}

#[test]
fn init_thread_and_abort_hooks() {
    let f = function(
        "MPI_Init_thread",
        &[
            ("argc", "*mut c_int"),
            ("argv", "*mut *mut *mut c_char"),
            ("required", "c_int"),
            ("provided", "*mut c_int"),
        ],
    );
    let p = plan(&f);
    assert_eq!(p.after_hook, Some("rt::after_init()"));
    assert_eq!(p.post[0], "__g.level_out(provided)");
    let a = plan(&function(
        "MPI_Abort",
        &[("comm", "MPI_Comm"), ("errorcode", "c_int")],
    ));
    assert_eq!(a.abort_hook, Some("rt::on_abort(errorcode)"));
    assert_eq!(a.post, ["let __ci = __g.comm(comm);"]);
}

#[test]
fn uses_matches_whole_identifiers() {
    let f = function("MPI_Send", &[("count", "c_int"), ("comm", "MPI_Comm")]);
    let stmts = vec!["__g.x(recount, comm_x); __g.y(comm)".to_owned()];
    assert_eq!(uses(&stmts, &f), ["comm"]);
}
