//! `mpiscope trace`: run an MPI program under the recorder.
//!
//! Picks the preload library that matches the program's MPI (from the libraries the
//! executable links), passes `LD_PRELOAD` and the recorder options through the launcher
//! (`-x` for Open MPI's `mpirun`, `-genv` for MPICH's Hydra, the environment otherwise),
//! runs the command, and completes the run directory's manifest with the exit status (and,
//! under a batch system, the job and whether it ended the run: `batch`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;

/// Options of `mpiscope trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    /// Output run directory: new, empty, or an earlier mpiscope trace (with --force).
    #[arg(short, long, default_value = "mpiscope-trace")]
    output: PathBuf,
    /// Replace the mpiscope trace in -o DIR (its manifest.json and rank files, once the
    /// new run has written a trace; other files in DIR are kept). Never applies to a
    /// directory that holds no mpiscope trace.
    #[arg(long)]
    force: bool,
    /// Record one call in N of a function or group: `--sample MPI_Iprobe=10000` (repeatable).
    #[arg(long, value_name = "FUNC=N")]
    sample: Vec<String>,
    /// Record only these functions or groups (comma-separated: p2p, probe, completion,
    /// collective, comm, datatype, rma, io, tools, other, or MPI_ names).
    #[arg(long, value_name = "LIST")]
    include: Option<String>,
    /// Do not record these functions or groups.
    #[arg(long, value_name = "LIST")]
    exclude: Option<String>,
    /// Start recording this many seconds after MPI_Init.
    #[arg(long, value_name = "SECONDS")]
    start_after: Option<f64>,
    /// Stop recording after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Per-thread buffer (one block) size, e.g. 256K, 4M.
    #[arg(long, value_name = "SIZE")]
    buffer: Option<String>,
    /// Frames per callsite: 0 none, 1 the return address, N unwound frames.
    #[arg(long, value_name = "N")]
    stack: Option<u32>,
    /// CPU core reads.
    #[arg(long, value_name = "MODE", value_parser = ["off", "sampled", "every"])]
    core: Option<String>,
    /// Clock.
    #[arg(long, value_name = "CLOCK", value_parser = ["auto", "tsc", "monotonic"])]
    clock: Option<String>,
    /// Shared object with PRE/POST callbacks (see include/mpiscope_plugin.h).
    #[arg(long, value_name = "SO")]
    plugin: Option<PathBuf>,
    /// Ignore MPI_Pcontrol.
    #[arg(long)]
    no_pcontrol: bool,
    /// Do not flush the trace on fatal signals.
    #[arg(long)]
    no_signals: bool,
    /// Write each thread's buffered events at least this often, and the record of a thread
    /// blocked in one MPI call for this long (seconds; 0: only when a buffer is full). A rank
    /// killed with SIGKILL loses at most this much, or one buffer.
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    flush_every: Option<f64>,
    /// Report a rank that stays inside one MPI call this long (`60`, `90s`, `5m`): its
    /// record and that of every thread inside MPI are written, so `mpiscope report` shows
    /// where each rank waits and the wait-for cycle, while the job still runs.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    hang_after: Option<f64>,
    /// What to do once a hang is reported: `report` (the program goes on) or `kill` (the
    /// rank ends its record and kills itself, and the launcher ends the job).
    #[arg(long, value_name = "ACTION", value_parser = ["report", "kill"], requires = "hang_after")]
    hang_action: Option<String>,
    /// Record the thread's CPU time of compute bursts at least this long (`50us`, `1ms`,
    /// seconds without a unit; `off`: none), beside their wall time, so that a replay of
    /// ranks that shared cores counts their work, not their waiting for a core. Each clock
    /// read (a system call) is paid for by at least this much time. Default 50us.
    #[arg(long, value_name = "DURATION|off", value_parser = crate::recorder::cpu_time)]
    cpu_time: Option<String>,
    /// MPI flavour of the program.
    #[arg(long, default_value = "auto", value_parser = ["auto", "openmpi", "mpich"])]
    flavour: String,
    /// Use this preload library instead of the one found next to mpiscope.
    #[arg(long, value_name = "SO")]
    preload: Option<PathBuf>,
    /// None of mpiscope's own messages (the program's output, warnings and errors are
    /// still printed).
    #[arg(short, long)]
    quiet: bool,
    /// Once the program has ended, print on stdout (after the program's own output) a JSON
    /// summary of what was recorded: `output`, `traced`, `ranks`, `bytes`, `flavour`,
    /// `exit_status`, `command`.
    #[arg(long)]
    json: bool,
    /// The command: a launcher and its arguments (`mpirun -np 4 ./app`), or a program.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Parses a duration: seconds (`60`, `2.5`), or with a unit (`90s`, `5m`, `1h`).
