//! Functions whose meaning is in their name: request completion and release (their
//! parameters say nothing of the requests they complete), hooks around initialization,
//! finalization, `MPI_Abort` and `MPI_Pcontrol`, and the Fortran indices that count from 1.

use super::Plan;
use crate::model::Function;

/// Statements before and after the real call.
type PrePost = (Vec<String>, Vec<String>);

/// Sets the hooks and one-based indices of `f` (`short`: its name without `MPI_` and `_c`)
/// in `p`, and returns its whole pre and post statements when its name alone decides
/// them (the parameter rules are then skipped).
pub(super) fn apply(f: &Function, short: &str, p: &mut Plan) -> Option<PrePost> {
    // MPICH calls the index of `Waitany` `indx`.
    let idx = f
        .params
        .get(2)
        .map(|p| p.name.clone())
        .unwrap_or_else(|| "index".into());
    let statements = completion(short, &idx).or_else(|| release(short));
    hooks(short, p);
    if matches!(short, "Waitany" | "Testany") {
        p.one_based.push((idx, false, "count".into()));
    }
    if matches!(short, "Waitsome" | "Testsome") {
        p.one_based
            .push(("array_of_indices".into(), true, "outcount".into()));
    }
    statements
}

fn owned(pre: &str, post: &str) -> Option<PrePost> {
    Some((vec![pre.to_owned()], vec![post.to_owned()]))
}

/// Request completion: the requests are snapshotted before the call (the call may free
/// them) and decoded after it.
fn completion(short: &str, idx: &str) -> Option<PrePost> {
    match short {
        "Wait" => owned(
            "__g.req_snap(request)",
            "__g.complete_one(&__s, status, __ret)",
        ),
        "Test" => owned(
            "__g.req_snap(request)",
            "if __g.flag(flag) { __g.complete_one(&__s, status, __ret) }",
        ),
        "Request_get_status" => owned(
            "__g.req_snap_value(request)",
            "if __g.flag(flag) { __g.complete_peek(&__s, status, __ret) }",
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
        "Waitall" => owned(
            "__g.req_snap_array(count, array_of_requests)",
            "__g.complete_all(&__s, array_of_statuses, __ret)",
        ),
        "Testall" => owned(
            "__g.req_snap_array(count, array_of_requests)",
            "if __g.flag(flag) { __g.complete_all(&__s, array_of_statuses, __ret) }",
        ),
        "Waitsome" | "Testsome" => owned(
            "__g.req_snap_array(incount, array_of_requests)",
            "__g.complete_some(&__s, outcount, array_of_indices, array_of_statuses, __ret)",
        ),
        _ => None,
    }
}

/// Requests, communicators, datatypes and operations that a call releases or starts, and
/// `MPI_Pcontrol`'s level.
fn release(short: &str) -> Option<PrePost> {
    match short {
        "Request_free" => owned("__g.req_snap(request)", "__g.request_freed(&__s, __ret)"),
        "Cancel" | "Start" => owned("__g.req_snap(request)", "__g.request_noted(&__s)"),
        "Startall" => owned(
            "__g.req_snap_array(count, array_of_requests)",
            "__g.requests_noted(&__s)",
        ),
        "Comm_free" | "Comm_disconnect" => {
            owned("__g.comm_snap(comm)", "__g.comm_freed(&__s, __ret)")
        }
        "Type_free" => owned("rt::Snap::default()", "rt::datatypes_changed()"),
        "Op_free" => owned("rt::Snap::default()", "rt::ops_changed()"),
        "Pcontrol" => owned("rt::Snap::default()", "__g.set(Slot::Level, level as i64)"),
        _ => None,
    }
}

/// The session's hooks: they run even when the call itself is not recorded.
fn hooks(short: &str, p: &mut Plan) {
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
}
