//! Bad inputs: recorder settings that cannot be used (directory, buffer size, unknown
//! function) give a warning and leave the program's results alone; `mpiscope report` /
//! `dump` on things that are not (good) traces (no trace, a foreign file, a corrupt
//! manifest, flipped bytes, truncations) give clear errors or warnings naming the file and
//! offset, never a panic.

use crate::common;

use std::path::Path;
use std::process::Command;

use super::{assert_no_panic, mpiscope, rank_stats};
use crate::common::{Mpi, Run};

/// Runs `exe args` on `np` ranks with the preload library and `env` passed by the launcher
/// (not through `mpiscope trace`).
fn run_preloaded(mpi: Mpi, np: u32, exe: &Path, args: &[&str], env: &[(&str, String)]) -> Run {
    let mut l = mpi.launcher(np);
    let mut c = Command::new(l.remove(0));
    c.args(l);
    let mut all: Vec<(&str, String)> = vec![("LD_PRELOAD", mpi.preload().display().to_string())];
    all.extend(env.iter().cloned());
    for (k, v) in all {
        match mpi {
            Mpi::OpenMpi => c.arg("-x").arg(format!("{k}={v}")),
            Mpi::Mpich => c.arg("-genv").arg(k).arg(v),
        };
    }
    c.arg(exe).args(args);
    let o = c.output().expect("launch");
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn bad_inputs(mpi: Mpi) {
    let exe = common::build(mpi, "misc/probe_loop.c", &[]);
    let args = ["1000", "3"];
    let plain = common::run_plain(mpi, 2, &exe, &args);
    assert_eq!(
        plain.code,
        Some(0),
        "untraced run failed:\n{}",
        plain.stderr
    );
    let tmp = common::tempdir();
    let not_dir = tmp.path().join("a-file");
    std::fs::write(&not_dir, "not a directory\n").unwrap();
    let unused = tmp.path().join("unused-trace-dir");
    // (what, environment, text the warning must contain)
    type Case<'a> = (&'a str, Vec<(&'a str, String)>, String);
    let cases: Vec<Case> = vec![
        (
            "unusable directory",
            vec![("MPISCOPE_DIR", "/proc/nope".into())],
            "/proc/nope".into(),
        ),
        (
            "file instead of a directory",
            vec![("MPISCOPE_DIR", not_dir.display().to_string())],
            not_dir.display().to_string(),
        ),
        (
            "bad buffer size",
            vec![
                ("MPISCOPE_DIR", unused.display().to_string()),
                ("MPISCOPE_BUFFER", "lots".into()),
            ],
            "MPISCOPE_BUFFER=lots".into(),
        ),
        (
            "unknown function",
            vec![
                ("MPISCOPE_DIR", unused.display().to_string()),
                ("MPISCOPE_SAMPLE", "MPI_Bogus=3".into()),
            ],
            "MPI_Bogus".into(),
        ),
    ];
    for (what, env, needle) in cases {
        let r = run_preloaded(mpi, 2, &exe, &args, &env);
        assert_eq!(
            r.code,
            Some(0),
            "{what}: the program must succeed:\n{}",
            r.stderr
        );
        assert_eq!(
            r.stdout, plain.stdout,
            "{what}: output differs from the untraced run"
        );
        let lines: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.contains("mpiscope"))
            .collect();
        assert_eq!(
            lines.len(),
            2,
            "{what}: expected one `mpiscope:` line per rank on stderr, got:\n{}",
            r.stderr
        );
        for l in &lines {
            assert!(
                l.starts_with("mpiscope: "),
                "{what}: malformed line `{l}` in:\n{}",
                r.stderr
            );
            assert!(
                l.contains(&needle),
                "{what}: `{l}` does not name `{needle}`"
            );
        }
        assert!(!unused.exists(), "{what}: a trace directory was created");
        assert_eq!(
            std::fs::read_to_string(&not_dir).unwrap(),
            "not a directory\n",
            "{what}: the file was touched"
        );
        assert!(!Path::new("/proc/nope").exists());
    }
}

#[test]
fn bad_inputs_openmpi() {
    let _g = common::mpi_lock();
    bad_inputs(Mpi::OpenMpi);
}

#[test]
fn bad_inputs_mpich() {
    let _g = common::mpi_lock();
    bad_inputs(Mpi::Mpich);
}

/// `mpiscope report` / `dump` on things that are not (good) traces: clear errors or
/// warnings naming the file and offset, never a panic.
#[test]
fn report_on_bad_traces() {
    let _g = common::mpi_lock();
    let tmp = common::tempdir();
    let root = tmp.path();

    // Not a trace directory at all.
    let plain = root.join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("notes.txt"), "hello\n").unwrap();
    let missing = root.join("does-not-exist");
    for dir in [&plain, &missing] {
        for cmd in ["report", "dump"] {
            let r = mpiscope(&[cmd, dir.to_str().unwrap()]);
            assert_no_panic(cmd, &r);
            assert_ne!(r.code, Some(0), "{cmd} {} must fail", dir.display());
            assert!(
                r.stderr.starts_with("mpiscope: error:")
                    && r.stderr.contains(dir.to_str().unwrap()),
                "{cmd} {}: unclear error: {}",
                dir.display(),
                r.stderr
            );
        }
    }
    // A rank file that is not a trace.
    let fake = root.join("fake");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("rank-00000.mpst"), vec![b'x'; 1000]).unwrap();
    let r = mpiscope(&["report", fake.to_str().unwrap(), "--json"]);
    assert_no_panic("report", &r);
    let named = if r.code == Some(0) {
        r.stdout.clone()
    } else {
        r.stderr.clone()
    };
    assert!(
        named.contains("rank-00000.mpst"),
        "report on a fake rank file does not name it:\n{}{}",
        r.stdout,
        r.stderr
    );
    // A corrupt manifest.
    let badm = root.join("badmanifest");
    std::fs::create_dir(&badm).unwrap();
    std::fs::write(badm.join("manifest.json"), "{ \"ranks\": ").unwrap();
    let r = mpiscope(&["report", badm.to_str().unwrap()]);
    assert_no_panic("report", &r);
    assert_ne!(r.code, Some(0));
    assert!(
        r.stderr.contains("manifest.json"),
        "bad manifest not named: {}",
        r.stderr
    );

    // A real trace, then damaged copies of it.
    let mpi = Mpi::OpenMpi;
    let exe = common::build(mpi, "misc/probe_loop.c", &[]);
    let (run, trace) = common::run_traced(mpi, 2, &exe, &["3000", "40"], &["--buffer", "4K"], root);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let original = std::fs::read(trace.join("rank-00000.mpst")).unwrap();
    let n = original.len();
    assert!(
        n > 8000,
        "trace too small to damage meaningfully ({n} bytes)"
    );
    let copy = root.join("damaged");
    let damaged = |bytes: &[u8]| {
        let _ = std::fs::remove_dir_all(&copy);
        std::fs::create_dir(&copy).unwrap();
        for e in std::fs::read_dir(&trace).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
        }
        std::fs::write(copy.join("rank-00000.mpst"), bytes).unwrap();
    };

    // Flipped bytes in the middle: a warning naming the file and the offset; the report
    // still covers both ranks.
    // Past the first 4 KiB chunk (and the header), so that something precedes the damage.
    let first = 4096 + 256;
    for frac in [0.3, 0.5, 0.8] {
        let at = first + ((n - first - 16) as f64 * frac) as usize;
        let mut b = original.clone();
        for x in &mut b[at..at + 16] {
            *x ^= 0xff;
        }
        damaged(&b);
        let r = mpiscope(&["report", copy.to_str().unwrap(), "--json"]);
        assert_no_panic("report", &r);
        assert_eq!(
            r.code,
            Some(0),
            "report on a damaged trace (bytes {at}..) failed:\n{}",
            r.stderr
        );
        let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let w: Vec<&str> = j["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w.as_str())
            .collect();
        assert!(
            w.iter()
                .any(|w| w.contains("rank-00000.mpst") && w.contains("offset")),
            "damage at byte {at}: no warning naming the file and offset: {w:?}"
        );
        assert_eq!(rank_stats(&j, 0)["complete"], false);
        assert_eq!(rank_stats(&j, 1)["complete"], true);
        assert!(
            rank_stats(&j, 0)["events"].as_u64().unwrap() > 0,
            "nothing read before the damage"
        );
        let d = mpiscope(&["dump", copy.to_str().unwrap()]);
        assert_no_panic("dump", &d);
    }
    // Any single damaged byte, any truncation: never a panic.
    for at in (0..n).step_by(n / 61) {
        let mut b = original.clone();
        b[at] ^= 0x5a;
        damaged(&b);
        for cmd in [
            &["report", copy.to_str().unwrap(), "--json"][..],
            &["dump", copy.to_str().unwrap()][..],
        ] {
            let r = mpiscope(cmd);
            assert_no_panic(&format!("{cmd:?} with byte {at} damaged"), &r);
        }
    }
    for len in [0, 7, 16, 17, 60, n / 3, n / 2, n - 1] {
        damaged(&original[..len]);
        let r = mpiscope(&["report", copy.to_str().unwrap(), "--json"]);
        assert_no_panic(&format!("report on a file cut at {len}"), &r);
        if r.code == Some(0) {
            // A cut inside a block names the file and offset; a cut at a block boundary
            // is a rank without a trailer.
            let j: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
            let w = j["warnings"].to_string();
            assert!(
                w.contains("rank-00000.mpst") || w.contains("rank 0:"),
                "cut at {len}: no warning about rank 0:\n{}",
                r.stdout
            );
            assert_eq!(
                rank_stats(&j, 1)["complete"],
                true,
                "cut at {len}: rank 1 unaffected"
            );
        } else {
            assert!(
                r.stderr.contains("rank-00000.mpst"),
                "cut at {len}: the file is not named:\n{}",
                r.stderr
            );
        }
        let d = mpiscope(&["dump", copy.to_str().unwrap()]);
        assert_no_panic(&format!("dump on a file cut at {len}"), &d);
    }
}
