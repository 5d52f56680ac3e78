//! OTF2 archives (Score-P's format, read by Vampir, Scalasca, `otf2-print`), written with
//! Debian's libotf2 (`libotf2-trace-dev`, OTF2 3.0).
//!
//! One location group (process) per rank, one location per thread that made MPI calls, one
//! region per MPI function (role: point-to-point, barrier, collective or function; paradigm
//! MPI). Each call is an `Enter` and a `Leave`; each point-to-point message paired by
//! `mpiscope_analyze::messages` is an `MpiSend` inside the send call and an `MpiRecv` inside
//! the call that completed the receive. Messages are written on `MPI_COMM_WORLD` with world
//! ranks, whatever communicator carried them. Timestamps are the trace's nanoseconds.
//! Ranks are written one after the other; each rank's event writers are closed before the
//! next rank is read, so memory does not grow with the trace.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_void, CString};
use std::path::Path;

use mpiscope_analyze::messages::{Item, RankWalk};
use mpiscope_trace::RunDir;

use crate::ExportError;

#[allow(non_camel_case_types)]
mod ffi {
    use std::ffi::{c_char, c_void};

    pub type OTF2_Archive = c_void;
    pub type OTF2_EvtWriter = c_void;
    pub type OTF2_DefWriter = c_void;
    pub type OTF2_GlobalDefWriter = c_void;
    /// An enum in C: an int.
    pub type OTF2_ErrorCode = i32;

    #[repr(C)]
    pub struct OTF2_FlushCallbacks {
        pub pre: extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8,
        pub post: extern "C" fn(*mut c_void, u8, u64) -> u64,
    }

    pub const FILEMODE_WRITE: u8 = 0;
    pub const SUBSTRATE_POSIX: u8 = 1;
    pub const COMPRESSION_NONE: u8 = 1;
    pub const FLUSH: u8 = 1;
    pub const PARADIGM_MPI: u8 = 4;
    pub const ROLE_FUNCTION: u8 = 1;
    pub const ROLE_BARRIER: u8 = 15;
    pub const ROLE_COLL_ALL2ALL: u8 = 25;
    pub const ROLE_POINT2POINT: u8 = 28;
    pub const LOCATION_GROUP_PROCESS: u8 = 1;
    pub const LOCATION_CPU_THREAD: u8 = 1;
    pub const GROUP_COMM_LOCATIONS: u8 = 4;
    pub const GROUP_COMM_GROUP: u8 = 5;
    pub const UNDEFINED_U32: u32 = u32::MAX;
    pub const UNDEFINED_U64: u64 = u64::MAX;

