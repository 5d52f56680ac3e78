//! OTF2 archives (Score-P's format, read by Vampir, Scalasca, `otf2-print`), written with
//! Debian's libotf2 (`libopen-trace-format2-10`, OTF2 3.0), opened at run time (`ffi.rs`):
//! without it, this export alone fails, with a message that says what to install.
//!
//! One location group (process) per rank, one location per thread that made MPI calls, one
//! region per MPI function (role: point-to-point, barrier, collective or function; paradigm
//! MPI). Each call is an `Enter` and a `Leave`; each point-to-point message paired by
//! `mpiscope_analyze::messages` is an `MpiSend` inside the send call and an `MpiRecv` inside
//! the call that completed the receive. Messages are written on `MPI_COMM_WORLD` with world
//! ranks, whatever communicator carried them. Timestamps are the trace's nanoseconds.
//! Ranks are written one after the other; each rank's event writers are closed before the
//! next rank is read, so memory does not grow with the trace.
//!
//! The archive is written in the order OTF2 requires (`write_archive`): the events of
//! every location first (which also numbers the regions, in order of first call, and counts
//! each location's events), then each location's local definitions (none: every id is
//! global), then the global definitions, whose string table is built first so that every
//! definition refers to strings already written. The C interface is declared in
//! `ffi.rs`; its handles are wrapped here (`Archive`, `EvtWriter`, `GlobalDefs`) so
//! that the steps themselves are safe code.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, CString};
use std::path::Path;

use mpiscope_analyze::messages::{Item, RankWalk};
use mpiscope_mpispec::Family;
use mpiscope_trace::RunDir;

use crate::ExportError;

mod ffi;

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
    if Family::of(function) == Family::Barrier {
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
    lib: &'static ffi::Otf2,
    ptr: *mut ffi::OTF2_Archive,
    out: std::path::PathBuf,
}

impl Archive {
    /// Opens the archive `traces` in `dir` for writing, with mpiscope as its creator and
    /// its event files open; errors name `out`.
    fn open(lib: &'static ffi::Otf2, dir: &Path, out: &Path) -> Result<Archive, ExportError> {
        let path = cstring(&dir.display().to_string());
        let name = cstring("traces");
        // SAFETY: valid C strings; the returned archive is owned by `Archive`.
        let ptr = unsafe {
            (lib.OTF2_Archive_Open)(
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
            return Err(write_error(out, "OTF2_Archive_Open failed"));
        }
        let a = Archive {
            lib,
            ptr,
            out: out.to_path_buf(),
        };
        let creator = cstring(crate::outputs::CREATOR);
        // SAFETY: the callbacks are static; the archive is open for writing; OTF2 copies the
        // creator string.
        unsafe {
            a.check(
                (lib.OTF2_Archive_SetCreator)(a.ptr, creator.as_ptr()),
                "creator",
            )?;
            a.check(
                (lib.OTF2_Archive_SetFlushCallbacks)(
                    a.ptr,
                    &ffi::FLUSH_CALLBACKS,
                    std::ptr::null_mut(),
                ),
                "flush callbacks",
            )?;
            a.check(
                (lib.OTF2_Archive_SetSerialCollectiveCallbacks)(a.ptr),
                "collective callbacks",
            )?;
            a.check(
                (lib.OTF2_Archive_OpenEvtFiles)(a.ptr),
                "opening event files",
            )?;
        }
        Ok(a)
    }

    /// The event writer of location `loc` (the event files must be open).
    fn evt_writer(&self, loc: u64) -> Result<EvtWriter, ExportError> {
        let lib = self.lib;
        // SAFETY: the archive is open; the writer is closed by `close_evt_writer`.
        let w = unsafe { (lib.OTF2_Archive_GetEvtWriter)(self.ptr, loc) };
        if w.is_null() {
            return Err(write_error(&self.out, "OTF2_Archive_GetEvtWriter failed"));
        }
        Ok(EvtWriter(w))
    }

    /// Closes an event writer of this archive.
    fn close_evt_writer(&self, w: EvtWriter) -> Result<(), ExportError> {
        let lib = self.lib;
        // SAFETY: `w` is a live writer of this archive, consumed here: closed once.
        unsafe {
            self.check(
                (lib.OTF2_Archive_CloseEvtWriter)(self.ptr, w.0),
                "closing a writer",
            )
        }
    }

    /// The global definition writer (after the local definitions are closed).
    fn global_defs(&self) -> Result<GlobalDefs<'_>, ExportError> {
        let lib = self.lib;
        // SAFETY: the global writer belongs to the archive, which outlives its use.
        let g = unsafe { (lib.OTF2_Archive_GetGlobalDefWriter)(self.ptr) };
        if g.is_null() {
            return Err(write_error(
                &self.out,
                "OTF2_Archive_GetGlobalDefWriter failed",
            ));
        }
        Ok(GlobalDefs { a: self, g })
    }

