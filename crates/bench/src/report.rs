//! Results: one row per operation, length and repeat, written as MPITEST's table (text),
//! JSON or CSV.

use serde::Serialize;

use crate::method::Overheads;
use crate::ops::Op;
use crate::params::Params;
use crate::stats::Summary;

/// Results this benchmark wrote, in any of its formats (text, CSV, JSON): an output file
/// holding them is replaced without `--force`.
pub const RESULTS: mpiscope_files::Kind =
    mpiscope_files::Kind::new("mpiscope-bench results", |h| {
        use mpiscope_files::has_marker;
        h.starts_with(b"# MPITEST (mpiscope-bench)")
            || h.starts_with(b"repeat,operation,ints,bytes,iterations,")
            || (has_marker(h, b"\"mpi_library\"") && has_marker(h, b"\"overheads\""))
    });

/// One measured (or skipped) operation at one length.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Global repeat (1-based).
    pub repeat: u32,
    /// MPITEST's name of the operation.
    pub operation: &'static str,
    /// Short name (`--only`).
    pub key: &'static str,
    /// Array length in integers (none for TIMING, BARRIER, SIGNAL SENDING).
    pub ints: Option<u64>,
    /// Bytes the operation moves as MPITEST counts them, for bandwidth (`MB/s`): twice the
    /// message for SEND & RECV's round trip, `N (np - 1)` for the gathers and all-to-all.
    /// Not the message size: see `message_bytes`.
    pub bytes: u64,
    /// Bytes of one message (`4 N`; 0 without a length): the size `m` and `M` ask for,
    /// the text table's BYTES column.
    pub message_bytes: u64,
    /// Timed iterations.
    pub iterations: u32,
    /// Corrected times (`t2 - t1 - DT - DB`), seconds: per iteration the slowest rank.
    pub time: Summary,
    /// Raw times (`t2 - t1`), seconds.
    pub raw: Summary,
    /// With `--in-call`: the operation alone (`t3 - t1 - DT`, before the trailing barrier),
    /// seconds, per iteration the slowest rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_call: Option<Summary>,
    /// `bytes / median corrected time`, MB/s (10^6 bytes per second).
    pub bandwidth_mb_s: Option<f64>,
    /// The 95% interval of the median is wide: the measurement was disturbed.
    pub unstable: bool,
    /// Why it was not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Result of `--validate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
}

impl Row {
    /// The row of `op` on arrays of `n` integers (none: lengthless) in repeat `repeat` on
    /// `np` processes, before it is measured.
    pub fn new(repeat: u32, op: Op, n: Option<u64>, np: u64) -> Row {
        let ints = n.unwrap_or(0);
        Row {
            repeat,
            operation: op.mpitest_name(),
            key: op.key(),
            ints: n,
            bytes: op.bytes(ints, np),
            message_bytes: op.message_bytes(ints),
            iterations: 0,
            time: Summary::of(&[]),
            raw: Summary::of(&[]),
            in_call: None,
            bandwidth_mb_s: None,
            unstable: false,
            skipped: None,
            valid: None,
        }
    }
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    /// Processes.
    pub np: u32,
    /// The MPI library's version string.
    pub mpi_library: String,
    /// `MPI_Wtick`, seconds.
    pub wtick: f64,
    /// DT, DB and the measured timer resolution of the first repeat.
    pub overheads: Overheads,
    /// Parameters in MPITEST's terms.
    pub params: ParamsOut,
    /// Measurements.
    pub results: Vec<Row>,
}

/// The parameters as reported.
#[derive(Debug, Clone, Serialize)]
pub struct ParamsOut {
    /// m.
    pub m: u64,
    /// M.
    pub max: u64,
    /// K.
    pub k: f64,
    /// R.
    pub r: u32,
    /// T.
    pub long_iters: u32,
    /// t.
    pub fast_iters: u32,
    /// b.
    pub buffer: u64,
    /// m and M are bytes.
    pub bytes: bool,
    /// Untimed iterations before each measurement.
    pub warmup: u32,
    /// Runs of the operation per timed sample.
    pub reps: u32,
    /// SEND & RECV sends from its receive buffer.
    pub one_buffer: bool,
    /// The operations were also timed alone (`--in-call`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_call: bool,
    /// How late EAGER SEND's receiver posts its receive, seconds.
    pub eager_probe_delay: f64,
}

impl From<&Params> for ParamsOut {
    fn from(p: &Params) -> Self {
        ParamsOut {
            m: p.min,
            max: p.max,
            k: p.factor,
            r: p.repeats,
            long_iters: p.long_iters,
            fast_iters: p.fast_iters,
            buffer: p.buffer,
            bytes: p.bytes,
            warmup: p.warmup,
            reps: p.reps,
            one_buffer: p.one_buffer,
            in_call: p.in_call,
            eager_probe_delay: crate::ops::EAGER_PROBE_DELAY,
        }
    }
}

fn us(s: f64) -> f64 {
    s * 1e6
}

