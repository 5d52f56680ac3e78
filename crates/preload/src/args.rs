//! What the generated `post_*` functions record of a call's arguments: the communicator,
//! peers as world ranks, the root, byte counts from counts and datatypes, reduction
//! operations, flags, statuses, and the handles a call creates or releases (requests,
//! communicators, windows, matched messages).
//!
//! During a peek (a record of a call still in progress, in a signal handler) the helpers
//! see the return code [`crate::state::PEEK_RET`]: they then never ask the MPI library
//! anything, register nothing and allocate nothing.

use std::os::raw::c_int;

use mpiscope_trace::{ListKind, Slot, PEER_ANY, PEER_NULL, PEER_ROOT, PEER_UNKNOWN};

use crate::comms::{self, CommInfo};
use crate::ffi::{consts, read_output};
use crate::handles;
use crate::mpi::*;
use crate::requests::{self, ReqEntry};
use crate::state::CallGuard;

/// State kept between the two halves of a wrapper.
#[derive(Default, Clone, Copy)]
pub struct Snap {
    /// Request looked up before a completion call.
    pub req: Option<ReqEntry>,
    /// Number of requests snapshotted into the thread's scratch.
    pub n: usize,
    /// Communicator (freed communicator, matched message's communicator).
    pub comm: Option<&'static CommInfo>,
    /// A handle value.
    pub handle: usize,
}

impl Snap {
    /// The communicator of the snapshot.
    pub fn comm_info(&self) -> Option<&'static CommInfo> {
        self.comm
    }
}

