//! The malformed-input corpus: every case under `tests/corpus/<class>/<case>/` is run through
//! `mpiscope` and must end the way its `case.json` says, never with a panic, an abort or a
//! hang. The table of what the user sees (the `corpus` section of `docs/FAULTS.md`) is
//! generated from these runs: `MPISCOPE_BLESS=1 cargo test --release -p mpiscope --test
//! corpus` rewrites it, a normal run checks that it is current.
//!
//! A case directory holds its input files and `case.json`:
//!
//! ```json
//! {
//!   "what": "HPL.dat whose NB is 0",
//!   "args": ["hpl", "{dir}/HPL.dat", "--platform", "{dir}/p.xml"],
//!   "exit": "error",
//!   "stderr": "HPL.dat: line 8: NB"
//! }
//! ```
//!
//! * `args`: the `mpiscope` arguments; `{dir}` is a private copy of the case directory (so a
//!   case may write outputs), `{bin}` the directory of the `mpiscope` binary.
//! * `exit`: `"error"` (any exit code other than 0 that is not a crash: not 101, which is a
//!   Rust panic, nor death by a signal), `"ok"` (0) or an exact number.
//! * `stderr` / `stdout` (optional): text that must appear in that stream.
//! * `setup` (optional): `"fifo NAME"` makes a named pipe `NAME` in `{dir}` first (special
//!   files cannot be committed).
//! * `timeout_s` (optional, default 60): a run that takes longer is a hang.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    what: String,
    args: Vec<String>,
    exit: serde_json::Value,
    #[serde(default)]
    stderr: Option<String>,
    #[serde(default)]
    stdout: Option<String>,
    #[serde(default)]
    setup: Vec<String>,
    #[serde(default)]
    timeout_s: Option<u64>,
}

/// What one case did.
struct Outcome {
    class: String,
    name: String,
    what: String,
    seen: String,
    failure: Option<String>,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

/// The first line of a stream that says something (mpiscope's own error line first).
fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.starts_with("mpiscope: error"))
        .or_else(|| text.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("")
        .trim();
    let mut s: String = line.chars().take(160).collect();
    if s.len() < line.len() {
        s.push_str("...");
    }
    s
}

fn run_case(class: &str, name: &str, src: &Path, scratch: &Path) -> Outcome {
    let text = std::fs::read_to_string(src.join("case.json")).unwrap();
    let case: Case =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}/case.json: {e}", src.display()));
    let dir = scratch.join(class).join(name);
    copy_dir(src, &dir);
    let bin = common::profile_dir();
    for s in &case.setup {
        match s.split_once(' ') {
            Some(("fifo", f)) => {
                let p = std::ffi::CString::new(dir.join(f).as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: a NUL-terminated path.
                assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o600) }, 0, "mkfifo {f}");
            }
            _ => panic!("{}: unknown setup `{s}`", src.display()),
        }
    }
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("{dir}", &dir.display().to_string())
                .replace("{bin}", &bin.display().to_string())
        })
        .collect();
    let mut child = Command::new(common::mpiscope())
        .args(&args)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mpiscope");
    // Read both pipes on threads so that a chatty case cannot block on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let to = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut s);
        s
    });
    let te = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut s);
        s
    });
    let limit = Duration::from_secs(case.timeout_s.unwrap_or(60));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = String::from_utf8_lossy(&to.join().unwrap()).into_owned();
    let stderr = String::from_utf8_lossy(&te.join().unwrap()).into_owned();
    let mut problems = Vec::new();
    let code = match status {
        None => {
            problems.push(format!("hang: still running after {limit:?}"));
            None
        }
        Some(st) => {
            if st.code().is_none() {
                problems.push(format!("killed by a signal: {st}"));
            }
            st.code()
        }
    };
    if stderr.contains("panicked") || code == Some(101) {
        problems.push("panic".into());
    }
    if let Some(code) = code {
        let ok = match &case.exit {
            serde_json::Value::String(s) if s == "error" => code != 0,
            serde_json::Value::String(s) if s == "ok" => code == 0,
            serde_json::Value::Number(n) => n.as_i64() == Some(i64::from(code)),
            other => panic!(
                "{}: exit must be \"error\", \"ok\" or a number, not {other}",
                src.display()
            ),
        };
        if !ok {
            problems.push(format!("exit code {code}, expected {}", case.exit));
        }
    }
    for (want, got, stream) in [
        (&case.stderr, &stderr, "stderr"),
        (&case.stdout, &stdout, "stdout"),
    ] {
        if let Some(w) = want {
            if !got.contains(w.as_str()) {
                problems.push(format!("{stream} lacks `{w}`"));
            }
        }
    }
    let seen = {
        // The line the case is about, when it names one; else the first that says something.
        let line_with = |text: &str, want: &Option<String>| {
            want.as_deref()
                .and_then(|w| text.lines().find(|l| l.contains(w)))
                .map(first_line)
        };
        let e = first_line(&stderr);
        let shown = line_with(&stderr, &case.stderr)
            .or_else(|| line_with(&stdout, &case.stdout))
            .unwrap_or_else(|| if e.is_empty() { first_line(&stdout) } else { e });
        // Paths of the private copy are not part of what the user sees.
        shown.replace(&dir.display().to_string(), "CASE")
    };
    Outcome {
        class: class.into(),
        name: name.into(),
        what: case.what,
        seen,
        failure: (!problems.is_empty()).then(|| {
            format!(
                "{class}/{name} ({}): {}\n  args: {args:?}\n  exit: {code:?}\n  stderr: {}\n  stdout: {}",
                problems.join("; "),
                "",
                stderr.chars().take(2000).collect::<String>(),
                stdout.chars().take(500).collect::<String>()
            )
        }),
    }
}

fn cases() -> Vec<(String, String, PathBuf)> {
    let root = common::root().join("tests/corpus");
    let mut out = Vec::new();
    let Ok(classes) = std::fs::read_dir(&root) else {
        return out;
    };
    for c in classes.flatten().filter(|e| e.path().is_dir()) {
        for k in std::fs::read_dir(c.path()).unwrap().flatten() {
            if k.path().join("case.json").is_file() {
                out.push((
                    c.file_name().to_string_lossy().into_owned(),
                    k.file_name().to_string_lossy().into_owned(),
                    k.path(),
                ));
            }
        }
    }
    out.sort();
    out
}

fn table(outcomes: &[Outcome]) -> String {
    let mut s = String::from("| class | case | input | what the user sees |\n|---|---|---|---|\n");
    for o in outcomes {
        let esc = |t: &str| t.replace('|', "\\|");
        s.push_str(&format!(
            "| {} | {} | {} | `{}` |\n",
            o.class,
            o.name,
            esc(&o.what),
            esc(&o.seen).replace('`', "'")
        ));
    }
    s
}

#[test]
fn every_malformed_input_gets_a_clear_error() {
    let scratch = tempfile::tempdir().unwrap();
    let outcomes: Vec<Outcome> = cases()
        .iter()
        .map(|(c, n, p)| run_case(c, n, p, scratch.path()))
        .collect();
    let failures: Vec<&str> = outcomes
        .iter()
        .filter_map(|o| o.failure.as_deref())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        outcomes.len(),
        failures.join("\n")
    );
    common::bless_section("corpus", &table(&outcomes), "--test cli -- corpus::");
}
