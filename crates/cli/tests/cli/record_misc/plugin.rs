//! User plugins: `tests/programs/misc/plugin.c` compiled into a shared object and loaded
//! with `--plugin`; the user value it sets is recorded on exactly the calls it chose.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use super::{assert_trailer_matches, of, probe_run};
use crate::common::Mpi;
use mpiscope_trace::Slot;

/// Compiles `tests/programs/misc/plugin.c` into a shared object.
fn build_plugin() -> PathBuf {
    let src = common::root().join("tests/programs/misc/plugin.c");
    let header = common::root().join("include/mpiscope_plugin.h");
    assert!(header.is_file(), "{} is missing", header.display());
    let out_dir = common::profile_dir().join("mpiscope-test-programs");
    std::fs::create_dir_all(&out_dir).unwrap();
    let out = out_dir.join("plugin.so");
    let o = Command::new("gcc")
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I"])
        .arg(common::root().join("include"))
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .output()
        .expect("run gcc");
    assert!(
        o.status.success(),
        "gcc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn plugin(mpi: Mpi) {
    let so = build_plugin();
    let tmp = common::tempdir();
    let trace = probe_run(
        mpi,
        &["100", "6", "0", "2"],
        &["--plugin", so.to_str().unwrap()],
        tmp.path(),
    );
    for r in 0..2u32 {
        let re = common::read_rank(&trace, r);
        assert_trailer_matches(&trace, r, &re.events, &re.tables);
        let users: Vec<Option<i64>> = of(&re.events, "MPI_Send")
            .iter()
            .map(|e| e.args.get(Slot::User))
            .collect();
        if r == 0 {
            assert_eq!(users, (1..=12).map(Some).collect::<Vec<_>>(), "rank 0: user values of MPI_Send events (negative: the plugin saw a bad call description)");
        } else {
            assert!(users.is_empty());
        }
        for (n, e) in &re.events {
            if n != "MPI_Send" {
                assert_eq!(
                    e.args.get(Slot::User),
                    None,
                    "rank {r}: {n} has a user value"
                );
            }
        }
    }
}

#[test]
fn plugin_openmpi() {
    let _g = common::mpi_lock();
    plugin(Mpi::OpenMpi);
}

#[test]
fn plugin_mpich() {
    let _g = common::mpi_lock();
    plugin(Mpi::Mpich);
}
