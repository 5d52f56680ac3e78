//! Parameters, in MPITEST's own syntax (`m1 M100 K10 T100 t100000 R2 b16777216
//! otransfer.dat`) and as long options (`--min 1 --max 100 ...`).

use std::path::PathBuf;

use clap::Parser;

/// The benchmark's parameters.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(
    name = "mpiscope-bench",
    version,
    about = "MPITEST: time the basic MPI operations (run it under mpirun).",
    after_help = "Seed syntax is accepted too: mpirun -np 4 mpiscope-bench m1 M100 K10 T100 t100000 R2 otransfer.dat"
)]
pub struct Params {
    /// m: smallest array length, in integers (bytes with --bytes).
    #[arg(long = "min", default_value_t = 1)]
    pub min: u64,
    /// M: largest array length, in integers (bytes with --bytes).
    #[arg(long = "max", default_value_t = 262_144)]
    pub max: u64,
    /// K: factor from one length to the next (any value above 1).
    #[arg(long = "factor", default_value_t = 4.0)]
    pub factor: f64,
    /// R: global repeats of the whole test.
    #[arg(long = "repeats", default_value_t = 1)]
    pub repeats: u32,
    /// T: iterations of the long operations (collectives and transfers).
    #[arg(long = "long-iters", default_value_t = 100)]
    pub long_iters: u32,
    /// t: iterations of the fast operations (timer, barrier, signal).
    #[arg(long = "fast-iters", default_value_t = 1000)]
    pub fast_iters: u32,
    /// b: transfer buffer in bytes (16 MB by default).
    #[arg(long = "buffer", default_value_t = 16 << 20)]
    pub buffer: u64,
    /// o: output file (default: standard output).
    #[arg(long = "output")]
    pub output: Option<PathBuf>,
    /// Lengths m and M are in bytes (rounded up to whole integers).
    #[arg(long)]
    pub bytes: bool,
    /// Untimed iterations before each measurement.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Back-to-back runs of the operation inside one timed sample (MPITEST times one; more
    /// gives steady-state figures comparable with NetPIPE or OSU).
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
    /// SEND & RECV sends from its receive buffer (NetPIPE's default) instead of a separate
    /// send buffer.
    #[arg(long)]
    pub one_buffer: bool,
    /// Only these operations (comma-separated names, e.g. `allreduce,signal`).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Check each operation's result once, outside the timed loop.
    #[arg(long)]
    pub validate: bool,
    /// Also time the operation alone (`in_call` in `--json`): from after the leading
    /// barrier to its end, before the trailing one, per iteration the slowest rank; what a
    /// simulator reports as the time inside the call. One more timer read per sample
    /// (taken out of the corrected time too).
    #[arg(long)]
    pub in_call: bool,
    /// Flag a result as unstable when its 95% interval is wider than this fraction of the
    /// median.
    #[arg(long, default_value_t = 0.25)]
    pub unstable_above: f64,
    /// JSON output.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV output.
    #[arg(long)]
    pub csv: bool,
    /// Replace an existing output file that is not mpiscope-bench results (never a
    /// directory, a symbolic link or a special file).
    #[arg(long)]
    pub force: bool,
}

/// The largest count an MPI call takes (a C `int`).
const MAX_COUNT: u64 = i32::MAX as u64;

/// MPITEST's one-letter parameters and the long options they stand for.
const SEED_LETTERS: [(char, &str); 8] = [
    ('m', "--min"),
    ('M', "--max"),
    ('K', "--factor"),
    ('R', "--repeats"),
    ('T', "--long-iters"),
    ('t', "--fast-iters"),
    ('b', "--buffer"),
    ('o', "--output"),
];

/// Rewrites seed-syntax arguments (`m1`, `otransfer.dat`) into long options; others pass.
pub fn rewrite_seed_syntax(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_option_value = false;
    for (i, a) in args.into_iter().enumerate() {
        if i == 0 || after_option_value || a.starts_with('-') {
            after_option_value = a.starts_with("--") && !a.contains('=') && takes_value(&a);
            out.push(a);
            continue;
        }
        let mut chars = a.chars();
        let letter = chars.next();
        let rest = chars.as_str();
        match SEED_LETTERS.iter().find(|(c, _)| Some(*c) == letter) {
            Some((_, long)) if !rest.is_empty() => {
                out.push((*long).to_string());
                out.push(rest.to_string());
            }
            _ => out.push(a),
        }
    }
    out
}

fn takes_value(option: &str) -> bool {
    !matches!(
        option,
        "--bytes"
            | "--validate"
            | "--in-call"
            | "--one-buffer"
            | "--json"
            | "--csv"
            | "--force"
            | "--help"
            | "--version"
    )
}

