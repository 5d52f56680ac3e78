//! `mpiscope bench -np N ARGS`: runs `mpirun -np N mpiscope-bench ARGS` (the MPITEST
//! benchmark, built next to `mpiscope`), as root with the options Open MPI needs.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;

/// Options of `mpiscope bench`: `-np N` (as mpirun spells it, or `--np N`), `--mpirun
/// CMD`, `--binary PATH`, then the benchmark's own arguments.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// `-np N` (processes, default 2), `--mpirun CMD` (default `mpirun`), `--binary PATH`
    /// (default: `mpiscope-bench` next to `mpiscope`), then the arguments of
    /// `mpiscope-bench`, in the seed's syntax or as long options.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<String>,
}

#[derive(Debug)]
struct Parsed {
    np: u32,
    mpirun: String,
    binary: Option<PathBuf>,
    rest: Vec<String>,
}

/// Takes our options from the front of `args`; the rest is the benchmark's.
fn parse(args: &[String]) -> Result<Parsed> {
    let mut p = Parsed {
        np: 2,
        mpirun: "mpirun".into(),
        binary: None,
        rest: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| {
            args.get(i + 1)
                .cloned()
                .with_context(|| format!("{} needs a value", args[i]))
        };
        match args[i].as_str() {
            "-np" | "--np" | "-n" => {
                let v = value(i)?;
                p.np =
                    v.parse().ok().filter(|&n: &u32| n > 0).with_context(|| {
                        format!("{} {v}: expected a number of processes", args[i])
                    })?;
            }
            "--mpirun" => p.mpirun = value(i)?,
            "--binary" => p.binary = Some(PathBuf::from(value(i)?)),
            _ => {
                p.rest = args[i..].to_vec();
                break;
            }
        }
        i += 2;
    }
    Ok(p)
}

/// Runs `mpiscope bench`; returns the benchmark's exit code.
pub fn bench(args: BenchArgs) -> Result<i32> {
    let a = parse(&args.args)?;
    let binary = match a.binary {
        Some(b) => b,
        None => std::env::current_exe()
            .context("where is mpiscope?")?
            .with_file_name("mpiscope-bench"),
    };
    if !binary.is_file() {
        bail!(
            "{} not found: build it with `cargo build --release -p mpiscope-bench` (or give --binary)",
            binary.display()
        );
    }
    let mut cmd = Command::new(&a.mpirun);
    let is_root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    let open_mpi = !a.mpirun.contains("mpich") && !a.mpirun.contains("hydra");
    if open_mpi {
        if is_root {
            cmd.arg("--allow-run-as-root");
        }
        // More processes than cores must still run, and must not spin on each other.
        cmd.args(["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]);
    }
    cmd.arg("-np")
        .arg(a.np.to_string())
        .arg(&binary)
        .args(&a.rest);
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {} (install openmpi-bin)", a.mpirun))?;
    Ok(status.code().unwrap_or(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn our_options_then_the_benchmarks() {
        let p = parse(&v("-np 4 --mpirun mpirun.openmpi m1 M100 --json")).unwrap();
        assert_eq!((p.np, p.mpirun.as_str()), (4, "mpirun.openmpi"));
        assert_eq!(p.rest, v("m1 M100 --json"));
        let p = parse(&v("--min 2")).unwrap();
        assert_eq!((p.np, p.rest), (2, v("--min 2")));
        assert!(parse(&v("-np 0")).is_err());
        assert!(parse(&v("-np"))
            .unwrap_err()
            .to_string()
            .contains("-np needs a value"));
    }
}
