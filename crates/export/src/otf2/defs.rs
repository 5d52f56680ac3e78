//! The global definitions, written after every event (they describe what the events
//! showed): the clock, the string table (built first, so that every definition refers to
//! strings already written), the system tree, a process per rank, a location per thread,
//! a region per MPI function, and every communicator as a group of ranks.

use std::ffi::{c_char, CString};

use mpiscope_trace::RunDir;

use super::archive::{cstring, Archive, GlobalDefs};
use super::seen::{location, rank_thread, RegionKey, Seen};
use super::{collective, ffi};
use crate::ExportError;

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

/// A region's definition: its id, role, line and string ids.
struct RegionNames {
    id: u32,
    name: u32,
    role: u8,
    description: u32,
    /// The calling source file, when the call site resolved.
    file: Option<u32>,
    /// Its line (0 when unknown).
    line: u32,
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
    regions: Vec<RegionNames>,
    /// Name of each communicator, by global id.
    comms: Vec<u32>,
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
                let (rank, thread) = rank_thread(l);
                let name = format!("rank {rank} thread {thread}");
                (l, strings.add(&name))
            })
            .collect();
        // Definitions go in id order (OTF2 readers warn otherwise).
        let mut by_id: Vec<(&RegionKey, &u32)> = seen.regions.iter().collect();
        by_id.sort_by_key(|(_, &id)| id);
        let regions = by_id
            .into_iter()
            .map(|(k, &id)| {
                let name = strings.add(&k.function);
                let (description, file, line) = match &k.site {
                    Some((file, line)) => {
                        let short = file.rsplit('/').next().unwrap_or(file);
                        let d = strings.add(&format!("{} called at {short}:{line}", k.function));
                        (d, Some(strings.add(file)), *line)
                    }
                    None => (empty, None, 0),
                };
                RegionNames {
                    id,
                    name,
                    role: collective::role(&k.function),
                    description,
                    file,
                    line,
                }
            })
            .collect();
        let comms = (0..seen.comms.list.len() as u32)
            .map(|id| strings.add(&seen.comms.name(id)))
            .collect();
        let names = Names {
            machine,
            node_class,
            empty,
            host,
            ranks,
            locations,
            regions,
            comms,
        };
        (strings, names)
    }
}

/// Writes the global definitions: clock, strings, the system tree (one node), a process
/// per rank, a location per thread, a region per function, and `MPI_COMM_WORLD`.
pub(super) fn write_global_definitions(
    a: &Archive,
    run: &RunDir,
    seen: &Seen,
) -> Result<(), ExportError> {
    let g = a.global_defs()?;
    let (strings, names) = Names::of(run, seen);
    g.clock_and_strings(seen, &strings)?;
    g.system(run, seen, &names)?;
    g.regions(&names)?;
    g.comms(run, seen, &names)
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
                        rank_thread(loc).0,
                    ),
                    "location",
                )?;
            }
        }
        Ok(())
    }

    /// A region per MPI function, with its role.
    fn regions(&self, names: &Names) -> Result<(), ExportError> {
        let (a, g, lib) = (self.a, self.g, self.a.lib);
        for r in &names.regions {
            // SAFETY: `g` is the archive's live global writer; the string ids are written.
            unsafe {
                a.check(
                    (lib.OTF2_GlobalDefWriter_WriteRegion)(
                        g,
                        r.id,
                        r.name,
                        r.name,
                        r.description,
                        r.role,
                        ffi::PARADIGM_MPI,
                        0,
                        r.file.unwrap_or(ffi::UNDEFINED_U32),
                        r.line,
                        r.line,
                    ),
                    "region",
                )?;
            }
        }
        Ok(())
    }

    /// The ranks' main-thread locations (group 0), then per communicator a group of its
    /// members (group id + 1) and the communicator; an intercommunicator has its second
    /// group after all of those.
    fn comms(&self, run: &RunDir, seen: &Seen, names: &Names) -> Result<(), ExportError> {
        let (a, g, lib) = (self.a, self.g, self.a.lib);
        let mains: Vec<u64> = run
            .rank_files
            .iter()
            .map(|(r, _)| location(*r, 0))
            .collect();
        let ranks: Vec<u32> = run.rank_files.iter().map(|(r, _)| *r).collect();
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
            // Every group before any communicator, in the order of their ids: the
            // communicators' (id + 1), then the second groups of intercommunicators.
            let remotes: Vec<(u32, Vec<u64>)> = (0..names.comms.len() as u32)
                .filter_map(|id| Some((id, seen.comms.remote_members(id, &ranks)?)))
                .collect();
            let first = names.comms.len() as u32 + 1;
            let groups = (0..names.comms.len() as u32)
                .map(|id| (id + 1, id, seen.comms.members(id, &ranks)))
                .chain(
                    remotes
                        .iter()
                        .enumerate()
                        .map(|(k, (id, m))| (first + k as u32, *id, m.clone())),
                );
            for (group, id, members) in groups {
                a.check(
                    (lib.OTF2_GlobalDefWriter_WriteGroup)(
                        g,
                        group,
                        names.comms[id as usize],
                        ffi::GROUP_COMM_GROUP,
                        ffi::PARADIGM_MPI,
                        0,
                        members.len() as u32,
                        members.as_ptr(),
                    ),
                    "communicator group",
                )?;
            }
            for (id, &name) in names.comms.iter().enumerate() {
                let id = id as u32;
                let code = match remotes.iter().position(|(r, _)| *r == id) {
                    Some(k) => (lib.OTF2_GlobalDefWriter_WriteInterComm)(
                        g,
                        id,
                        name,
                        id + 1,
                        first + k as u32,
                        ffi::UNDEFINED_U32,
                        0,
                    ),
                    None => (lib.OTF2_GlobalDefWriter_WriteComm)(
                        g,
                        id,
                        name,
                        id + 1,
                        ffi::UNDEFINED_U32,
                        0,
                    ),
                };
                a.check(code, "communicator")?;
            }
        }
        Ok(())
    }
}
