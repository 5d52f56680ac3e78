//! The Fortran bindings' wrappers: for every Fortran name the library exports
//! (`mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND`, Open MPI's `ompi_send_f`), a symbol
//! that calls one wrapper per function, which converts the arguments to their C views
//! (handles through the shim's `f2c` conversions, statuses, requests, one-based indices),
//! runs the same pre/post recording functions as the C wrapper and calls the library's
//! real Fortran function (looked up on first use).

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{ret_ty, start_stmt, ty};
use crate::model::{Function, Param};
use crate::rules::{self, Plan};

/// Extra pointer-sized arguments passed through by Fortran wrappers, so that a hidden
/// argument we did not predict still reaches the real function.
const FORTRAN_PADS: usize = 4;

/// A Fortran entry point to wrap.
#[derive(Debug, Clone)]
pub struct FortranEntry {
    /// Exported names to define (`mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND`, ...).
    pub names: Vec<String>,
    /// Names of the real function to call, in order of preference.
    pub targets: Vec<String>,
}

/// How a Fortran binding differs from "the C parameters by reference, then `ierr`".
enum FortranShape {
    Standard,
    /// `MPI_INIT(IERROR)`, `MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR)`.
    Only(&'static [&'static str]),
    /// `MPI_PCONTROL(LEVEL)`: no `ierr`.
    NoIerr,
    /// `MPI_WTIME()`, `MPI_AINT_ADD(BASE, DISP)`: functions with a result and no `ierr`.
    Function,
}

fn fortran_shape(name: &str) -> FortranShape {
    match name {
        "MPI_Init" => FortranShape::Only(&[]),
        "MPI_Init_thread" => FortranShape::Only(&["required", "provided"]),
        "MPI_Pcontrol" => FortranShape::NoIerr,
        "MPI_Wtime" | "MPI_Wtick" | "MPI_Aint_add" | "MPI_Aint_diff" => FortranShape::Function,
        _ => FortranShape::Standard,
    }
}

/// Fortran entry points of `c_name` among `exported` symbols.
pub fn fortran_entry(
    c_name: &str,
    exported: &BTreeSet<String>,
    openmpi: bool,
) -> Option<FortranEntry> {
    let lower = c_name.to_ascii_lowercase();
    let upper = c_name.to_ascii_uppercase();
    let mut names: Vec<String> = [
        format!("{lower}_"),
        format!("{lower}__"),
        lower.clone(),
        upper.clone(),
    ]
    .into_iter()
    .filter(|n| exported.contains(n))
    .collect();
    if names.is_empty() {
        return None;
    }
    if openmpi {
        // Open MPI's `use mpi_f08` module calls these directly.
        let f = format!("ompi_{}_f", lower.trim_start_matches("mpi_"));
        if exported.contains(&f) {
            names.push(f);
        }
    }
    let targets: Vec<String> = [
        format!("p{lower}_"),
        format!("p{lower}__"),
        format!("p{lower}"),
        format!("P{upper}"),
    ]
    .into_iter()
    .filter(|n| exported.contains(n))
    .collect();
    if targets.is_empty() {
        return None;
    }
    Some(FortranEntry { names, targets })
}

