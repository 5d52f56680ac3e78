//! The batch job `mpiscope trace` runs in, for the manifest's `batch` entry.
//!
//! Under SLURM (`SLURM_JOB_ID` set: inside `sbatch`, `salloc` or an `srun` step) the job's
//! time limit and end time are read with `squeue` before the command starts. When the
//! job ends early, SLURM sends SIGTERM to every process of the job (then SIGKILL after
//! `KillWait`): mpiscope passes it on to the command (`child`), and once the command has
//! ended asks `squeue` again (at most 5 s), while the job is completing or once it has
//! ended: the reason `TimeLimit` (or the state `TIMEOUT`) means the time limit, the state
//! `COMPLETING` with no reason (or `CANCELLED`) an `scancel`, `RUNNING` a signal that did
//! not end the job. Without an answer (no `squeue`, the controller unreachable), the
//! signal's time against the job's end time decides: at or after it, the time limit;
//! before it, a cancellation.
//!
//! Times are asked for as Unix seconds (`SLURM_TIME_FORMAT=%s`), so no local time zone
//! is involved.
//!
//! In a batch script, `mpiscope trace` should be the script's own process (`exec mpiscope
//! trace ...`): SIGTERM ends a shell at once, and once a batch script has ended slurmstepd
//! kills what its step still runs, so a `mpiscope trace` started by the shell may be killed
//! before it has completed the run. mpiscope says so when its parent is a batch script's
//! shell.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mpiscope_trace::{BatchEnd, BatchEndCause, BatchJob};

use crate::child::Ended;

/// A signal this many seconds before the job's end time still counts as its time limit
/// (SLURM checks time limits periodically, so it is usually late, never early; this
/// covers clocks read a little apart).
const EARLY_S: f64 = 5.0;

/// What `squeue` says of a job.
#[derive(Debug, Clone, PartialEq)]
struct JobState {
    /// `RUNNING`, `COMPLETING`, `CANCELLED`, `TIMEOUT`, ...
    state: String,
    /// `None`, `TimeLimit`, ...
    reason: String,
    /// Seconds; `None` for no limit.
    time_limit_s: Option<u64>,
    /// Unix seconds, when known.
    end_unix_s: Option<i64>,
}

/// The `squeue` output format: state, reason, time limit, end time.
const FORMAT: &str = "%T|%r|%l|%e";

/// Parses one line of `squeue -h -o FORMAT` (times as Unix seconds).
fn parse_state(line: &str) -> Result<JobState, String> {
    let f: Vec<&str> = line.trim().split('|').collect();
    let [state, reason, limit, end] = f.as_slice() else {
        return Err(format!(
            "squeue printed `{}`, expected 4 fields",
            line.trim()
        ));
    };
    if state.is_empty() {
        return Err("squeue printed no job state".into());
    }
    Ok(JobState {
        state: state.to_string(),
        reason: reason.to_string(),
        time_limit_s: parse_limit(limit),
        end_unix_s: end.parse::<i64>().ok().filter(|&t| t > 0),
    })
}

/// A SLURM time limit (`UNLIMITED`, `5:00` minutes:seconds, `1:00:00`, `2-00:00:00`) in
/// seconds; `None` for no limit or an unknown form.
fn parse_limit(text: &str) -> Option<u64> {
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, r),
        None => (0, text),
    };
    let parts: Vec<u64> = rest
        .split(':')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let (h, m, s) = match parts.as_slice() {
        [s] => (0, 0, *s),
        [m, s] => (0, *m, *s),
        [h, m, s] => (*h, *m, *s),
        _ => return None,
    };
    Some(((days * 24 + h) * 60 + m) * 60 + s)
}

/// How long `squeue` may take: its answer matters only within the job's `KillWait`.
const SQUEUE_LIMIT: Duration = Duration::from_secs(5);

