//! Paraver traces (BSC): `OUT.prv` (records), `OUT.pcf` (names of states and events),
//! `OUT.row` (names of CPUs, nodes and threads).
//!
//! One application, one task per rank, one thread (the rank's main thread: calls of other
//! threads are left out), one CPU per task on a single node. Records, sorted by time as
//! Paraver requires (times in ns):
//!
//! * state `1:cpu:1:task:1:begin:end:state`: Running (1) between MPI calls, and during a
//!   call the state Extrae gives its kind ([`extrae::state_of`]: 3 waiting a message, 4
//!   blocking send, 5 synchronization, 6 test/probe, 8 wait, 10 immediate send, 11
//!   immediate receive, 12 I/O, 13 group communication, 16 send-receive, 15 others);
//! * event `2:cpu:1:task:1:time:type:value`: the MPI function at entry, in Extrae's event
//!   type and with Extrae's value ([`extrae::numbering`]: type 50000001 point-to-point,
//!   50000002 collective, 50000003 other, 50000004 one-sided, 50000005 I/O), the same type
//!   with value 0 at exit; a function Extrae does not number goes in type 50000099
//!   ([`extrae::UNNUMBERED_EVENT`]) with a value of its own, listed in the `.pcf`;
//! * communication `3:cpu:1:task:1:send:send:cpu:1:task:1:recv:recv:bytes:tag` for each
//!   point-to-point message paired by [`mpiscope_analyze::messages`]: logical and physical
//!   send at the send call's entry, logical and physical receive at the completion of the
//!   receive.
//!
//! The `.pcf` names Extrae's states and lists Extrae's five MPI event types with all their
//! values and Extrae's labels, so Extrae's `cfgs/mpi/*.cfg` views read the trace.
//!
//! The records of the whole run are held in memory to be sorted (about 40 bytes each).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::outputs::{PCF, PRV, ROW};
use mpiscope_files::{AtomicFile, Kind, Staged};
use mpiscope_trace::RunDir;

use crate::extrae::{self, state_of, RUNNING, UNNUMBERED_EVENT};
use crate::ExportError;
use mpiscope_analyze::messages::{Item, MessageKey, RankWalk};

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParaverSummary {
    /// Ranks (tasks).
    pub ranks: u32,
    /// Records in the `.prv`.
    pub records: u64,
    /// Communication records.
    pub communications: u64,
}

#[derive(Debug, Clone, Copy)]
enum Rec {
    State {
        task: u32,
        begin: u64,
        end: u64,
        state: u8,
    },
    Event {
        task: u32,
        time: u64,
        ty: u32,
        value: u32,
    },
    Comm {
        from: u32,
        sent: u64,
        to: u32,
        received: u64,
        bytes: u64,
        tag: i64,
    },
}

impl Rec {
    fn time(&self) -> u64 {
        match *self {
            Rec::State { begin, .. } => begin,
            Rec::Event { time, .. } => time,
            Rec::Comm { sent, .. } => sent,
        }
    }
}

/// `dd/mm/yy at hh:mm` (UTC) of `secs` since 1970, for the `.prv` header.
fn header_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{d:02}/{mo:02}/{:02} at {h:02}:{m:02}", y % 100)
}