/// How one C-view value is obtained from a Fortran argument.
fn fortran_conversion(
    f: &Function,
    p: &Param,
    plan: &Plan,
    pre: bool,
    post: bool,
    notes: &mut Vec<String>,
) -> (Vec<String>, Vec<String>, String) {
    // (statements before the call, statements after the call, expression of the C value)
    let n = &p.name;
    let fname = format!("f_{n}");
    let t = p.ty_text.as_str();
    let mut before = Vec::new();
    let mut after = Vec::new();
    if let Some((idx, is_array, count)) = plan.one_based.iter().find(|(i, _, _)| i == n) {
        let _ = idx;
        if *is_array {
            after.push(format!("let {n} = __g.fortran_indices({fname} as *const MPI_Fint, rt::fortran_int(f_{count}));"));
        } else {
            after.push(format!("let mut __c_{n}: c_int = rt::fortran_index({fname} as *const MPI_Fint); let {n} = &mut __c_{n} as *mut c_int;"));
        }
        return (before, after, n.clone());
    }
    match t {
        "c_int" => {
            before.push(format!("let {n}: c_int = rt::fortran_int({fname});"));
        }
        "MPI_Count" | "MPI_Aint" | "MPI_Offset" | "MPI_Fint" | "f64" => {
            before.push(format!("let {n}: {t} = if {fname}.is_null() {{ 0 as {t} }} else {{ *({fname} as *const {t}) }};"));
        }
        _ if rules::f2c_of(t).is_some() => {
            let conv = rules::f2c_of(t).unwrap();
            before.push(format!(
                "let {n}: {t} = crate::consts::{conv}(rt::fortran_int({fname}) as MPI_Fint);"
            ));
        }
        _ if p.pointee() == Some("MPI_Status") && n == "array_of_statuses" => {
            let count = if f.param("incount").is_some() {
                "incount"
            } else {
                "count"
            };
            after.push(format!("let {n} = __g.fortran_statuses({fname} as *const MPI_Fint, rt::fortran_int(f_{count}));"));
        }
        _ if p.pointee() == Some("MPI_Status") => {
            after.push(format!(
                "let mut __c_{n} = core::mem::MaybeUninit::<MPI_Status>::zeroed(); rt::fortran_status({fname} as *const MPI_Fint, __c_{n}.as_mut_ptr()); let {n} = __c_{n}.as_mut_ptr();"
            ));
        }
        _ if n == "array_of_requests" && p.pointee() == Some("MPI_Request") => {
            let count = if f.param("incount").is_some() {
                "incount"
            } else {
                "count"
            };
            before.push(format!("let {n} = __g.fortran_requests({fname} as *const MPI_Fint, rt::fortran_int(f_{count}));"));
        }
        _ if p.pointee().and_then(rules::f2c_of).is_some()
            && !n.ends_with('s')
            && !n.starts_with("array_of") =>
        {
            let h = p.pointee().unwrap();
            let conv = rules::f2c_of(h).unwrap();
            before.push(format!("let mut __c_{n}: {h} = crate::consts::{conv}(rt::fortran_int({fname}) as MPI_Fint); let {n} = &mut __c_{n} as *mut {h};"));
            if post {
                after.push(format!(
                    "__c_{n} = crate::consts::{conv}(rt::fortran_int({fname}) as MPI_Fint);"
                ));
            }
        }
        _ if p.pointee().and_then(rules::f2c_of).is_some() => {
            notes.push(format!(
                "{}: `{n}` (array of handles) is not converted for Fortran",
                f.name
            ));
            before.push(format!("let {n} = core::ptr::null_mut();"));
        }
        _ if p.is_pointer() => {
            before.push(format!("let {n} = {fname} as _;"));
        }
        _ => {
            notes.push(format!(
                "{}: `{n}: {t}` is not converted for Fortran",
                f.name
            ));
            before.push(format!("let {n}: {} = core::mem::zeroed();", ty(p)));
        }
    }
    let _ = pre;
    (before, after, n.clone())
}

/// The Fortran entry point's parameters and how the real function is called.
struct Signature<'a> {
    /// The C parameters the Fortran binding has.
    fparams: Vec<&'a Param>,
    /// The binding ends with `ierr`.
    with_ierr: bool,
    /// `f_<name>: *mut c_void, ..., ierr, __h0: usize, ...`.
    sig: String,
    /// The same names, forwarded to the real function.
    fwd: String,
    /// The real function's type.
    real_ty: String,
    /// The return type, and what to return when the real function is missing.
    fret: String,
    fret_default: String,
}

fn signature(f: &Function) -> Signature<'_> {
    let shape = fortran_shape(&f.name);
    let fparams: Vec<&Param> = match shape {
        FortranShape::Only(keep) => f
            .params
            .iter()
            .filter(|p| keep.contains(&p.name.as_str()))
            .collect(),
        _ => f.params.iter().collect(),
    };
    let with_ierr = matches!(shape, FortranShape::Standard | FortranShape::Only(_));
    let hidden = if matches!(shape, FortranShape::Standard) {
        f.params
            .iter()
            .filter(|p| p.ty_text.contains("c_char"))
            .count()
    } else {
        0
    };
    let pads = if matches!(shape, FortranShape::Standard) {
        FORTRAN_PADS
    } else {
        0
    };
    let (fret, fret_default) = match shape {
        FortranShape::Function => (ret_ty(f), format!("0 as {}", ret_ty(f))),
        _ => ("()".to_owned(), "()".to_owned()),
    };
    let mut sig = Vec::new();
    let mut fwd = Vec::new();
    let mut tys = Vec::new();
    for p in &fparams {
        sig.push(format!("f_{}: *mut c_void", p.name));
        fwd.push(format!("f_{}", p.name));
        tys.push("*mut c_void".to_owned());
    }
    if with_ierr {
        sig.push("ierr: *mut MPI_Fint".into());
        fwd.push("ierr".into());
        tys.push("*mut MPI_Fint".into());
    }
    for i in 0..hidden + pads {
        sig.push(format!("__h{i}: usize"));
        fwd.push(format!("__h{i}"));
        tys.push("usize".into());
    }
    let real_ty = format!("unsafe extern \"C\" fn({}) -> {fret}", tys.join(", "));
    Signature {
        fparams,
        with_ierr,
        sig: sig.join(", "),
        fwd: fwd.join(", "),
        real_ty,
        fret,
        fret_default,
    }
}

