//! Helpers for the unit tests of this crate.

use mpiscope_trace::{Args, Event, List, ListKind, Slot};

/// An event on the main thread with the given argument slots and lists, its other fields
/// zero.
pub fn event(args: &[(Slot, i64)], lists: &[(ListKind, &[i64])]) -> Event {
    let mut a = Args::EMPTY;
    for &(s, v) in args {
        a.set(s, v);
    }
    Event {
        thread: 0,
        call: 0,
        t_enter: 0,
        t_exit: 0,
        callsite: 0,
        core: None,
        ret: 0,
        skipped: 0,
        args: a,
        lists: lists
            .iter()
            .map(|(k, v)| List {
                kind: *k,
                values: v.to_vec(),
            })
            .collect(),
        cpu_ns: None,
        unfinished: false,
    }
}

/// Writes one rank's file of a synthetic run: calls at given times on the world
/// communicator (id 0).
pub struct RankFile {
    w: mpiscope_trace::RankWriter<std::io::BufWriter<std::fs::File>>,
    calls: std::collections::HashMap<String, u32>,
    events: u64,
    last: u64,
}

impl RankFile {
    /// Records `name` from `enter` to `exit` (ns) with the given argument slots and lists.
    pub fn call(
        &mut self,
        name: &str,
        enter: u64,
        exit: u64,
        args: &[(Slot, i64)],
        lists: &[(ListKind, &[i64])],
    ) {
        use mpiscope_trace::{CallDef, Definition, Lang, RawEvent, RawList, NO_CORE};
        let next = self.calls.len() as u32 + 1;
        let id = *self.calls.entry(name.to_owned()).or_insert(next);
        if id == next {
            let def = Definition::Call(CallDef {
                id,
                name: name.to_owned(),
                lang: Lang::C,
            });
            self.w.define(&[def]).expect("define a call");
        }
        let mut a = Args::EMPTY;
        a.set(Slot::Comm, 0);
        for &(s, v) in args {
            a.set(s, v);
        }
        let raw: Vec<RawList> = lists
            .iter()
            .map(|(k, v)| RawList {
                kind: *k,
                values: v,
            })
            .collect();
        let ev = RawEvent {
            call: id,
            t_enter: enter,
            t_exit: exit,
            callsite: 0,
            core: NO_CORE,
            ret: 0,
            skipped: 0,
            args: &a,
            lists: &raw,
            cpu: None,
        };
        self.w.event(&ev).expect("write an event");
        self.events += 1;
        self.last = exit;
    }
}

/// Writes a synthetic run of `size` ranks into `dir` (rank files only, no manifest), each
/// rank's calls given by `f`.
pub fn write_run(dir: &std::path::Path, size: u32, mut f: impl FnMut(u32, &mut RankFile)) {
    use mpiscope_trace::{CommDef, CommKind, Definition, RankInfo, RankWriter, Trailer};
    for rank in 0..size {
        let info = RankInfo::synthetic(rank, size);
        let path = dir.join(mpiscope_trace::rank_file_name(rank));
        let file = std::fs::File::create(&path).expect("create a rank file");
        let mut w = RankWriter::new(std::io::BufWriter::new(file), &info, 1 << 16)
            .expect("start a rank file");
        let world = Definition::Comm(CommDef {
            id: 0,
            key: 7,
            kind: CommKind::World,
            size,
            ranks: vec![],
            remote: vec![],
        });
        w.define(&[world]).expect("define the world");
        let mut r = RankFile {
            w,
            calls: std::collections::HashMap::new(),
            events: 0,
            last: 0,
        };
        f(rank, &mut r);
        let trailer = Trailer {
            reason: "finalize".into(),
            sync_ticks: r.last,
            sync_ns: r.last,
            events: r.events,
            lost: 0,
            calls: vec![],
        };
        r.w.finish(Some(&trailer)).expect("finish a rank file");
    }
}
