//! Chrome trace event JSON (Perfetto, `chrome://tracing`): one process per rank, one track
//! per thread, a slice per MPI call (arguments: callsite, bytes, peer) and an arrow per
//! point-to-point message from the send call to the call that completed the receive (flow
//! events with the ids of [`mpiscope_analyze::messages`]). Written while the ranks are read, one after
//! the other: memory does not grow with the trace.

use std::io::Write;
use std::path::Path;

use mpiscope_trace::RunDir;

use crate::ExportError;
use mpiscope_analyze::messages::{Item, RankWalk};

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChromeSummary {
    /// Ranks written.
    pub ranks: u32,
    /// Call slices.
    pub calls: u64,
    /// Message starts (sends).
    pub sends: u64,
    /// Message ends (completed receives).
    pub receives: u64,
}

fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// `--format chrome`.
pub const FORMAT: crate::Registration = crate::Registration {
    name: "chrome",
    description: "one Chrome trace JSON file for Perfetto (calls, message arrows)",
    export: |run, out, options| {
        let s = export_chrome(run, out, options.force)?;
        Ok(crate::Written {
            message: format!(
                "wrote {} calls and {} messages ({} received) of {} ranks to {} (open in https://ui.perfetto.dev)",
                s.calls,
                s.sends,
                s.receives,
                s.ranks,
                out.display()
            ),
            notes: Vec::new(),
            counts: vec![
                ("ranks", u64::from(s.ranks)),
                ("calls", s.calls),
                ("sends", s.sends),
                ("receives", s.receives),
            ],
        })
    },
};

/// Writes `run` as Chrome trace JSON to the file `out` (atomically; an existing file that
/// is not an mpiscope Chrome trace is replaced only with `force`).
pub fn export_chrome(run: &RunDir, out: &Path, force: bool) -> Result<ChromeSummary, ExportError> {
    if run.rank_files.is_empty() {
        return Err(ExportError::NoRanks {
            path: run.path.clone(),
        });
    }
    let werr = |e: std::io::Error| ExportError::Write {
        path: out.to_path_buf(),
        source: e,
    };
    let mut w =
        mpiscope_files::AtomicFile::create_output(out, &crate::outputs::CHROME_TRACE, force)?;
    let mut sum = ChromeSummary::default();
    write!(
        w,
        "{{\"otherData\":{{\"generator\":\"mpiscope\"}},\"displayTimeUnit\":\"ns\",\"traceEvents\":["
    )
    .map_err(werr)?;
    let mut first = true;
    let mut sep = |w: &mut mpiscope_files::AtomicFile| -> std::io::Result<()> {
        if first {
            first = false;
            Ok(())
        } else {
            w.write_all(b",\n")
        }
    };
    let mut items = Vec::new();
    for (rank, path) in &run.rank_files {
        let rank = *rank;
        let mut reader = mpiscope_trace::RankReader::open(path)?;
        sep(&mut w).map_err(werr)?;
        write!(
            w,
            "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{rank},\"args\":{{\"name\":\"rank {rank}\"}}}},\n\
             {{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{rank},\"args\":{{\"sort_index\":{rank}}}}}"
        )
        .map_err(werr)?;
        let mut walk = RankWalk::new(rank);
        let mut names = std::collections::HashMap::new();
        while let Some(ev) = reader.next_event() {
            let name: &String = names
                .entry(ev.call)
                .or_insert_with(|| reader.tables().call_name(ev.call).into_owned());
            let name = name.clone();
            items.clear();
            walk.items(&reader, &name, &ev, &mut items);
            for it in &items {
                sep(&mut w).map_err(werr)?;
                write_item(&mut w, rank, &name, it, &mut sum).map_err(werr)?;
            }
        }
        sum.ranks += 1;
    }
    w.write_all(b"]}\n").map_err(werr)?;
    w.commit()?;
    Ok(sum)
}

/// Writes one item of a call of `name` by `rank`: its slice, or a message's start or end.
fn write_item(
    w: &mut impl Write,
    rank: u32,
    name: &str,
    it: &Item,
    sum: &mut ChromeSummary,
) -> std::io::Result<()> {
    match it {
        Item::Call {
            thread,
            enter,
            exit,
            callsite,
            bytes,
            peer,
            ..
        } => {
            sum.calls += 1;
            write!(
                w,
                "{{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":{},\"pid\":{rank},\"tid\":{thread},\"ts\":{},\"dur\":{},\"args\":{{\"callsite\":{callsite}",
                json_str(name),
                us(*enter),
                us(exit.saturating_sub(*enter))
            )?;
            if let Some(b) = bytes {
                write!(w, ",\"bytes\":{b}")?;
            }
            if let Some(p) = peer.filter(|&p| p >= 0) {
                write!(w, ",\"peer\":{p}")?;
            }
            w.write_all(b"}}")
        }
        Item::Send {
            key,
            time,
            thread,
            bytes,
            ..
        } => {
            sum.sends += 1;
            write!(
                w,
                "{{\"ph\":\"s\",\"cat\":\"msg\",\"name\":\"message\",\"id\":{},\"pid\":{rank},\"tid\":{thread},\"ts\":{},\"args\":{{\"to\":{},\"tag\":{},\"bytes\":{bytes}}}}}",
                key.id(),
                us(*time),
                key.to,
                key.tag
            )
        }
        Item::Recv {
            key, time, thread, ..
        } => {
            sum.receives += 1;
            // Bound to the enclosing slice's end: the completing call.
            write!(
                w,
                "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"msg\",\"name\":\"message\",\"id\":{},\"pid\":{rank},\"tid\":{thread},\"ts\":{}}}",
                key.id(),
                us(time.saturating_sub(1))
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_helpers() {
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(5), "0.005");
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
