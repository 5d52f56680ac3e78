//! The rules on parameter names and types, for every function whose name alone does not
//! decide what its wrapper records.
//!
//! Input statements (communicator, peers, tags, root, counts) go both to the post list and
//! to the peek list, which records a call still in progress; outputs (requests, flags,
//! statuses, new handles) and the per-peer count lists go to the post list only, since a
//! peek must neither read what MPI has not written nor allocate.

use mpiscope_mpispec::{Family, Group};

use super::{has, has_ptr, Plan, NEW_COMM_PARAMS};
use crate::model::Function;

/// The statements being built for one function.
struct Rules<'a> {
    f: &'a Function,
    family: Family,
    short: &'a str,
    pre: Vec<String>,
    post: Vec<String>,
    peek: Vec<String>,
    /// The parameter holding the communicator that ranks refer to.
    comm_param: Option<&'static str>,
    /// The function has a `root` rank.
    root: bool,
}

/// Completes `p` for `f` (`short`: its name without `MPI_` and `_c`) from its parameters.
pub(super) fn apply(f: &Function, short: &str, mut p: Plan) -> Plan {
    let mut r = Rules {
        f,
        family: Family::of(&f.name),
        short,
        pre: Vec::new(),
        post: Vec::new(),
        peek: Vec::new(),
        comm_param: None,
        root: false,
    };
    r.communicator();
    r.peers_and_tags();
    r.buffers();
    if !r.family.is_neighbor() {
        r.count_lists();
    }
    r.operation();
    r.outputs(p.status_param.is_some());
    if r.pre.is_empty() {
        r.pre.push("rt::Snap::default()".into());
    }
    p.pre = r.pre;
    p.post.extend(r.post);
    p.peek = r.peek;
    p
}