/// Runs `cmd` to its end, or kills it after `limit`; returns its exit status, stdout and
/// stderr (its output is a line or two, so the pipes never fill while it runs).
fn output_within(mut cmd: Command, limit: Duration) -> Result<Output, String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().map_err(|e| e.to_string()),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", limit.as_secs()));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Asks `squeue` about `job_id`.
fn query(job_id: &str) -> Result<JobState, String> {
    let mut cmd = Command::new("squeue");
    // `-t all`: a job that has ended is listed too (in its final state).
    cmd.args(["-h", "-t", "all", "-j", job_id, "-o", FORMAT])
        .env("SLURM_TIME_FORMAT", "%s");
    let out = output_within(cmd, SQUEUE_LIMIT).map_err(|e| format!("squeue -j {job_id}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("squeue -j {job_id}: {}", err.trim()));
    }
    match text.lines().find(|l| !l.trim().is_empty()) {
        Some(line) => parse_state(line),
        None => Err(format!("squeue -j {job_id}: no such job")),
    }
}

/// Why the job ended, from its state after the signal; `None` when the batch system did not
/// end it (the job still runs: a signal from `kill` or `scancel --signal`) or the state
/// names another ending.
fn cause_from_state(s: &JobState) -> Option<(BatchEndCause, String)> {
    let evidence = format!("job state {}, reason {}", s.state, s.reason);
    if s.state == "TIMEOUT" || s.reason == "TimeLimit" {
        Some((BatchEndCause::TimeLimit, evidence))
    } else if s.state == "CANCELLED" || (s.state == "COMPLETING" && s.reason == "None") {
        Some((BatchEndCause::Cancelled, evidence))
    } else {
        None
    }
}

/// Why the job ended, from the signal's time alone (the state could not be read: `why`).
fn cause_from_time(at: f64, end_unix_s: Option<i64>, why: &str) -> (BatchEndCause, String) {
    match end_unix_s {
        Some(end) if at >= end as f64 - EARLY_S => (
            BatchEndCause::TimeLimit,
            format!("the signal came at the job's end time; no job state ({why})"),
        ),
        Some(_) => (
            BatchEndCause::Cancelled,
            format!("the signal came before the job's end time; no job state ({why})"),
        ),
        None => (
            BatchEndCause::Cancelled,
            format!("the job has no time limit; no job state ({why})"),
        ),
    }
}

/// The command name of process `pid` (`/proc/PID/comm`).
fn comm(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end().to_owned())
}

/// The parent of process `pid` (`/proc/PID/stat`: the field after the state, which
/// follows the parenthesised command name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Whether mpiscope is a command of a batch script (its parent, the script's shell, is
/// a child of `slurmstepd`) instead of the script's own process (`exec mpiscope ...`).
fn in_batch_shell() -> bool {
    let parent = std::os::unix::process::parent_id();
    let Some(grandparent) = parent_of(parent) else {
        return false;
    };
    comm(grandparent).as_deref() == Some("slurmstepd")
        && comm(parent).as_deref() != Some("slurmstepd")
}

/// The batch job of this run, as known before the command starts.
pub struct JobWatch {
    job: BatchJob,
}

