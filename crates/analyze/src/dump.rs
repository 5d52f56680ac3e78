//! Events as text, one line each (`mpiscope dump`).
//!
//! ```text
//! # rank 1 host node7 pid 4242 clock tsc (2.000 GHz), 3 threads
//! 1.0 0.000123456 4.210us MPI_Send peer=0 tag=7 comm=0 count=10 dtsize=4 bytes=40 @2
//! 1.0 0.000130001 0.900us MPI_Iprobe peer=any tag=77 comm=0 flag=0 @3 skipped=9999
//! ```
//!
//! Fields: `rank.thread`, entry time in seconds since the run's epoch, duration, call (a
//! trailing `(F)` for a Fortran binding), the recorded arguments, `@callsite` (or, with
//! symbols, `@function file:line`), and the vector arguments.
//!
//! As JSON Lines ([`DumpOptions::json`]), one object per line, told apart by `type`: `rank`
//! (the header), `event`, `comm` and `callsite` (the definitions), `note` and `end`. An event
//! has `rank`, `thread`, `t_enter_ns`, `duration_ns`, `call`, `fortran`, `args` (by slot
//! name, peers and tags as numbers), `ret`, `callsite` (and `location` with symbols),
//! `skipped`, `lists` (by list name) and `unfinished`.

use std::io::Write;

use mpiscope_trace::{
    Event, ListKind, RankReader, RunDir, Slot, Tables, PEER_ANY, PEER_NULL, PEER_ROOT,
    PEER_UNKNOWN, TAG_ANY,
};

use crate::symbols::Symbolizer;
use crate::AnalyzeError;

/// What to print.
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// Only this rank.
    pub rank: Option<u32>,
    /// At most this many events per rank.
    pub limit: Option<u64>,
    /// Resolve callsites to function and line.
    pub symbols: bool,
    /// Print the definition tables after each rank's events.
    pub definitions: bool,
    /// JSON Lines instead of text, every object's key `schema` set to this version.
    pub json: Option<u32>,
}

/// One line of the JSON Lines output: `schema` and `type` first, then `fields`.
fn json_line(
    out: &mut dyn Write,
    schema: u32,
    kind: &str,
    fields: serde_json::Value,
) -> Result<(), AnalyzeError> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), schema.into());
    m.insert("type".into(), kind.into());
    if let serde_json::Value::Object(f) = fields {
        m.extend(f);
    }
    let text = serde_json::to_string(&m).map_err(|e| AnalyzeError::Write(e.into()))?;
    writeln!(out, "{text}")?;
    Ok(())
}

/// One event as a JSON object (the keys of an `event` line after `type`).
pub fn event_json(
    rank: u32,
    ev: &Event,
    tables: &Tables,
    symbols: Option<&mut Symbolizer>,
) -> serde_json::Value {
    let call = tables.calls.get(&ev.call);
    let args: serde_json::Map<String, serde_json::Value> = ev
        .args
        .iter()
        .map(|(slot, v)| (slot.name().to_string(), v.into()))
        .collect();
    let lists: serde_json::Map<String, serde_json::Value> = ev
        .lists
        .iter()
        .map(|l| (l.kind.name().to_string(), l.values.clone().into()))
        .collect();
    let location = (ev.callsite != 0)
        .then(|| symbols.and_then(|sy| sy.describe(tables, ev.callsite)))
        .flatten();
    serde_json::json!({
        "rank": rank,
        "thread": ev.thread,
        "t_enter_ns": ev.t_enter,
        "duration_ns": ev.duration(),
        "call": call.map(|c| c.name.as_str()).unwrap_or("?"),
        "fortran": call.is_some_and(|c| c.lang == mpiscope_trace::Lang::Fortran),
        "args": args,
        "ret": ev.ret,
        "callsite": ev.callsite,
        "location": location,
        "skipped": ev.skipped,
        "lists": lists,
        "unfinished": ev.unfinished,
    })
}

fn peer(v: i64) -> String {
    match v {
        PEER_ANY => "any".into(),
        PEER_NULL => "null".into(),
        PEER_ROOT => "root".into(),
        PEER_UNKNOWN => "?".into(),
        _ => v.to_string(),
    }
}