/// The C views of the Fortran arguments: statements before and after the real call, and
/// the arguments of the pre and post functions.
struct Views {
    before: Vec<String>,
    after: Vec<String>,
    pre_args: String,
    post_args: String,
}

fn views(f: &Function, plan: &Plan, fparams: &[&Param], notes: &mut Vec<String>) -> Views {
    let pre_uses = plan.pre_uses(f);
    let post_uses = plan.post_uses(f);
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut pre_args = Vec::new();
    let mut post_args = Vec::new();
    for p in &f.params {
        let used_pre = pre_uses.contains(&p.name);
        let used_post = post_uses.contains(&p.name);
        let in_fortran = fparams.iter().any(|q| q.name == p.name);
        if (!used_pre && !used_post) || !in_fortran {
            pre_args.push("core::mem::zeroed()".to_owned());
            post_args.push("core::mem::zeroed()".to_owned());
            continue;
        }
        let (b, a, expr) = fortran_conversion(f, p, plan, used_pre, used_post, notes);
        // A value converted only after the call does not exist yet for the pre function.
        let ready_before = !b.is_empty();
        before.extend(b);
        after.extend(a);
        pre_args.push(if used_pre && ready_before {
            expr.clone()
        } else {
            "core::mem::zeroed()".to_owned()
        });
        post_args.push(if used_post {
            expr
        } else {
            "core::mem::zeroed()".to_owned()
        });
    }
    Views {
        before,
        after,
        pre_args: pre_args.join(", "),
        post_args: post_args.join(", "),
    }
}

/// The plan's hooks as statements of a Fortran wrapper (they read C values; in a Fortran
/// wrapper the only ones they use are `level` and `errorcode`, read through their pointers).
struct Hooks {
    before: String,
    after: String,
    end: String,
    /// `MPI_ABORT` when the call is not recorded, and when it is.
    abort_unrecorded: String,
    abort_recorded: String,
}

fn hooks(plan: &Plan) -> Hooks {
    let abort_hook = plan
        .abort_hook
        .map(|h| h.replace("(errorcode)", "(rt::fortran_int(f_errorcode))"));
    Hooks {
        before: plan
            .before_hook
            .map(|h| format!("{h}; "))
            .unwrap_or_default(),
        after: plan
            .after_hook
            .map(|h| format!("{}; ", h.replace("(level)", "(rt::fortran_int(f_level))")))
            .unwrap_or_default(),
        end: plan.end_hook.map(|h| format!("{h}; ")).unwrap_or_default(),
        abort_unrecorded: abort_hook
            .as_ref()
            .map(|h| format!("{h}; "))
            .unwrap_or_default(),
        abort_recorded: abort_hook
            .as_ref()
            .map(|h| format!(" {h};"))
            .unwrap_or_default(),
    }
}