fn parse_duration(v: &str) -> Result<f64, String> {
    let t = v.trim();
    let (num, mult) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1.0),
        Some('m') => (&t[..t.len() - 1], 60.0),
        Some('h') => (&t[..t.len() - 1], 3600.0),
        _ => (t, 1.0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{v}`: expected seconds, or a number with s, m or h"))?;
    let s = n * mult;
    if !(0.001..=1e9).contains(&s) {
        return Err(format!("`{v}`: expected between 1 ms and 1e9 s"));
    }
    Ok(s)
}

/// Parses a number of seconds that may be 0.
fn parse_interval(v: &str) -> Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=1e9).contains(&s) => Ok(s),
        _ => Err(format!("`{v}`: expected seconds between 0 and 1e9")),
    }
}

/// How a launcher takes environment variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launcher {
    /// Open MPI `mpirun`: `-x NAME=VALUE`.
    OpenMpi,
    /// MPICH Hydra `mpiexec`: `-genv NAME VALUE`.
    Hydra,
    /// No launcher, or one that forwards the environment (srun).
    Environment,
}

fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

fn is_elf(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}

/// The MPI flavour an executable is linked against, from `ldd`.
fn flavour_of(exe: &Path) -> Option<&'static str> {
    let out = Command::new("ldd").arg(exe).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("libmpich") {
        Some("mpich")
    } else if text.contains("libmpi.so") {
        Some("openmpi")
    } else {
        None
    }
}

fn launcher_kind(cmd0: &str) -> Option<Launcher> {
    let path = which(cmd0)?;
    let real = std::fs::canonicalize(&path).unwrap_or(path.clone());
    let name = path.file_name()?.to_string_lossy().into_owned();
    let real_name = real.file_name()?.to_string_lossy().into_owned();
    let launchers = [
        "mpirun",
        "mpiexec",
        "orterun",
        "mpirun.openmpi",
        "mpiexec.openmpi",
        "mpirun.mpich",
        "mpiexec.mpich",
        "mpiexec.hydra",
        "srun",
        "prun",
    ];
    if !launchers.contains(&name.as_str()) && !launchers.contains(&real_name.as_str()) {
        return None;
    }
    let all = format!("{name} {real_name}");
    if all.contains("hydra") || all.contains("mpich") {
        Some(Launcher::Hydra)
    } else if all.contains("orterun")
        || all.contains("openmpi")
        || all.contains("opal")
        || real_name == "mpirun"
    {
        Some(Launcher::OpenMpi)
    } else {
        Some(Launcher::Environment)
    }
}

/// The library `lib<stem>_<flavour>.so` next to mpiscope (or `explicit`).
pub fn find_library(stem: &str, flavour: &str, explicit: Option<&PathBuf>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("--preload {}: no such file", p.display());
        }
        return Ok(std::fs::canonicalize(p)?);
    }
    let name = format!("lib{stem}_{flavour}.so");
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("MPISCOPE_PRELOAD_DIR") {
        dirs.push(PathBuf::from(d));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.parent() {
            dirs.push(d.to_path_buf());
            dirs.push(d.join("../lib"));
            dirs.push(d.join("../lib/mpiscope"));
        }
    }
    for d in &dirs {
        let p = d.join(&name);
        if p.is_file() {
            return Ok(std::fs::canonicalize(p)?);
        }
    }
    bail!(
        "cannot find {name} (looked in {}); build it with `cargo build --release` or pass --preload",
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
    )
}

/// What running a command under one of mpiscope's preload libraries needs: its MPI flavour
/// and how its launcher takes environment variables.
pub struct Target {
    /// `openmpi` or `mpich`.
    pub flavour: &'static str,
    launcher: Option<Launcher>,
}

/// Finds the MPI flavour of `cmd` (`flavour`: auto, openmpi or mpich) and its launcher.
pub fn resolve(cmd: &[String], flavour: &str) -> Result<Target> {
    let launcher = launcher_kind(&cmd[0]);
    // The executable: the command itself, or the first ELF argument after the launcher.
    let exe = if launcher.is_some() {
        cmd[1..]
            .iter()
            .filter(|s| !s.starts_with('-'))
            .filter_map(|s| which(s))
            .find(|p| is_elf(p))
    } else {
        which(&cmd[0])
    };
    let flavour = match flavour {
        "auto" => {
            let from_exe = exe.as_deref().and_then(flavour_of);
            let from_launcher = match launcher {
                Some(Launcher::Hydra) => Some("mpich"),
                Some(Launcher::OpenMpi) => Some("openmpi"),
                _ => None,
            };
            from_exe.or(from_launcher).with_context(|| {
                format!(
                    "cannot tell which MPI `{}` uses (no libmpi in `ldd` of {}); pass --flavour openmpi or mpich",
                    cmd.join(" "),
                    exe.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "the command".into())
                )
            })?
        }
        "openmpi" => "openmpi",
        "mpich" => "mpich",
        other => bail!("--flavour {other}: expected auto, openmpi or mpich"),
    };
    Ok(Target { flavour, launcher })
}

/// Runs `cmd` with `env` passed through its launcher (`-x` for Open MPI, `-genv` for Hydra,
/// the environment otherwise); returns its exit code.
pub fn spawn(cmd: &[String], target: &Target, env: &[(String, String)]) -> Result<i32> {
    Ok(run(cmd, target, env)?.code)
}

/// [`spawn`], telling how the command ended and which signal mpiscope received meanwhile.
fn run(cmd: &[String], target: &Target, env: &[(String, String)]) -> Result<crate::child::Ended> {
    let mut argv: Vec<String> = vec![cmd[0].clone()];
    let mut child_env: Vec<(String, String)> = Vec::new();
    match target.launcher {
        Some(Launcher::OpenMpi) => {
            for (k, v) in env {
                argv.push("-x".into());
                argv.push(format!("{k}={v}"));
            }
        }
        Some(Launcher::Hydra) => {
            for (k, v) in env {
                argv.push("-genv".into());
                argv.push(k.clone());
                argv.push(v.clone());
            }
        }
        _ => child_env = env.to_vec(),
    }
    argv.extend(cmd[1..].iter().cloned());
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).envs(child_env);
    let ended = crate::child::run(c, &cmd[0])?;
    if let Some(sig) = ended.received {
        eprintln!(
            "mpiscope: {sig} received while `{}` ran; the run is completed",
            cmd.join(" ")
        );
    }
    Ok(ended)
}

/// Checks the recorder's options before anything is launched (see `recorder`).
fn check_options(a: &TraceArgs) -> Result<()> {
    if let Some(b) = &a.buffer {
        crate::recorder::buffer(b)?;
    }
    if let Some(s) = a.start_after {
        crate::recorder::seconds("--start-after", s)?;
    }
    if let Some(s) = a.duration {
        crate::recorder::seconds("--duration", s)?;
    }
    if let Some(n) = a.stack {
        crate::recorder::stack(n)?;
    }
    if let Some(c) = &a.core {
        crate::recorder::core(c)?;
    }
    if let Some(c) = &a.clock {
        crate::recorder::clock(c)?;
    }
    for s in &a.sample {
        crate::recorder::sample(s)?;
    }
    Ok(())
}

/// Runs the command under the recorder.
pub fn trace(a: TraceArgs) -> Result<i32> {
    check_options(&a)?;
    let cmd = &a.command;
    let target = resolve(cmd, &a.flavour)?;
    let flavour = target.flavour;
    let preload = find_library("mpiscope_preload", flavour, a.preload.as_ref())?;

    // The run writes into a sibling of -o DIR; DIR changes only once a trace exists.
    let output = crate::trace_dir::TraceOutput::prepare(&a.output, a.force)?;
    let out = output.run_dir().to_path_buf();

    let mut env: Vec<(String, String)> = vec![
        ("LD_PRELOAD".into(), preload.display().to_string()),
        ("MPISCOPE_DIR".into(), out.display().to_string()),
        ("MPISCOPE_COMMAND".into(), serde_json::to_string(cmd)?),
    ];
    if !a.sample.is_empty() {
        env.push(("MPISCOPE_SAMPLE".into(), a.sample.join(",")));
    }
    let mut opt = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            env.push((k.into(), v));
        }
    };
    opt("MPISCOPE_INCLUDE", a.include.clone());
    opt("MPISCOPE_EXCLUDE", a.exclude.clone());
    opt("MPISCOPE_START_AFTER", a.start_after.map(|s| s.to_string()));
    opt("MPISCOPE_DURATION", a.duration.map(|s| s.to_string()));
    opt("MPISCOPE_BUFFER", a.buffer.clone());
    opt("MPISCOPE_STACK", a.stack.map(|s| s.to_string()));
    opt("MPISCOPE_CORE", a.core.clone());
    opt("MPISCOPE_CLOCK", a.clock.clone());
    opt(
        "MPISCOPE_PLUGIN",
        a.plugin.as_ref().map(|p| {
            std::fs::canonicalize(p)
                .unwrap_or(p.clone())
                .display()
                .to_string()
        }),
    );
    if a.no_pcontrol {
        opt("MPISCOPE_PCONTROL", Some("off".into()));
    }
    if a.no_signals {
        opt("MPISCOPE_SIGNALS", Some("off".into()));
    }
    opt("MPISCOPE_FLUSH_EVERY", a.flush_every.map(|s| s.to_string()));
    opt("MPISCOPE_HANG_AFTER", a.hang_after.map(|s| s.to_string()));
    opt("MPISCOPE_HANG_ACTION", a.hang_action.clone());
    opt("MPISCOPE_CPU_TIME", a.cpu_time.clone());

    // Under a batch system: the job, and (after the run) whether it ended the job.
    let job = crate::batch::JobWatch::detect();
    let (code, batch) = match run(cmd, &target, &env) {
        Ok(ended) => (ended.code, job.map(|j| j.finish(&ended))),
        Err(e) => {
            // Nothing ran: what was made for the run goes (an earlier trace stays).
            let _ = output.finish();
            return Err(e);
        }
    };

    // Complete the manifest (it names the directory the trace ends in) and summarize.
    let dest = output.dest().to_path_buf();
    let mpath = out.join(mpiscope_trace::MANIFEST_FILE);
    if let Ok(text) = std::fs::read_to_string(&mpath) {
        if let Ok(mut m) = serde_json::from_str::<mpiscope_trace::Manifest>(&text) {
            m.exit_status = Some(code);
            m.batch = batch;
            m.command = cmd.clone();
            if let Some(o) = m.options.as_object_mut() {
                if o.contains_key("dir") {
                    o.insert("dir".into(), dest.display().to_string().into());
                }
            }
            let new = serde_json::to_string_pretty(&m)? + "\n";
            complete_manifest(&mpath, &text, &new);
        }
    }
    let (ranks, bytes) = output.rank_files()?;
    let existed = output.existed();
    let traced = output.finish()?;
    if a.json {
        let summary = serde_json::json!({
            "output": dest.display().to_string(),
            "traced": traced,
            "ranks": if traced { ranks } else { 0 },
            "bytes": if traced { bytes } else { 0 },
            "flavour": flavour,
            "exit_status": code,
            "command": cmd,
        });
        crate::outputs::write_stdout(&crate::outputs::json(&summary)?)?;
    }
    if !traced {
        eprintln!(
            "mpiscope: no trace was written (did the program call MPI_Init? is it linked against {flavour}?); {} {}",
            a.output.display(),
            if existed { "left as it was" } else { "not created" }
        );
    } else if !a.quiet {
        eprintln!(
            "mpiscope: traced {ranks} rank(s) of `{}` into {} ({:.1} MiB, {flavour})",
            cmd.join(" "),
            dest.display(),
            bytes as f64 / (1 << 20) as f64
        );
    }
    Ok(code)
}

/// Replaces the manifest written at MPI_Init with its completed form (`new`): atomically,
/// or, when the disk has no room for a second copy (the ranks may have filled it), in place,
/// in the space the file already holds. Failing both, the first manifest (`old`) stays: the
/// record is whole, only the exit status is missing, and that is said, not made an error.
fn complete_manifest(path: &Path, old: &str, new: &str) {
    let Err(atomic) = mpiscope_files::write_atomic(path, new.as_bytes()) else {
        return;
    };
    let rewrite = |text: &str| {
        use std::io::Write;
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
    };
    if let Err(e) = rewrite(new) {
        let restored = rewrite(old).is_ok();
        eprintln!(
            "mpiscope: {}: cannot complete the manifest ({atomic}; in place: {e}){}",
            path.display(),
            if restored {
                ": the record is whole, its manifest lacks the exit status"
            } else {
                ""
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a file system the ranks filled to the last byte, the manifest is still completed
    /// (in place), and nothing is lost when even that fails.
    #[test]
    fn manifest_completed_on_a_full_disk() {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("small");
        std::fs::create_dir(&mnt).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("cannot mount a tmpfs here: nothing to test");
            return;
        }
        let path = mnt.join("manifest.json");
        let old = format!("{{\"ranks\": 2, \"pad\": \"{}\"}}\n", "x".repeat(1500));
        std::fs::write(&path, &old).unwrap();
        // Fill every remaining byte.
        let mut fill = std::fs::File::create(mnt.join("rank-00000.mpst")).unwrap();
        let block = vec![7u8; 4096];
        while std::io::Write::write_all(&mut fill, &block).is_ok() {}
        let _ = std::io::Write::write_all(&mut fill, &[7u8]);
        drop(fill);
        let new = old.replace("\"ranks\": 2", "\"ranks\": 2, \"exit_status\": 0");
        complete_manifest(&path, &old, &new);
        let got = std::fs::read_to_string(&path).unwrap();
        let _ = Command::new("umount").arg(&mnt).status();
        assert_eq!(got, new);
    }
}
