//! The fault suite: traced jobs that end badly, under a real `mpirun` (Open MPI and MPICH).
//! Each scenario checks what the record keeps and what `mpiscope report` says, and adds a
//! row to the `faults` section of `docs/FAULTS.md` (`MPISCOPE_BLESS=1 cargo test --release
//! -p mpiscope --test cli -- faults::` rewrites it).
//!
//! The program is `tests/programs/misc/faults.c`: a fixed amount of work (500 rounds of
//! `MPI_Sendrecv` and `MPI_Allreduce`), then a deadlock, an `MPI_Abort`, a caught SIGTERM, or
//! a normal end.

use crate::common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::Mpi;

/// Rounds of work before the fault.
const ROUNDS: usize = 500;

/// A traced job running in its own process group.
struct Job {
    child: Child,
    trace: PathBuf,
    pidfile: PathBuf,
    dir: PathBuf,
    np: u32,
}

impl Job {
    fn start(mpi: Mpi, np: u32, mode: &str, rounds: usize, options: &[&str], dir: &Path) -> Job {
        Self::start_with(mpi, np, mode, rounds, options, dir, mpi.launcher(np), None)
    }

    #[allow(clippy::too_many_arguments)]
    fn start_with(
        mpi: Mpi,
        np: u32,
        mode: &str,
        rounds: usize,
        options: &[&str],
        dir: &Path,
        launcher: Vec<String>,
        ulimit_f: Option<u64>,
    ) -> Job {
        let exe = common::build(mpi, "misc/faults.c", &[]);
        let trace = dir.join("trace");
        let pidfile = dir.join("pid");
        let mut argv: Vec<String> = vec![
            common::mpiscope().display().to_string(),
            "trace".into(),
            "-o".into(),
            trace.display().to_string(),
            "--preload".into(),
            mpi.preload().display().to_string(),
        ];
        argv.extend(options.iter().map(|s| s.to_string()));
        argv.push("--".into());
        argv.extend(launcher);
        argv.push(exe.display().to_string());
        argv.extend([
            mode.to_string(),
            rounds.to_string(),
            pidfile.display().to_string(),
        ]);
        let mut c = match ulimit_f {
            // The limit applies to the launcher, the ranks and their trace files.
            Some(kb) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -f {kb} && exec \"$@\""))
                    .arg("sh")
                    .args(&argv);
                c
            }
            None => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
        };
        use std::os::unix::process::CommandExt;
        // Open MPI's PMIx keeps its shared-memory store in files (under a file size limit,
        // the hash store instead); harmless otherwise.
        c.env("PMIX_MCA_gds", "hash")
            .process_group(0)
            .stdout(File::create(dir.join("stdout")).unwrap())
            .stderr(File::create(dir.join("stderr")).unwrap())
            .stdin(Stdio::null());
        let child = c.spawn().expect("spawn mpiscope trace");
        Job {
            child,
            trace,
            pidfile,
            dir: dir.to_path_buf(),
            np,
        }
    }

    /// The ranks' process ids, once each has done its work (`None` if the job ended first
    /// or took more than 90 s).
    fn pids(&mut self) -> Option<Vec<u32>> {
        let start = Instant::now();
        loop {
            let pids: Vec<Option<u32>> = (0..self.np)
                .map(|r| {
                    std::fs::read_to_string(format!("{}.{r}", self.pidfile.display()))
                        .ok()?
                        .trim()
                        .parse()
                        .ok()
                })
                .collect();
            if pids.iter().all(Option::is_some) {
                return Some(pids.into_iter().flatten().collect());
            }
            if start.elapsed() > Duration::from_secs(90) || self.child.try_wait().unwrap().is_some()
            {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the job to end (killing its group after `limit`); returns its exit code
    /// and whether it had to be killed.
    fn wait(&mut self, limit: Duration) -> (Option<i32>, bool) {
        let start = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return (s.code(), false);
            }
            if start.elapsed() > limit {
                kill_group(self.child.id());
                let s = self.child.wait().unwrap();
                return (s.code(), true);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default()
    }

    fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.join("stdout")).unwrap_or_default()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            kill_group(self.child.id());
            let _ = self.child.wait();
        }
    }
}

fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .status();
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

fn mpiscope(args: &[&str]) -> common::Run {
    let o = Command::new(common::mpiscope())
        .args(args)
        .output()
        .unwrap();
    common::Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// What a rank's record holds.
struct Record {
    /// Completed calls by name.
    calls: std::collections::BTreeMap<String, usize>,
    /// Unfinished calls: (name, peer, tag).
    open: Vec<(String, Option<i64>, Option<i64>)>,
    ending: mpiscope_trace::Ending,
    notes: Vec<mpiscope_trace::Note>,
}

fn record(trace: &Path, rank: u32) -> Record {
    let run = mpiscope_trace::RunDir::open(trace).unwrap();
    let mut r = run.open_rank(rank).unwrap();
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
    Record {
        calls,
        open,
        ending: r.ending(),
        notes: r.notes().to_vec(),
    }
}

/// The work before the fault is all there: ROUNDS of each.
fn work_kept(r: &Record) -> bool {
    r.calls.get("MPI_Sendrecv") == Some(&ROUNDS) && r.calls.get("MPI_Allreduce") == Some(&ROUNDS)
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

fn reason(r: &Record) -> String {
    r.ending
        .reason
        .clone()
        .unwrap_or_else(|| "no trailer".into())
}

/// Strips a sender's process id: `signal SIGTERM (sent by process 123)` -> `signal SIGTERM`.
fn stable(reason: &str) -> String {
    reason
        .split(" (sent by")
        .next()
        .unwrap_or(reason)
        .to_owned()
}

// ------------------------------------------------------------------------------ scenarios

/// SIGTERM to a rank blocked in `MPI_Recv` (the batch system's time limit, `kill`).
fn sigterm_to_a_blocked_rank(mpi: Mpi, dir: &Path) -> Outcome {
    let mut job = Job::start(mpi, 2, "deadlock", ROUNDS, &[], dir);
    let pids = job
        .pids()
        .ok_or_else(|| format!("never started: {}", job.stderr()))?;
    // Long enough for the keeper to write rank 1's record (MPICH then kills it with SIGKILL).
    std::thread::sleep(Duration::from_millis(2500));
    signal(pids[0], "TERM");
    job.wait(Duration::from_secs(60));
    let r0 = record(&job.trace, 0);
    check(work_kept(&r0), || {
        format!("rank 0 lost work: {:?}", r0.calls)
    })?;
    check(reason(&r0).starts_with("signal SIGTERM"), || {
        format!("rank 0 ends with {:?}", r0.ending)
    })?;
    check(
        r0.open == [("MPI_Recv".to_string(), Some(1), Some(91))],
        || format!("rank 0's unfinished calls: {:?}", r0.open),
    )?;
    let r1 = record(&job.trace, 1);
    check(work_kept(&r1), || {
        format!("rank 1 lost work: {:?}", r1.calls)
    })?;
    check(
        r1.open == [("MPI_Recv".to_string(), Some(0), Some(92))],
        || format!("rank 1's unfinished calls: {:?}", r1.open),
    )?;
    let rep = mpiscope(&["report", job.trace.to_str().unwrap()]);
    check(rep.code == Some(0), || {
        format!("report failed: {}", rep.stderr)
    })?;
    check(
        rep.stdout.contains("rank 0 waits for rank 1 in MPI_Recv"),
        || format!("report does not say where rank 0 waits:\n{}", rep.stdout),
    )?;
    Ok(format!(
        "rank 0: `{}`, {ROUNDS} of {ROUNDS} rounds kept, unfinished `MPI_Recv` (peer 1, tag 91); rank 1 (ended by the launcher, with SIGTERM or SIGKILL): its {ROUNDS} rounds and unfinished `MPI_Recv` (peer 0, tag 92) kept; `report`: \"rank 0 waits for rank 1 in MPI_Recv at main faults.c:...\"",
        stable(&reason(&r0)),
    ))
}

/// SIGTERM at random moments of a busy loop (`MPI_Iprobe` and `MPI_Sendrecv` without pause):
/// whatever the rank was doing, recording or calling, every call it made is in its record.
fn sigterm_at_any_moment(mpi: Mpi, dir: &Path) -> Outcome {
    let exe = common::build(mpi, "misc/forever.c", &[]);
    let mut seed = std::process::id() as u64;
    let mut kept = 0u64;
    for round in 0..5 {
        let d = dir.join(format!("r{round}"));
        std::fs::create_dir_all(&d).unwrap();
        let trace = d.join("trace");
        let pidfile = d.join("pid");
        let mut c = Command::new(common::mpiscope());
        c.arg("trace")
            .arg("-o")
            .arg(&trace)
            .arg("--preload")
            .arg(mpi.preload())
            .args(["--buffer", "16K", "--"])
            .args(mpi.launcher(2))
            .arg(&exe)
            .arg(&pidfile);
        use std::os::unix::process::CommandExt;
        c.process_group(0)
            .stdout(Stdio::null())
            .stderr(File::create(d.join("stderr")).unwrap())
            .stdin(Stdio::null());
        let mut job = Job {
            child: c.spawn().unwrap(),
            trace: trace.clone(),
            pidfile,
            dir: d.clone(),
            np: 2,
        };
        let pids = job
            .pids()
            .ok_or_else(|| format!("never started: {}", job.stderr()))?;
        // A pseudo-random moment in the next 50-550 ms.
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(50 + (seed >> 33) % 500));
        signal(pids[0], "TERM");
        job.wait(Duration::from_secs(60));
        let run = mpiscope_trace::RunDir::open(&trace).unwrap();
        let mut r = run.open_rank(0).unwrap();
        let mut read: std::collections::BTreeMap<u32, u64> = Default::default();
        let mut open: Vec<u32> = Vec::new();
        while let Some(e) = r.next_event() {
            if e.unfinished {
                open.push(e.call);
            } else {
                *read.entry(e.call).or_default() += 1;
            }
        }
        let t = r
            .trailer()
            .ok_or_else(|| format!("round {round}: rank 0 has no trailer: {:?}", r.ending()))?
            .clone();
        check(
            t.reason.starts_with("signal SIGTERM") && t.lost == 0,
            || format!("round {round}: rank 0 ends with {:?}", r.ending()),
        )?;
        // Every call made was recorded (no sampling) but the one in progress, and every
        // recorded call was read.
        for c in &t.calls {
            let got = read.get(&c.id).copied().unwrap_or(0);
            let in_progress = open.iter().filter(|&&o| o == c.id).count() as u64;
            check(
                c.recorded + in_progress == c.count && got == c.recorded,
                || {
                    format!(
                        "round {round}: {}: {} calls made, {} recorded, {got} read",
                        c.name, c.count, c.recorded
                    )
                },
            )?;
        }
        kept += read.values().sum::<u64>();
    }
    check(kept > 1000, || {
        format!("only {kept} calls kept over 5 rounds")
    })?;
    Ok("5 signals at random moments (50-550 ms into the loop): every call made is recorded and read back (the trailer's counts equal the events), `signal SIGTERM`, nothing lost".into())
}

/// SIGINT to the launcher (Ctrl-C on `mpirun`).
fn sigint_to_the_launcher(mpi: Mpi, dir: &Path) -> Outcome {
    let mut job = Job::start(mpi, 2, "deadlock", ROUNDS, &[], dir);
    job.pids()
        .ok_or_else(|| format!("never started: {}", job.stderr()))?;
    // Long enough for the keeper to write the blocked ranks' records (MPICH's launcher ends
    // its ranks with SIGKILL).
    std::thread::sleep(Duration::from_millis(2500));
    // The launcher is the child of `mpiscope trace`.
    let launcher = Command::new("pgrep")
        .args(["-P", &job.child.id().to_string()])
        .output()
        .unwrap();
    let lpid: u32 = String::from_utf8_lossy(&launcher.stdout)
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("no launcher process")?;
    signal(lpid, "INT");
    job.wait(Duration::from_secs(60));
    for rank in 0..2 {
        let r = record(&job.trace, rank);
        check(work_kept(&r), || {
            format!("rank {rank} lost work: {:?}", r.calls)
        })?;
        check(r.open.len() == 1 && r.open[0].0 == "MPI_Recv", || {
            format!("rank {rank}'s unfinished calls: {:?}", r.open)
        })?;
    }
    Ok(format!(
        "every rank (ended by the launcher) keeps its {ROUNDS} rounds and its unfinished `MPI_Recv`"
    ))
}

/// `MPI_Abort(MPI_COMM_WORLD, 3)` on rank 1 while the others wait in `MPI_Barrier`.
fn mpi_abort(mpi: Mpi, dir: &Path) -> Outcome {
    let mut job = Job::start(mpi, 3, "abort", ROUNDS, &[], dir);
    let (code, killed) = job.wait(Duration::from_secs(90));
    check(!killed, || "the job did not end".into())?;
    check(code != Some(0), || "the job exited 0".into())?;
    let r1 = record(&job.trace, 1);
    check(work_kept(&r1), || {
        format!("rank 1 lost work: {:?}", r1.calls)
    })?;
    check(reason(&r1) == "MPI_Abort (error code 3)", || {
        format!("rank 1 ends with {:?}", r1.ending)
    })?;
    check(r1.open.iter().any(|o| o.0 == "MPI_Abort"), || {
        format!("rank 1's unfinished calls: {:?}", r1.open)
    })?;
    for rank in [0, 2] {
        let r = record(&job.trace, rank);
        check(work_kept(&r), || {
            format!("rank {rank} lost work: {:?}", r.calls)
        })?;
        check(r.open.iter().any(|o| o.0 == "MPI_Barrier"), || {
            format!("rank {rank}'s unfinished calls: {:?}", r.open)
        })?;
    }
    Ok(format!(
        "rank 1: `MPI_Abort (error code 3)` with the unfinished `MPI_Abort`; ranks 0 and 2 (ended by the launcher): their {ROUNDS} rounds and unfinished `MPI_Barrier` kept"
    ))
}

/// A deadlock noticed by `--hang-after`, first reported while the job runs, then killed.
fn hang_after(mpi: Mpi, dir: &Path) -> Outcome {
    let mut job = Job::start(mpi, 3, "deadlock", ROUNDS, &["--hang-after", "1.5"], dir);
    job.pids()
        .ok_or_else(|| format!("never started: {}", job.stderr()))?;
    let start = Instant::now();
    while job.stderr().matches("inside MPI_").count() < 3 {
        check(start.elapsed() < Duration::from_secs(30), || {
            format!("no hang reported: {}", job.stderr())
        })?;
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    check(job.child.try_wait().unwrap().is_none(), || {
        "the job ended without --hang-action kill".into()
    })?;
    // While the job still hangs.
    let rep = mpiscope(&["report", job.trace.to_str().unwrap()]);
    check(rep.code == Some(0), || {
        format!("report failed: {}", rep.stderr)
    })?;
    let want = "deadlock: rank 0 waits for rank 1 in MPI_Recv";
    check(rep.stdout.contains(want), || {
        format!(
            "no deadlock in the report of the hanging job:\n{}",
            rep.stdout
        )
    })?;
    check(
        rep.stdout
            .contains("rank 2 waits for ranks 0, 1 in MPI_Barrier"),
        || format!("rank 2's wait is not explained:\n{}", rep.stdout),
    )?;
    drop(job);
    // With --hang-action kill the job ends by itself.
    let kdir = dir.join("kill");
    std::fs::create_dir_all(&kdir).unwrap();
    let mut job = Job::start(
        mpi,
        3,
        "deadlock",
        ROUNDS,
        &["--hang-after", "1.5", "--hang-action", "kill"],
        &kdir,
    );
    let (_, killed) = job.wait(Duration::from_secs(90));
    check(!killed, || {
        format!("--hang-action kill did not end the job: {}", job.stderr())
    })?;
    // The first rank to notice its hang ends; the launcher ends the others (MPICH with
    // SIGKILL: their records were written when the hang was noticed).
    let mut hang_ended = false;
    for rank in 0..3 {
        let r = record(&job.trace, rank);
        check(work_kept(&r), || {
            format!("rank {rank} lost work: {:?}", r.calls)
        })?;
        check(r.open.len() == 1, || {
            format!("rank {rank}'s unfinished calls: {:?}", r.open)
        })?;
        hang_ended |= reason(&r).starts_with("hang: inside MPI_");
    }
    check(hang_ended, || "no rank ended with `hang: ...`".into())?;
    Ok(
        "stderr: \"rank 0: thread 0 has been inside MPI_Recv for 1.5 s: a hang? ...\"; `report` on the running job: \"deadlock: rank 0 waits for rank 1 in MPI_Recv at main faults.c:...; rank 1 waits for rank 0 in MPI_Recv at ...\", rank 2 waits for ranks 0, 1 in `MPI_Barrier`; with `--hang-action kill` the job ends, a rank's record ends with `hang: inside MPI_... (--hang-action kill)`, every rank keeps its work and the call it waits in"
            .into(),
    )
}

/// The program catches SIGTERM itself (sigaction after MPI_Init) and stops cleanly.
fn caught_sigterm(mpi: Mpi, dir: &Path) -> Outcome {
    let mut job = Job::start(mpi, 2, "catch", ROUNDS, &[], dir);
    let pids = job
        .pids()
        .ok_or_else(|| format!("never started: {}", job.stderr()))?;
    std::thread::sleep(Duration::from_millis(300));
    signal(pids[0], "TERM");
    let (code, killed) = job.wait(Duration::from_secs(60));
    check(!killed && code == Some(0), || {
        format!(
            "the program did not stop cleanly: {code:?} {}",
            job.stderr()
        )
    })?;
    check(job.stdout().contains("stopped cleanly"), || job.stdout())?;
    let r0 = record(&job.trace, 0);
    check(
        r0.calls.get("MPI_Sendrecv") == Some(&ROUNDS)
            && r0.calls.get("MPI_Allreduce").is_some_and(|&n| n > ROUNDS),
        || format!("rank 0 lost work: {:?}", r0.calls),
    )?;
    check(reason(&r0) == "finalize", || {
        format!("rank 0 ends with {:?}", r0.ending)
    })?;
    let note = r0
        .notes
        .iter()
        .find(|n| n.kind == "signal" && n.signal.as_deref() == Some("SIGTERM"))
        .ok_or_else(|| format!("no signal note: {:?}", r0.notes))?;
    check(r0.calls.get("MPI_Finalize") == Some(&1), || {
        "MPI_Finalize after the signal is missing".into()
    })?;
    Ok(format!(
        "the program's handler runs and it stops cleanly; the note \"signal SIGTERM: {}\"; tracing goes on to `finalize`",
        note.message
    ))
}

/// The trace file reaches the file size limit (`ulimit -f`).
fn file_size_limit(mpi: Mpi, dir: &Path) -> Outcome {
    // The MPI libraries keep shared memory in files, which the limit applies to: Open MPI
    // talks over TCP (`btl self,tcp`, PMIx's hash store), MPICH gets 16 MB.
    let (kb, rounds) = match mpi {
        Mpi::OpenMpi => (100, 40_000),
        Mpi::Mpich => (16_384, 3_000_000),
    };
    let launcher: Vec<String> = mpi
        .launcher(2)
        .into_iter()
        .map(|a| {
            if a == "self,vader" {
                "self,tcp".into()
            } else {
                a
            }
        })
        .collect();
    let plain = {
        let exe = common::build(mpi, "misc/faults.c", &[]);
        let o = Command::new(&launcher[0])
            .args(&launcher[1..])
            .arg(&exe)
            .args(["steady", &rounds.to_string()])
            .env("PMIX_MCA_gds", "hash")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let mut job = Job::start_with(mpi, 2, "steady", rounds, &[], dir, launcher, Some(kb));
    let (code, killed) = job.wait(Duration::from_secs(180));
    check(!killed && code == Some(0), || {
        format!("the traced program failed: {code:?} {}", job.stderr())
    })?;
    check(job.stdout() == plain, || {
        format!("output changed: {:?} vs {:?}", job.stdout(), plain)
    })?;
    let lines = job
        .stderr()
        .matches("cannot write the trace: File too large")
        .count();
    check(lines == 2, || {
        format!("expected one line per rank: {}", job.stderr())
    })?;
    let r0 = record(&job.trace, 0);
    check(reason(&r0).starts_with("tracing stopped"), || {
        format!("rank 0 ends with {:?}", r0.ending)
    })?;
    Ok(format!(
        "output identical, exit 0; one line per rank: \"cannot write the trace: File too large (the file size limit, ulimit -f); tracing stopped at ... s with ... events in the file\"; the record ends with `{}`",
        reason(&r0)
    ))
}

/// The trace directory's file system fills up.
fn full_disk(mpi: Mpi, dir: &Path) -> Outcome {
    let mnt = dir.join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        return Ok("skipped: this machine cannot mount a tmpfs".into());
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Unmount(mnt.clone());
    let exe = common::build(mpi, "misc/faults.c", &[]);
    let mut l = mpi.launcher(2);
    let plain = Command::new(l.remove(0))
        .args(&l)
        .arg(&exe)
        .args(["steady", "100000"])
        .output()
        .unwrap();
    let trace = mnt.join("trace");
    let o = Command::new(common::mpiscope())
        .arg("trace")
        .arg("-o")
        .arg(&trace)
        .arg("--preload")
        .arg(mpi.preload())
        .args(["--buffer", "16K", "--"])
        .args(mpi.launcher(2))
        .arg(&exe)
        .args(["steady", "100000"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    check(o.status.success(), || {
        format!("traced run failed: {stderr}")
    })?;
    check(o.stdout == plain.stdout, || "output changed".into())?;
    check(stderr.contains("No space left on device"), || {
        stderr.to_string()
    })?;
    let rep = mpiscope(&["report", trace.to_str().unwrap()]);
    check(rep.code == Some(0), || {
        format!("report failed: {}", rep.stderr)
    })?;
    check(
        rep.stdout
            .contains("tracing stopped: cannot write the trace: No space left on device"),
        || rep.stdout.clone(),
    )?;
    Ok("output identical, exit 0; \"cannot write the trace: No space left on device; tracing stopped at ... s\"; `report`: \"rank N: tracing stopped: cannot write the trace: No space left on device at ... s; the record is whole up to then\"".into())
}

type Scenario = fn(Mpi, &Path) -> Outcome;

#[test]
fn faults() {
    let _g = common::mpi_lock();
    let scenarios: [(&str, Scenario); 8] = [
        (
            "SIGTERM to a rank blocked in MPI_Recv",
            sigterm_to_a_blocked_rank,
        ),
        (
            "SIGTERM at any moment of a busy loop",
            sigterm_at_any_moment,
        ),
        ("SIGINT to the launcher", sigint_to_the_launcher),
        ("MPI_Abort", mpi_abort),
        ("deadlock, `--hang-after 1.5`", hang_after),
        ("SIGTERM caught by the program", caught_sigterm),
        ("trace file over `ulimit -f`", file_size_limit),
        ("full file system (256 KiB tmpfs)", full_disk),
    ];
    let mut rows =
        String::from("| fault | MPI | what the record keeps and the user sees |\n|---|---|---|\n");
    let mut failures = Vec::new();
    for (name, f) in scenarios {
        for mpi in [Mpi::OpenMpi, Mpi::Mpich] {
            let tmp = common::tempdir();
            match f(mpi, tmp.path()) {
                Ok(row) => rows.push_str(&format!("| {name} | {} | {row} |\n", mpi.name())),
                Err(e) => {
                    let stderr =
                        std::fs::read_to_string(tmp.path().join("stderr")).unwrap_or_default();
                    failures.push(format!("{name} ({}): {e}\n  stderr: {stderr}", mpi.name()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    common::bless_section("faults", &rows, "--test cli -- faults::");
}
