//! `mpiscope export`: a trace in another tool's format (`mpiscope_export`), chosen by
//! `--format` among [`mpiscope_export::Format`]'s names.

use std::path::PathBuf;

use anyhow::Result;
use clap::builder::PossibleValue;
use clap::Args;
use mpiscope_export::Format;

/// Options of `mpiscope export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Run directory written by `mpiscope trace`.
    dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "simgrid-ti")]
    format: ExportFormat,
    /// Output: a directory (simgrid-ti, otf2), a file (chrome), or the path without its
    /// extension (paraver).
    #[arg(short, long)]
    output: PathBuf,
    /// Host speed (flop/s) turning compute bursts into flop counts.
    #[arg(long, default_value_t = 1e9, value_parser = crate::inputs::positive)]
    flops: f64,
    /// Drop compute bursts shorter than this many ns.
    #[arg(long, default_value_t = 0)]
    min_compute_ns: u64,
    /// Replace an existing output file that mpiscope did not write (never a
    /// directory, a symbolic link or a special file).
    #[arg(long)]
    force: bool,
    /// Do not say what was written (notes about calls the format cannot carry, warnings and
    /// errors are still printed).
    #[arg(short, long)]
    quiet: bool,
    /// Print a JSON summary of what was written on stdout: `format`, `output`, `ranks`,
    /// `message`, `notes`, and `counts` (what was written, in the format's own terms: OTF2
    /// `events`, `sends`, `receives`, `collectives`, ...; Chrome `calls`, `sends`, ...;
    /// Paraver `records`, `communications`; SimGrid `actions`).
    #[arg(long)]
    json: bool,
}

/// [`Format`] as a clap value: its names, with their descriptions in `--help`.
#[derive(Debug, Clone, Copy)]
struct ExportFormat(Format);

/// Every format as a clap value, in [`Format::ALL`]'s order.
const FORMATS: [ExportFormat; Format::ALL.len()] = {
    let mut all = [ExportFormat(Format::ALL[0]); Format::ALL.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = ExportFormat(Format::ALL[i]);
        i += 1;
    }
    all
};

impl clap::ValueEnum for ExportFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.description()))
    }
}

/// Runs `mpiscope export`.
pub fn export(a: ExportArgs) -> Result<i32> {
    let run = crate::inputs::open_run(&a.dir)?;
    crate::inputs::announce_input(&run);
    let options = mpiscope_export::ExportOptions {
        host_speed_flops: a.flops,
        min_compute_ns: a.min_compute_ns,
        force: a.force,
    };
    let written = a.format.0.export(&run, &a.output, &options)?;
    if !a.quiet {
        eprintln!("mpiscope: {}", written.message);
    }
    for note in &written.notes {
        eprintln!("mpiscope: note: {note}");
    }
    if a.json {
        let summary = serde_json::json!({
            "format": a.format.0.name(),
            "output": a.output.display().to_string(),
            "ranks": run.ranks(),
            "message": written.message,
            "notes": written.notes,
            "counts": written
                .counts
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                .collect::<serde_json::Map<_, _>>(),
        });
        crate::outputs::write_stdout(&crate::outputs::json(&summary)?)?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_format_is_a_value_by_its_name() {
        for f in Format::ALL {
            let v = ExportFormat::from_str(f.name(), false).unwrap();
            assert_eq!(v.0, f);
        }
        assert!(ExportFormat::from_str("vtf", false).is_err());
    }
}
