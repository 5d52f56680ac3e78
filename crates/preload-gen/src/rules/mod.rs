//! What each wrapper records: rules on parameter names and types, plus a short table of
//! functions whose meaning is in their name (request completion, communicator release,
//! initialization and finalization).
//!
//! The list of functions to wrap never comes from here: it is whatever the installed MPI
//! declares and exports. This module only decides, per function, which runtime helpers the
//! generated wrapper calls before and after the real call.

use crate::model::Function;

/// Handle types, the name of their `MPI_*_f2c` conversion, and the shim function that
/// performs it (MPICH defines the conversions as macros, Open MPI as functions).
pub const HANDLES: &[(&str, &str, &str)] = &[
    ("MPI_Comm", "Comm", "mpiscope_f2c_comm"),
    ("MPI_Datatype", "Type", "mpiscope_f2c_type"),
    ("MPI_Group", "Group", "mpiscope_f2c_group"),
    ("MPI_Request", "Request", "mpiscope_f2c_request"),
    ("MPI_File", "File", "mpiscope_f2c_file"),
    ("MPI_Win", "Win", "mpiscope_f2c_win"),
    ("MPI_Op", "Op", "mpiscope_f2c_op"),
    ("MPI_Info", "Info", "mpiscope_f2c_info"),
    ("MPI_Errhandler", "Errhandler", "mpiscope_f2c_errhandler"),
    ("MPI_Message", "Message", "mpiscope_f2c_message"),
    ("MPI_Session", "Session", "mpiscope_f2c_session"),
];

/// The Fortran conversion function (a shim function, `crate::consts::...`) of a handle type.
pub fn f2c_of(ty: &str) -> Option<&'static str> {
    HANDLES
        .iter()
        .find(|(t, _, _)| *t == ty)
        .map(|(_, _, f)| *f)
}

/// Names of output communicator parameters that receive a new communicator.
const NEW_COMM_PARAMS: &[&str] = &[
    "newcomm",
    "new_comm",
    "comm_cart",
    "comm_graph",
    "comm_dist_graph",
    "newintercomm",
    "newintracomm",
    "intercomm",
];

/// What the wrapper of one function does besides calling the real function.
#[derive(Debug, Default, Clone)]
pub struct Plan {
    /// Statements run before the real call; they may read parameters and must evaluate to
    /// an `rt::Snap` (the last expression).
    pub pre: Vec<String>,
    /// Statements run after the real call; `__s` is the snapshot, `__ret` the return code.
    pub post: Vec<String>,
    /// The input-only part of `post` (communicator, peers, tags, root, counts): run, when
    /// asked, while the thread is still inside the real call (a signal, a hang), to record the
    /// call in progress. They never query the MPI library (the return code is
    /// `rt::PEEK_RET`, which the helpers treat as "do not ask MPI").
    pub peek: Vec<String>,
    /// Hook run while the call is recorded as in progress (after the entry time is read)
    /// or, when the call is not recorded, before it: `MPI_Abort`, which never returns.
    pub abort_hook: Option<&'static str>,
    /// Substitute a local status when the caller passes `MPI_STATUS_IGNORE` (param name).
    pub status_param: Option<String>,
    /// Substitute scratch statuses when the caller passes `MPI_STATUSES_IGNORE`:
    /// (statuses param, count param).
    pub statuses_param: Option<(String, String)>,
    /// Hook run after the real call (before the event is committed), even when the call is
    /// not recorded.
    pub after_hook: Option<&'static str>,
    /// Hook run last, after the event is committed, even when the call is not recorded.
    pub end_hook: Option<&'static str>,
    /// Hook run before the real call even when the call is not recorded.
    pub before_hook: Option<&'static str>,
    /// Index parameters that Fortran numbers from 1: (param, is_array, count param).
    pub one_based: Vec<(String, bool, String)>,
}