    fn check(&self, code: ffi::OTF2_ErrorCode, what: &str) -> Result<(), ExportError> {
        if code == 0 {
            return Ok(());
        }
        let lib = self.lib;
        // SAFETY: OTF2_Error_GetName returns a static string for any code.
        let name = unsafe { std::ffi::CStr::from_ptr((lib.OTF2_Error_GetName)(code)) };
        Err(ExportError::Write {
            path: self.out.clone(),
            source: std::io::Error::other(format!("{what}: {}", name.to_string_lossy())),
        })
    }
}

/// A live event writer of an [`Archive`] (non-null, not yet closed).
struct EvtWriter(*mut ffi::OTF2_EvtWriter);

impl Drop for Archive {
    fn drop(&mut self) {
        let lib = self.lib;
        // SAFETY: `ptr` came from OTF2_Archive_Open and is closed exactly once.
        unsafe {
            (lib.OTF2_Archive_Close)(self.ptr);
        }
    }
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// A failure of libotf2 that returns no error code, as an error naming `out`.
fn write_error(out: &Path, what: &str) -> ExportError {
    ExportError::Write {
        path: out.to_path_buf(),
        source: std::io::Error::other(what.to_owned()),
    }
}

/// `--format otf2`.
pub const FORMAT: crate::Registration = crate::Registration {
    name: "otf2",
    description: "the OTF2 archive OUT/traces.otf2 (Vampir, Scalasca)",
    export: |run, out, options| {
        let s = export_otf2(run, out, options.force)?;
        Ok(crate::Written {
            message: format!(
                "wrote {} events ({} sends, {} receives) of {} ranks, {} locations to {}/traces.otf2",
                s.events,
                s.sends,
                s.receives,
                s.ranks,
                s.locations,
                out.display()
            ),
            notes: Vec::new(),
        })
    },
};

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
    // Before anything is made in `out`: without libotf2 the export leaves no trace.
    let lib = ffi::otf2()?;
    let staging = crate::outputs::staging(out)?;
    let sum = write_archive(lib, run, staging.path(), out)?;
    crate::outputs::put_in_place(staging, out)?;
    Ok(sum)
}

/// What the events showed, which the definitions describe.
struct Seen {
    /// Region id of each function name, numbered in order of first call.
    regions: BTreeMap<String, u32>,
    /// Events written per location.
    locations: BTreeMap<u64, u64>,
    /// Host of each rank, in rank file order.
    hosts: Vec<String>,
    /// Earliest entry and latest exit (ns).
    first: u64,
    last: u64,
}

/// Writes the archive `traces` into `dir`, in OTF2's order: the events, rank by rank, then
/// the (empty) local definitions of every location, then the global definitions. Errors
/// name `out`.
fn write_archive(
    lib: &'static ffi::Otf2,
    run: &RunDir,
    dir: &Path,
    out: &Path,
) -> Result<Otf2Summary, ExportError> {
    let a = Archive::open(lib, dir, out)?;
    let mut sum = Otf2Summary::default();
    let mut seen = Seen {
        regions: BTreeMap::new(),
        locations: BTreeMap::new(),
        hosts: Vec::new(),
        first: u64::MAX,
        last: 0,
    };
    for (rank, file) in &run.rank_files {
        write_rank_events(&a, *rank, file, &mut seen, &mut sum)?;
        sum.ranks += 1;
    }
    close_local_definitions(&a, &seen)?;
    write_global_definitions(&a, run, &seen)?;
    sum.locations = seen.locations.len() as u32;
    drop(a);
    Ok(sum)
}