/// One event as text (without the trailing newline).
pub fn format_event(
    rank: u32,
    ev: &Event,
    tables: &Tables,
    symbols: Option<&mut Symbolizer>,
) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(96);
    let call = tables.calls.get(&ev.call);
    let name = call.map(|c| c.name.as_str()).unwrap_or("?");
    let fortran = call.is_some_and(|c| c.lang == mpiscope_trace::Lang::Fortran);
    let _ = write!(
        s,
        "{rank}.{} {}.{:09} {}{:.3}us {name}{}",
        ev.thread,
        ev.t_enter / 1_000_000_000,
        ev.t_enter % 1_000_000_000,
        // A call still in progress when the record ended: at least this long.
        if ev.unfinished { ">=" } else { "" },
        ev.duration() as f64 / 1e3,
        if fortran { "(F)" } else { "" }
    );
    for (slot, v) in ev.args.iter() {
        let text = match slot {
            Slot::Peer | Slot::RecvPeer | Slot::Root | Slot::StatusSource => peer(v),
            Slot::Tag | Slot::RecvTag if v == TAG_ANY => "any".into(),
            Slot::Op => tables
                .ops
                .get(&(v as u32))
                .map(|o| o.name.clone())
                .unwrap_or_else(|| v.to_string()),
            _ => v.to_string(),
        };
        let _ = write!(s, " {}={text}", slot.name());
    }
    if ev.ret != 0 {
        let _ = write!(s, " ret={}", ev.ret);
    }
    if ev.callsite != 0 {
        match symbols.and_then(|sy| sy.describe(tables, ev.callsite)) {
            Some(d) => {
                let _ = write!(s, " @{d}");
            }
            None => {
                let _ = write!(s, " @{}", ev.callsite);
            }
        }
    }
    if ev.skipped != 0 {
        let _ = write!(s, " skipped={}", ev.skipped);
    }
    for l in &ev.lists {
        let _ = write!(s, " {}=", l.kind.name());
        if l.kind == ListKind::Completions {
            let parts: Vec<String> = l
                .values
                .chunks(4)
                .map(|c| {
                    let f = |v: i64| {
                        if v == mpiscope_trace::NO_VALUE {
                            "-".to_string()
                        } else {
                            v.to_string()
                        }
                    };
                    format!(
                        "{}:{}/{}/{}",
                        c[0],
                        f(*c.get(1).unwrap_or(&i64::MIN)),
                        f(*c.get(2).unwrap_or(&i64::MIN)),
                        f(*c.get(3).unwrap_or(&i64::MIN))
                    )
                })
                .collect();
            s.push_str(&parts.join(","));
        } else {
            let parts: Vec<String> = l.values.iter().map(|v| v.to_string()).collect();
            s.push_str(&parts.join(","));
        }
    }
    s
}

fn dump_rank<R: std::io::Read>(
    mut reader: RankReader<R>,
    rank: u32,
    opts: &DumpOptions,
    symbols: &mut Option<Symbolizer>,
    out: &mut dyn Write,
) -> Result<(), AnalyzeError> {
    if let Some(i) = reader.info() {
        match opts.json {
            Some(v) => json_line(
                out,
                v,
                "rank",
                serde_json::json!({
                    "rank": i.rank, "size": i.size, "host": i.host, "pid": i.pid,
                    "clock": i.clock.source, "clock_hz": i.clock.ticks_per_second,
                    "mpi": i.mpi_library.lines().next().unwrap_or(""),
                }),
            )?,
            None => writeln!(
                out,
                "# rank {} of {} host {} pid {} clock {} ({:.3} GHz) mpi {}",
                i.rank,
                i.size,
                i.host,
                i.pid,
                i.clock.source,
                i.clock.ticks_per_second / 1e9,
                i.mpi_library.lines().next().unwrap_or("")
            )?,
        }
    }
    let mut n = 0u64;
    while let Some(ev) = reader.next_event() {
        if opts.limit.is_some_and(|l| n >= l) {
            break;
        }
        n += 1;
        match opts.json {
            Some(v) => json_line(
                out,
                v,
                "event",
                event_json(rank, &ev, reader.tables(), symbols.as_mut()),
            )?,
            None => {
                let line = format_event(rank, &ev, reader.tables(), symbols.as_mut());
                writeln!(out, "{line}")?;
            }
        }
    }
    if opts.definitions {
        reader.drain();
        definitions(reader.tables(), rank, opts, symbols, out)?;
    }
    if n > 0 && opts.limit.is_some_and(|l| n >= l) {
        // Cut short by --limit: the end of the record is not known here.
        return Ok(());
    }
    reader.drain();
    ending(&reader, rank, opts, out)
}

