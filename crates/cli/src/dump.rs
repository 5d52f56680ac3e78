//! `mpiscope dump`: the events of a trace as text, one line each, or as JSON Lines (one
//! object per line: a streaming format, so a large trace is never held whole;
//! `mpiscope_analyze::dump`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

/// Options of `mpiscope dump`.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// Run directory written by `mpiscope trace`.
    dir: PathBuf,
    /// Only this rank.
    #[arg(long)]
    rank: Option<u32>,
    /// At most this many events per rank.
    #[arg(long)]
    limit: Option<u64>,
    /// Resolve callsites to function and file:line (needs debug information).
    #[arg(long)]
    symbols: bool,
    /// Print communicator and callsite tables after each rank.
    #[arg(long)]
    defs: bool,
    /// JSON Lines: one object per line, `type` telling a rank header, an event, a
    /// definition, a note or the record's end (docs/CLI.md).
    #[arg(long)]
    json: bool,
}

/// Runs `mpiscope dump`; a closed pipe (`| head`) ends it quietly.
pub fn dump(a: DumpArgs) -> Result<i32> {
    let run = crate::inputs::open_run(&a.dir)?;
    if let Some(r) = a.rank {
        crate::inputs::check_rank(r, &run)?;
    }
    let opts = mpiscope_analyze::dump::DumpOptions {
        rank: a.rank,
        limit: a.limit,
        symbols: a.symbols,
        definitions: a.defs,
        json: a.json.then_some(crate::outputs::SCHEMA),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match mpiscope_analyze::dump::dump(&run, &opts, &mut out) {
        Err(mpiscope_analyze::AnalyzeError::Write(e))
            if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r?,
    }
    Ok(0)
}
