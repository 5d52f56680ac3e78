//! The analyses run anywhere: the `mpiscope` binary needs only the C runtime at start-up
//! (no OpenBLAS, no Fortran runtime, no libotf2), so `report` works on a login node without
//! them; `calibrate` and `export --format otf2`, the two commands that use those libraries,
//! open them at run time and, where they are missing, fail alone with a message that says
//! what to install, leaving nothing behind. (With the libraries present, the `calibrate::`
//! and `exports::` tests run both commands for real.)

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{self, mpi_lock, mpiscope, tempdir, Mpi};

/// The libraries the binary may need at start-up: glibc's parts and the unwinder every
/// Rust program links. Anything else (`libopenblas.so.0`, `libgfortran.so.5`,
/// `libopen-trace-format2.so.10`, an MPI library) would stop every command on a machine
/// without it.
const ALLOWED: &[&str] = &[
    "libc.so.",
    "libm.so.",
    "libgcc_s.so.",
    "ld-linux",
    "libpthread.so.",
    "libdl.so.",
    "librt.so.",
];

/// The NEEDED entries of the ELF dynamic section of `exe` (`readelf -d`, binutils).
fn needed(exe: &Path) -> Vec<String> {
    let o = Command::new("readelf")
        .arg("-d")
        .arg(exe)
        .output()
        .expect("readelf (binutils)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split_once('[')?.1.split_once(']')?.0.to_owned()))
        .collect()
}

#[test]
fn the_binary_needs_only_the_c_runtime() {
    let libs = needed(&mpiscope());
    // A dynamic executable: readelf's output was understood.
    assert!(libs.iter().any(|l| l == "libc.so.6"), "{libs:?}");
    let extra: Vec<&String> = libs
        .iter()
        .filter(|l| !ALLOWED.iter().any(|a| l.starts_with(a)))
        .collect();
    assert!(
        extra.is_empty(),
        "{} needs {extra:?} at start-up (all: {libs:?}); load such libraries at run time, \
         where the command that uses them runs (mpiscope-dynlib)",
        mpiscope().display()
    );
}

/// Runs `mpiscope args` as on a machine without OpenBLAS and libotf2: their variables name
/// files that do not exist, so opening either fails as it would there.
fn without_libraries(args: &[&str], dir: &Path) -> Output {
    Command::new(mpiscope())
        .args(args)
        .current_dir(dir)
        .env("MPISCOPE_OPENBLAS", "/nonexistent/libopenblas.so.0")
        .env(
            "MPISCOPE_LIBOTF2",
            "/nonexistent/libopen-trace-format2.so.10",
        )
        .output()
        .unwrap()
}

/// Asserts that `o` failed with exit code 1 and a message containing each of `parts`.
fn refused(o: &Output, parts: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for p in parts {
        assert!(err.contains(p), "`{p}` not in: {err}");
    }
}

#[test]
fn without_blas_and_otf2_only_their_commands_fail() {
    let tmp = tempdir();
    let exe = common::build(Mpi::OpenMpi, "c/p2p_blocking.c", &[]);
    let trace = {
        let _g = mpi_lock();
        let (run, trace) = common::run_traced(Mpi::OpenMpi, 2, &exe, &[], &[], tmp.path());
        assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
        trace
    };
    let t = trace.to_str().unwrap();

    let report = without_libraries(&["report", t, "--json"], tmp.path());
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert!(json.is_object(), "{json}");
    let chrome = without_libraries(
        &["export", t, "--format", "chrome", "-o", "chrome"],
        tmp.path(),
    );
    assert!(
        chrome.status.success(),
        "{}",
        String::from_utf8_lossy(&chrome.stderr)
    );

    let otf2 = without_libraries(&["export", t, "--format", "otf2", "-o", "otf2"], tmp.path());
    refused(
        &otf2,
        &[
            "mpiscope export --format otf2 needs libotf2",
            "/nonexistent/libopen-trace-format2.so.10, from MPISCOPE_LIBOTF2",
            "install libopen-trace-format2-10 (Debian 12",
        ],
    );
    assert!(
        !tmp.path().join("otf2").exists(),
        "a failed export made its output"
    );

    let results = tmp.path().join("results.json");
    let sizes: Vec<u64> = (0..12).map(|i| 8u64 << i).collect();
    std::fs::write(&results, crate::calibrate::bench_json(&sizes)).unwrap();
    let r = results.to_str().unwrap();
    let calibrate = without_libraries(&["calibrate", r, "-o", "p.toml", "--quiet"], tmp.path());
    refused(
        &calibrate,
        &[
            "mpiscope calibrate (BLAS kernel timings) needs OpenBLAS",
            "/nonexistent/libopenblas.so.0, from MPISCOPE_OPENBLAS",
            "install libopenblas0 (Debian, Ubuntu)",
            "--no-compute",
        ],
    );
    assert!(
        !tmp.path().join("p.toml").exists(),
        "a failed calibration wrote its platform"
    );
    let network = without_libraries(
        &["calibrate", r, "-o", "p.toml", "--quiet", "--no-compute"],
        tmp.path(),
    );
    assert!(
        network.status.success(),
        "{}",
        String::from_utf8_lossy(&network.stderr)
    );
    assert!(tmp.path().join("p.toml").is_file());
}