/// The notes of a drained record and how it ends.
fn ending<R: std::io::Read>(
    reader: &RankReader<R>,
    rank: u32,
    opts: &DumpOptions,
    out: &mut dyn Write,
) -> Result<(), AnalyzeError> {
    for note in reader.notes() {
        if let Some(v) = opts.json {
            json_line(
                out,
                v,
                "note",
                serde_json::json!({
                    "rank": rank, "time_ns": note.time_ns, "kind": note.kind,
                    "thread": note.thread, "signal": note.signal, "message": note.message,
                }),
            )?;
            continue;
        }
        writeln!(
            out,
            "# note at {}.{:09}: {}{}{}",
            note.time_ns / 1_000_000_000,
            note.time_ns % 1_000_000_000,
            note.kind,
            note.signal
                .as_deref()
                .map(|x| format!(" {x}"))
                .unwrap_or_default(),
            if note.message.is_empty() {
                String::new()
            } else {
                format!(": {}", note.message)
            }
        )?;
    }
    let end = reader.ending();
    if let Some(v) = opts.json {
        let t = reader.trailer();
        return json_line(
            out,
            v,
            "end",
            serde_json::json!({
                "rank": rank,
                "reason": t.map(|t| t.reason.to_string()),
                "events": t.map(|t| t.events),
                "lost": t.map(|t| t.lost),
                "unfinished": end.unfinished,
                "describe": end.describe(),
            }),
        );
    }
    match reader.trailer() {
        Some(t) => writeln!(
            out,
            "# end: {} ({} events written, {} lost{})",
            t.reason,
            t.events,
            t.lost,
            if end.unfinished > 0 {
                format!(", {} calls unfinished", end.unfinished)
            } else {
                String::new()
            }
        )?,
        None => writeln!(out, "# end: {}", end.describe())?,
    }
    Ok(())
}

/// The communicator and callsite tables of a rank (`--defs`).
fn definitions(
    t: &Tables,
    rank: u32,
    opts: &DumpOptions,
    symbols: &mut Option<Symbolizer>,
    out: &mut dyn Write,
) -> Result<(), AnalyzeError> {
    let mut ids: Vec<_> = t.comms.keys().copied().collect();
    ids.sort();
    for id in ids {
        let c = &t.comms[&id];
        match opts.json {
            Some(v) => json_line(
                out,
                v,
                "comm",
                serde_json::json!({
                    "rank": rank, "id": id, "kind": format!("{:?}", c.kind), "size": c.size,
                    "key": c.key, "ranks": c.ranks, "remote": c.remote,
                }),
            )?,
            None => writeln!(
                out,
                "# comm {id}: {:?} size {} key {:#018x} ranks {:?} remote {:?}",
                c.kind, c.size, c.key, c.ranks, c.remote
            )?,
        }
    }
    let mut ids: Vec<_> = t.callsites.keys().copied().collect();
    ids.sort();
    for id in ids {
        let d = symbols
            .as_mut()
            .and_then(|s| s.describe(t, id))
            .unwrap_or_default();
        let frames: Vec<String> = t.callsites[&id]
            .frames
            .iter()
            .map(|f| {
                format!(
                    "{}+{:#x}",
                    t.modules
                        .get(&f.module)
                        .map(|m| m.path.as_str())
                        .unwrap_or("?"),
                    f.offset
                )
            })
            .collect();
        match opts.json {
            Some(v) => json_line(
                out,
                v,
                "callsite",
                serde_json::json!({"rank": rank, "id": id, "frames": frames, "location": d}),
            )?,
            None => writeln!(out, "# callsite {id}: {} {d}", frames.join(" < "))?,
        }
    }
    Ok(())
}

/// Writes the events of a run (or one rank) as text, or as JSON Lines.
pub fn dump(run: &RunDir, opts: &DumpOptions, out: &mut dyn Write) -> Result<(), AnalyzeError> {
    let mut symbols = opts.symbols.then(Symbolizer::new);
    for (rank, path) in &run.rank_files {
        if opts.rank.is_some_and(|r| r != *rank) {
            continue;
        }
        let reader = RankReader::open(path)?;
        dump_rank(reader, *rank, opts, &mut symbols, out)?;
    }
    Ok(())
}