impl Results {
    /// The seed-style table.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let p = &self.params;
        let o = &self.overheads;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# MPITEST (mpiscope-bench): np={} m{} M{} K{} T{} t{} R{} b{}{}{}",
            self.np,
            p.m,
            p.max,
            p.k,
            p.long_iters,
            p.fast_iters,
            p.r,
            p.buffer,
            if p.bytes { " (m, M in bytes)" } else { "" },
            if p.reps > 1 {
                format!(" ({} runs per timed sample)", p.reps)
            } else {
                String::new()
            }
        );
        if p.one_buffer {
            let _ = writeln!(
                s,
                "# SEND & RECV sends from its receive buffer (--one-buffer)"
            );
        }
        let _ = writeln!(s, "# MPI: {}", self.mpi_library.trim());
        let _ = writeln!(
            s,
            "# timer: MPI_Wtick {:.3e} s, measured resolution {:.3e} s; DT = {:.3} us, DB = {:.3} us (medians)",
            self.wtick,
            o.resolution,
            us(o.dt),
            us(o.db)
        );
        let _ = writeln!(
            s,
            "# time per operation in microseconds: t = t2 - t1 - DT - DB, per iteration the slowest rank;"
        );
        let _ = writeln!(
            s,
            "# the correction is biased (the trailing barrier overlaps the operation's end): RAW is t2 - t1."
        );
        let _ = writeln!(
            s,
            "# BYTES: one message (N integers); MB/s counts what the operation moves (x2 for SEND & RECV, x(np-1) for GATHER, ALLGATHER, ALL-TO-ALL)."
        );
        let _ = writeln!(
            s,
            "# {:<3} {:<15} {:>9} {:>11} {:>6} {:>11} {:>11} {:>11} {:>11} {:>23} {:>11} {:>10}",
            "R",
            "OPERATION",
            "N(int)",
            "BYTES",
            "ITER",
            "MEAN",
            "MEDIAN",
            "MIN",
            "MAX",
            "95% CI OF MEDIAN",
            "RAW MEAN",
            "MB/s"
        );
        for r in &self.results {
            let n = r.ints.map_or("-".to_string(), |n| n.to_string());
            if let Some(why) = &r.skipped {
                let _ = writeln!(
                    s,
                    "  {:<3} {:<15} {:>9} {:>11} skipped: {why}",
                    r.repeat, r.operation, n, r.message_bytes
                );
                continue;
            }
            let t = &r.time;
            let _ = writeln!(
                s,
                "  {:<3} {:<15} {:>9} {:>11} {:>6} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>11.3}-{:<11.3} {:>11.3} {:>10}{}{}",
                r.repeat,
                r.operation,
                n,
                r.message_bytes,
                r.iterations,
                us(t.mean),
                us(t.median),
                us(t.min),
                us(t.max),
                us(t.ci_low),
                us(t.ci_high),
                us(r.raw.mean),
                r.bandwidth_mb_s
                    .map_or("-".to_string(), |b| format!("{b:.1}")),
                if r.unstable { "  unstable" } else { "" },
                match r.valid {
                    Some(false) => "  INVALID",
                    _ => "",
                }
            );
        }
        s
    }

    /// CSV with a header line; times in seconds.
    pub fn to_csv(&self) -> String {
        let mut s = String::from(
            "repeat,operation,ints,bytes,iterations,mean_s,median_s,min_s,max_s,ci_low_s,ci_high_s,raw_mean_s,raw_median_s,bandwidth_mb_s,unstable,skipped,valid,message_bytes\n",
        );
        for r in &self.results {
            let t = &r.time;
            s.push_str(&format!(
                "{},\"{}\",{},{},{},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{:e},{},{},\"{}\",{},{}\n",
                r.repeat,
                r.operation,
                r.ints.map_or(String::new(), |n| n.to_string()),
                r.bytes,
                r.iterations,
                t.mean,
                t.median,
                t.min,
                t.max,
                t.ci_low,
                t.ci_high,
                r.raw.mean,
                r.raw.median,
                r.bandwidth_mb_s.map_or(String::new(), |b| format!("{b}")),
                r.unstable,
                r.skipped.clone().unwrap_or_default(),
                r.valid.map_or(String::new(), |v| v.to_string()),
                r.message_bytes,
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mpiscope-bench --bytes --max 4096` on 4 processes: every operation's BYTES column
    /// ends at 4096 (SEND & RECV's ended at 8192, the round trip's count for bandwidth).
    #[test]
    fn bytes_column_is_the_message_size() {
        let args = [
            "mpiscope-bench",
            "--bytes",
            "--min",
            "1024",
            "--max",
            "4096",
            "K4",
        ];
        let p = Params::from_args(args.iter().map(|a| a.to_string())).unwrap();
        let mut results = Vec::new();
        for op in crate::ops::ALL {
            let lengths = if op.lengthless() {
                vec![None]
            } else {
                p.lengths().into_iter().map(Some).collect()
            };
            for n in lengths {
                results.push(Row::new(1, op, n, 4));
            }
        }
        let sr = results
            .iter()
            .rfind(|r| r.operation == "SEND & RECV")
            .unwrap();
        assert_eq!(
            (sr.ints, sr.message_bytes, sr.bytes),
            (Some(1024), 4096, 8192)
        );
        let gather = results.iter().rfind(|r| r.operation == "GATHER").unwrap();
        assert_eq!((gather.message_bytes, gather.bytes), (4096, 3 * 4096));
        let r = Results {
            np: 4,
            mpi_library: "test".into(),
            wtick: 1e-9,
            overheads: Overheads {
                dt: 0.0,
                db: 0.0,
                resolution: 0.0,
            },
            params: ParamsOut::from(&p),
            results,
        };
        let text = r.to_text();
        // The BYTES column (the fourth of a row) of every row with a length.
        let column: Vec<u64> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split("  ").filter(|f| !f.trim().is_empty()).nth(3))
            .filter_map(|f| f.trim().parse().ok())
            .collect();
        assert!(!column.is_empty(), "{text}");
        assert_eq!(column.iter().max(), Some(&4096), "{text}");
        assert!(
            column.iter().all(|&b| b == 0 || b == 1024 || b == 4096),
            "{column:?}"
        );
        let csv = r.to_csv();
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .ends_with(",valid,message_bytes"));
        assert!(
            csv.lines()
                .any(|l| l.starts_with("1,\"SEND & RECV\",1024,8192,") && l.ends_with(",4096")),
            "{csv}"
        );
    }
}
