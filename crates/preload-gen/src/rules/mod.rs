//! What each wrapper records: rules on parameter names and types, plus a short table of
//! functions whose meaning is in their name (request completion, communicator release,
//! initialization and finalization).
//!
//! The list of functions to wrap never comes from here: it is whatever the installed MPI
//! declares and exports. This module only decides, per function, which runtime helpers the
//! generated wrapper calls before and after the real call.
//!
//! [`plan`] works in three steps: status substitution (the wrapper needs a status even when
//! the caller ignores it), then the functions whose meaning is in their name ([`named`]:
//! completion, release, hooks around initialization and finalization), and, for the rest,
//! the rules on parameter names and types ([`params`]: communicator, peers, tags, buffers,
//! outputs). The order of the statements is the order of these rules, which the generated
//! wrappers keep from one build to the next.

mod named;
mod params;

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
    let short = f.name.strip_prefix("MPI_").unwrap_or(&f.name);
    let short = short.strip_suffix("_c").unwrap_or(short);
    let mut p = Plan::default();
    status_params(f, &mut p);
    let by_name = named::apply(f, short, &mut p);
    if let Some((pre, post)) = by_name {
        p.pre = pre;
        p.post.extend(post);
        return p;
    }
    params::apply(f, short, p)
}

/// The status parameters a wrapper substitutes when the caller passes `MPI_STATUS_IGNORE` or
/// `MPI_STATUSES_IGNORE` (the completion helpers read the statuses).
fn status_params(f: &Function, p: &mut Plan) {
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
}

#[cfg(test)]
mod tests;
