//! `mpiscope bench -np N ARGS`: runs `mpirun -np N mpiscope-bench ARGS` (the MPITEST
//! benchmark, built next to `mpiscope`), as root with the options Open MPI needs.
//!
//! With `--predict PLATFORM` it closes the loop of measure, calibrate, simulate: the run is
//! traced (`mpiscope trace`), the trace replayed on the platform (`mpiscope replay
//! --callsites-by-size`), and each collective's measured time printed next to the
//! predicted one (`mpiscope_calibrate::prediction`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;

/// Options of `mpiscope bench`: `-n/--ranks N` (or mpirun's `-np N`), `--mpirun CMD`,
/// `--launcher-arg ARG`, `--binary PATH`, `--bind-to core|none`, then the benchmark's own
/// arguments.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// `-n N`, `--ranks N` (processes, default 2; mpirun's `-np N` and `--np N` too),
    /// `--mpirun CMD` (the launcher, default `mpirun`: a command with its arguments split
    /// as a shell splits words, `--mpirun "srun --mpi=pmix"`), `--launcher-arg ARG` (one
    /// more launcher argument, repeatable), `--binary PATH` (default: `mpiscope-bench` next
    /// to `mpiscope`), `--bind-to core` (rank i bound to core i modulo the cores, as
    /// `busy_signal` needs; default: the launcher's choice), `--predict PLATFORM` (trace
    /// the run, replay it on PLATFORM and compare), `--collectives NAME` (the replay's
    /// decision rules, as `mpiscope replay --collectives`), `--keep DIR` (keep the trace, results
    /// and replay of `--predict` in DIR), `--force` (replace an output file of another
    /// kind; with `--keep`, an earlier trace there too), `-q`, `--quiet` (no messages of
    /// mpiscope's own), then the arguments of `mpiscope-bench`, in [MPITEST]'s syntax or
    /// as long options.
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
    /// The launcher and its own arguments.
    mpirun: Vec<String>,
    quiet: bool,
    binary: Option<PathBuf>,
    bind_to_core: bool,
    predict: Option<PathBuf>,
    /// `--collectives` of the replay (`None`: replay's default).
    collectives: Option<String>,
    keep: Option<PathBuf>,
    force: bool,
    rest: Vec<String>,
}