    #[link(name = "otf2")]
    extern "C" {
        pub fn OTF2_Archive_Open(
            path: *const c_char,
            name: *const c_char,
            mode: u8,
            chunk_events: u64,
            chunk_defs: u64,
            substrate: u8,
            compression: u8,
        ) -> *mut OTF2_Archive;
        pub fn OTF2_Archive_SetFlushCallbacks(
            a: *mut OTF2_Archive,
            cb: *const OTF2_FlushCallbacks,
            data: *mut c_void,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_SetSerialCollectiveCallbacks(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_SetCreator(
            a: *mut OTF2_Archive,
            creator: *const c_char,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_OpenEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_GetEvtWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_EvtWriter;
        pub fn OTF2_Archive_CloseEvtWriter(
            a: *mut OTF2_Archive,
            w: *mut OTF2_EvtWriter,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_CloseEvtFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_OpenDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_GetDefWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_DefWriter;
        pub fn OTF2_Archive_CloseDefWriter(
            a: *mut OTF2_Archive,
            w: *mut OTF2_DefWriter,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_CloseDefFiles(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_Archive_GetGlobalDefWriter(a: *mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;
        pub fn OTF2_Archive_Close(a: *mut OTF2_Archive) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_Enter(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            t: u64,
            region: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_Leave(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            t: u64,
            region: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_MpiSend(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            t: u64,
            receiver: u32,
            comm: u32,
            tag: u32,
            length: u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_EvtWriter_MpiRecv(
            w: *mut OTF2_EvtWriter,
            attrs: *mut c_void,
            t: u64,
            sender: u32,
            comm: u32,
            tag: u32,
            length: u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteClockProperties(
            w: *mut OTF2_GlobalDefWriter,
            resolution: u64,
            offset: u64,
            length: u64,
            realtime: u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteString(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            s: *const c_char,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteRegion(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            canonical: u32,
            description: u32,
            role: u8,
            paradigm: u8,
            flags: u32,
            file: u32,
            begin: u32,
            end: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            class: u32,
            parent: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteLocationGroup(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            kind: u8,
            parent: u32,
            creator: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteLocation(
            w: *mut OTF2_GlobalDefWriter,
            id: u64,
            name: u32,
            kind: u8,
            events: u64,
            group: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteGroup(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            kind: u8,
            paradigm: u8,
            flags: u32,
            members: u32,
            list: *const u64,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_GlobalDefWriter_WriteComm(
            w: *mut OTF2_GlobalDefWriter,
            id: u32,
            name: u32,
            group: u32,
            parent: u32,
            flags: u32,
        ) -> OTF2_ErrorCode;
        pub fn OTF2_Error_GetName(code: OTF2_ErrorCode) -> *const c_char;
    }
}

extern "C" fn pre_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    ffi::FLUSH
}

extern "C" fn post_flush(_: *mut c_void, _: u8, _: u64) -> u64 {
    0
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Otf2Summary {
    /// Ranks (location groups).
    pub ranks: u32,
    /// Locations (threads).
    pub locations: u32,
    /// Events (enters, leaves, message events).
    pub events: u64,
    /// `MpiSend` events.
    pub sends: u64,
    /// `MpiRecv` events.
    pub receives: u64,
}

/// The location id of `thread` of `rank`.
fn location(rank: u32, thread: u16) -> u64 {
    (u64::from(rank) << 16) | u64::from(thread)
}

fn role(function: &str) -> u8 {
    let fam = mpiscope_mpispec::family(function);
    if fam == "barrier" {
        ffi::ROLE_BARRIER
    } else if mpiscope_mpispec::is_collective(function) {
        ffi::ROLE_COLL_ALL2ALL
    } else if matches!(
        mpiscope_mpispec::group(function),
        mpiscope_mpispec::Group::P2p
    ) {
        ffi::ROLE_POINT2POINT
    } else {
        ffi::ROLE_FUNCTION
    }
}

/// An open archive; closed (and freed) on drop.
struct Archive {
    ptr: *mut ffi::OTF2_Archive,
    out: std::path::PathBuf,
}

impl Archive {
    fn check(&self, code: ffi::OTF2_ErrorCode, what: &str) -> Result<(), ExportError> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: OTF2_Error_GetName returns a static string for any code.
        let name = unsafe { std::ffi::CStr::from_ptr(ffi::OTF2_Error_GetName(code)) };
        Err(ExportError::Write {
            path: self.out.clone(),
            source: std::io::Error::other(format!("{what}: {}", name.to_string_lossy())),
        })
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from OTF2_Archive_Open and is closed exactly once.
        unsafe {
            ffi::OTF2_Archive_Close(self.ptr);
        }
    }
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// Writes `run` as the OTF2 archive `out/traces.otf2` (with `out/traces.def` and
/// `out/traces/`). The archive is written in a private directory inside `out` and moved
/// into place when complete; an earlier archive is replaced only when mpiscope wrote it
/// (its creator), or with `force` (see [`crate::outputs`]).
pub fn export_otf2(run: &RunDir, out: &Path, force: bool) -> Result<Otf2Summary, ExportError> {
    if run.rank_files.is_empty() {
        return Err(ExportError::NoRanks {
            path: run.path.clone(),
        });
    }
    crate::outputs::check(out, force)?;
    let staging = crate::outputs::staging(out)?;
    let sum = write_archive(run, staging.path(), out)?;
    crate::outputs::put_in_place(staging, out)?;
    Ok(sum)
}

/// Writes the archive `traces` into `dir`; errors name `out`.
fn write_archive(run: &RunDir, dir: &Path, out: &Path) -> Result<Otf2Summary, ExportError> {
    let path = cstring(&dir.display().to_string());
    let name = cstring("traces");
    // SAFETY: valid C strings; the returned archive is owned by `Archive`.
    let ptr = unsafe {
        ffi::OTF2_Archive_Open(
            path.as_ptr(),
            name.as_ptr(),
            ffi::FILEMODE_WRITE,
            1 << 20,
            4 << 20,
            ffi::SUBSTRATE_POSIX,
            ffi::COMPRESSION_NONE,
        )
    };
    if ptr.is_null() {
        return Err(ExportError::Write {
            path: out.to_path_buf(),
            source: std::io::Error::other("OTF2_Archive_Open failed"),
        });
    }
    let a = Archive {
        ptr,
        out: out.to_path_buf(),
    };
    static CALLBACKS: ffi::OTF2_FlushCallbacks = ffi::OTF2_FlushCallbacks {
        pre: pre_flush,
        post: post_flush,
    };
    let creator = cstring(crate::outputs::CREATOR);
    // SAFETY: the callbacks are static; the archive is open for writing; OTF2 copies the
    // creator string.
    unsafe {
        a.check(
            ffi::OTF2_Archive_SetCreator(a.ptr, creator.as_ptr()),
            "creator",
        )?;
        a.check(
            ffi::OTF2_Archive_SetFlushCallbacks(a.ptr, &CALLBACKS, std::ptr::null_mut()),
            "flush callbacks",
        )?;
        a.check(
            ffi::OTF2_Archive_SetSerialCollectiveCallbacks(a.ptr),
            "collective callbacks",
        )?;
        a.check(ffi::OTF2_Archive_OpenEvtFiles(a.ptr), "opening event files")?;
    }
    let mut sum = Otf2Summary::default();
    let mut regions: BTreeMap<String, u32> = BTreeMap::new();
    let mut locations: BTreeMap<u64, u64> = BTreeMap::new();
    let mut hosts: Vec<String> = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    let mut items = Vec::new();
    for (rank, file) in &run.rank_files {
        let rank = *rank;
        let mut reader = mpiscope_trace::RankReader::open(file)?;
        hosts.push(reader.info().map(|i| i.host.clone()).unwrap_or_default());
        let mut walk = RankWalk::new(rank);
        let mut writers: HashMap<u16, *mut ffi::OTF2_EvtWriter> = HashMap::new();
        let mut names: HashMap<u32, String> = HashMap::new();
        while let Some(ev) = reader.next_event() {
            let name = names
                .entry(ev.call)
                .or_insert_with(|| reader.tables().call_name(ev.call).into_owned())
                .clone();
            let next = regions.len() as u32;
            let region = *regions.entry(name.clone()).or_insert(next);
            let loc = location(rank, ev.thread);
            let w = *writers.entry(ev.thread).or_insert_with(|| {
                // SAFETY: the event files are open; the writer is closed below.
                unsafe { ffi::OTF2_Archive_GetEvtWriter(a.ptr, loc) }
            });
            if w.is_null() {
                return Err(ExportError::Write {
                    path: out.to_path_buf(),
                    source: std::io::Error::other("OTF2_Archive_GetEvtWriter failed"),
                });
            }
            let exit = ev.t_exit.max(ev.t_enter);
            first = first.min(ev.t_enter);
            last = last.max(exit);
            items.clear();
            walk.items(&reader, &name, &ev, &mut items);
            let mut n = 2u64;
            // SAFETY: `w` is a live writer of this archive; timestamps are non-decreasing
            // within the call (enter <= message events <= exit).
            unsafe {
                a.check(
                    ffi::OTF2_EvtWriter_Enter(w, std::ptr::null_mut(), ev.t_enter, region),
                    "enter",
                )?;
                for it in &items {
                    match it {
                        Item::Send { key, bytes, .. } => {
                            a.check(
                                ffi::OTF2_EvtWriter_MpiSend(
                                    w,
                                    std::ptr::null_mut(),
                                    ev.t_enter,
                                    key.to,
                                    0,
                                    key.tag as u32,
                                    *bytes,
                                ),
                                "send",
                            )?;
                            sum.sends += 1;
                            n += 1;
                        }
                        Item::Recv { key, bytes, .. } => {
                            a.check(
                                ffi::OTF2_EvtWriter_MpiRecv(
                                    w,
                                    std::ptr::null_mut(),
                                    exit,
                                    key.from,
                                    0,
                                    key.tag as u32,
                                    *bytes,
                                ),
                                "receive",
                            )?;
                            sum.receives += 1;
                            n += 1;
                        }
                        Item::Call { .. } => {}
                    }
                }
                a.check(
                    ffi::OTF2_EvtWriter_Leave(w, std::ptr::null_mut(), exit, region),
                    "leave",
                )?;
            }
            *locations.entry(loc).or_insert(0) += n;
            sum.events += n;
        }
        for (_, w) in writers {
            // SAFETY: each writer is closed once.
            unsafe {
                a.check(
                    ffi::OTF2_Archive_CloseEvtWriter(a.ptr, w),
                    "closing a writer",
                )?
            };
        }
        sum.ranks += 1;
    }
    // SAFETY: the archive is open; every def writer is closed right after it is made.
    unsafe {
        a.check(
            ffi::OTF2_Archive_CloseEvtFiles(a.ptr),
            "closing event files",
        )?;
        a.check(
            ffi::OTF2_Archive_OpenDefFiles(a.ptr),
            "opening definition files",
        )?;
        for &loc in locations.keys() {
            let d = ffi::OTF2_Archive_GetDefWriter(a.ptr, loc);
            if !d.is_null() {
                a.check(
                    ffi::OTF2_Archive_CloseDefWriter(a.ptr, d),
                    "closing a definition writer",
                )?;
            }
        }
        a.check(
            ffi::OTF2_Archive_CloseDefFiles(a.ptr),
            "closing definition files",
        )?;
    }
    // Global definitions.
    // SAFETY: the global writer belongs to the archive, which outlives its use here.
    let g = unsafe { ffi::OTF2_Archive_GetGlobalDefWriter(a.ptr) };
    if g.is_null() {
        return Err(ExportError::Write {
            path: out.to_path_buf(),
            source: std::io::Error::other("OTF2_Archive_GetGlobalDefWriter failed"),
        });
    }
    let mut strings: Vec<CString> = Vec::new();
    let mut string = |s: &str| -> u32 {
        strings.push(cstring(s));
        (strings.len() - 1) as u32
    };
    let first = if first == u64::MAX { 0 } else { first };
    let machine = string("machine");
    let node_class = string("node");
    let empty = string("");
    let host_name = string(hosts.first().map_or("host", |h| h.as_str()));
    let rank_names: Vec<u32> = run
        .rank_files
        .iter()
        .map(|(r, _)| string(&format!("rank {r}")))
        .collect();
    let loc_names: Vec<(u64, u32)> = locations
        .keys()
        .map(|&l| {
            (
                l,
                string(&format!("rank {} thread {}", l >> 16, l & 0xffff)),
            )
        })
        .collect();
    // Definitions go in id order (OTF2 readers warn otherwise).
    let mut by_id: Vec<(&String, &u32)> = regions.iter().collect();
    by_id.sort_by_key(|(_, &id)| id);
    let region_names: Vec<(u32, u32)> = by_id.into_iter().map(|(n, &id)| (id, string(n))).collect();
    let world = string("MPI_COMM_WORLD");
    let region_roles: HashMap<u32, u8> = regions.iter().map(|(n, &id)| (id, role(n))).collect();
    // SAFETY: every string id written refers to a string written first; lists live across
    // the calls that read them.
    unsafe {
        a.check(
            ffi::OTF2_GlobalDefWriter_WriteClockProperties(
                g,
                1_000_000_000,
                first,
                last.saturating_sub(first),
                ffi::UNDEFINED_U64,
            ),
            "clock",
        )?;
        for (i, s) in strings.iter().enumerate() {
            a.check(
                ffi::OTF2_GlobalDefWriter_WriteString(g, i as u32, s.as_ptr() as *const c_char),
                "string",
            )?;
        }
        a.check(
            ffi::OTF2_GlobalDefWriter_WriteSystemTreeNode(
                g,
                0,
                machine,
                machine,
                ffi::UNDEFINED_U32,
            ),
            "machine",
        )?;
        a.check(
            ffi::OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1, host_name, node_class, 0),
            "node",
        )?;
        for (i, (rank, _)) in run.rank_files.iter().enumerate() {
            a.check(
                ffi::OTF2_GlobalDefWriter_WriteLocationGroup(
                    g,
                    *rank,
                    rank_names[i],
                    ffi::LOCATION_GROUP_PROCESS,
                    1,
                    ffi::UNDEFINED_U32,
                ),
                "process",
            )?;
        }
        for &(loc, name) in &loc_names {
            a.check(
                ffi::OTF2_GlobalDefWriter_WriteLocation(
                    g,
                    loc,
                    name,
                    ffi::LOCATION_CPU_THREAD,
                    locations[&loc],
                    (loc >> 16) as u32,
                ),
                "location",
            )?;
        }
        for &(id, name) in &region_names {
            a.check(
                ffi::OTF2_GlobalDefWriter_WriteRegion(
                    g,
                    id,
                    name,
                    name,
                    empty,
                    region_roles[&id],
                    ffi::PARADIGM_MPI,
                    0,
                    empty,
                    0,
                    0,
                ),
                "region",
            )?;
        }
        // MPI_COMM_WORLD: its ranks are the ranks' main-thread locations.
        let mains: Vec<u64> = run
            .rank_files
            .iter()
            .map(|(r, _)| location(*r, 0))
            .collect();
        let ranks: Vec<u64> = (0..mains.len() as u64).collect();
        a.check(
            ffi::OTF2_GlobalDefWriter_WriteGroup(
                g,
                0,
                empty,
                ffi::GROUP_COMM_LOCATIONS,
                ffi::PARADIGM_MPI,
                0,
                mains.len() as u32,
                mains.as_ptr(),
            ),
            "locations group",
        )?;
        a.check(
            ffi::OTF2_GlobalDefWriter_WriteGroup(
                g,
                1,
                empty,
                ffi::GROUP_COMM_GROUP,
                ffi::PARADIGM_MPI,
                0,
                ranks.len() as u32,
                ranks.as_ptr(),
            ),
            "world group",
        )?;
        a.check(
            ffi::OTF2_GlobalDefWriter_WriteComm(g, 0, world, 1, ffi::UNDEFINED_U32, 0),
            "world",
        )?;
    }
    sum.locations = locations.len() as u32;
    drop(a);
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_roles() {
        assert_eq!(location(3, 1), (3 << 16) | 1);
        assert_eq!(role("MPI_Barrier"), ffi::ROLE_BARRIER);
        assert_eq!(role("MPI_Allreduce"), ffi::ROLE_COLL_ALL2ALL);
        assert_eq!(role("MPI_Isend"), ffi::ROLE_POINT2POINT);
        assert_eq!(role("MPI_Comm_rank"), ffi::ROLE_FUNCTION);
    }
}
