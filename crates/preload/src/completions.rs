//! Request completion: snapshots of the requests a completion call may free, taken before
//! it, and what it completed, decoded after it (the request ids, and for receives the
//! source, tag and bytes of each status).
//!
//! Request handles are reused by MPI once freed, so a request is identified by its handle
//! and where the program keeps it ([`crate::requests`]); `Waitall` and `Waitsome` list their
//! completions as one [`ListKind::Completions`] list of `(request, source, tag, bytes)`.

use std::os::raw::c_int;

use mpiscope_trace::{ListKind, Slot, NO_VALUE};

use crate::args::{decode_status, Snap};
use crate::calls::FORTRAN_BASE;
use crate::ffi::{consts, read_output};
use crate::mpi::*;
use crate::requests::{self, ReqEntry};
use crate::state::CallGuard;

impl CallGuard {
    /// Snapshot of a request before a completion call.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn req_snap(&mut self, req: *mut MPI_Request) -> Snap {
        if req.is_null() {
            return Snap::default();
        }
        let addr = self.handle_addr(req);
        // SAFETY: valid pointer by MPI's contract.
        self.req_snap_at(unsafe { *req }, addr)
    }

    /// Snapshot of a request passed by value.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn req_snap_value(&mut self, req: MPI_Request) -> Snap {
        self.req_snap_at(req, 0)
    }

    fn req_snap_at(&mut self, req: MPI_Request, addr: usize) -> Snap {
        let mut s = Snap::default();
        if req != consts().request_null {
            s.handle = req as usize;
            s.req = requests::lookup(req, addr);
            if let Some(e) = &s.req {
                self.set(Slot::Request, e.id as i64);
            }
        }
        s
    }

    /// Snapshots of an array of requests, kept in the thread's scratch.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn req_snap_array(&mut self, count: c_int, reqs: *mut MPI_Request) -> Snap {
        let n = if count > 0 && !reqs.is_null() {
            count as usize
        } else {
            0
        };
        let null = consts().request_null;
        let fortran = (self.call >= FORTRAN_BASE).then_some(self.fortran_handles);
        let t = self.ts();
        t.req_snaps.clear();
        // Ids already matched: two elements with one shared handle are two requests.
        let mut taken = core::mem::take(&mut t.tmp);
        taken.clear();
        for i in 0..n {
            // SAFETY: MPI requires `count` valid entries.
            let h = unsafe { *reqs.add(i) };
            let addr = match fortran {
                Some(0) => 0,
                Some(base) => base + i * core::mem::size_of::<MPI_Fint>(),
                None => reqs.wrapping_add(i) as usize,
            };
            let found = if h == null {
                None
            } else {
                requests::lookup_shared(h, addr, &taken)
            };
            if let Some((e, true)) = &found {
                taken.push(e.id as i64);
            }
            t.req_snaps.push(found.map(|(e, _)| e));
        }
        t.tmp = taken;
        self.set(Slot::ArrayLen, n as i64);
        let t = self.ts();
        let snaps = core::mem::take(&mut t.req_snaps);
        t.lists.push(
            ListKind::Requests,
            snaps.iter().map(|e| e.map(|e| e.id as i64).unwrap_or(0)),
            false,
        );
        t.req_snaps = snaps;
        Snap {
            n,
            ..Snap::default()
        }
    }

    fn completion_values(e: &ReqEntry, st: *mut MPI_Status, ret: c_int) -> [i64; 4] {
        if e.recv {
            if let Some((src, tag, bytes)) = decode_status(st, e.comm, ret) {
                return [
                    e.id as i64,
                    src.unwrap_or(NO_VALUE),
                    if src.is_some() { tag } else { NO_VALUE },
                    bytes.unwrap_or(NO_VALUE),
                ];
            }
        }
        [e.id as i64, NO_VALUE, NO_VALUE, NO_VALUE]
    }

    /// `MPI_Wait` / `MPI_Test` completed the snapshotted request.
    pub fn complete_one(&mut self, s: &Snap, st: *mut MPI_Status, ret: c_int) {
        let Some(e) = s.req else { return };
        if e.recv {
            self.status(st, e.comm, ret);
        }
        if !e.persistent {
            requests::complete(s.handle, e.id);
        }
    }

    /// `MPI_Request_get_status` found the request complete (the request stays).
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_peek(&mut self, s: &Snap, st: *mut MPI_Status, ret: c_int) {
        if let Some(e) = s.req {
            if e.recv {
                self.status(st, e.comm, ret);
            }
        }
    }

    /// `MPI_Waitany` / `MPI_Testany` completed entry `*index`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_any(
        &mut self,
        s: &Snap,
        index: *mut c_int,
        st: *mut MPI_Status,
        ret: c_int,
    ) {
        if index.is_null() {
            return;
        }
        // SAFETY: MPI wrote the index.
        let i = unsafe { read_output(index) };
        self.set(Slot::Index, i64::from(i));
        if i == consts().undefined || i < 0 || i as usize >= s.n {
            return;
        }
        let t = self.ts();
        let Some(e) = t.req_snaps[i as usize] else {
            return;
        };
        self.set(Slot::Request, e.id as i64);
        if e.recv {
            self.status(st, e.comm, ret);
        }
        if !e.persistent {
            requests::complete_entry(&e);
        }
    }

    /// `MPI_Waitall` / `MPI_Testall` completed every request.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_all(&mut self, s: &Snap, sts: *mut MPI_Status, ret: c_int) {
        let t = self.ts();
        let snaps = core::mem::take(&mut t.req_snaps);
        let mut vals = core::mem::take(&mut t.tmp);
        vals.clear();
        for (i, e) in snaps.iter().enumerate().take(s.n) {
            let Some(e) = e else { continue };
            let st = if sts.is_null() {
                sts
            } else {
                unsafe { sts.add(i) }
            };
            vals.extend(Self::completion_values(e, st, ret));
            if !e.persistent {
                requests::complete_entry(e);
            }
        }
        let t = self.ts();
        t.req_snaps = snaps;
        t.lists
            .push(ListKind::Completions, vals.iter().copied(), false);
        t.tmp = vals;
    }

    /// `MPI_Waitsome` / `MPI_Testsome` completed `*outcount` entries listed in `indices`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn complete_some(
        &mut self,
        s: &Snap,
        outcount: *mut c_int,
        indices: *mut c_int,
        sts: *mut MPI_Status,
        ret: c_int,
    ) {
        if outcount.is_null() {
            return;
        }
        // SAFETY: MPI wrote outcount.
        let k = unsafe { read_output(outcount) };
        self.set(Slot::Index, i64::from(k));
        if k == consts().undefined || k <= 0 || indices.is_null() {
            return;
        }
        let t = self.ts();
        let snaps = core::mem::take(&mut t.req_snaps);
        let mut vals = core::mem::take(&mut t.tmp);
        vals.clear();
        // SAFETY: MPI wrote `outcount` indices.
        t.lists.push(
            ListKind::Indices,
            (0..k as usize).map(|j| i64::from(unsafe { read_output(indices.add(j)) })),
            false,
        );
        for j in 0..k as usize {
            // SAFETY: as above.
            let i = unsafe { read_output(indices.add(j)) };
            if i < 0 || i as usize >= s.n {
                continue;
            }
            let Some(e) = snaps[i as usize] else { continue };
            let st = if sts.is_null() {
                sts
            } else {
                unsafe { sts.add(j) }
            };
            vals.extend(Self::completion_values(&e, st, ret));
            if !e.persistent {
                requests::complete_entry(&e);
            }
        }
        let t = self.ts();
        t.req_snaps = snaps;
        t.lists
            .push(ListKind::Completions, vals.iter().copied(), false);
        t.tmp = vals;
    }

    /// `MPI_Request_free`.
    pub fn request_freed(&mut self, s: &Snap, ret: c_int) {
        if let (Some(e), 0) = (s.req, ret) {
            requests::complete(s.handle, e.id);
        }
    }

    /// `MPI_Start`, `MPI_Cancel`: the request id is already in the `Request` slot.
    pub fn request_noted(&mut self, _s: &Snap) {}

    /// `MPI_Startall`: the ids are already in the `Requests` list.
    pub fn requests_noted(&mut self, _s: &Snap) {}

    /// Scratch statuses when the caller ignores them.
    pub fn statuses_or_scratch(&mut self, sts: *mut MPI_Status, n: isize) -> *mut MPI_Status {
        if sts != consts().statuses_ignore && !sts.is_null() {
            return sts;
        }
        if n <= 0 {
            return sts;
        }
        let t = self.ts();
        // SAFETY: MPI_Status is plain data; zero is a valid value.
        t.statuses
            .resize(n as usize, unsafe { core::mem::zeroed() });
        t.statuses.as_mut_ptr()
    }
}