/// Takes our options from the front of `args`; the rest is the benchmark's.
fn parse(args: &[String]) -> Result<Parsed> {
    let mut p = Parsed {
        np: 2,
        mpirun: vec!["mpirun".into()],
        quiet: false,
        binary: None,
        bind_to_core: false,
        predict: None,
        collectives: None,
        keep: None,
        force: false,
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
            "--force" | "--quiet" | "-q" => {
                if args[i] == "--force" {
                    p.force = true;
                } else {
                    p.quiet = true;
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        match args[i].as_str() {
            "-np" | "--np" | "-n" | "--ranks" => {
                let v = value(i)?;
                p.np =
                    v.parse().ok().filter(|&n: &u32| n > 0).with_context(|| {
                        format!("{} {v}: expected a number of processes", args[i])
                    })?;
            }
            "--mpirun" => {
                let v = value(i)?;
                let words = shell_words(&v).map_err(|e| anyhow::anyhow!("--mpirun {v}: {e}"))?;
                // The launcher arguments given before stay after it.
                let extra = p.mpirun.split_off(1);
                p.mpirun = words;
                p.mpirun.extend(extra);
            }
            "--launcher-arg" => p.mpirun.push(value(i)?),
            "--binary" => p.binary = Some(PathBuf::from(value(i)?)),
            "--bind-to" => {
                p.bind_to_core = match value(i)?.as_str() {
                    "core" => true,
                    "none" => false,
                    v => bail!("--bind-to {v}: expected core or none"),
                }
            }
            "--predict" => p.predict = Some(PathBuf::from(value(i)?)),
            "--collectives" => p.collectives = Some(value(i)?),
            "--keep" => p.keep = Some(PathBuf::from(value(i)?)),
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
    if let Some(c) = &a.collectives {
        if a.predict.is_none() {
            bail!("--collectives {c}: the replay's decision rules, only with --predict");
        }
        c.parse::<mpiscope_sim::coll::Selector>()
            .map_err(|e| anyhow::anyhow!("--collectives {c}: {e}"))?;
    }
    if a.predict.is_some() {
        return predict(a);
    }
    let mut bench_args = a.rest.clone();
    if a.force {
        bench_args.push("--force".into());
    }
    let mut cmd = mpirun_command(&a, &bench_args)?;
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {} (install openmpi-bin)", a.mpirun[0]))?;
    use std::os::unix::process::ExitStatusExt;
    // As a shell says it: 128 + N when signal N ended the launcher.
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// Splits `s` into words as a POSIX shell does, without expansions: blanks separate words,
/// `'...'` is literal, `"..."` keeps blanks (a backslash there escapes `"`, `\\`, `$` and
/// `` ` ``), and a backslash outside quotes escapes the next character.
fn shell_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("unterminated ' quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => w.push(e),
                            Some(e) => {
                                w.push('\\');
                                w.push(e);
                            }
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("unterminated \" quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(e) => word.get_or_insert_with(String::new).push(e),
                None => return Err("a backslash ends it".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    if words.is_empty() {
        return Err("no launcher command".into());
    }
    Ok(words)
}

/// `mpirun -np N mpiscope-bench ARGS` with the launcher options this host needs.
fn mpirun_command(a: &Parsed, bench_args: &[String]) -> Result<Command> {
    let binary = match &a.binary {
        Some(b) => b.clone(),
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
    let mut cmd = Command::new(&a.mpirun[0]);
    cmd.args(&a.mpirun[1..]);
    let is_root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    // Open MPI's mpirun takes its own options; MPICH's Hydra and other launchers (srun)
    // do not.
    let program = Path::new(&a.mpirun[0])
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let open_mpi = ["mpirun", "mpiexec", "orterun"]
        .iter()
        .any(|l| program == *l || program.starts_with(&format!("{l}.openmpi")))
        && !program.contains("mpich")
        && !program.contains("hydra");
    if open_mpi {
        if is_root {
            cmd.arg("--allow-run-as-root");
        }
        // More processes than cores must still run, and must not spin on each other.
        cmd.args(["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]);
        if a.bind_to_core {
            cmd.args(["--bind-to", "core:overload-allowed", "--map-by", "core"]);
        }
    } else if a.bind_to_core {
        cmd.args(["-bind-to", "core"]);
    }
    // srun counts tasks with -n; the MPI launchers take mpirun's -np.
    cmd.arg(if program == "srun" { "-n" } else { "-np" })
        .arg(a.np.to_string())
        .arg(&binary)
        .args(bench_args);
    Ok(cmd)
}

/// Runs `cmd`, failing with its standard error when it fails.
fn run_checked(cmd: &mut Command, what: &str) -> Result<Vec<u8>> {
    let o = cmd.output().with_context(|| format!("cannot run {what}"))?;
    if !o.status.success() {
        bail!(
            "{what} failed ({}):\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    Ok(o.stdout)
}

/// `--predict PLATFORM`: trace the benchmark, replay it, print measured against predicted.
fn predict(a: Parsed) -> Result<i32> {
    let platform = a.predict.clone().expect("predict mode");
    if !platform.is_file() {
        bail!("--predict {}: no such platform file", platform.display());
    }
    // The results go to our file as JSON; the user's format options only shape our output.
    let json = a.rest.iter().any(|x| x == "--json");
    let mut bench_args: Vec<String> = Vec::new();
    for x in &a.rest {
        let seed_output = x.starts_with('o') && !x.starts_with("--");
        if x == "--output" || x.starts_with("--output=") || seed_output {
            bail!("--predict writes the benchmark's results itself: drop `{x}` (use --keep DIR to keep them)");
        }
        if x != "--json" && x != "--csv" && x != "--in-call" {
            bench_args.push(x.clone());
        }
    }
    // Each operation also timed alone: the statistic closest to the replay's.
    bench_args.push("--in-call".into());
    // A private directory of an unpredictable name (nothing planted under a guessed name
    // can redirect the run), removed with everything in it at the end; or the user's.
    let (dir, _private) = match &a.keep {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
            (d.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("mpiscope-predict-")
                .tempdir()
                .context("cannot create a temporary directory")?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    predict_in(&a, &platform, &bench_args, &dir, json)
}

/// `mpiscope replay --json`'s report, as `--keep DIR/replay.json` holds it.
const REPLAY_REPORT: mpiscope_files::Kind = mpiscope_files::Kind::new("a replay report", |h| {
    mpiscope_files::has_marker(h, b"\"makespan_s\"")
});

fn predict_in(
    a: &Parsed,
    platform: &std::path::Path,
    bench_args: &[String],
    dir: &std::path::Path,
    json: bool,
) -> Result<i32> {
    let me = std::env::current_exe().context("where is mpiscope?")?;
    let (run, results, traced, replay) = (
        dir.join("run"),
        dir.join("results.json"),
        dir.join("traced-results.json"),
        dir.join("replay.json"),
    );
    // Outputs already in a --keep DIR: replaced if they are an earlier prediction's (the
    // trace only with --force, as `mpiscope trace` has it), refused otherwise, before
    // anything runs.
    mpiscope_files::check_output(&replay, &REPLAY_REPORT, a.force)?;
    let with_output = |file: &std::path::Path| {
        let mut args = bench_args.to_vec();
        args.extend([
            "--json".into(),
            "--output".into(),
            file.display().to_string(),
        ]);
        if a.force {
            args.push("--force".into());
        }
        args
    };
    // The measurement runs untraced (the recorder adds its own cost to every call); a
    // second run of the same benchmark is traced for the replay.
    let say = |m: String| {
        if !a.quiet {
            eprintln!("mpiscope: {m}");
        }
    };
    say(format!("measuring {} ranks", a.np));
    run_checked(
        &mut mpirun_command(a, &with_output(&results))?,
        "mpiscope-bench",
    )?;
    let launch = mpirun_command(a, &with_output(&traced))?;
    let mut trace = Command::new(&me);
    trace.arg("trace").arg("-o").arg(&run);
    if a.force {
        trace.arg("--force");
    }
    trace
        .arg("--")
        .arg(launch.get_program())
        .args(launch.get_args());
    say("tracing a second run".into());
    run_checked(&mut trace, "mpiscope trace")?;
    say(format!("replaying on {}", platform.display()));
    let replayed = run_checked(
        Command::new(&me)
            .arg("replay")
            .arg(&run)
            .arg("--platform")
            .arg(platform)
            .arg("--mapping")
            .arg(format!("sequential:{}", a.np))
            .args(
                a.collectives
                    .as_deref()
                    .map(|c| ["--collectives", c])
                    .into_iter()
                    .flatten(),
            )
            .args(["--callsites-by-size", "--json", "--quiet"]),
        "mpiscope replay",
    )?;
    crate::outputs::write(&replay, &REPLAY_REPORT, a.force, &replayed)?;
    let bench_text = std::fs::read_to_string(&results)
        .with_context(|| format!("cannot read {}", results.display()))?;
    let rows = mpiscope_calibrate::prediction::compare(
        &bench_text,
        &results.display().to_string(),
        &String::from_utf8_lossy(&replayed),
        &replay.display().to_string(),
    )?;
    if json {
        crate::outputs::write_stdout(&(serde_json::to_string_pretty(&rows)? + "\n"))?;
        return Ok(0);
    }
    crate::outputs::write_stdout(&table(platform, a.np, &rows))?;
    Ok(0)
}

/// `--predict`'s table: measured, predicted and their errors per operation and length.
fn table(
    platform: &std::path::Path,
    np: u32,
    rows: &[mpiscope_calibrate::prediction::Comparison],
) -> String {
    let mut s = format!(
        "# measured (median, slowest rank, barrier-corrected) and predicted on {}, {} ranks;\n\
         # IN CALL: the operation alone, before the trailing barrier (no barrier correction)\n\
         {:<14} {:>10} {:>14} {:>14} {:>9} {:>14} {:>9}\n",
        platform.display(),
        np,
        "OPERATION",
        "N(int)",
        "MEASURED (us)",
        "PREDICTED (us)",
        "ERROR",
        "IN CALL (us)",
        "ERROR"
    );
    let percent = |e: Option<f64>| e.map_or("-".to_string(), |e| format!("{:+.1}%", e * 100.0));
    for r in rows {
        let (p, e) = match (r.predicted_s, r.error) {
            (Some(p), Some(e)) => (format!("{:.3}", p * 1e6), format!("{:+.1}%", e * 100.0)),
            _ => ("-".into(), "unmatched".into()),
        };
        let alone = r
            .measured_in_call_s
            .map_or("-".to_string(), |m| format!("{:.3}", m * 1e6));
        s += &format!(
            "{:<14} {:>10} {:>14.3} {:>14} {:>9} {:>14} {:>9}\n",
            r.operation,
            r.ints,
            r.measured_median_s * 1e6,
            p,
            e,
            alone,
            percent(r.error_in_call)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_with_its_arguments() {
        let p = parse(&[
            "--mpirun".into(),
            "srun --mpi=pmix -p 'debug queue'".into(),
            "--launcher-arg".into(),
            "--exclusive".into(),
            "m1".into(),
        ])
        .unwrap();
        assert_eq!(
            p.mpirun,
            ["srun", "--mpi=pmix", "-p", "debug queue", "--exclusive"]
        );
        assert_eq!(p.rest, v("m1"));
        let c = mpirun_command(
            &Parsed {
                binary: Some("/bin/true".into()),
                ..p
            },
            &[],
        )
        .unwrap();
        let args: Vec<_> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        // srun is not Open MPI's mpirun: none of its options are added.
        assert_eq!(
            args,
            [
                "--mpi=pmix",
                "-p",
                "debug queue",
                "--exclusive",
                "-n",
                "2",
                "/bin/true"
            ]
        );
        assert_eq!(
            shell_words(r#"a "b c" d\ e "q\"x""#).unwrap(),
            ["a", "b c", "d e", "q\"x"]
        );
        for bad in ["'open", "\"open", "", "  "] {
            assert!(shell_words(bad).is_err(), "{bad}");
        }
    }

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    /// `--collectives` is the replay's, taken before the benchmark's arguments, and only
    /// with `--predict`; a name the simulator does not know is refused before any run.
    #[test]
    fn collectives_go_to_the_replay() {
        let p = parse(&v("--predict p.toml --collectives openmpi4 m1 T5")).unwrap();
        assert_eq!(p.collectives.as_deref(), Some("openmpi4"));
        assert_eq!(p.rest, v("m1 T5"));
        let e = bench(BenchArgs {
            args: v("--collectives openmpi4 m1"),
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("only with --predict"), "{e}");
        let e = bench(BenchArgs {
            args: v("--predict /nonexistent.toml --collectives tuned m1"),
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--collectives tuned") && e.contains("openmpi4"),
            "{e}"
        );
    }

    #[test]
    fn our_options_then_the_benchmarks() {
        let p = parse(&v("-np 4 --mpirun mpirun.openmpi m1 M100 --json")).unwrap();
        assert_eq!((p.np, p.mpirun.as_slice()), (4, &v("mpirun.openmpi")[..]));
        assert_eq!(p.rest, v("m1 M100 --json"));
        let p = parse(&v("--min 2")).unwrap();
        assert_eq!((p.np, p.rest), (2, v("--min 2")));
        assert!(parse(&v("-np 0")).is_err());
        assert!(parse(&v("-np"))
            .unwrap_err()
            .to_string()
            .contains("-np needs a value"));
        let p = parse(&v("-np 4 --bind-to core --only busy_signal")).unwrap();
        assert!(p.bind_to_core);
        assert_eq!(p.rest, v("--only busy_signal"));
        assert!(!parse(&v("-np 4 m1")).unwrap().bind_to_core);
        for spelling in ["-n", "--ranks", "-np", "--np"] {
            assert_eq!(parse(&v(&format!("{spelling} 3 m1"))).unwrap().np, 3);
        }
        assert!(parse(&v("--quiet m1")).unwrap().quiet);
        assert!(parse(&v("--bind-to socket"))
            .unwrap_err()
            .to_string()
            .contains("--bind-to socket"));
    }
}
