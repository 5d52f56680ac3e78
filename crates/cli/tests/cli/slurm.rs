//! mpiscope under a real batch system: SLURM (Debian's slurm-wlm) on this machine, started
//! by `scripts/slurm.sh up` and stopped at the end, also when a check fails (unless it was
//! up before the test). Traced jobs run as in production: `srun` in an allocation, `mpirun`
//! in an `sbatch` script, a job ended at its time limit, a job cancelled, a study shared by
//! `srun`'s tasks. Each scenario adds a row to the `slurm` section of `docs/FAULTS.md`
//! (`MPISCOPE_BLESS=1 cargo test --release -p mpiscope --test cli -- slurm::` rewrites it).
//!
//! A machine that cannot run slurmd makes `slurm.sh up` exit 3 with the reason: the test
//! then prints it and passes only after writing it to `target/slurm-unavailable.txt`.
//! Any other failure to start SLURM fails the test.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::Mpi;

/// Rounds of work before the fault (`faults MODE ROUNDS PIDFILE`).
const ROUNDS: usize = 500;

/// What `mpiscope trace` says when a batch script's shell started it.
const HINT: &str = "write `exec mpiscope trace ...` in the batch script";

/// The one-machine SLURM of `scripts/slurm.sh`.
struct Slurm {
    conf: PathBuf,
    /// Started by this test (so stopped by it).
    ours: bool,
}

fn script() -> PathBuf {
    common::root().join("scripts/slurm.sh")
}

impl Slurm {
    /// Starts SLURM, or says why this machine cannot run it (`slurm.sh up` exits 3).
    fn start() -> Result<Slurm, String> {
        let was_up = Command::new(script())
            .arg("status")
            .output()
            .expect("run scripts/slurm.sh status")
            .status
            .success();
        let o = Command::new(script())
            .arg("up")
            .output()
            .expect("run scripts/slurm.sh up");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        match o.status.code() {
            Some(0) => {}
            Some(3) => return Err(stderr),
            other => panic!("scripts/slurm.sh up failed ({other:?}):\n{stderr}"),
        }
        let stdout = String::from_utf8_lossy(&o.stdout);
        let conf = stdout
            .lines()
            .find_map(|l| l.strip_prefix("export SLURM_CONF="))
            .unwrap_or_else(|| panic!("slurm.sh up printed no SLURM_CONF: {stdout}"));
        Ok(Slurm {
            conf: PathBuf::from(conf),
            ours: !was_up,
        })
    }