/// Writes the events of `rank` (its trace `file`): each call's `Enter` and `Leave`, and
/// the message events between; one event writer per thread, closed at the end.
fn write_rank_events(
    a: &Archive,
    rank: u32,
    file: &Path,
    seen: &mut Seen,
    sum: &mut Otf2Summary,
) -> Result<(), ExportError> {
    let mut reader = mpiscope_trace::RankReader::open(file)?;
    seen.hosts
        .push(reader.info().map(|i| i.host.clone()).unwrap_or_default());
    let mut walk = RankWalk::new(rank);
    let mut writers: HashMap<u16, EvtWriter> = HashMap::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut items = Vec::new();
    while let Some(ev) = reader.next_event() {
        let name = names
            .entry(ev.call)
            .or_insert_with(|| reader.tables().call_name(ev.call).into_owned())
            .clone();
        let next = seen.regions.len() as u32;
        let region = *seen.regions.entry(name.clone()).or_insert(next);
        let loc = location(rank, ev.thread);
        let w = match writers.entry(ev.thread) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(a.evt_writer(loc)?),
        };
        let exit = ev.t_exit.max(ev.t_enter);
        seen.first = seen.first.min(ev.t_enter);
        seen.last = seen.last.max(exit);
        items.clear();
        walk.items(&reader, &name, &ev, &mut items);
        let call = Call {
            enter: ev.t_enter,
            exit,
            region,
        };
        let n = write_call(a, w, &call, &items, sum)?;
        *seen.locations.entry(loc).or_insert(0) += n;
        sum.events += n;
    }
    for (_, w) in writers {
        a.close_evt_writer(w)?;
    }
    Ok(())
}

/// One call as OTF2 events: its region and times.
struct Call {
    enter: u64,
    /// Not before `enter`.
    exit: u64,
    region: u32,
}