/// Writes `fortran_<name>`, the wrapper of the Fortran binding of `f` (call id `id`), and
/// the exported symbols of `entry` that call it.
pub(super) fn emit_fortran(
    out: &mut String,
    f: &Function,
    plan: &Plan,
    id: u32,
    entry: &FortranEntry,
    notes: &mut Vec<String>,
) {
    let name = &f.name;
    let s = signature(f);
    let v = views(f, plan, &s.fparams, notes);
    let h = hooks(plan);
    let (sig, fwd, fret) = (&s.sig, &s.fwd, &s.fret);
    let targets: Vec<String> = entry
        .targets
        .iter()
        .map(|t| format!("\"{t}\\0\""))
        .collect();
    let ierr_expr = if s.with_ierr {
        "ierr"
    } else {
        "core::ptr::null_mut::<MPI_Fint>()"
    };
    let start = start_of(f, plan, &s.fparams);
    let _ = writeln!(
        out,
        "#[allow(non_snake_case, unused_variables, unused_mut, clippy::all)]\n#[inline(never)]"
    );
    let _ = writeln!(
        out,
        "unsafe fn fortran_{name}(__ra: usize, {sig}) -> {fret} {{"
    );
    let _ = writeln!(
        out,
        "    static REAL: rt::FortranTarget = rt::FortranTarget::new(&[{}]);",
        targets.join(", ")
    );
    let _ = writeln!(
        out,
        "    let Some(__real) = REAL.get() else {{ rt::fortran_missing({ierr_expr}, {:?}); return {}; }};",
        entry.targets[0], s.fret_default
    );
    let real_ty = &s.real_ty;
    let _ = writeln!(
        out,
        "    let __real: {real_ty} = core::mem::transmute::<*mut c_void, {real_ty}>(__real);"
    );
    let _ = writeln!(
        out,
        "    let Some(mut __g) = rt::enter({id}, __ra) else {{ {}{}let __r = __real({fwd}); {}{}return __r; }};",
        h.before, h.abort_unrecorded, h.after, h.end
    );
    emit_handles(out, plan, &s.fparams);
    for b in &v.before {
        let _ = writeln!(out, "    {b}");
    }
    let sep = if f.params.is_empty() { "" } else { ", " };
    let _ = writeln!(
        out,
        "    let __s = pre_{name}(&mut __g{sep}{});",
        v.pre_args
    );
    let _ = writeln!(out, "    {}{start}{}", h.before, h.abort_recorded);
    let _ = writeln!(out, "    let __r = __real({fwd});");
    let _ = writeln!(out, "    __g.stop();");
    if s.with_ierr {
        let _ = writeln!(
            out,
            "    let __rc: c_int = if ierr.is_null() {{ 0 }} else {{ *ierr as c_int }};"
        );
    } else {
        let _ = writeln!(out, "    let __rc: c_int = 0;");
    }
    let _ = writeln!(out, "    {}", h.after);
    for a in &v.after {
        let _ = writeln!(out, "    {a}");
    }
    let _ = writeln!(
        out,
        "    post_{name}(&mut __g, __s, __rc{sep}{});",
        v.post_args
    );
    let _ = writeln!(out, "    __g.commit(__rc);");
    let _ = writeln!(out, "    {}__r\n}}", h.end);
    emit_symbols(out, name, &s, entry);
}

/// The statement that reads the entry time: the C values a peek reads exist before the
/// call when their conversion does (one-based indices are converted after it).
fn start_of(f: &Function, plan: &Plan, fparams: &[&Param]) -> String {
    let pre_uses = plan.pre_uses(f);
    let post_uses = plan.post_uses(f);
    let ready: Vec<String> = f
        .params
        .iter()
        .filter(|p| fparams.iter().any(|q| q.name == p.name))
        .filter(|p| pre_uses.contains(&p.name) || post_uses.contains(&p.name))
        .map(|p| p.name.clone())
        .collect();
    start_stmt(f, plan, |n| {
        if ready.iter().any(|r| r == n) && !plan.one_based.iter().any(|(i, _, _)| i == n) {
            n.to_owned()
        } else {
            "core::mem::zeroed()".to_owned()
        }
    })
}

/// Request handles and statuses: a request lives in the program's Fortran variable, whose
/// address identifies it; an ignored status is replaced by one on the wrapper's stack (or
/// scratch statuses).
fn emit_handles(out: &mut String, plan: &Plan, fparams: &[&Param]) {
    for n in ["request", "array_of_requests"] {
        if fparams
            .iter()
            .any(|p| p.name == n && p.pointee() == Some("MPI_Request"))
        {
            let _ = writeln!(out, "    __g.fortran_handles_at(f_{n});");
        }
    }
    if plan.status_param.as_deref() == Some("status") && fparams.iter().any(|p| p.name == "status")
    {
        let _ = writeln!(
            out,
            "    let mut __fst = [0 as MPI_Fint; rt::FORTRAN_STATUS_MAX];"
        );
        let _ = writeln!(
            out,
            "    let f_status = rt::fortran_status_or(f_status, __fst.as_mut_ptr());"
        );
    }
    if let Some((st, n)) = &plan.statuses_param {
        let _ = writeln!(
            out,
            "    let f_{st} = __g.fortran_statuses_or_scratch(f_{st}, rt::fortran_int(f_{n}));"
        );
    }
}

/// The exported Fortran symbols (`mpi_send_`, `MPI_SEND`, ...), each calling the wrapper
/// with its own return address.
fn emit_symbols(out: &mut String, name: &str, s: &Signature, entry: &FortranEntry) {
    let (sig, fret) = (&s.sig, &s.fret);
    let fargs: Vec<String> = sig
        .split(", ")
        .filter(|s| !s.is_empty())
        .map(|s| s.split(':').next().unwrap_or_default().trim().to_owned())
        .collect();
    for sym in &entry.names {
        let _ = writeln!(
            out,
            "#[no_mangle]\n#[allow(non_snake_case, clippy::all)]\npub unsafe extern \"C\" fn {sym}({sig}) -> {fret} {{ fortran_{name}(rt::caller_address!(){}{}) }}",
            if fargs.is_empty() { "" } else { ", " },
            fargs.join(", ")
        );
    }
}