fn with_ext(base: &Path, ext: &str) -> PathBuf {
    let mut s = base.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

/// `--format paraver`.
pub const FORMAT: crate::Registration = crate::Registration {
    name: "paraver",
    description: "Paraver's OUT.prv, OUT.pcf and OUT.row",
    export: |run, out, options| {
        let s = export_paraver(run, out, options.force)?;
        Ok(crate::Written {
            message: format!(
                "wrote {} records ({} communications) of {} ranks to {}.prv/.pcf/.row",
                s.records,
                s.communications,
                s.ranks,
                out.display()
            ),
            notes: Vec::new(),
            counts: vec![
                ("ranks", u64::from(s.ranks)),
                ("records", s.records),
                ("communications", s.communications),
            ],
        })
    },
};

/// Writes `run` as `base.prv`, `base.pcf` and `base.row` (atomically, the three put in
/// place once all are complete; existing files of other kinds are replaced only with
/// `force`).
pub fn export_paraver(
    run: &RunDir,
    base: &Path,
    force: bool,
) -> Result<ParaverSummary, ExportError> {
    if run.rank_files.is_empty() {
        return Err(ExportError::NoRanks {
            path: run.path.clone(),
        });
    }
    let mut c = Collected::default();
    for (rank, path) in &run.rank_files {
        c.rank(*rank, path)?;
    }
    let communications = c.pair_messages();
    c.recs.sort_by_key(|r| r.time());
    let (prv, pcf, row) = (
        with_ext(base, ".prv"),
        with_ext(base, ".pcf"),
        with_ext(base, ".row"),
    );
    for (path, kind) in [(&prv, &PRV), (&pcf, &PCF), (&row, &ROW)] {
        mpiscope_files::check_output(path, kind, force)?;
    }
    let n = run.rank_files.len();
    let staged = [
        write_prv(&prv, &c, n, force)?,
        write_text(&pcf, &PCF, &pcf_text(&c.functions), force)?,
        write_text(&row, &ROW, &row_text(run, &c.hosts), force)?,
    ];
    for f in staged {
        f.commit()?;
    }
    Ok(ParaverSummary {
        ranks: n as u32,
        records: c.recs.len() as u64,
        communications,
    })
}

/// What the ranks' traces give the three files.
struct Collected {
    /// The `.prv`'s records (messages once paired).
    recs: Vec<Rec>,
    /// Functions Extrae does not number, in the order of their values in
    /// [`UNNUMBERED_EVENT`] (value = index + 1).
    functions: Vec<String>,
    /// Per function: its event type and value, and its state (classified once).
    function_ids: HashMap<String, (u32, u32, u8)>,
    /// Message sends not yet paired: (time, bytes) by message.
    sends: HashMap<MessageKey, (u64, u64)>,
    /// Message receives: the message and the time its receive completed.
    receives: Vec<(MessageKey, u64)>,
    /// Host of each rank, in rank file order.
    hosts: Vec<String>,
    /// Earliest entry and latest exit (ns).
    first: u64,
    last: u64,
}

impl Default for Collected {
    fn default() -> Self {
        Collected {
            recs: Vec::new(),
            functions: Vec::new(),
            function_ids: HashMap::new(),
            sends: HashMap::new(),
            receives: Vec::new(),
            hosts: Vec::new(),
            first: u64::MAX,
            last: 0,
        }
    }
}

impl Collected {
    /// Reads the main thread of `rank` (its trace file `path`): a Running state between
    /// calls, a state and two events per call, and its messages' ends.
    fn rank(&mut self, rank: u32, path: &Path) -> Result<(), ExportError> {
        let task = rank + 1;
        let mut reader = mpiscope_trace::RankReader::open(path)?;
        self.hosts.push(
            reader
                .info()
                .map(|i| i.host.clone())
                .unwrap_or_else(|| "node".into()),
        );
        let mut walk = RankWalk::new(rank);
        let mut prev_exit: Option<u64> = None;
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut items = Vec::new();
        while let Some(ev) = reader.next_event() {
            if ev.thread != 0 {
                continue;
            }
            let name = names
                .entry(ev.call)
                .or_insert_with(|| reader.tables().call_name(ev.call).into_owned())
                .clone();
            self.first = self.first.min(ev.t_enter);
            self.last = self.last.max(ev.t_exit);
            items.clear();
            walk.items(&reader, &name, &ev, &mut items);
            for it in items.drain(..) {
                match it {
                    Item::Call { enter, exit, .. } => {
                        self.call(task, &name, (enter, exit), prev_exit);
                        prev_exit = Some(exit.max(enter));
                    }
                    Item::Send {
                        key, time, bytes, ..
                    } => {
                        self.sends.insert(key, (time, bytes));
                    }
                    Item::Recv { key, time, .. } => self.receives.push((key, time)),
                }
            }
        }
        Ok(())
    }

    /// The records of a call of `name` by `task` from `enter` to `exit`, after a Running
    /// state since the previous call's exit.
    fn call(&mut self, task: u32, name: &str, (enter, exit): (u64, u64), prev_exit: Option<u64>) {
        let functions = &mut self.functions;
        let (ty, value, state) = *self.function_ids.entry(name.to_owned()).or_insert_with(|| {
            let (ty, value) = extrae::numbering(name).unwrap_or_else(|| {
                functions.push(name.to_owned());
                (UNNUMBERED_EVENT, functions.len() as u32)
            });
            (ty, value, state_of(name))
        });
        if let Some(p) = prev_exit.filter(|&p| p < enter) {
            self.recs.push(Rec::State {
                task,
                begin: p,
                end: enter,
                state: RUNNING,
            });
        }
        self.recs.push(Rec::State {
            task,
            begin: enter,
            end: exit.max(enter),
            state,
        });
        self.recs.push(Rec::Event {
            task,
            time: enter,
            ty,
            value,
        });
        self.recs.push(Rec::Event {
            task,
            time: exit.max(enter),
            ty,
            value: 0,
        });
    }

    /// A communication record per receive whose send was seen; returns how many.
    fn pair_messages(&mut self) -> u64 {
        let mut communications = 0;
        for (key, received) in std::mem::take(&mut self.receives) {
            if let Some((sent, bytes)) = self.sends.remove(&key) {
                communications += 1;
                self.recs.push(Rec::Comm {
                    from: key.from + 1,
                    sent,
                    to: key.to + 1,
                    received: received.max(sent),
                    bytes,
                    tag: key.tag,
                });
            }
        }
        communications
    }
}

/// An error writing `path`.
fn write_error(path: &Path) -> impl Fn(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes the `.prv` of `n` tasks: its header, then the sorted records, times from the
/// first event.
fn write_prv(prv: &Path, c: &Collected, n: usize, force: bool) -> Result<Staged, ExportError> {
    let first = if c.first == u64::MAX { 0 } else { c.first };
    let mut w = AtomicFile::create_output(prv, &PRV, force)?;
    let tasks: Vec<String> = (0..n).map(|_| "1:1".to_string()).collect();
    writeln!(
        w,
        "#Paraver ({}):{}_ns:1({n}):1:{n}({})",
        header_date(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        ),
        c.last.saturating_sub(first),
        tasks.join(",")
    )
    .map_err(write_error(prv))?;
    for r in &c.recs {
        write_rec(&mut w, r, first).map_err(write_error(prv))?;
    }
    Ok(w.close()?)
}

/// One record of the `.prv`, its times from `first`.
fn write_rec(w: &mut AtomicFile, r: &Rec, first: u64) -> std::io::Result<()> {
    match *r {
        Rec::State {
            task,
            begin,
            end,
            state,
        } => writeln!(
            w,
            "1:{task}:1:{task}:1:{}:{}:{state}",
            begin - first,
            end - first
        ),
        Rec::Event {
            task,
            time,
            ty,
            value,
        } => writeln!(w, "2:{task}:1:{task}:1:{}:{ty}:{value}", time - first),
        Rec::Comm {
            from,
            sent,
            to,
            received,
            bytes,
            tag,
        } => writeln!(
            w,
            "3:{from}:1:{from}:1:{s}:{s}:{to}:1:{to}:1:{r}:{r}:{bytes}:{tag}",
            s = sent - first,
            r = received - first
        ),
    }
}

/// The `.pcf`: display options, Extrae's state names, Extrae's MPI event types with all
/// their values, and the type of the calls Extrae does not number (when there are any).
fn pcf_text(unnumbered: &[String]) -> String {
    let mut t = String::from(
        "DEFAULT_OPTIONS\n\nLEVEL               THREAD\nUNITS               NANOSEC\nLOOK_BACK           100\nSPEED               1\nFLAG_ICONS          ENABLED\nNUM_OF_STATE_COLORS 1000\nYMAX_SCALE          37\n\nDEFAULT_SEMANTIC\n\nTHREAD_FUNC          State As Is\n\nSTATES\n",
    );
    for (v, name) in extrae::STATES {
        t += &format!("{v:<5}{name}\n");
    }
    let block = |t: &mut String, ty: u32, label: &str, values: &[(u32, String)]| {
        *t += &format!("\n\nEVENT_TYPE\n0    {ty}    {label}\nVALUES\n");
        for (v, name) in values {
            *t += &format!("{v:<6} {name}\n");
        }
        *t += "0      End\n";
    };
    for (ty, label) in extrae::EVENT_TYPES {
        block(&mut t, ty, label, &extrae::values(ty));
    }
    if !unnumbered.is_empty() {
        let values: Vec<(u32, String)> = (1..).zip(unnumbered.iter().cloned()).collect();
        block(&mut t, UNNUMBERED_EVENT, extrae::UNNUMBERED_LABEL, &values);
    }
    t
}

/// The `.row`: a CPU per rank (named by its host), one node, a thread per rank.
fn row_text(run: &RunDir, hosts: &[String]) -> String {
    let n = run.rank_files.len();
    let mut t = format!("LEVEL CPU SIZE {n}\n");
    for (i, h) in hosts.iter().enumerate() {
        t += &format!("{}.{h}\n", i + 1);
    }
    t += &format!(
        "\nLEVEL NODE SIZE 1\n{}\n",
        hosts.first().cloned().unwrap_or_default()
    );
    t += &format!("\nLEVEL THREAD SIZE {n}\n");
    for (rank, _) in &run.rank_files {
        t += &format!("THREAD 1.{}.1 (rank {rank})\n", rank + 1);
    }
    t
}

/// Writes `text` to `path`, an output of `kind` (staged).
fn write_text(path: &Path, kind: &Kind, text: &str, force: bool) -> Result<Staged, ExportError> {
    let mut w = AtomicFile::create_output(path, kind, force)?;
    w.write_all(text.as_bytes()).map_err(write_error(path))?;
    Ok(w.close()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcf_lists_extraes_types_and_the_unnumbered_calls() {
        let t = pcf_text(&["MPI_Exscan".to_string()]);
        for want in [
            "13   Group Communication\n",
            "EVENT_TYPE\n0    50000001    MPI Point-to-point\nVALUES\n1      MPI_Send\n",
            "0    50000002    MPI Collective Comm\n",
            "10     MPI_Allreduce\n",
            "0    50000003    MPI Other\n",
            "0    50000004    MPI One-sided\n",
            "0    50000005    MPI I/O\n",
            "0    50000099    MPI call not numbered by Extrae (mpiscope)\nVALUES\n1      MPI_Exscan\n0      End\n",
        ] {
            assert!(t.contains(want), "{want} missing from\n{t}");
        }
        assert!(!pcf_text(&[]).contains("50000099"));
    }

    #[test]
    fn names_and_dates() {
        assert_eq!(
            with_ext(Path::new("/t/run"), ".prv"),
            PathBuf::from("/t/run.prv")
        );
        assert_eq!(header_date(0), "01/01/70 at 00:00");
        // 2026-11-22 07:45 UTC.
        assert_eq!(header_date(1_795_333_500), "22/11/26 at 07:45");
    }
}