impl Plan {
    /// Parameters the pre statements read.
    pub fn pre_uses(&self, f: &Function) -> Vec<String> {
        uses(&self.pre, f)
    }

    /// Parameters the post statements read.
    pub fn post_uses(&self, f: &Function) -> Vec<String> {
        uses(&self.post, f)
    }

    /// Parameters the peek statements read.
    pub fn peek_uses(&self, f: &Function) -> Vec<String> {
        uses(&self.peek, f)
    }
}

fn uses(stmts: &[String], f: &Function) -> Vec<String> {
    let text = stmts.join("\n");
    f.params
        .iter()
        .filter(|p| {
            text.match_indices(p.name.as_str()).any(|(i, m)| {
                let before = text[..i].chars().next_back();
                let after = text[i + m.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            })
        })
        .map(|p| p.name.clone())
        .collect()
}

fn has(f: &Function, name: &str, ty: &str) -> bool {
    f.param(name).is_some_and(|p| p.ty_text == ty)
}

fn has_ptr(f: &Function, name: &str, pointee: &str) -> bool {
    f.param(name).is_some_and(|p| p.pointee() == Some(pointee))
}

/// The plan of one function.
pub fn plan(f: &Function) -> Plan {
    let fam = mpiscope_mpispec::family(&f.name);
    let short = f.name.strip_prefix("MPI_").unwrap_or(&f.name);
    let short = short.strip_suffix("_c").unwrap_or(short);
    let mut p = Plan::default();

    if has_ptr(f, "status", "MPI_Status")
        && f.param("status")
            .is_some_and(|s| s.ty_text.starts_with("*mut"))
    {
        p.status_param = Some("status".into());
    }
    if has_ptr(f, "array_of_statuses", "MPI_Status") {
        let n = if f.param("incount").is_some() {
            "incount"
        } else {
            "count"
        };
        p.statuses_param = Some(("array_of_statuses".into(), n.into()));
    }

    // Functions whose meaning is in their name. (MPICH calls the index of `Waitany` `indx`.)
    let idx = f
        .params
        .get(2)
        .map(|p| p.name.clone())
        .unwrap_or_else(|| "index".into());
    let sv = |pre: Vec<&str>, post: Vec<&str>| -> Option<(Vec<String>, Vec<String>)> {
        Some((
            pre.into_iter().map(String::from).collect(),
            post.into_iter().map(String::from).collect(),
        ))
    };
    let special: Option<(Vec<String>, Vec<String>)> = match short {
        "Wait" => sv(
            vec!["__g.req_snap(request)"],
            vec!["__g.complete_one(&__s, status, __ret)"],
        ),
        "Test" => sv(
            vec!["__g.req_snap(request)"],
            vec!["if __g.flag(flag) { __g.complete_one(&__s, status, __ret) }"],
        ),
        "Request_get_status" => sv(
            vec!["__g.req_snap_value(request)"],
            vec!["if __g.flag(flag) { __g.complete_peek(&__s, status, __ret) }"],
        ),
        "Waitany" => Some((
            vec!["__g.req_snap_array(count, array_of_requests)".to_owned()],
            vec![format!("__g.complete_any(&__s, {idx}, status, __ret)")],
        )),
        "Testany" => Some((
            vec!["__g.req_snap_array(count, array_of_requests)".to_owned()],
            vec![format!(
                "if __g.flag(flag) {{ __g.complete_any(&__s, {idx}, status, __ret) }}"
            )],
        )),
        "Waitall" => sv(
            vec!["__g.req_snap_array(count, array_of_requests)"],
            vec!["__g.complete_all(&__s, array_of_statuses, __ret)"],
        ),
        "Testall" => sv(
            vec!["__g.req_snap_array(count, array_of_requests)"],
            vec!["if __g.flag(flag) { __g.complete_all(&__s, array_of_statuses, __ret) }"],
        ),
        "Waitsome" | "Testsome" => sv(
            vec!["__g.req_snap_array(incount, array_of_requests)"],
            vec!["__g.complete_some(&__s, outcount, array_of_indices, array_of_statuses, __ret)"],
        ),
        "Request_free" => sv(
            vec!["__g.req_snap(request)"],
            vec!["__g.request_freed(&__s, __ret)"],
        ),
        "Cancel" => sv(
            vec!["__g.req_snap(request)"],
            vec!["__g.request_noted(&__s)"],
        ),
        "Start" => sv(
            vec!["__g.req_snap(request)"],
            vec!["__g.request_noted(&__s)"],
        ),
        "Startall" => sv(
            vec!["__g.req_snap_array(count, array_of_requests)"],
            vec!["__g.requests_noted(&__s)"],
        ),
        "Comm_free" | "Comm_disconnect" => sv(
            vec!["__g.comm_snap(comm)"],
            vec!["__g.comm_freed(&__s, __ret)"],
        ),
        "Type_free" => sv(vec!["rt::Snap::default()"], vec!["rt::datatypes_changed()"]),
        "Op_free" => sv(vec!["rt::Snap::default()"], vec!["rt::ops_changed()"]),
        "Pcontrol" => sv(
            vec!["rt::Snap::default()"],
            vec!["__g.set(Slot::Level, level as i64)"],
        ),
        _ => None,
    };
    match short {
        "Init" => p.after_hook = Some("rt::after_init()"),
        "Init_thread" => {
            p.after_hook = Some("rt::after_init()");
            p.post.push("__g.level_out(provided)".into());
        }
        "Finalize" => {
            p.before_hook = Some("rt::before_finalize()");
            p.end_hook = Some("rt::after_finalize()");
        }
        "Query_thread" => p.post.push("__g.level_out(provided)".into()),
        "Abort" => p.abort_hook = Some("rt::on_abort(errorcode)"),
        // Also when the call itself is not recorded (filters, sampling).
        "Pcontrol" => p.after_hook = Some("rt::pcontrol(level)"),
        _ => {}
    }
    if matches!(short, "Waitany" | "Testany") {
        p.one_based.push((idx.clone(), false, "count".into()));
    }
    if matches!(short, "Waitsome" | "Testsome") {
        p.one_based
            .push(("array_of_indices".into(), true, "outcount".into()));
    }
    if let Some((pre, post)) = special {
        p.pre = pre;
        p.post.extend(post);
        return p;
    }

    // Generic rules on parameter names and types.
    let completion = mpiscope_mpispec::group(&f.name) == mpiscope_mpispec::Group::Completion;
    let mut pre = Vec::new();
    let mut post = Vec::new();
    // Input statements go to both the post and the peek lists.
    let mut peek: Vec<String> = Vec::new();
    let both = |post: &mut Vec<String>, peek: &mut Vec<String>, s: String| {
        peek.push(s.clone());
        post.push(s);
    };

    // The communicator that ranks refer to.
    let comm_param = ["comm", "comm_old", "old_comm", "local_comm", "intercomm"]
        .into_iter()
        .find(|n| has(f, n, "MPI_Comm"));
    let no_comm = "let __ci: Option<&'static crate::comms::CommInfo> = None;";
    if let Some(c) = comm_param {
        both(&mut post, &mut peek, format!("let __ci = __g.comm({c});"));
    } else if has(f, "win", "MPI_Win") {
        post.push("let __ci = __g.win(win);".into());
        peek.push(no_comm.into());
    } else if has_ptr(f, "message", "MPI_Message") && f.param("source").is_none() {
        // Mrecv / Imrecv: the matched message knows its communicator.
        pre.push("__g.message_snap(message)".into());
        both(&mut post, &mut peek, "let __ci = __s.comm_info();".into());
    } else {
        both(&mut post, &mut peek, no_comm.into());
    }

    // Peers.
    let has_dest = has(f, "dest", "c_int");
    if has_dest {
        both(
            &mut post,
            &mut peek,
            "__g.peer(Slot::Peer, dest, __ci);".into(),
        );
    }
    if has(f, "source", "c_int") {
        let slot = if has_dest {
            "Slot::RecvPeer"
        } else {
            "Slot::Peer"
        };
        both(
            &mut post,
            &mut peek,
            format!("__g.peer({slot}, source, __ci);"),
        );
    }
    if has(f, "target_rank", "c_int") {
        both(
            &mut post,
            &mut peek,
            "__g.peer(Slot::Peer, target_rank, __ci);".into(),
        );
    }
    for (n, slot) in [
        ("tag", "Slot::Tag"),
        ("sendtag", "Slot::Tag"),
        ("recvtag", "Slot::RecvTag"),
    ] {
        if has(f, n, "c_int") {
            both(
                &mut post,
                &mut peek,
                format!("__g.set({slot}, {n} as i64);"),
            );
        }
    }
    let root = has(f, "root", "c_int");
    if root {
        both(
            &mut post,
            &mut peek,
            "let __is_root = __g.root(root, __ci);".into(),
        );
    }

    // Buffers described by count and datatype.
    let in_place = |buf: &str| -> String {
        if f.param(buf).is_some() {
            format!("!rt::is_in_place({buf} as *const core::ffi::c_void)")
        } else {
            "true".into()
        }
    };
    let scatter_like = matches!(fam.as_str(), "scatter" | "scatterv");
    let gather_like = matches!(fam.as_str(), "gather" | "gatherv");
    let neighbor = fam.starts_with("neighbor_");
    let send_guard = if scatter_like && root {
        "__is_root && "
    } else {
        ""
    };
    let recv_guard = if gather_like && root {
        "__is_root && "
    } else {
        ""
    };
    let num = |n: &str| format!("{n} as i64");
    // The datatype of `count` (Open MPI's MPI_Mrecv calls it `type`).
    let dtype = ["datatype", "type_"]
        .into_iter()
        .find(|n| has(f, n, "MPI_Datatype"));
    if let (true, Some(d)) = (f.param("count").is_some_and(|p| !p.is_pointer()), dtype) {
        both(
            &mut post,
            &mut peek,
            format!(
                "__g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, {}, {d});",
                num("count")
            ),
        );
    }
    if f.param("origin_count").is_some_and(|p| !p.is_pointer())
        && has(f, "origin_datatype", "MPI_Datatype")
    {
        both(
            &mut post,
            &mut peek,
            format!(
                "__g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, {}, origin_datatype);",
                num("origin_count")
            ),
        );
    }
    if f.param("target_count").is_some_and(|p| !p.is_pointer())
        && has(f, "target_datatype", "MPI_Datatype")
    {
        both(&mut post, &mut peek, format!(
            "__g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, {}, target_datatype);",
            num("target_count")
        ));
    }
    if f.param("sendcount").is_some_and(|p| !p.is_pointer()) && has(f, "sendtype", "MPI_Datatype") {
        both(&mut post, &mut peek, format!(
            "if {send_guard}{} {{ __g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, {}, sendtype); }}",
            in_place("sendbuf"),
            num("sendcount")
        ));
    }
    if f.param("recvcount").is_some_and(|p| !p.is_pointer()) && has(f, "recvtype", "MPI_Datatype") {
        let guard = if scatter_like {
            in_place("recvbuf")
        } else {
            "true".into()
        };
        both(&mut post, &mut peek, format!(
            "if {recv_guard}{guard} {{ __g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, {}, recvtype); }}",
            num("recvcount")
        ));
    }
    if f.param("recvcount").is_some_and(|p| !p.is_pointer())
        && f.param("recvtype").is_none()
        && has(f, "datatype", "MPI_Datatype")
    {
        // Reduce_scatter_block: one count per process, one datatype.
        both(
            &mut post,
            &mut peek,
            format!(
                "__g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, {}, datatype);",
                num("recvcount")
            ),
        );
    }
    if !neighbor {
        if f.param("sendcounts").is_some_and(|p| p.is_pointer()) {
            if has(f, "sendtype", "MPI_Datatype") {
                post.push(format!(
                    "if {send_guard}{} {{ __g.counts(ListKind::SendCounts, Slot::DtypeSize, Slot::Bytes, sendcounts, sendtype, __ci); }}",
                    in_place("sendbuf")
                ));
            } else if has_ptr(f, "sendtypes", "MPI_Datatype") {
                post.push(format!(
                    "if {} {{ __g.counts_w(ListKind::SendCounts, ListKind::SendTypeSizes, Slot::Bytes, sendcounts, sendtypes, __ci); }}",
                    in_place("sendbuf")
                ));
            }
        }
        if f.param("recvcounts").is_some_and(|p| p.is_pointer()) {
            if has(f, "recvtype", "MPI_Datatype") {
                post.push(format!(
                    "if {recv_guard}true {{ __g.counts(ListKind::RecvCounts, Slot::RecvDtypeSize, Slot::RecvBytes, recvcounts, recvtype, __ci); }}"
                ));
            } else if has_ptr(f, "recvtypes", "MPI_Datatype") {
                post.push("__g.counts_w(ListKind::RecvCounts, ListKind::RecvTypeSizes, Slot::RecvBytes, recvcounts, recvtypes, __ci);".into());
            } else if has(f, "datatype", "MPI_Datatype") {
                // Reduce_scatter: one datatype, a count per rank.
                post.push("__g.counts(ListKind::RecvCounts, Slot::DtypeSize, Slot::Bytes, recvcounts, datatype, __ci);".into());
            }
        }
    }
    if has(f, "op", "MPI_Op") {
        post.push("__g.op(op);".into());
    }
    if has_ptr(f, "op", "MPI_Op") && short == "Op_create" {
        post.push("rt::ops_changed();".into());
    }

    // Outputs.
    if !completion && has_ptr(f, "request", "MPI_Request") {
        let recv = matches!(fam.as_str(), "recv" | "mrecv" | "precv");
        let persistent = mpiscope_mpispec::is_persistent(&f.name);
        post.push(format!(
            "__g.new_request(request, {recv}, {persistent}, __ci, __ret);"
        ));
    }
    let has_flag = has_ptr(f, "flag", "c_int");
    if has_flag {
        post.push("let __flag = __g.flag(flag);".into());
    }
    if p.status_param.is_some() {
        let cond = if has_flag { "__flag" } else { "true" };
        post.push(format!("if {cond} {{ __g.status(status, __ci, __ret); }}"));
    }
    if has_ptr(f, "message", "MPI_Message") && comm_param.is_some() {
        let cond = if has_flag { "__flag" } else { "true" };
        post.push(format!(
            "if {cond} {{ __g.new_message(message, __ci, __ret); }}"
        ));
    }
    let creates_lazily = f.param("request").is_some();
    for n in NEW_COMM_PARAMS {
        if has_ptr(f, n, "MPI_Comm")
            && !creates_lazily
            && f.param(n).unwrap().ty_text.starts_with("*mut")
        {
            post.push(format!("__g.new_comm({n}, __ret);"));
        }
    }
    if has_ptr(f, "win", "MPI_Win") && short.starts_with("Win_") && short != "Win_free" {
        post.push("__g.new_win(win, __ci, __ret);".into());
    }
    if short == "Win_free" {
        pre.push("__g.win_snap(win)".into());
        post.push("__g.win_freed(&__s, __ret);".into());
    }

    if pre.is_empty() {
        pre.push("rt::Snap::default()".into());
    }
    p.pre = pre;
    p.post.extend(post);
    p.peek = peek;
    p
}