impl Rules<'_> {
    /// An input statement: recorded after the call and by a peek.
    fn both(&mut self, s: String) {
        self.peek.push(s.clone());
        self.post.push(s);
    }

    /// `__ci`, the communicator ranks refer to: a `comm` parameter, a window's, or a
    /// matched message's.
    fn communicator(&mut self) {
        let f = self.f;
        self.comm_param = ["comm", "comm_old", "old_comm", "local_comm", "intercomm"]
            .into_iter()
            .find(|n| has(f, n, "MPI_Comm"));
        let no_comm = "let __ci: Option<&'static crate::comms::CommInfo> = None;";
        if let Some(c) = self.comm_param {
            self.both(format!("let __ci = __g.comm({c});"));
        } else if has(f, "win", "MPI_Win") {
            self.post.push("let __ci = __g.win(win);".into());
            self.peek.push(no_comm.into());
        } else if has_ptr(f, "message", "MPI_Message") && f.param("source").is_none() {
            // Mrecv / Imrecv: the matched message knows its communicator.
            self.pre.push("__g.message_snap(message)".into());
            self.both("let __ci = __s.comm_info();".into());
        } else {
            self.both(no_comm.into());
        }
    }

    /// Destination, source and target ranks (as world ranks), tags, and the root.
    fn peers_and_tags(&mut self) {
        let f = self.f;
        let has_dest = has(f, "dest", "c_int");
        if has_dest {
            self.both("__g.peer(Slot::Peer, dest, __ci);".into());
        }
        if has(f, "source", "c_int") {
            let slot = if has_dest {
                "Slot::RecvPeer"
            } else {
                "Slot::Peer"
            };
            self.both(format!("__g.peer({slot}, source, __ci);"));
        }
        if has(f, "target_rank", "c_int") {
            self.both("__g.peer(Slot::Peer, target_rank, __ci);".into());
        }
        for (n, slot) in [
            ("tag", "Slot::Tag"),
            ("sendtag", "Slot::Tag"),
            ("recvtag", "Slot::RecvTag"),
        ] {
            if has(f, n, "c_int") {
                self.both(format!("__g.set({slot}, {n} as i64);"));
            }
        }
        self.root = has(f, "root", "c_int");
        if self.root {
            self.both("let __is_root = __g.root(root, __ci);".into());
        }
    }

    /// `!rt::is_in_place(buf)`, or `true` when the function has no such buffer.
    fn not_in_place(&self, buf: &str) -> String {
        if self.f.param(buf).is_some() {
            format!("!rt::is_in_place({buf} as *const core::ffi::c_void)")
        } else {
            "true".into()
        }
    }

    /// The root's condition on the send side of a scatter (only the root sends).
    fn send_guard(&self) -> &'static str {
        let scatter_like = matches!(self.family, Family::Scatter | Family::Scatterv);
        if scatter_like && self.root {
            "__is_root && "
        } else {
            ""
        }
    }

    /// The root's condition on the receive side of a gather (only the root receives).
    fn recv_guard(&self) -> &'static str {
        let gather_like = matches!(self.family, Family::Gather | Family::Gatherv);
        if gather_like && self.root {
            "__is_root && "
        } else {
            ""
        }
    }

    /// Buffers described by one count and one datatype.
    fn buffers(&mut self) {
        let f = self.f;
        let scalar = |n: &str| f.param(n).is_some_and(|p| !p.is_pointer());
        // The datatype of `count` (Open MPI's MPI_Mrecv calls it `type`).
        let dtype = ["datatype", "type_"]
            .into_iter()
            .find(|n| has(f, n, "MPI_Datatype"));
        if let (true, Some(d)) = (scalar("count"), dtype) {
            self.both(format!(
                "__g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, count as i64, {d});"
            ));
        }
        if scalar("origin_count") && has(f, "origin_datatype", "MPI_Datatype") {
            self.both(
                "__g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, origin_count as i64, origin_datatype);".into(),
            );
        }
        if scalar("target_count") && has(f, "target_datatype", "MPI_Datatype") {
            self.both(
                "__g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, target_count as i64, target_datatype);".into(),
            );
        }
        if scalar("sendcount") && has(f, "sendtype", "MPI_Datatype") {
            let s = format!(
                "if {}{} {{ __g.count(Slot::Count, Slot::DtypeSize, Slot::Bytes, sendcount as i64, sendtype); }}",
                self.send_guard(),
                self.not_in_place("sendbuf"),
            );
            self.both(s);
        }
        if scalar("recvcount") && has(f, "recvtype", "MPI_Datatype") {
            let scatter_like = matches!(self.family, Family::Scatter | Family::Scatterv);
            let guard = if scatter_like {
                self.not_in_place("recvbuf")
            } else {
                "true".into()
            };
            let s = format!(
                "if {}{guard} {{ __g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, recvcount as i64, recvtype); }}",
                self.recv_guard(),
            );
            self.both(s);
        }
        if scalar("recvcount")
            && f.param("recvtype").is_none()
            && has(f, "datatype", "MPI_Datatype")
        {
            // Reduce_scatter_block: one count per process, one datatype.
            self.both(
                "__g.count(Slot::RecvCount, Slot::RecvDtypeSize, Slot::RecvBytes, recvcount as i64, datatype);".into(),
            );
        }
    }

    /// Per-peer counts of the v- and w-collectives (not of neighborhood collectives, whose
    /// peers are the topology's).
    fn count_lists(&mut self) {
        let f = self.f;
        if f.param("sendcounts").is_some_and(|p| p.is_pointer()) {
            if has(f, "sendtype", "MPI_Datatype") {
                self.post.push(format!(
                    "if {}{} {{ __g.counts(ListKind::SendCounts, Slot::DtypeSize, Slot::Bytes, sendcounts, sendtype, __ci); }}",
                    self.send_guard(),
                    self.not_in_place("sendbuf")
                ));
            } else if has_ptr(f, "sendtypes", "MPI_Datatype") {
                self.post.push(format!(
                    "if {} {{ __g.counts_w(ListKind::SendCounts, ListKind::SendTypeSizes, Slot::Bytes, sendcounts, sendtypes, __ci); }}",
                    self.not_in_place("sendbuf")
                ));
            }
        }
        if f.param("recvcounts").is_some_and(|p| p.is_pointer()) {
            if has(f, "recvtype", "MPI_Datatype") {
                self.post.push(format!(
                    "if {}true {{ __g.counts(ListKind::RecvCounts, Slot::RecvDtypeSize, Slot::RecvBytes, recvcounts, recvtype, __ci); }}",
                    self.recv_guard()
                ));
            } else if has_ptr(f, "recvtypes", "MPI_Datatype") {
                self.post.push("__g.counts_w(ListKind::RecvCounts, ListKind::RecvTypeSizes, Slot::RecvBytes, recvcounts, recvtypes, __ci);".into());
            } else if has(f, "datatype", "MPI_Datatype") {
                // Reduce_scatter: one datatype, a count per rank.
                self.post.push("__g.counts(ListKind::RecvCounts, Slot::DtypeSize, Slot::Bytes, recvcounts, datatype, __ci);".into());
            }
        }
    }

    /// The reduction operation; a new operation invalidates the cached names.
    fn operation(&mut self) {
        if has(self.f, "op", "MPI_Op") {
            self.post.push("__g.op(op);".into());
        }
        if has_ptr(self.f, "op", "MPI_Op") && self.short == "Op_create" {
            self.post.push("rt::ops_changed();".into());
        }
    }

    /// What the call returns: a request, a flag, a status, a matched message, a new
    /// communicator or window; `MPI_Win_free`'s window (snapshotted before the call).
    fn outputs(&mut self, has_status: bool) {
        let f = self.f;
        let completion = mpiscope_mpispec::group(&f.name) == Group::Completion;
        if !completion && has_ptr(f, "request", "MPI_Request") {
            let recv = matches!(self.family, Family::Recv | Family::Mrecv | Family::Precv);
            let persistent = mpiscope_mpispec::is_persistent(&f.name);
            self.post.push(format!(
                "__g.new_request(request, {recv}, {persistent}, __ci, __ret);"
            ));
        }
        let has_flag = has_ptr(f, "flag", "c_int");
        if has_flag {
            self.post.push("let __flag = __g.flag(flag);".into());
        }
        let cond = if has_flag { "__flag" } else { "true" };
        if has_status {
            self.post
                .push(format!("if {cond} {{ __g.status(status, __ci, __ret); }}"));
        }
        if has_ptr(f, "message", "MPI_Message") && self.comm_param.is_some() {
            self.post.push(format!(
                "if {cond} {{ __g.new_message(message, __ci, __ret); }}"
            ));
        }
        let creates_lazily = f.param("request").is_some();
        for n in NEW_COMM_PARAMS {
            if has_ptr(f, n, "MPI_Comm")
                && !creates_lazily
                && f.param(n).is_some_and(|p| p.ty_text.starts_with("*mut"))
            {
                self.post.push(format!("__g.new_comm({n}, __ret);"));
            }
        }
        let short = self.short;
        if has_ptr(f, "win", "MPI_Win") && short.starts_with("Win_") && short != "Win_free" {
            self.post.push("__g.new_win(win, __ci, __ret);".into());
        }
        if short == "Win_free" {
            self.pre.push("__g.win_snap(win)".into());
            self.post.push("__g.win_freed(&__s, __ret);".into());
        }
    }
}
