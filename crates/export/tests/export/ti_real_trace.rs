//! A real trace: `tests/programs/ti_sample.c` run under Open MPI with the mpiscope recorder,
//! exported and replayed by SimGrid.
//!
//! Needs Open MPI (`mpicc`, `mpirun`), SimGrid (`smpirun`) and the recorder built with
//! `cargo build --release -p mpiscope-preload-openmpi` (or its path in
//! `MPISCOPE_PRELOAD_OPENMPI`); the test fails, saying which is missing, without them.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{replay, require_program};
use mpiscope_export::{export_simgrid_ti, TiOptions};
use mpiscope_trace::RunDir;

fn preload_library() -> PathBuf {
    if let Some(p) = std::env::var_os("MPISCOPE_PRELOAD_OPENMPI") {
        return PathBuf::from(p);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let target = if target.is_absolute() {
        target
    } else {
        workspace.join(target)
    };
    let lib = target.join("release/libmpiscope_preload_openmpi.so");
    assert!(
        lib.is_file(),
        "the recorder library {} is missing: build it with `cargo build --release -p mpiscope-preload-openmpi` \
         (or set MPISCOPE_PRELOAD_OPENMPI to its path)",
        lib.display()
    );
    lib
}

/// Runs `cmd`, killing it after `limit`; panics with its output unless it succeeds.
fn run(mut cmd: Command, what: &str, limit: Duration) -> String {
    let log = tempfile::NamedTempFile::new().expect("log file");
    let err = log.reopen().expect("log file");
    let out = log.reopen().expect("log file");
    let mut child = cmd
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            panic!("{what} did not finish within {limit:?}:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(log.path()).unwrap_or_default();
    assert!(status.success(), "{what} failed ({status}):\n{text}");
    text
}

#[test]
fn recorded_open_mpi_run_replays() {
    let mpicc = require_program(
        "mpicc",
        "install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi-dev)",
    );
    let mpirun = require_program(
        "mpirun",
        "install Open MPI (Debian/Ubuntu: apt-get install openmpi-bin)",
    );
    require_program(
        "smpirun",
        "install SimGrid 3.32 (Debian/Ubuntu: apt-get install simgrid libsimgrid-dev)",
    );
    let preload = preload_library();

    let tmp = tempfile::tempdir().unwrap();
    let prog = tmp.path().join("ti_sample");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/ti_sample.c");
    let mut cc = Command::new(mpicc);
    cc.arg("-O1").arg("-o").arg(&prog).arg(&src);
    run(cc, "mpicc", Duration::from_secs(120));

    let run_dir = tmp.path().join("T");
    std::fs::create_dir(&run_dir).unwrap();
    let mut mpi = Command::new(mpirun);
    mpi.current_dir(tmp.path())
        .env("MPISCOPE_DIR", &run_dir)
        .args([
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "4",
            "-x",
            "MPISCOPE_DIR",
            "-x",
        ])
        .arg(format!("LD_PRELOAD={}", preload.display()))
        .arg(&prog);
    let output = run(
        mpi,
        "mpirun of the traced program",
        Duration::from_secs(180),
    );
    assert!(
        output.contains("ti_sample done (4 ranks"),
        "unexpected program output:\n{output}"
    );

    let out = tmp.path().join("ti");
    let run = RunDir::open(&run_dir).expect("open the recorded run");
    assert_eq!(run.ranks(), 4);
    let summary = export_simgrid_ti(&run, &out, &TiOptions::default()).expect("export");
    assert_eq!(summary.ranks, 4);

    // The wildcard receives are given the sources they matched.
    let rank0 = common::lines(&out, 0);
    for l in [
        "0 recv 1 11 1024 0",
        "0 irecv 3 30 64 1",
        "0 bcast 2048 0 0",
        "0 reduce 128 0 3 1",
    ] {
        assert!(
            rank0.iter().any(|x| x == l),
            "no {l:?} in rank 0:\n{}",
            rank0.join("\n")
        );
    }
    // Calls without a TI action are reported.
    assert!(
        summary
            .skipped
            .iter()
            .any(|s| s.starts_with("MPI_Comm_rank: 4 calls: no TI action")),
        "{:#?}",
        summary.skipped
    );

    let r = replay(tmp.path(), &out.join("index.txt"), 4);
    assert!(
        r.simulated_s > 0.0,
        "simulated time {}:\n{}",
        r.simulated_s,
        r.output
    );
}
