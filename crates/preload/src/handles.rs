//! Datatype sizes, reduction operation ids, windows and matched messages.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::comms::CommInfo;
use crate::defs;
use crate::ffi::consts;
use crate::mpi::*;

static DTYPE_GEN: AtomicU64 = AtomicU64::new(1);

/// Per-thread cache of datatype sizes, invalidated when any datatype is freed.
#[derive(Default)]
pub struct DtypeCache {
    entries: [(usize, i64, u64); 8],
}

/// Size in bytes of `dtype`; `query` allows asking the library (only after a successful call,
/// so an invalid handle never reaches it).
#[inline]
/// # Safety: pointers as the program passed them to (or got them from) MPI.
pub unsafe fn dtype_size(cache: &mut DtypeCache, dtype: MPI_Datatype, query: bool) -> Option<i64> {
    let h = dtype as usize;
    let gen = DTYPE_GEN.load(Ordering::Relaxed);
    let slot = &mut cache.entries[(h >> 3) & 7];
    if slot.0 == h && slot.2 == gen {
        return Some(slot.1);
    }
    if !query || dtype == consts().datatype_null {
        return None;
    }
    let mut size: MPI_Count = 0;
    // SAFETY: a datatype the library just accepted.
    if unsafe { PMPI_Type_size_x(dtype, &mut size) } != 0 {
        return None;
    }
    *slot = (h, size as i64, gen);
    Some(size as i64)
}

/// A datatype was freed: its handle may come back with another size.
pub fn datatypes_changed() {
    DTYPE_GEN.fetch_add(1, Ordering::Relaxed);
}

/// Names of the predefined operations, in the order of [`predefined_ops`].
const OP_NAMES: [&str; 14] = [
    "MPI_MAX",
    "MPI_MIN",
    "MPI_SUM",
    "MPI_PROD",
    "MPI_LAND",
    "MPI_BAND",
    "MPI_LOR",
    "MPI_BOR",
    "MPI_LXOR",
    "MPI_BXOR",
    "MPI_MAXLOC",
    "MPI_MINLOC",
    "MPI_REPLACE",
    "MPI_NO_OP",
];

fn predefined_ops() -> [MPI_Op; 14] {
    let k = consts();
    [
        k.op_max,
        k.op_min,
        k.op_sum,
        k.op_prod,
        k.op_land,
        k.op_band,
        k.op_lor,
        k.op_bor,
        k.op_lxor,
        k.op_bxor,
        k.op_maxloc,
        k.op_minloc,
        k.op_replace,
        k.op_no_op,
    ]
}

static OPS_DEFINED: AtomicU64 = AtomicU64::new(0);
static DEFINE_OP: Mutex<()> = Mutex::new(());
static USER_OPS: Mutex<Vec<(usize, u32)>> = Mutex::new(Vec::new());
static NEXT_USER_OP: AtomicUsize = AtomicUsize::new(0);

/// The trace id of an operation (1..14 predefined, 100+ user-defined; 0 unknown).
pub fn op_id(op: MPI_Op) -> u32 {
    for (i, p) in predefined_ops().iter().enumerate() {
        if *p == op {
            let id = i as u32 + 1;
            let bit = 1u64 << i;
            if OPS_DEFINED.load(Ordering::Acquire) & bit == 0 {
                let _g = DEFINE_OP.lock().unwrap_or_else(|p| p.into_inner());
                if OPS_DEFINED.load(Ordering::Acquire) & bit == 0 {
                    defs::define_op(id, OP_NAMES[i]);
                    OPS_DEFINED.fetch_or(bit, Ordering::AcqRel);
                }
            }
            return id;
        }
    }
    let h = op as usize;
    let mut users = USER_OPS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&(_, id)) = users.iter().find(|(uh, _)| *uh == h) {
        return id;
    }
    let n = NEXT_USER_OP.fetch_add(1, Ordering::Relaxed);
    let id = 100 + n as u32;
    defs::define_op(id, &format!("user#{n}"));
    users.push((h, id));
    id
}

/// An operation was created or freed: forget user-operation handles (they may be reused).
pub fn ops_changed() {
    USER_OPS.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

static WINDOWS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// A window was created over `ci`.
pub fn win_created(win: MPI_Win, ci: Option<&'static CommInfo>) {
    let Some(ci) = ci else { return };
    let mut w = WINDOWS.lock().unwrap_or_else(|p| p.into_inner());
    w.retain(|(h, _)| *h != win as usize);
    w.push((win as usize, ci as *const CommInfo as usize));
}

/// The communicator of a window.
pub fn win_comm(win: MPI_Win) -> Option<&'static CommInfo> {
    let w = WINDOWS.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: infos are leaked and never freed.
    w.iter()
        .find(|(h, _)| *h == win as usize)
        .map(|&(_, p)| unsafe { &*(p as *const CommInfo) })
}

/// A window was freed.
pub fn win_freed(handle: usize) {
    WINDOWS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(h, _)| *h != handle);
}

static MESSAGES: Mutex<Option<HashMap<usize, usize>>> = Mutex::new(None);

/// A message was matched by a probe on `ci`.
pub fn message_matched(msg: MPI_Message, ci: Option<&'static CommInfo>) {
    let k = consts();
    let Some(ci) = ci else { return };
    if msg == k.message_null || msg == k.message_no_proc {
        return;
    }
    MESSAGES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(msg as usize, ci as *const CommInfo as usize);
}

/// A matched message is being received: its communicator.
pub fn message_taken(msg: MPI_Message) -> Option<&'static CommInfo> {
    let p = MESSAGES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_mut()?
        .remove(&(msg as usize))?;
    // SAFETY: infos are leaked and never freed.
    Some(unsafe { &*(p as *const CommInfo) })
}

static FORTRAN_IN_PLACE: [AtomicUsize; 4] = [const { AtomicUsize::new(usize::MAX) }; 4];

/// Finds the addresses the Fortran bindings use for `MPI_IN_PLACE`.
pub fn find_fortran_sentinels() {
    let names: [&[u8]; 4] = [
        b"mpi_fortran_in_place_\0",
        b"mpi_fortran_in_place\0",
        b"mpi_fortran_in_place__\0",
        b"MPIFCMB4\0",
    ];
    for (i, n) in names.iter().enumerate() {
        // SAFETY: NUL-terminated symbol names.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr().cast()) };
        if !p.is_null() {
            FORTRAN_IN_PLACE[i].store(p as usize, Ordering::Relaxed);
        }
    }
}

/// True when `p` is a Fortran `MPI_IN_PLACE`.
pub fn is_fortran_in_place(p: usize) -> bool {
    FORTRAN_IN_PLACE
        .iter()
        .any(|a| a.load(Ordering::Relaxed) == p)
}

/// Thread support level name.
pub fn thread_level_name(level: c_int) -> &'static str {
    let k = consts();
    if level == k.thread_multiple {
        "multiple"
    } else if level == k.thread_serialized {
        "serialized"
    } else if level == k.thread_funneled {
        "funneled"
    } else {
        "single"
    }
}