impl CallGuard {
    /// The call's communicator: sets the `Comm` slot.
    #[inline(always)]
    /// # Safety: `comm` as the program passed it to MPI.
    pub unsafe fn comm(&mut self, comm: MPI_Comm) -> Option<&'static CommInfo> {
        if comm == consts().comm_world {
            let w = comms::world();
            if let Some(ci) = w {
                self.set(Slot::Comm, i64::from(ci.id));
            }
            return w;
        }
        let ok = self.ret() == 0;
        let t = self.ts();
        // An unknown communicator is registered only after a successful call; a peek only
        // looks (it may run in a signal handler).
        let ci = if t.peeking {
            comms::peek(&mut t.comm_cache, comm)?
        } else {
            comms::lookup(&mut t.comm_cache, comm, ok)?
        };
        t.args.set(Slot::Comm, i64::from(ci.id));
        Some(ci)
    }

    /// The window's communicator: sets the `Comm` slot.
    pub fn win(&mut self, win: MPI_Win) -> Option<&'static CommInfo> {
        let ci = handles::win_comm(win)?;
        self.set(Slot::Comm, i64::from(ci.id));
        Some(ci)
    }

    /// A peer rank of `ci`, as a world rank.
    #[inline]
    pub fn peer(&mut self, slot: Slot, rank: c_int, ci: Option<&'static CommInfo>) {
        let k = consts();
        let v = if rank == k.any_source {
            PEER_ANY
        } else if rank == k.proc_null {
            PEER_NULL
        } else {
            match ci {
                Some(ci) => ci.peer_world(rank),
                None => PEER_UNKNOWN,
            }
        };
        self.set(slot, v);
    }

    /// The root of a rooted collective; returns whether this process is the root.
    pub fn root(&mut self, root: c_int, ci: Option<&'static CommInfo>) -> bool {
        let k = consts();
        let Some(ci) = ci else {
            self.set(Slot::Root, PEER_UNKNOWN);
            return false;
        };
        if ci.inter {
            if root == k.root {
                self.set(Slot::Root, PEER_ROOT);
                return true;
            }
            if root == k.proc_null {
                self.set(Slot::Root, PEER_NULL);
                return false;
            }
            self.set(Slot::Root, ci.peer_world(root));
            return false;
        }
        self.set(Slot::Root, ci.local_world(root));
        root == ci.my_rank
    }

    /// A buffer of `count` elements of `dtype`.
    #[inline]
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn count(
        &mut self,
        count_slot: Slot,
        size_slot: Slot,
        bytes_slot: Slot,
        count: i64,
        dtype: MPI_Datatype,
    ) {
        let ok = self.ret() == 0;
        let t = self.ts();
        t.args.set(count_slot, count);
        // SAFETY: the library is queried only after it accepted the handle (`ok`).
        if let Some(size) = unsafe { handles::dtype_size(&mut t.dtype_cache, dtype, ok) } {
            t.args.set(size_slot, size);
            t.args.set(bytes_slot, count.saturating_mul(size));
        }
    }

    fn peers_of(ci: Option<&'static CommInfo>) -> Option<usize> {
        ci.map(|c| {
            if c.inter {
                c.remote.len()
            } else {
                c.size as usize
            }
        })
    }

    /// Per-peer counts of one datatype (v-collectives).
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn counts<T: Copy + Into<i64>>(
        &mut self,
        kind: ListKind,
        size_slot: Slot,
        bytes_slot: Slot,
        counts: *const T,
        dtype: MPI_Datatype,
        ci: Option<&'static CommInfo>,
    ) {
        let Some(n) = Self::peers_of(ci) else { return };
        if counts.is_null() || self.ret() != 0 {
            return;
        }
        // SAFETY: MPI requires `counts` to hold one entry per peer here.
        let vals = unsafe { core::slice::from_raw_parts(counts, n) };
        let total: i64 = vals.iter().map(|&v| v.into()).sum();
        self.list(kind, vals.iter().map(|&v| v.into()));
        let t = self.ts();
        if let Some(size) = handles::dtype_size(&mut t.dtype_cache, dtype, true) {
            t.args.set(size_slot, size);
            t.args.set(bytes_slot, total.saturating_mul(size));
        }
    }

    /// Per-peer counts and datatypes (`Alltoallw`).
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn counts_w<T: Copy + Into<i64>>(
        &mut self,
        kind: ListKind,
        sizes_kind: ListKind,
        bytes_slot: Slot,
        counts: *const T,
        types: *const MPI_Datatype,
        ci: Option<&'static CommInfo>,
    ) {
        let Some(n) = Self::peers_of(ci) else { return };
        if counts.is_null() || types.is_null() || self.ret() != 0 {
            return;
        }
        // SAFETY: MPI requires one entry per peer.
        let (vals, tys) = unsafe {
            (
                core::slice::from_raw_parts(counts, n),
                core::slice::from_raw_parts(types, n),
            )
        };
        let t = self.ts();
        let mut sizes = core::mem::take(&mut t.tmp);
        sizes.clear();
        sizes.extend(
            tys.iter()
                .map(|&d| handles::dtype_size(&mut t.dtype_cache, d, true).unwrap_or(0)),
        );
        let total: i64 = vals.iter().zip(&sizes).map(|(&c, &s)| c.into() * s).sum();
        t.lists.push(kind, vals.iter().map(|&v| v.into()), false);
        t.lists.push(sizes_kind, sizes.iter().copied(), false);
        t.tmp = sizes;
        self.set(bytes_slot, total);
    }

    /// A reduction operation.
    pub fn op(&mut self, op: MPI_Op) {
        let id = handles::op_id(op);
        self.set(Slot::Op, i64::from(id));
    }

    /// Reads a boolean output.
    #[inline]
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn flag(&mut self, flag: *mut c_int) -> bool {
        if flag.is_null() || self.ret() != 0 {
            return false;
        }
        // SAFETY: MPI wrote the flag.
        let v = unsafe { read_output(flag) };
        let f = v != 0;
        self.set(Slot::Flag, i64::from(f));
        f
    }

    /// Reads a thread-level output.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn level_out(&mut self, provided: *mut c_int) {
        if !provided.is_null() && self.ret() == 0 {
            // SAFETY: MPI wrote it.
            let v = unsafe { read_output(provided) };
            self.set(Slot::Level, i64::from(v));
        }
    }

    /// Decodes a status: source (as a world rank, through `ci`), tag and bytes.
    pub fn status(&mut self, st: *mut MPI_Status, ci: Option<&'static CommInfo>, ret: c_int) {
        if let Some((src, tag, bytes)) = decode_status(st, ci, ret) {
            if let Some(s) = src {
                self.set(Slot::StatusSource, s);
                self.set(Slot::StatusTag, tag);
            }
            if let Some(b) = bytes {
                self.set(Slot::StatusBytes, b);
            }
        }
    }

    /// A request created by this call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_request(
        &mut self,
        req: *mut MPI_Request,
        recv: bool,
        persistent: bool,
        ci: Option<&'static CommInfo>,
        ret: c_int,
    ) {
        if ret != 0 || req.is_null() {
            return;
        }
        // SAFETY: MPI wrote the request.
        let h = unsafe { read_output(req) };
        if h == consts().request_null {
            return;
        }
        let id = requests::create(h, self.handle_addr(req), recv, persistent, ci);
        self.set(Slot::Request, id as i64);
    }

    /// A communicator created by this call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_comm(&mut self, out: *mut MPI_Comm, ret: c_int) {
        if ret != 0 || out.is_null() {
            return;
        }
        // SAFETY: MPI wrote the handle.
        let c = unsafe { read_output(out) };
        if c == consts().comm_null {
            return;
        }
        if let Some(ci) = comms::register(c) {
            self.set(Slot::NewComm, i64::from(ci.id));
        }
    }

    /// A window created by this call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_win(&mut self, out: *mut MPI_Win, ci: Option<&'static CommInfo>, ret: c_int) {
        if ret == 0 && !out.is_null() {
            // SAFETY: MPI wrote the handle.
            handles::win_created(unsafe { read_output(out) }, ci);
        }
    }

    /// Snapshot before `MPI_Win_free`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn win_snap(&mut self, win: *mut MPI_Win) -> Snap {
        let mut s = Snap::default();
        if !win.is_null() {
            // SAFETY: valid pointer by MPI's contract.
            let w = unsafe { *win };
            s.handle = w as usize;
            s.comm = handles::win_comm(w);
            if let Some(ci) = s.comm {
                self.set(Slot::Comm, i64::from(ci.id));
            }
        }
        s
    }

    /// After `MPI_Win_free`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn win_freed(&mut self, s: &Snap, ret: c_int) {
        if ret == 0 {
            handles::win_freed(s.handle);
        }
    }

    /// A matched message created by `MPI_Mprobe` / `MPI_Improbe`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn new_message(
        &mut self,
        msg: *mut MPI_Message,
        ci: Option<&'static CommInfo>,
        ret: c_int,
    ) {
        if ret == 0 && !msg.is_null() {
            // SAFETY: MPI wrote the handle.
            handles::message_matched(unsafe { read_output(msg) }, ci);
        }
    }

    /// Snapshot before `MPI_Mrecv` / `MPI_Imrecv`: the message's communicator.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn message_snap(&mut self, msg: *mut MPI_Message) -> Snap {
        let mut s = Snap::default();
        if !msg.is_null() {
            // SAFETY: valid pointer by MPI's contract.
            s.comm = handles::message_taken(unsafe { *msg });
            if let Some(ci) = s.comm {
                self.set(Slot::Comm, i64::from(ci.id));
            }
        }
        s
    }

    /// Snapshot before a call that releases a communicator.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn comm_snap(&mut self, comm: *mut MPI_Comm) -> Snap {
        let mut s = Snap::default();
        if !comm.is_null() {
            // SAFETY: valid pointer by MPI's contract.
            let c = unsafe { *comm };
            s.handle = c as usize;
            let t = self.ts();
            s.comm = comms::lookup(&mut t.comm_cache, c, true);
            if let Some(ci) = s.comm {
                t.args.set(Slot::Comm, i64::from(ci.id));
            }
        }
        s
    }

    /// After a call that releases a communicator.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn comm_freed(&mut self, s: &Snap, ret: c_int) {
        if ret == 0 && s.handle != 0 {
            comms::release(s.handle);
        }
    }
}

