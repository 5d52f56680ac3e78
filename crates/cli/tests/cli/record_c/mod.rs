//! End-to-end tests of the recorder with a real `mpirun`: our own C MPI programs
//! (`tests/programs/c/*.c`) run with and without `mpiscope trace`, under Open MPI and MPICH.
//!
//! Each test checks that tracing does not change what the program prints, then walks the
//! trace of every rank event by event against what the program does (derived here by hand
//! from the program's logic, which each program describes in its header comment): the call
//! names in order, every recorded slot (exactly the expected set, no more, no less), the
//! lists, request ids tying completions to the calls that started them, communicator
//! definitions, thread indices, and the `mpiscope report --json` counts.
//!
//! Failures are collected, not raised at the first one, so that one run shows every
//! discrepancy; each names the rank, thread, phase of the program, event index and the
//! recorded event.
//!
//! Comments marked `Regression` point at assertions that caught recorder bugs, now fixed.
//!
//! This file holds what every program's test uses (expected arguments, running a program
//! plain and traced, walking a trace); one module per program holds what it expects.

mod collectives;
mod comms;
mod p2p_blocking;
mod p2p_nonblocking;
mod threads;

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::common::{Mpi, RankEvents};
use mpiscope_trace::{
    CommKind, Event, ListKind, Slot, Tables, NO_VALUE, PEER_ANY, PEER_NULL, PEER_ROOT, TAG_ANY,
};

/// In an expectation: the slot must be present, with any value.
const ANY: i64 = i64::MIN + 1;
/// Id of the world communicator.
const WORLD: i64 = 0;
/// `MPI_THREAD_MULTIPLE` in both Open MPI and MPICH.
const THREAD_MULTIPLE: i64 = 3;

// ------------------------------------------------------------------ expected arguments

/// Expected fixed arguments of one event: exactly these slots.
#[derive(Clone, Default, Debug)]
struct A(BTreeMap<Slot, i64>);

fn a() -> A {
    A::default()
}

impl A {
    fn s(mut self, slot: Slot, v: i64) -> A {
        self.0.insert(slot, v);
        self
    }
    fn comm(self, c: i64) -> A {
        self.s(Slot::Comm, c)
    }
    /// Peer, tag and communicator of a point-to-point call.
    fn p2p(self, peer: i64, tag: i64, comm: i64) -> A {
        self.s(Slot::Peer, peer).s(Slot::Tag, tag).comm(comm)
    }
    /// The (send) buffer: count, datatype size, bytes.
    fn buf(self, count: i64, size: i64) -> A {
        self.s(Slot::Count, count)
            .s(Slot::DtypeSize, size)
            .s(Slot::Bytes, count * size)
    }
    /// The receive buffer of a combined or collective call.
    fn rbuf(self, count: i64, size: i64) -> A {
        self.s(Slot::RecvCount, count)
            .s(Slot::RecvDtypeSize, size)
            .s(Slot::RecvBytes, count * size)
    }
    /// The receive half of a sendrecv.
    fn from(self, peer: i64, tag: i64) -> A {
        self.s(Slot::RecvPeer, peer).s(Slot::RecvTag, tag)
    }
    /// A decoded status.
    fn st(self, src: i64, tag: i64, bytes: i64) -> A {
        self.s(Slot::StatusSource, src)
            .s(Slot::StatusTag, tag)
            .s(Slot::StatusBytes, bytes)
    }
    fn req(self, id: i64) -> A {
        self.s(Slot::Request, id)
    }
    fn root(self, r: i64) -> A {
        self.s(Slot::Root, r)
    }
    fn op(self, id: i64) -> A {
        self.s(Slot::Op, id)
    }
    fn flag(self, f: i64) -> A {
        self.s(Slot::Flag, f)
    }
    fn n(self, len: i64) -> A {
        self.s(Slot::ArrayLen, len)
    }
}

/// Expected lists of one event: exactly these.
type L = Vec<(ListKind, Vec<i64>)>;

/// A completion: request id and, for a receive, (source, tag, bytes).
type Done = (i64, Option<(i64, i64, i64)>);

