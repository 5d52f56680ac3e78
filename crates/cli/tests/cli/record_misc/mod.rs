//! End-to-end tests of the recorder under real `mpirun`s, a module per topic: Fortran
//! bindings (`fortran`), the set of wrapped symbols (`symbols`), a rank killed mid-run
//! (`killed_rank`), bad options and damaged traces (`bad_inputs`), sampling / filters /
//! window / `MPI_Pcontrol` (`sampling`), user plugins (`plugin`), and a real application,
//! Debian's `hpcc` (`hpcc`).
//!
//! Test programs live in `tests/programs/fortran` and `tests/programs/misc`. This file holds
//! the helpers the topics share: reading events and trailers back, running `mpiscope` and
//! commands with a time limit, and the `misc/probe_loop.c` run of `sampling` and `plugin`.

mod bad_inputs;
mod fortran;
mod hpcc;
mod killed_rank;
mod plugin;
mod sampling;
mod symbols;

use crate::common;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Mpi, Run};
use mpiscope_trace::{CommKind, Event, RunDir, Slot, Tables, Trailer};

/// Events of one function, in file order.
fn of<'a>(evs: &'a [(String, Event)], name: &str) -> Vec<&'a Event> {
    evs.iter()
        .filter(|(n, _)| n == name)
        .map(|(_, e)| e)
        .collect()
}

/// Number of events per function.
fn counts(evs: &[(String, Event)]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (n, _) in evs {
        *m.entry(n.clone()).or_insert(0) += 1;
    }
    m
}

/// A slot that must be present.
fn slot(ev: &Event, s: Slot) -> i64 {
    ev.args
        .get(s)
        .unwrap_or_else(|| panic!("slot {} missing in {ev:?}", s.name()))
}

/// The id of the world communicator in a rank's tables.
fn world_id(t: &Tables) -> i64 {
    let ids: Vec<u32> = t
        .comms
        .values()
        .filter(|c| c.kind == CommKind::World)
        .map(|c| c.id)
        .collect();
    assert_eq!(
        ids.len(),
        1,
        "expected one world communicator definition: {:?}",
        t.comms
    );
    i64::from(ids[0])
}

/// The trailer of a rank (after reading all its events).
fn trailer(run: &Path, rank: u32) -> Option<Trailer> {
    let dir = RunDir::open(run).unwrap();
    let mut r = dir.open_rank(rank).unwrap();
    while r.next_event().is_some() {}
    r.trailer().cloned()
}

/// Every event the trailer says was recorded is in the file, and nothing was lost:
/// per call id, trailer `recorded` == events of that id; trailer `events` == events read.
fn assert_trailer_matches(run: &Path, rank: u32, evs: &[(String, Event)], tables: &Tables) {
    let t = trailer(run, rank)
        .unwrap_or_else(|| panic!("rank {rank}: no trailer in {}", run.display()));
    let mut by_id: BTreeMap<u32, u64> = BTreeMap::new();
    for (_, e) in evs {
        *by_id.entry(e.call).or_insert(0) += 1;
    }
    check_trailer(rank, &t, &by_id, evs.len() as u64, tables);
}

/// See [`assert_trailer_matches`]: `by_id` counts the events read per call id.
fn check_trailer(rank: u32, t: &Trailer, by_id: &BTreeMap<u32, u64>, read: u64, tables: &Tables) {
    for c in &t.calls {
        let got = by_id.get(&c.id).copied().unwrap_or(0);
        assert_eq!(
            got, c.recorded,
            "rank {rank}: the trailer says {} {}(id {}) calls were recorded, the file holds {got} \
             such events (trailer: {} events written, {} lost; {read} events read)",
            c.recorded, c.name, c.id, t.events, t.lost,
        );
    }
    for (id, n) in by_id {
        let total = t
            .calls
            .iter()
            .find(|c| c.id == *id)
            .map(|c| c.recorded)
            .unwrap_or(0);
        assert_eq!(
            total,
            *n,
            "rank {rank}: {n} events of {} but the trailer says {total}",
            tables.call_name(*id)
        );
    }
    assert_eq!(t.lost, 0, "rank {rank}: trailer reports lost events");
    assert_eq!(
        t.events, read,
        "rank {rank}: trailer event count differs from the events read"
    );
}

/// Streams the events of a rank through `f` (without keeping them); checks the trailer
/// against them and returns it.
fn scan_rank(run: &Path, rank: u32, mut f: impl FnMut(&str, &Event)) -> Trailer {
    let dir = RunDir::open(run).unwrap();
    let mut r = dir.open_rank(rank).unwrap();
    let mut by_id: BTreeMap<u32, u64> = BTreeMap::new();
    let mut read = 0;
    while let Some(e) = r.next_event() {
        read += 1;
        *by_id.entry(e.call).or_insert(0) += 1;
        f(&r.tables().call_name(e.call), &e);
    }
    let t = r.trailer().cloned().unwrap_or_else(|| {
        panic!(
            "rank {rank}: no trailer ({:?})",
            r.stopped().map(|e| e.to_string())
        )
    });
    check_trailer(rank, &t, &by_id, read, r.tables());
    t
}

/// `mpiscope <args>` with its output.
fn mpiscope(args: &[&str]) -> Run {
    let o = Command::new(common::mpiscope())
        .args(args)
        .output()
        .expect("run mpiscope");
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The `per_rank` entry of rank `r` in a JSON report.
fn rank_stats(j: &serde_json::Value, r: u64) -> &serde_json::Value {
    j["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["rank"] == r)
        .unwrap_or_else(|| panic!("rank {r} missing from the report: {j}"))
}

/// A command's result never shows a panic (Rust exits with 101 on a panic).
fn assert_no_panic(what: &str, r: &Run) {
    assert!(
        r.code != Some(101) && r.code.is_some() && !r.stderr.contains("panicked"),
        "{what} panicked or crashed (exit {:?}):\n{}",
        r.code,
        r.stderr
    );
}

/// Runs a command in its own process group with stdout and stderr going to files in `dir`;
/// kills the whole group (by its id) when it takes longer than `limit`.
fn run_limited(mut c: Command, dir: &Path, tag: &str, limit: Duration) -> (Run, bool) {
    use std::os::unix::process::CommandExt;
    let out = dir.join(format!("{tag}.stdout"));
    let err = dir.join(format!("{tag}.stderr"));
    c.stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .stdin(Stdio::null());
    c.process_group(0);
    let mut child = c.spawn().expect("spawn");
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            timed_out = true;
            kill_group(child.id());
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let run = Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
    };
    (run, timed_out)
}

/// SIGKILL to the process group `pgid` (one we created).
fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .status();
}

/// True while process `pid` exists.
fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `misc/probe_loop.c` on 2 ranks, plain and traced, and checks the outputs agree.
fn probe_run(mpi: Mpi, args: &[&str], options: &[&str], tmp: &Path) -> PathBuf {
    let exe = common::build(mpi, "misc/probe_loop.c", &[]);
    let plain = common::run_plain(mpi, 2, &exe, args);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    let sub = tmp.join(options.join("_").replace(['/', '=', ' '], "-"));
    std::fs::create_dir_all(&sub).unwrap();
    let (run, trace) = common::run_traced(mpi, 2, &exe, args, options, &sub);
    assert_eq!(
        run.code,
        Some(0),
        "traced run with {options:?} failed:\n{}",
        run.stderr
    );
    assert_eq!(
        run.stdout, plain.stdout,
        "traced run with {options:?}: output differs"
    );
    trace
}