/// Source (world rank), tag and bytes of a status, when it can be read.
pub(crate) fn decode_status(
    st: *mut MPI_Status,
    ci: Option<&'static CommInfo>,
    ret: c_int,
) -> Option<(Option<i64>, i64, Option<i64>)> {
    let k = consts();
    if st.is_null() || st == k.status_ignore || ret != 0 {
        return None;
    }
    // SAFETY: MPI filled the status.
    let s = unsafe { &*st };
    let mut bytes: c_int = 0;
    // SAFETY: valid status and predefined datatype.
    let rc = unsafe { PMPI_Get_count(st, k.byte, &mut bytes) };
    let bytes = (rc == 0 && bytes != k.undefined).then_some(i64::from(bytes));
    let src = if s.MPI_SOURCE == k.proc_null {
        Some(PEER_NULL)
    } else {
        ci.map(|c| c.peer_world(s.MPI_SOURCE))
    };
    Some((src, i64::from(s.MPI_TAG), bytes))
}

/// A status pointer, or `local` when the caller ignores the status.
#[inline(always)]
pub fn status_or(st: *mut MPI_Status, local: *mut MPI_Status) -> *mut MPI_Status {
    if st == consts().status_ignore || st.is_null() {
        local
    } else {
        st
    }
}

/// True for `MPI_IN_PLACE` in either binding.
pub fn is_in_place(p: *const core::ffi::c_void) -> bool {
    core::ptr::eq(p, consts().in_place) || handles::is_fortran_in_place(p as usize)
}