impl JobWatch {
    /// The SLURM job this process runs in, if any (a line on stderr when `squeue` cannot
    /// say more than its id).
    pub fn detect() -> Option<JobWatch> {
        let job_id = std::env::var("SLURM_JOB_ID")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))?;
        let (time_limit_s, end_unix_s) = match query(&job_id) {
            Ok(s) => (s.time_limit_s, s.end_unix_s),
            Err(e) => {
                eprintln!("mpiscope: SLURM job {job_id}: {e}; its time limit is not recorded");
                (None, None)
            }
        };
        if in_batch_shell() {
            // SIGTERM ends a shell at once; once its script has ended, SLURM kills what
            // the job step still runs (all of it, with proctrack/cgroup).
            eprintln!(
                "mpiscope: SLURM job {job_id}: write `exec mpiscope trace ...` in the batch script: \
                 when SLURM ends the job (time limit, scancel), SIGTERM ends the script's shell at \
                 once, and SLURM may then kill mpiscope and the ranks before the run is completed"
            );
        }
        Some(JobWatch {
            job: BatchJob {
                system: "slurm".into(),
                job_id,
                time_limit_s,
                end_unix_s,
                ended: None,
            },
        })
    }

    /// The job after the command `ended`: whether the batch system ended it (asked only
    /// when mpiscope received a signal). Says so on stderr.
    pub fn finish(self, ended: &Ended) -> BatchJob {
        let mut job = self.job;
        let (Some(signal), Some(at)) = (ended.received, ended.received_unix_s) else {
            return job;
        };
        let cause = match query(&job.job_id) {
            Ok(s) => {
                if job.time_limit_s.is_none() {
                    job.time_limit_s = s.time_limit_s;
                }
                cause_from_state(&s)
            }
            Err(e) => Some(cause_from_time(at, job.end_unix_s, &e)),
        };
        if let Some((cause, evidence)) = cause {
            let end = BatchEnd {
                cause,
                signal: signal.to_owned(),
                signal_unix_s: at,
                evidence,
            };
            job.ended = Some(end);
            if let (Some(text), Some(details)) = (job.describe_end(), job.end_details()) {
                eprintln!("mpiscope: {text}: {details}");
            }
        }
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_limits_read_as_slurm_writes_them() {
        assert_eq!(parse_limit("1:00"), Some(60));
        assert_eq!(parse_limit("0:20"), Some(20));
        assert_eq!(parse_limit("2:00:00"), Some(7200));
        assert_eq!(parse_limit("1-02:03:04"), Some(93784));
        assert_eq!(parse_limit("UNLIMITED"), None);
        assert_eq!(parse_limit("NOT_SET"), None);
        assert_eq!(parse_limit(""), None);
        assert_eq!(parse_limit("1:2:3:4"), None);
    }

    #[test]
    fn squeue_lines_parse_or_say_why_not() {
        let s = parse_state("RUNNING|None|1:00|1795694295\n").unwrap();
        assert_eq!(s.state, "RUNNING");
        assert_eq!(s.time_limit_s, Some(60));
        assert_eq!(s.end_unix_s, Some(1795694295));
        let s = parse_state("RUNNING|None|UNLIMITED|NONE").unwrap();
        assert_eq!((s.time_limit_s, s.end_unix_s), (None, None));
        assert!(parse_state("RUNNING None")
            .unwrap_err()
            .contains("4 fields"));
        assert!(parse_state("|None|1:00|0").is_err());
    }

    #[test]
    fn the_state_after_the_signal_names_the_cause() {
        let st = |state: &str, reason: &str| JobState {
            state: state.into(),
            reason: reason.into(),
            time_limit_s: Some(60),
            end_unix_s: Some(1000),
        };
        let cause = |s: &JobState| cause_from_state(s).map(|c| c.0);
        assert_eq!(
            cause(&st("COMPLETING", "TimeLimit")),
            Some(BatchEndCause::TimeLimit)
        );
        assert_eq!(
            cause(&st("TIMEOUT", "None")),
            Some(BatchEndCause::TimeLimit)
        );
        assert_eq!(
            cause(&st("COMPLETING", "None")),
            Some(BatchEndCause::Cancelled)
        );
        assert_eq!(
            cause(&st("CANCELLED", "None")),
            Some(BatchEndCause::Cancelled)
        );
        // The job goes on (`scancel --signal TERM`, `kill`): not an ending.
        assert_eq!(cause(&st("RUNNING", "None")), None);
        assert_eq!(cause(&st("COMPLETING", "NodeDown")), None);
        assert_eq!(
            cause_from_state(&st("COMPLETING", "TimeLimit")).unwrap().1,
            "job state COMPLETING, reason TimeLimit"
        );
    }

    #[test]
    fn a_command_that_does_not_answer_is_ended() {
        let mut c = Command::new("sleep");
        c.arg("10");
        let start = Instant::now();
        let e = output_within(c, Duration::from_millis(200)).unwrap_err();
        assert!(e.starts_with("no answer within"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
        let mut c = Command::new("echo");
        c.arg("RUNNING|None|1:00|5");
        let o = output_within(c, SQUEUE_LIMIT).unwrap();
        assert_eq!(
            parse_state(&String::from_utf8_lossy(&o.stdout))
                .unwrap()
                .end_unix_s,
            Some(5)
        );
        assert!(output_within(Command::new("/nonexistent/squeue"), SQUEUE_LIMIT).is_err());
    }

    #[test]
    fn process_parents_and_names_come_from_proc() {
        let me = std::process::id();
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
        assert!(comm(me).is_some_and(|c| !c.is_empty()));
        assert_eq!(parent_of(u32::MAX), None);
        // The test harness is not a batch script's command.
        assert!(!in_batch_shell() || std::env::var_os("SLURM_JOB_ID").is_some());
    }

    #[test]
    fn without_a_state_the_signal_time_decides() {
        let (c, e) = cause_from_time(1012.0, Some(1000), "squeue: down");
        assert_eq!(c, BatchEndCause::TimeLimit);
        assert_eq!(
            e,
            "the signal came at the job's end time; no job state (squeue: down)"
        );
        let (c, _) = cause_from_time(997.0, Some(1000), "x");
        assert_eq!(c, BatchEndCause::TimeLimit);
        let (c, e) = cause_from_time(900.0, Some(1000), "x");
        assert_eq!(c, BatchEndCause::Cancelled);
        assert!(e.starts_with("the signal came before"), "{e}");
        let (c, _) = cause_from_time(900.0, None, "x");
        assert_eq!(c, BatchEndCause::Cancelled);
    }
}