impl Params {
    /// Parses the command line (seed syntax or long options) and checks the values.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Params, clap::Error> {
        let p = Params::try_parse_from(rewrite_seed_syntax(args))?;
        p.check()
            .map_err(|m| clap::Error::raw(clap::error::ErrorKind::ValueValidation, m + "\n"))?;
        Ok(p)
    }

    fn check(&self) -> Result<(), String> {
        if self.min == 0 && !self.bytes {
            return Err("m (--min) must be at least 1 integer".into());
        }
        if self.max < self.min {
            return Err(format!(
                "M (--max) {} is below m (--min) {}",
                self.max, self.min
            ));
        }
        if !(self.factor.is_finite() && self.factor > 1.0) {
            return Err(format!("K (--factor) {} must be above 1", self.factor));
        }
        if self.repeats == 0 || self.long_iters == 0 || self.fast_iters == 0 || self.reps == 0 {
            return Err("R, T, t and --reps must be at least 1".into());
        }
        if self.buffer < 8 {
            return Err(format!("b (--buffer) {} is too small", self.buffer));
        }
        // Counts go to MPI as C ints.
        let ints = if self.bytes {
            self.max.div_ceil(4)
        } else {
            self.max
        };
        if ints > MAX_COUNT {
            return Err(format!(
                "M (--max) {} is more than {MAX_COUNT} integers, the largest MPI count",
                self.max
            ));
        }
        if self.buffer > MAX_COUNT {
            return Err(format!(
                "b (--buffer) {} is more than {MAX_COUNT} bytes, the largest MPI count",
                self.buffer
            ));
        }
        if !(self.unstable_above.is_finite() && self.unstable_above >= 0.0) {
            return Err(format!(
                "--unstable-above {} must be a non-negative fraction",
                self.unstable_above
            ));
        }
        Ok(())
    }

    /// Array lengths in integers, from m to M by K: `n`, then `ceil(n K)` (at least `n + 1`).
    pub fn lengths(&self) -> Vec<u64> {
        let to_ints = |v: u64| if self.bytes { v.div_ceil(4) } else { v };
        let (lo, hi) = (to_ints(self.min), to_ints(self.max));
        let mut out = Vec::new();
        let mut n = self.min;
        loop {
            let ints = to_ints(n);
            if ints > hi {
                break;
            }
            if ints >= lo && out.last() != Some(&ints) {
                out.push(ints);
            }
            let next = ((n as f64) * self.factor).ceil() as u64;
            n = next.max(n + 1);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        std::iter::once("mpiscope-bench".to_string())
            .chain(s.split_whitespace().map(str::to_string))
            .collect()
    }

    #[test]
    fn seed_syntax_is_the_long_options() {
        let seed = Params::from_args(args("m1 M100 K10 T100 t100000 R2 otransfer.dat")).unwrap();
        let long = Params::from_args(args(
            "--min 1 --max 100 --factor 10 --long-iters 100 --fast-iters 100000 --repeats 2 --output transfer.dat",
        ))
        .unwrap();
        assert_eq!(seed, long);
        assert_eq!(seed.lengths(), vec![1, 10, 100]);
        assert_eq!(seed.output, Some(PathBuf::from("transfer.dat")));
        assert_eq!(seed.buffer, 16 << 20);
        // Mixed, with b and a long option's value that looks like seed syntax.
        let p = Params::from_args(args("b1024 --output m5.dat M20 --json")).unwrap();
        assert_eq!((p.buffer, p.max, p.json), (1024, 20, true));
        assert_eq!(p.output, Some(PathBuf::from("m5.dat")));
    }

    #[test]
    fn lengths_for_any_factor_and_in_bytes() {
        let p = Params::from_args(args("m1 M10 K1.5")).unwrap();
        assert_eq!(p.lengths(), vec![1, 2, 3, 5, 8]);
        let p = Params::from_args(args("m1 M4096 K2 --bytes")).unwrap();
        // 1..4096 bytes in integers: 1, 1, 1, 2, 4, ... 1024 (duplicates dropped).
        assert_eq!(
            p.lengths(),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        );
    }

    #[test]
    fn bad_values_are_named() {
        for (a, needle) in [
            ("M0", "below"),
            ("K1", "above 1"),
            ("R0", "at least 1"),
            ("b4", "too small"),
            ("M2147483648", "largest MPI count"),
            ("M8589934592 --bytes", "largest MPI count"),
            ("b4294967296", "largest MPI count"),
            ("--unstable-above nan", "--unstable-above NaN"),
            ("--unstable-above=-1", "non-negative"),
            ("Kx", "--factor"),
            ("--frobnicate", "frobnicate"),
        ] {
            let e = Params::from_args(args(a)).unwrap_err().to_string();
            assert!(e.contains(needle), "{a}: {e}");
        }
    }
}
