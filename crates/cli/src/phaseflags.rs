//! The flags that choose what part of a run an analysis counts, shared by `report` and
//! `compare` (`#[command(flatten)]`) and checked once: `--phase all|loop` (each rank's main
//! loop, `mpiscope_analyze::phase`) and `--min-gap SECONDS` (bursts left out of the burst
//! statistics). `replay` takes `--phase` with its own help and the same check.

use anyhow::Result;
use clap::Args;
use mpiscope_analyze::phase::{self, Phase, Resolved};

/// `--phase` and `--min-gap`.
#[derive(Args, Debug, Clone)]
pub struct PhaseArgs {
    /// The part of each run counted: `all`, or `loop`: each rank's main loop, found in its
    /// loop structure (the approximate loop covering most of its communication calls), from
    /// the first call of its first iteration to the exit of the last call of its last; or,
    /// on a rank whose loop makes no MPI call (one rank), its compute burst that holds half
    /// its time or more. Set-up and tear-down are left out; a run without a main loop is an
    /// error.
    #[arg(long, value_name = "PHASE", default_value = "all", value_parser = parse_phase)]
    pub phase: Phase,
    /// Leave compute bursts shorter than this many seconds out of the burst statistics
    /// (count, mean, harmonic mean, percentiles; not of the compute time): calls made back
    /// to back (`MPI_Comm_rank` then `MPI_Allreduce`) leave sub-microsecond gaps that are no
    /// computation and make up the harmonic mean. 0: every burst.
    #[arg(long, value_name = "SECONDS", default_value = "0", value_parser = min_gap)]
    pub min_gap: u64,
}

impl PhaseArgs {
    /// Where the phase lies on each rank of `run`.
    pub fn resolve(&self, run: &mpiscope_trace::RunDir) -> Result<Resolved> {
        Ok(phase::resolve(run, self.phase)?)
    }
}

/// `--phase all|loop` (a usage error otherwise).
pub fn parse_phase(text: &str) -> Result<Phase, String> {
    Phase::parse(text)
}

/// `--min-gap SECONDS`, in ns.
fn min_gap(text: &str) -> Result<u64, String> {
    let v = crate::inputs::non_negative(text)?;
    if v >= 1e6 {
        return Err(format!("{v} s is over the 1,000,000 s a gap may be"));
    }
    Ok((v * 1e9).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert_eq!(min_gap("1e-6"), Ok(1000));
        assert_eq!(min_gap("0"), Ok(0));
        assert!(min_gap("-1").is_err() && min_gap("x").is_err() && min_gap("1e7").is_err());
        assert_eq!(parse_phase("loop"), Ok(Phase::Loop));
        assert!(parse_phase("setup").is_err());
    }
}