/// Writes one call: `Enter`, an `MpiSend` per message it sent (at entry), an `MpiRecv` per
/// message it completed (at exit), `Leave`. Returns the number of events written.
fn write_call(
    a: &Archive,
    w: &EvtWriter,
    call: &Call,
    items: &[Item],
    sum: &mut Otf2Summary,
) -> Result<u64, ExportError> {
    let mut n = 2u64;
    let (lib, w) = (a.lib, w.0);
    // SAFETY: `w` is a live writer of `a`; timestamps are non-decreasing within the call
    // (enter <= message events <= exit).
    unsafe {
        a.check(
            (lib.OTF2_EvtWriter_Enter)(w, std::ptr::null_mut(), call.enter, call.region),
            "enter",
        )?;
        for it in items {
            match it {
                Item::Send { key, bytes, .. } => {
                    a.check(
                        (lib.OTF2_EvtWriter_MpiSend)(
                            w,
                            std::ptr::null_mut(),
                            call.enter,
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
                        (lib.OTF2_EvtWriter_MpiRecv)(
                            w,
                            std::ptr::null_mut(),
                            call.exit,
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
            (lib.OTF2_EvtWriter_Leave)(w, std::ptr::null_mut(), call.exit, call.region),
            "leave",
        )?;
    }
    Ok(n)
}

/// Closes the event files and writes every location's (empty) local definitions.
fn close_local_definitions(a: &Archive, seen: &Seen) -> Result<(), ExportError> {
    let lib = a.lib;
    // SAFETY: the archive is open; every def writer is closed right after it is made.
    unsafe {
        a.check(
            (lib.OTF2_Archive_CloseEvtFiles)(a.ptr),
            "closing event files",
        )?;
        a.check(
            (lib.OTF2_Archive_OpenDefFiles)(a.ptr),
            "opening definition files",
        )?;
        for &loc in seen.locations.keys() {
            let d = (lib.OTF2_Archive_GetDefWriter)(a.ptr, loc);
            if !d.is_null() {
                a.check(
                    (lib.OTF2_Archive_CloseDefWriter)(a.ptr, d),
                    "closing a definition writer",
                )?;
            }
        }
        a.check(
            (lib.OTF2_Archive_CloseDefFiles)(a.ptr),
            "closing definition files",
        )?;
    }
    Ok(())
}

/// The string table of the global definitions: a string's id is its index.
#[derive(Default)]
struct Strings(Vec<CString>);

impl Strings {
    /// Adds `s`; returns its id.
    fn add(&mut self, s: &str) -> u32 {
        self.0.push(cstring(s));
        (self.0.len() - 1) as u32
    }
}

/// The string ids the global definitions refer to.
struct Names {
    machine: u32,
    node_class: u32,
    empty: u32,
    host: u32,
    /// One per rank file, in order.
    ranks: Vec<u32>,
    /// (location, name), in location order.
    locations: Vec<(u64, u32)>,
    /// (region id, name), in region id order.
    regions: Vec<(u32, u32)>,
    world: u32,
}

impl Names {
    /// Every string of the definitions, in the order of their ids.
    fn of(run: &RunDir, seen: &Seen) -> (Strings, Names) {
        let mut strings = Strings::default();
        let machine = strings.add("machine");
        let node_class = strings.add("node");
        let empty = strings.add("");
        let host = strings.add(seen.hosts.first().map_or("host", |h| h.as_str()));
        let ranks = run
            .rank_files
            .iter()
            .map(|(r, _)| strings.add(&format!("rank {r}")))
            .collect();
        let locations = seen
            .locations
            .keys()
            .map(|&l| {
                let name = format!("rank {} thread {}", l >> 16, l & 0xffff);
                (l, strings.add(&name))
            })
            .collect();
        // Definitions go in id order (OTF2 readers warn otherwise).
        let mut by_id: Vec<(&String, &u32)> = seen.regions.iter().collect();
        by_id.sort_by_key(|(_, &id)| id);
        let regions = by_id
            .into_iter()
            .map(|(n, &id)| (id, strings.add(n)))
            .collect();
        let world = strings.add("MPI_COMM_WORLD");
        let names = Names {
            machine,
            node_class,
            empty,
            host,
            ranks,
            locations,
            regions,
            world,
        };
        (strings, names)
    }
}

/// Writes the global definitions: clock, strings, the system tree (one node), a process
/// per rank, a location per thread, a region per function, and `MPI_COMM_WORLD`.
fn write_global_definitions(a: &Archive, run: &RunDir, seen: &Seen) -> Result<(), ExportError> {
    let g = a.global_defs()?;
    let (strings, names) = Names::of(run, seen);
    g.clock_and_strings(seen, &strings)?;
    g.system(run, seen, &names)?;
    g.regions(seen, &names)?;
    g.world(run, &names)
}

/// The global definition writer of an archive (non-null; the archive outlives it). Every
/// string id its methods write refers to a string [`GlobalDefs::clock_and_strings`]
/// wrote first.
struct GlobalDefs<'a> {
    a: &'a Archive,
    g: *mut ffi::OTF2_GlobalDefWriter,
}

impl GlobalDefs<'_> {
    /// The clock (ns, from the first event to the last) and the string table.
    fn clock_and_strings(&self, seen: &Seen, strings: &Strings) -> Result<(), ExportError> {
        let (a, g, lib) = (self.a, self.g, self.a.lib);
        let first = if seen.first == u64::MAX {
            0
        } else {
            seen.first
        };
        // SAFETY: `g` is the archive's live global writer; the strings outlive the calls.
        unsafe {
            a.check(
                (lib.OTF2_GlobalDefWriter_WriteClockProperties)(
                    g,
                    1_000_000_000,
                    first,
                    seen.last.saturating_sub(first),
                    ffi::UNDEFINED_U64,
                ),
                "clock",
            )?;
            for (i, s) in strings.0.iter().enumerate() {
                a.check(
                    (lib.OTF2_GlobalDefWriter_WriteString)(
                        g,
                        i as u32,
                        s.as_ptr() as *const c_char,
                    ),
                    "string",
                )?;
            }
        }
        Ok(())
    }

    /// The system tree (a machine and one node), a process per rank, a location per thread.
    fn system(&self, run: &RunDir, seen: &Seen, names: &Names) -> Result<(), ExportError> {
        let (a, g, lib) = (self.a, self.g, self.a.lib);
        // SAFETY: `g` is the archive's live global writer; the string ids are written.
        unsafe {
            a.check(
                (lib.OTF2_GlobalDefWriter_WriteSystemTreeNode)(
                    g,
                    0,
                    names.machine,
                    names.machine,
                    ffi::UNDEFINED_U32,
                ),
                "machine",
            )?;
            a.check(
                (lib.OTF2_GlobalDefWriter_WriteSystemTreeNode)(
                    g,
                    1,
                    names.host,
                    names.node_class,
                    0,
                ),
                "node",
            )?;
            for (i, (rank, _)) in run.rank_files.iter().enumerate() {
                a.check(
                    (lib.OTF2_GlobalDefWriter_WriteLocationGroup)(
                        g,
                        *rank,
                        names.ranks[i],
                        ffi::LOCATION_GROUP_PROCESS,
                        1,
                        ffi::UNDEFINED_U32,
                    ),
                    "process",
                )?;
            }
            for &(loc, name) in &names.locations {
                a.check(
                    (lib.OTF2_GlobalDefWriter_WriteLocation)(
                        g,
                        loc,
                        name,
                        ffi::LOCATION_CPU_THREAD,
                        seen.locations[&loc],
                        (loc >> 16) as u32,
                    ),
                    "location",
                )?;
            }
        }
        Ok(())
    }

    /// A region per MPI function, with its role.
    fn regions(&self, seen: &Seen, names: &Names) -> Result<(), ExportError> {
        let (a, g, lib) = (self.a, self.g, self.a.lib);
        let roles: HashMap<u32, u8> = seen.regions.iter().map(|(n, &id)| (id, role(n))).collect();
        for &(id, name) in &names.regions {
            // SAFETY: `g` is the archive's live global writer; the string ids are written.
            unsafe {
                a.check(
                    (lib.OTF2_GlobalDefWriter_WriteRegion)(
                        g,
                        id,
                        name,
                        name,
                        names.empty,
                        roles[&id],
                        ffi::PARADIGM_MPI,
                        0,
                        names.empty,
                        0,
                        0,
                    ),
                    "region",
                )?;
            }
        }
        Ok(())
    }

    /// `MPI_COMM_WORLD`: its ranks are the ranks' main-thread locations.
    fn world(&self, run: &RunDir, names: &Names) -> Result<(), ExportError> {
        let (a, g, lib) = (self.a, self.g, self.a.lib);
        let mains: Vec<u64> = run
            .rank_files
            .iter()
            .map(|(r, _)| location(*r, 0))
            .collect();
        let ranks: Vec<u64> = (0..mains.len() as u64).collect();
        // SAFETY: `g` is the archive's live global writer; the string ids are written; the
        // lists outlive the calls that read them.
        unsafe {
            a.check(
                (lib.OTF2_GlobalDefWriter_WriteGroup)(
                    g,
                    0,
                    names.empty,
                    ffi::GROUP_COMM_LOCATIONS,
                    ffi::PARADIGM_MPI,
                    0,
                    mains.len() as u32,
                    mains.as_ptr(),
                ),
                "locations group",
            )?;
            a.check(
                (lib.OTF2_GlobalDefWriter_WriteGroup)(
                    g,
                    1,
                    names.empty,
                    ffi::GROUP_COMM_GROUP,
                    ffi::PARADIGM_MPI,
                    0,
                    ranks.len() as u32,
                    ranks.as_ptr(),
                ),
                "world group",
            )?;
            a.check(
                (lib.OTF2_GlobalDefWriter_WriteComm)(g, 0, names.world, 1, ffi::UNDEFINED_U32, 0),
                "world",
            )?;
        }
        Ok(())
    }
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