/// The `Completions` list of these completions.
fn done(items: &[Done]) -> Vec<i64> {
    let mut v = Vec::new();
    for &(id, st) in items {
        v.push(id);
        match st {
            Some((s, t, b)) => v.extend([s, t, b]),
            None => v.extend([NO_VALUE; 3]),
        }
    }
    v
}

fn show_val(v: i64) -> String {
    if v == NO_VALUE {
        "-".into()
    } else if v == ANY {
        "<any>".into()
    } else {
        v.to_string()
    }
}

/// An event as text, for failure messages.
fn show_event(name: &str, ev: &Event) -> String {
    let mut s = format!("{name}(thread {}", ev.thread);
    for (slot, v) in ev.args.iter() {
        s.push_str(&format!(" {}={}", slot.name(), show_val(v)));
    }
    for l in &ev.lists {
        s.push_str(&format!(
            " {}=[{}]",
            l.kind.name(),
            l.values
                .iter()
                .map(|&v| show_val(v))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    s.push(')');
    s
}

// ------------------------------------------------------------------ running

/// A program run with and without the recorder, and its trace.
struct Traced {
    dir: tempfile::TempDir,
    run: PathBuf,
    mpi: Mpi,
    prog: &'static str,
    np: u32,
    stdout: String,
    ranks: Vec<RankEvents>,
}

/// Builds `tests/programs/c/<prog>.c`, runs it on `np` ranks untraced and traced, checks
/// exit codes and that the traced stdout equals the untraced one, and reads every rank.
fn run_program(mpi: Mpi, prog: &'static str, np: u32) -> Traced {
    let extra: &[&str] = if prog == "threads" {
        &["-pthread"]
    } else {
        &[]
    };
    let exe = common::build(mpi, &format!("c/{prog}.c"), extra);
    let plain = common::run_plain(mpi, np, &exe, &[]);
    assert_eq!(
        plain.code,
        Some(0),
        "{prog} ({}, {np} ranks) failed untraced:\n{}\n{}",
        mpi.name(),
        plain.stdout,
        plain.stderr
    );
    assert!(
        !plain.stdout.contains("ERROR"),
        "{prog} untraced reports errors:\n{}",
        plain.stdout
    );
    assert!(
        plain.stdout.contains(&format!("{prog}: size={np} "))
            || (prog == "threads"
                && plain
                    .stdout
                    .contains("threads: MPI_THREAD_MULTIPLE not provided")),
        "{prog}: unexpected output:\n{}",
        plain.stdout
    );
    let dir = common::tempdir();
    let (traced, run) = common::run_traced(mpi, np, &exe, &[], &[], dir.path());
    assert_eq!(
        traced.code,
        Some(0),
        "{prog} ({}, {np} ranks) failed traced:\n{}\n{}",
        mpi.name(),
        traced.stdout,
        traced.stderr
    );
    assert_eq!(
        traced.stdout, plain.stdout,
        "{prog}: tracing changed the output (stderr: {})",
        traced.stderr
    );
    let ranks = (0..np).map(|r| common::read_rank(&run, r)).collect();
    Traced {
        dir,
        run,
        mpi,
        prog,
        np,
        stdout: plain.stdout,
        ranks,
    }
}

/// Checks that hold for every trace: trailer present, no read error, every call succeeded
/// and was recorded, times sane, calls of one thread in order and not overlapping, the
/// world communicator defined as id 0.
fn generic_checks(t: &Traced, fails: &mut Vec<String>) {
    let ctx = format!("{} {} np{}", t.mpi.name(), t.prog, t.np);
    for (r, re) in t.ranks.iter().enumerate() {
        if !re.complete {
            fails.push(format!("{ctx} rank {r}: no trailer (complete == false)"));
        }
        if let Some(s) = &re.stopped {
            fails.push(format!("{ctx} rank {r}: reading stopped: {s}"));
        }
        match re.tables.comms.get(&0) {
            Some(w) => {
                if w.kind != CommKind::World || w.size != t.np || !w.ranks.is_empty() {
                    fails.push(format!("{ctx} rank {r}: comm 0 is not the world: {w:?}"));
                }
            }
            None => fails.push(format!("{ctx} rank {r}: comm 0 is not defined")),
        }
        let mut last: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
        for (i, (name, ev)) in re.events.iter().enumerate() {
            let e = show_event(name, ev);
            if t.prog != "threads" && ev.thread != 0 {
                fails.push(format!(
                    "{ctx} rank {r} event #{i}: thread {} in a single-threaded program: {e}",
                    ev.thread
                ));
            }
            if ev.ret != 0 {
                fails.push(format!("{ctx} rank {r} event #{i}: ret {} in {e}", ev.ret));
            }
            if ev.skipped != 0 {
                fails.push(format!(
                    "{ctx} rank {r} event #{i}: skipped {} in {e}",
                    ev.skipped
                ));
            }
            if ev.t_exit < ev.t_enter {
                fails.push(format!(
                    "{ctx} rank {r} event #{i}: exit {} before entry {} in {e}",
                    ev.t_exit, ev.t_enter
                ));
            }
            if let Some(&(enter, exit)) = last.get(&ev.thread) {
                if ev.t_enter < enter || ev.t_enter < exit {
                    fails.push(format!(
                        "{ctx} rank {r} event #{i}: enters at {} before the previous call of its thread ({enter}..{exit}) ended: {e}",
                        ev.t_enter
                    ));
                }
            }
            last.insert(ev.thread, (ev.t_enter, ev.t_exit));
        }
    }
}

/// Compares `mpiscope report --json` with the calls the program makes (`expected`, summed
/// over ranks), and returns the report for further checks.
fn check_report(
    t: &Traced,
    expected: &BTreeMap<String, u64>,
    fails: &mut Vec<String>,
) -> serde_json::Value {
    let ctx = format!("{} {} np{} report", t.mpi.name(), t.prog, t.np);
    let rep = common::report_json(&t.run);
    if rep["ranks"] != t.np {
        fails.push(format!("{ctx}: ranks {}, expected {}", rep["ranks"], t.np));
    }
    let calls = rep["calls"].as_object().cloned().unwrap_or_default();
    let got: BTreeSet<&String> = calls.keys().collect();
    let want: BTreeSet<&String> = expected.keys().collect();
    if got != want {
        fails.push(format!(
            "{ctx}: functions differ: only in report {:?}, only expected {:?}",
            got.difference(&want).collect::<Vec<_>>(),
            want.difference(&got).collect::<Vec<_>>()
        ));
    }
    for (name, &n) in expected {
        let c = &calls.get(name).cloned().unwrap_or_default();
        for field in ["count", "recorded"] {
            if c[field].as_u64() != Some(n) {
                fails.push(format!(
                    "{ctx}: {name}.{field} = {}, expected {n}",
                    c[field]
                ));
            }
        }
        if c["fortran"].as_u64() != Some(0) {
            fails.push(format!(
                "{ctx}: {name}.fortran = {}, expected 0",
                c["fortran"]
            ));
        }
    }
    let per_rank = rep["per_rank"].as_array().cloned().unwrap_or_default();
    if per_rank.len() != t.np as usize {
        fails.push(format!(
            "{ctx}: {} per_rank entries, expected {}",
            per_rank.len(),
            t.np
        ));
    }
    for (i, pr) in per_rank.iter().enumerate() {
        if pr["rank"].as_u64() != Some(i as u64) || pr["complete"] != true {
            fails.push(format!(
                "{ctx}: per_rank[{i}] = rank {} complete {}",
                pr["rank"], pr["complete"]
            ));
        }
    }
    rep
}

/// Checks one byte total of the report.
fn check_report_bytes(
    ctx: &str,
    rep: &serde_json::Value,
    name: &str,
    field: &str,
    want: u64,
    fails: &mut Vec<String>,
) {
    let got = rep["calls"][name][field].as_u64();
    if got != Some(want) {
        fails.push(format!(
            "{ctx} report: {name}.{field} = {got:?}, expected {want}"
        ));
    }
}

/// Panics with every failure, if any. The trace directory is deleted unless
/// `MPISCOPE_TEST_KEEP=1` is set.
fn finish(t: Traced, fails: Vec<String>) {
    if fails.is_empty() {
        return;
    }
    let trace = if std::env::var_os("MPISCOPE_TEST_KEEP").is_some_and(|v| v == "1") {
        format!("trace kept in {}", t.dir.keep().join("trace").display())
    } else {
        "set MPISCOPE_TEST_KEEP=1 to keep the trace".to_string()
    };
    panic!(
        "{} {} np{}: {} trace check(s) failed ({trace}):\n  {}",
        t.mpi.name(),
        t.prog,
        t.np,
        fails.len(),
        fails.join("\n  ")
    );
}

// ------------------------------------------------------------------ walking a trace

/// What walking the traces found: failures and the calls the program made, by name.
#[derive(Default)]
struct Outcome {
    fails: Vec<String>,
    counts: BTreeMap<String, u64>,
}

impl Outcome {
    fn absorb(&mut self, s: Seq<'_>) {
        let (f, c) = s.finish();
        self.fails.extend(f);
        for (k, v) in c {
            *self.counts.entry(k).or_default() += v;
        }
    }
}

/// A cursor over the events of one thread of one rank, matched against expectations.
struct Seq<'a> {
    label: String,
    evs: Vec<&'a (String, Event)>,
    tables: &'a Tables,
    pos: usize,
    phase: String,
    fails: Vec<String>,
    counts: BTreeMap<String, u64>,
    reqs: BTreeSet<i64>,
}

impl<'a> Seq<'a> {
    fn new(t: &'a Traced, rank: u32, thread: u16) -> Seq<'a> {
        let re = &t.ranks[rank as usize];
        Seq {
            label: format!(
                "{} {} np{} rank {rank} thread {thread}",
                t.mpi.name(),
                t.prog,
                t.np
            ),
            evs: re
                .events
                .iter()
                .filter(|(_, e)| e.thread == thread)
                .collect(),
            tables: &re.tables,
            pos: 0,
            phase: "start".into(),
            fails: Vec::new(),
            counts: BTreeMap::new(),
            reqs: BTreeSet::new(),
        }
    }

    fn phase(&mut self, p: impl Into<String>) {
        self.phase = p.into();
    }

    fn fail(&mut self, msg: String) {
        self.fails.push(format!(
            "{} [{}] #{}: {msg}",
            self.label, self.phase, self.pos
        ));
    }

    fn peek(&self) -> Option<&'a (String, Event)> {
        self.evs.get(self.pos).copied()
    }

    /// The next event is `name` with `slot` equal to `v`.
    fn peek_is(&self, name: &str, slot: Slot, v: i64) -> bool {
        self.peek()
            .is_some_and(|(n, e)| n == name && e.args.get(slot) == Some(v))
    }

    /// A slot of the next event, if it is `name`.
    fn peek_slot(&self, name: &str, slot: Slot) -> Option<i64> {
        self.peek()
            .filter(|(n, _)| n == name)
            .and_then(|(_, e)| e.args.get(slot))
    }

    /// A list of the next event, if it is `name`.
    fn peek_list(&self, name: &str, kind: ListKind) -> Option<Vec<i64>> {
        self.peek()
            .filter(|(n, _)| n == name)
            .and_then(|(_, e)| e.list(kind))
            .map(|l| l.to_vec())
    }

    /// Takes the next event, which must be `name`; skips (and reports) a few unexpected
    /// events to resynchronize.
    fn take(&mut self, name: &str) -> Option<&'a Event> {
        *self.counts.entry(name.to_owned()).or_default() += 1;
        let Some((n, e)) = self.peek() else {
            self.fail(format!(
                "expected {name}, but the thread has no more events"
            ));
            return None;
        };
        if n == name {
            self.pos += 1;
            return Some(e);
        }
        let end = (self.pos + 16).min(self.evs.len());
        if let Some(i) = (self.pos..end).find(|&i| self.evs[i].0 == name) {
            let extra: Vec<String> = self.evs[self.pos..i]
                .iter()
                .map(|(n, e)| show_event(n, e))
                .collect();
            self.fail(format!(
                "unexpected event(s) before {name}: {}",
                extra.join(", ")
            ));
            self.pos = i + 1;
            return Some(&self.evs[i].1);
        }
        self.fail(format!("expected {name}, found {}", show_event(n, e)));
        None
    }

    /// The next event is `name` with exactly the slots of `want` and no list.
    fn ev(&mut self, name: &str, want: A) -> Option<&'a Event> {
        self.evl(name, want, Vec::new())
    }

    /// The next event is `name` with exactly the slots of `want` and the lists of `lists`.
    fn evl(&mut self, name: &str, want: A, lists: L) -> Option<&'a Event> {
        let ev = self.take(name)?;
        let mut errs = Vec::new();
        let got: BTreeMap<Slot, i64> = ev.args.iter().collect();
        for (s, &w) in &want.0 {
            match got.get(s) {
                None => errs.push(format!(
                    "slot {} missing (expected {})",
                    s.name(),
                    show_val(w)
                )),
                Some(&g) if w != ANY && g != w => errs.push(format!(
                    "slot {} = {}, expected {}",
                    s.name(),
                    show_val(g),
                    show_val(w)
                )),
                _ => {}
            }
        }
        for (s, &g) in &got {
            if !want.0.contains_key(s) {
                errs.push(format!("unexpected slot {} = {}", s.name(), show_val(g)));
            }
        }
        let got_l: BTreeMap<ListKind, &[i64]> = ev
            .lists
            .iter()
            .map(|l| (l.kind, l.values.as_slice()))
            .collect();
        let want_l: BTreeMap<ListKind, &[i64]> =
            lists.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        let kinds: BTreeSet<ListKind> = got_l.keys().chain(want_l.keys()).copied().collect();
        for k in kinds {
            let fmt = |v: Option<&&[i64]>| match v {
                None => "absent".to_string(),
                Some(v) => format!(
                    "[{}]",
                    v.iter().map(|&x| show_val(x)).collect::<Vec<_>>().join(",")
                ),
            };
            if got_l.get(&k) != want_l.get(&k) {
                errs.push(format!(
                    "list {} = {}, expected {}",
                    k.name(),
                    fmt(got_l.get(&k)),
                    fmt(want_l.get(&k))
                ));
            }
        }
        if !errs.is_empty() {
            let e = show_event(name, ev);
            self.fail(format!("{}; recorded {e}", errs.join("; ")));
        }
        Some(ev)
    }

    /// A call that creates a request (`want` without the `Request` slot): returns the new id,
    /// checked to be positive and unique on this rank.
    fn new_req(&mut self, name: &str, want: A) -> i64 {
        self.new_req_l(name, want, Vec::new())
    }

    /// Same as [`Seq::new_req`] with lists.
    fn new_req_l(&mut self, name: &str, want: A, lists: L) -> i64 {
        let fallback = -1000 - self.pos as i64;
        let Some(ev) = self.evl(name, want.req(ANY), lists) else {
            return fallback;
        };
        let Some(id) = ev.args.get(Slot::Request) else {
            return fallback;
        };
        if id <= 0 || !self.reqs.insert(id) {
            self.fail(format!(
                "{name}: request id {id} is not positive or not new"
            ));
        }
        id
    }

    /// The id of the reduction operation called `name` in this rank's tables.
    fn op(&mut self, name: &str) -> i64 {
        let ids: Vec<u32> = self
            .tables
            .ops
            .values()
            .filter(|o| o.name == name)
            .map(|o| o.id)
            .collect();
        if ids.len() != 1 {
            self.fail(format!(
                "{} operation(s) named {name} in the tables: {:?}",
                ids.len(),
                self.tables.ops
            ));
            return -999;
        }
        i64::from(ids[0])
    }

    /// A communicator created by `name` (`want` without `NewComm`): returns its id.
    fn new_comm(&mut self, name: &str, want: A) -> i64 {
        let fallback = -2000 - self.pos as i64;
        self.ev(name, want.s(Slot::NewComm, ANY))
            .and_then(|e| e.args.get(Slot::NewComm))
            .unwrap_or(fallback)
    }

    fn finish(mut self) -> (Vec<String>, BTreeMap<String, u64>) {
        if self.pos < self.evs.len() {
            let rest: Vec<String> = self.evs[self.pos..]
                .iter()
                .take(8)
                .map(|(n, e)| show_event(n, e))
                .collect();
            let n = self.evs.len() - self.pos;
            self.phase("end");
            self.fail(format!(
                "{n} unexpected trailing event(s): {}",
                rest.join(", ")
            ));
        }
        (self.fails, self.counts)
    }
}