    /// `program` with this SLURM's configuration, none of the caller's own job, and what
    /// Open MPI needs as root.
    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SLURM_") {
                c.env_remove(k);
            }
        }
        c.env("SLURM_CONF", &self.conf)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
        c
    }

    fn run(&self, program: &str, args: &[&str], dir: &Path) -> Output {
        self.cmd(program)
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
    }

    /// Submits `script` with `options`; returns the job id.
    fn sbatch(&self, options: &[&str], script: &Path, dir: &Path) -> Result<String, String> {
        let mut args = vec!["--parsable", "-o", "job.out"];
        args.extend(options);
        args.push(script.to_str().unwrap());
        let o = self.run("sbatch", &args, dir);
        let out = String::from_utf8_lossy(&o.stdout);
        let id = out.trim().split(';').next().unwrap_or("").to_owned();
        if !o.status.success() || id.is_empty() {
            return Err(format!(
                "sbatch failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(id)
    }

    /// The job's state (`RUNNING`, `TIMEOUT`, ...).
    fn state(&self, job: &str) -> String {
        let o = self.run(
            "squeue",
            &["-h", "-t", "all", "-j", job, "-o", "%T"],
            Path::new("/"),
        );
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    }

    /// Waits until the job has ended (at most `limit`); returns its final state.
    fn wait_ended(&self, job: &str, limit: Duration) -> Result<String, String> {
        let start = Instant::now();
        loop {
            let s = self.state(job);
            let ended = [
                "COMPLETED",
                "CANCELLED",
                "TIMEOUT",
                "FAILED",
                "NODE_FAIL",
                "PREEMPTED",
                "OUT_OF_MEMORY",
                "BOOT_FAIL",
                "DEADLINE",
            ];
            if ended.contains(&s.as_str()) {
                return Ok(s);
            }
            if start.elapsed() > limit {
                let _ = self.run("scancel", &[job], Path::new("/"));
                return Err(format!("job {job} still {s} after {limit:?}: cancelled"));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        if self.ours {
            let o = Command::new(script()).arg("down").output();
            if !o.is_ok_and(|o| o.status.success()) {
                eprintln!("scripts/slurm.sh down failed");
            }
        }
    }
}

/// A check that failed, or the row it makes.
type Outcome = Result<String, String>;

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What a rank's record holds.
struct Record {
    calls: std::collections::BTreeMap<String, usize>,
    /// Unfinished calls: (name, peer, tag).
    open: Vec<(String, Option<i64>, Option<i64>)>,
    reason: String,
}

fn record(trace: &Path, rank: u32) -> Result<Record, String> {
    let run = mpiscope_trace::RunDir::open(trace).map_err(|e| e.to_string())?;
    let mut r = run.open_rank(rank).map_err(|e| e.to_string())?;
    let mut calls = std::collections::BTreeMap::new();
    let mut open = Vec::new();
    while let Some((e, t)) = r.next_with_tables() {
        let name = t.call_name(e.call).into_owned();
        if e.unfinished {
            open.push((
                name,
                e.args.get(mpiscope_trace::Slot::Peer),
                e.args.get(mpiscope_trace::Slot::Tag),
            ));
        } else {
            *calls.entry(name).or_insert(0) += 1;
        }
    }
    let reason = r.ending().reason.unwrap_or_else(|| "no trailer".into());
    Ok(Record {
        calls,
        open,
        reason,
    })
}

/// Both ranks kept their ROUNDS of `MPI_Sendrecv` and `MPI_Allreduce`; returns the records.
fn work_kept(trace: &Path) -> Result<[Record; 2], String> {
    let r = [record(trace, 0)?, record(trace, 1)?];
    for (rank, rec) in r.iter().enumerate() {
        check(
            rec.calls.get("MPI_Sendrecv") == Some(&ROUNDS)
                && rec.calls.get("MPI_Allreduce") == Some(&ROUNDS),
            || format!("rank {rank} lost work: {:?}", rec.calls),
        )?;
    }
    Ok(r)
}

fn manifest(trace: &Path) -> Result<mpiscope_trace::Manifest, String> {
    let run = mpiscope_trace::RunDir::open(trace).map_err(|e| e.to_string())?;
    run.manifest
        .ok_or_else(|| format!("{}: no manifest", trace.display()))
}

/// The manifest once `mpiscope trace` completed it (it may finish after its job: a batch
/// script's shell ends at the signal, mpiscope then completes the run on its own).
fn completed_manifest(trace: &Path) -> Result<mpiscope_trace::Manifest, String> {
    let start = Instant::now();
    loop {
        if let Ok(m) = manifest(trace) {
            if m.exit_status.is_some() {
                return Ok(m);
            }
        }
        if start.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "{}: the manifest was never completed",
                trace.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ranks' process ids from the program's PIDFILE.<rank> files, once all exist.
fn pids(pidfile: &Path, limit: Duration) -> Option<[u32; 2]> {
    let start = Instant::now();
    loop {
        let read = |r: u32| -> Option<u32> {
            std::fs::read_to_string(format!("{}.{r}", pidfile.display()))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        if let (Some(a), Some(b)) = (read(0), read(1)) {
            return Some([a, b]);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Two ranks on this host, with the processes that wrote `pidfile`, on cores of this
/// machine (and distinct ones when `bound`).
fn placement_right(
    m: &mpiscope_trace::Manifest,
    pidfile: &Path,
    bound: bool,
) -> Result<(), String> {
    let host = hostname();
    check(m.ranks == 2 && m.hosts == [host.clone()], || {
        format!(
            "ranks {} on hosts {:?}, expected 2 on {host}",
            m.ranks, m.hosts
        )
    })?;
    let pids = pids(pidfile, Duration::ZERO).ok_or("the program wrote no process ids")?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    for (r, p) in m.placement.iter().enumerate() {
        check(
            p.rank == r as u32 && p.host == host && p.pid == pids[r],
            || {
                format!(
                    "placement {p:?}, expected rank {r} on {host} pid {}",
                    pids[r]
                )
            },
        )?;
        check(p.core.is_some_and(|c| c < cpus), || {
            format!("rank {r}'s core {:?} is not one of the {cpus} here", p.core)
        })?;
    }
    if bound {
        check(m.placement[0].core != m.placement[1].core, || {
            format!("ranks bound to cores share one: {:?}", m.placement)
        })?;
    }
    Ok(())
}

fn report(trace: &Path) -> Result<String, String> {
    let o = Command::new(common::mpiscope())
        .arg("report")
        .arg(trace)
        .output()
        .unwrap();
    check(o.status.success(), || {
        format!("report failed: {}", text(&o))
    })?;
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn report_json(trace: &Path) -> Result<serde_json::Value, String> {
    let o = Command::new(common::mpiscope())
        .arg("report")
        .arg(trace)
        .arg("--json")
        .output()
        .unwrap();
    check(o.status.success(), || {
        format!("report --json failed: {}", text(&o))
    })?;
    serde_json::from_slice(&o.stdout).map_err(|e| e.to_string())
}

/// `mpiscope trace -o DIR -- LAUNCHER... faults MODE ROUNDS PIDFILE` as one shell line.
fn trace_line(dir: &Path, launcher: &str, mode: &str) -> String {
    let exe = common::build(Mpi::OpenMpi, "misc/faults.c", &[]);
    format!(
        "{} trace -o {} --preload {} -- {launcher} {} {mode} {ROUNDS} {}",
        common::mpiscope().display(),
        dir.join("trace").display(),
        Mpi::OpenMpi.preload().display(),
        exe.display(),
        dir.join("pid").display()
    )
}

/// A batch script of one line.
fn batch_script(dir: &Path, line: &str) -> PathBuf {
    let path = dir.join("job.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{line}\n")).unwrap();
    path
}

// ------------------------------------------------------------------------------ scenarios

/// `salloc` then `mpiscope trace -- srun --mpi=pmix`: the ranks are srun's tasks.
fn srun_in_an_allocation(s: &Slurm, dir: &Path) -> Outcome {
    let line = trace_line(dir, "srun -n 2 --mpi=pmix", "steady");
    let o = s.run("salloc", &["-n", "2", "-t", "5", "sh", "-c", &line], dir);
    let all = text(&o);
    check(o.status.success(), || format!("salloc failed: {all}"))?;
    check(all.contains("checksum 250000.0"), || {
        format!("the program's output is missing: {all}")
    })?;
    check(!all.contains(HINT), || {
        format!("advice for batch scripts under salloc: {all}")
    })?;
    let job = all
        .split("Granted job allocation ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .ok_or_else(|| format!("salloc named no job: {all}"))?
        .to_owned();
    let trace = dir.join("trace");
    let recs = work_kept(&trace)?;
    check(recs.iter().all(|r| r.reason == "finalize"), || {
        format!("records end with {:?}", [&recs[0].reason, &recs[1].reason])
    })?;
    let m = completed_manifest(&trace)?;
    placement_right(&m, &dir.join("pid"), false)?;
    check(
        m.command.first().map(String::as_str) == Some("srun"),
        || format!("command {:?}", m.command),
    )?;
    let b = m.batch.as_ref().ok_or("no batch entry in the manifest")?;
    check(
        b.system == "slurm" && b.job_id == job && b.time_limit_s == Some(300) && b.ended.is_none(),
        || format!("batch entry {b:?}, expected job {job}, 300 s, not ended"),
    )?;
    let rep = report(&trace)?;
    check(
        rep.contains("MPI_Sendrecv") && !rep.contains("How the record ends"),
        || format!("report:\n{rep}"),
    )?;
    Ok(format!(
        "exit 0, the program's output; 2 ranks on this host with srun's task pids, each its {ROUNDS} rounds and `{}`; manifest `batch`: `{{system: slurm, job_id, time_limit_s: 300, end_unix_s}}`; `report` as outside SLURM",
        recs[0].reason
    ))
}

/// An `sbatch` script running `mpiscope trace -- mpirun -np 2`.
fn mpirun_in_sbatch(s: &Slurm, dir: &Path) -> Outcome {
    let script = batch_script(dir, &trace_line(dir, "mpirun -np 2", "steady"));
    let job = s.sbatch(&["-n", "2", "-t", "5"], &script, dir)?;
    let state = s.wait_ended(&job, Duration::from_secs(60))?;
    let out = std::fs::read_to_string(dir.join("job.out")).unwrap_or_default();
    check(state == "COMPLETED", || {
        format!("job {job} ended {state}: {out}")
    })?;
    check(
        out.contains("checksum 250000.0") && out.contains("mpiscope: traced 2 rank(s)"),
        || format!("job output: {out}"),
    )?;
    // Started by the script's shell (not `exec`): mpiscope says what SLURM's end would do.
    check(out.contains(HINT), || {
        format!("no advice to `exec` mpiscope in the batch script: {out}")
    })?;
    let trace = dir.join("trace");
    let recs = work_kept(&trace)?;
    check(recs.iter().all(|r| r.reason == "finalize"), || {
        format!("records end with {:?}", [&recs[0].reason, &recs[1].reason])
    })?;
    let m = completed_manifest(&trace)?;
    placement_right(&m, &dir.join("pid"), true)?;
    check(m.exit_status == Some(0), || {
        format!("exit status {:?}", m.exit_status)
    })?;
    let b = m.batch.as_ref().ok_or("no batch entry in the manifest")?;
    check(
        b.job_id == job && b.time_limit_s == Some(300) && b.ended.is_none(),
        || format!("batch entry {b:?}"),
    )?;
    let started = m.start_unix_ns as f64 / 1e9;
    check(
        b.end_unix_s
            .is_some_and(|e| (e as f64 - (started + 300.0)).abs() < 30.0),
        || format!("end time {:?}, run started at {started}", b.end_unix_s),
    )?;
    report(&trace)?;
    Ok(format!(
        "job {state}; 2 ranks on this host with the program's pids, bound by mpirun to distinct cores, each its {ROUNDS} rounds and `{}`; `batch` names the job, its 300 s limit and end time; started by the script's shell, mpiscope advises `exec mpiscope trace ...`",
        recs[0].reason
    ))
}

/// The checks shared by jobs that SLURM ends while the program deadlocks.
fn ended_by_slurm(
    dir: &Path,
    job: &str,
    state: &str,
    cause: &str,
    says: &str,
) -> Result<String, String> {
    let trace = dir.join("trace");
    let m = completed_manifest(&trace)?;
    // Read once mpiscope has completed the run: it says why the job ended before that.
    let out = std::fs::read_to_string(dir.join("job.out")).unwrap_or_default();
    let recs = work_kept(&trace)?;
    for (rank, (r, (peer, tag))) in recs.iter().zip([(1, 91), (0, 92)]).enumerate() {
        check(
            r.open == [("MPI_Recv".to_string(), Some(peer), Some(tag))],
            || format!("rank {rank}'s unfinished calls: {:?}", r.open),
        )?;
        check(r.reason.starts_with("signal SIGTERM"), || {
            format!("rank {rank} ends with {}", r.reason)
        })?;
    }
    let b = m.batch.as_ref().ok_or("no batch entry in the manifest")?;
    let ended = b.ended.as_ref().ok_or_else(|| {
        format!("job {job} ({state}): the manifest says nothing of its end: {out}")
    })?;
    eprintln!("job {job}: {}", ended.evidence);
    // The cause comes from the job's state read after the signal (COMPLETING while the
    // job's processes end, its final state once they have), not from the time fallback.
    check(
        serde_json::to_value(ended.cause).unwrap() == cause
            && ended.signal == "SIGTERM"
            && ended.evidence.starts_with("job state "),
        || format!("job {job} ended {state}, the manifest says {ended:?}"),
    )?;
    let rep = report(&trace)?;
    check(rep.contains(says), || {
        format!("report does not say `{says}`:\n{rep}")
    })?;
    check(
        rep.contains("deadlock: rank 0 waits for rank 1 in MPI_Recv"),
        || format!("report lost the deadlock:\n{rep}"),
    )?;
    let j = report_json(&trace)?;
    check(j["endings"]["batch"]["ended"]["cause"] == cause, || {
        format!("report --json: {}", j["endings"])
    })?;
    check(out.contains(says), || {
        format!("mpiscope trace did not say `{says}` in the job's output: {out}")
    })?;
    check(!out.contains(HINT), || {
        format!("`exec mpiscope trace` is the script itself, yet: {out}")
    })?;
    // `signal SIGTERM (sent by process N)`: the sender's id changes from run to run.
    let reason = recs[0].reason.split(" (sent by").next().unwrap_or("");
    Ok(reason.to_owned())
}

/// `sbatch -t 1`: the job deadlocks until SLURM ends it at its time limit.
fn time_limit(s: &Slurm, dir: &Path) -> Outcome {
    let script = batch_script(
        dir,
        &format!("exec {}", trace_line(dir, "mpirun -np 2", "deadlock")),
    );
    let job = s.sbatch(&["-n", "2", "-t", "1"], &script, dir)?;
    pids(&dir.join("pid"), Duration::from_secs(60))
        .ok_or_else(|| format!("job {job}: the program never started: {}", s.state(&job)))?;
    // SLURM checks time limits every 30 s: the end comes 60 to 90 s after the start.
    let state = s.wait_ended(&job, Duration::from_secs(150))?;
    check(state == "TIMEOUT", || format!("job {job} ended {state}"))?;
    let says = format!("The job was ended by SLURM at its time limit (job {job}, 0:01:00)");
    let reason = ended_by_slurm(dir, &job, &state, "time_limit", &says)?;
    Ok(format!("job {state}; every rank keeps its {ROUNDS} rounds and its unfinished `MPI_Recv`, and ends with `{reason}`; manifest `batch.ended`: `{{cause: time_limit, signal: SIGTERM, evidence}}`, the evidence being the job's state and reason in `squeue` after the signal (\"job state COMPLETING, reason TimeLimit\"); `report` and `mpiscope trace`: \"The job was ended by SLURM at its time limit (job N, 0:01:00)\", then the deadlock"))
}

/// `scancel` of a running traced job.
fn cancelled(s: &Slurm, dir: &Path) -> Outcome {
    let script = batch_script(
        dir,
        &format!("exec {}", trace_line(dir, "mpirun -np 2", "deadlock")),
    );
    let job = s.sbatch(&["-n", "2", "-t", "5"], &script, dir)?;
    pids(&dir.join("pid"), Duration::from_secs(60))
        .ok_or_else(|| format!("job {job}: the program never started: {}", s.state(&job)))?;
    // Long enough for the recorder's keeper to write the blocked ranks' records.
    std::thread::sleep(Duration::from_millis(1500));
    let o = s.run("scancel", &[&job], dir);
    check(o.status.success(), || format!("scancel: {}", text(&o)))?;
    let state = s.wait_ended(&job, Duration::from_secs(60))?;
    check(state == "CANCELLED", || format!("job {job} ended {state}"))?;
    let says = format!("The job was ended by SLURM: cancelled (scancel; job {job})");
    let reason = ended_by_slurm(dir, &job, &state, "cancelled", &says)?;
    Ok(format!("job {state}; the same records (`{reason}`); `batch.ended.cause`: `cancelled` (state COMPLETING, reason None, after the signal); `report` and `mpiscope trace`: \"The job was ended by SLURM: cancelled (scancel; job N)\""))
}

/// `srun -n 2 mpiscope plan`: the two tasks share the study's points.
fn plan_under_srun(s: &Slurm, dir: &Path) -> Outcome {
    for r in 0..2 {
        std::fs::write(
            dir.join(format!("rank{r}.txt")),
            if r == 0 {
                "0 init\n0 compute 1e9\n0 send 1 0 100000000\n0 finalize\n"
            } else {
                "1 init\n1 recv 0 0 100000000\n1 finalize\n"
            },
        )
        .unwrap();
    }
    std::fs::write(dir.join("index.txt"), "rank0.txt\nrank1.txt\n").unwrap();
    std::fs::write(
        dir.join("study.toml"),
        r#"name = "under srun"
workload = { ti = "index.txt" }
[platform.cluster]
hosts = 2
speed = "1Gf"
bandwidth = "1GBps"
latency = "10us"
[[axis]]
name = "speed"
set = "scale.speed"
values = [1, 2, 4, 8]
"#,
    )
    .unwrap();
    let mpiscope = common::mpiscope().display().to_string();
    let o = s.run(
        "srun",
        &[
            "-n",
            "2",
            "-t",
            "5",
            &mpiscope,
            "plan",
            "study.toml",
            "--out",
            "out",
            "--quiet",
            "--jobs",
            "1",
        ],
        dir,
    );
    let t = text(&o);
    check(o.status.success(), || format!("srun mpiscope plan: {t}"))?;
    for r in 0..2 {
        let line = format!("2 point(s) simulated, 0 already finished (share {r} of 2)");
        check(t.contains(&line), || {
            format!("task {r} did not say `{line}`: {t}")
        })?;
    }
    for p in 0..4 {
        let f = dir.join(format!("out/points/point-{p:05}.json"));
        check(f.is_file(), || format!("{} is missing", f.display()))?;
    }
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/results.json")).map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let rows = results["rows"].as_array().map_or(0, Vec::len);
    check(rows == 4, || {
        format!("results.json has {rows} rows: {results}")
    })?;
    Ok("each task: \"2 point(s) simulated, 0 already finished (share R of 2)\"; the 4 point files and a complete results.json".into())
}

type Scenario = fn(&Slurm, &Path) -> Outcome;

#[test]
fn slurm() {
    let _g = common::mpi_lock();
    let unavailable = common::profile_dir().join("../slurm-unavailable.txt");
    let s = match Slurm::start() {
        Ok(s) => s,
        Err(why) => {
            std::fs::write(&unavailable, &why).unwrap_or_else(|e| {
                panic!(
                    "SLURM is unavailable here and {} cannot be written ({e}): {why}",
                    unavailable.display()
                )
            });
            eprintln!(
                "SLURM cannot run on this machine; the SLURM tests did not run (reason in {}):\n{why}",
                unavailable.display()
            );
            return;
        }
    };
    let _ = std::fs::remove_file(&unavailable);
    let scenarios: [(&str, &str, Scenario); 5] = [
        (
            "`srun` in an allocation",
            "`salloc -n 2 mpiscope trace -- srun -n 2 --mpi=pmix ./faults steady 500`",
            srun_in_an_allocation,
        ),
        (
            "`mpirun` in a batch script",
            "`sbatch -n 2` of `mpiscope trace -- mpirun -np 2 ./faults steady 500`",
            mpirun_in_sbatch,
        ),
        (
            "time limit",
            "`sbatch -n 2 -t 1` of `exec mpiscope trace -- mpirun -np 2 ./faults deadlock 500`",
            time_limit,
        ),
        (
            "`scancel`",
            "the same job with `-t 5`, `scancel` once the ranks wait",
            cancelled,
        ),
        (
            "a study shared by `srun`'s tasks",
            "`srun -n 2 mpiscope plan study.toml` (4 points)",
            plan_under_srun,
        ),
    ];
    let mut rows = String::from(
        "| scenario | job | what the record keeps and the user sees |\n|---|---|---|\n",
    );
    let mut failures = Vec::new();
    for (name, job, f) in scenarios {
        let tmp = common::tempdir();
        let started = Instant::now();
        match f(&s, tmp.path()) {
            Ok(row) => rows.push_str(&format!("| {name} | {job} | {row} |\n")),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
    }
    drop(s);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    common::bless_section("slurm", &rows, "--test cli -- slurm::");
}
