//! The structural form (`mpiscope structure --save`) replays like the trace it came from:
//! a halo exchange (`tests/programs/npb/halo.c`) traced on 4 ranks under a real `mpirun`,
//! both replayed on the same modeled cluster. Same messages, the same compute time per rank
//! (each position keeps the sum of its times), a makespan within 8% (times become the mean
//! of their position, so the replay loses the run-to-run noise that the slowest rank of
//! each step accumulates), and a file whose size does not grow with the iteration count.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{build, mpi_lock, mpiscope, run_traced, tempdir, Mpi};
use serde_json::Value;

fn cluster(dir: &Path) -> PathBuf {
    let p = dir.join("cluster.xml");
    std::fs::write(
        &p,
        "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
         <platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\
         <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" \
         bw=\"1GBps\" lat=\"10us\"/></zone></platform>\n",
    )
    .unwrap();
    p
}

fn replay(input: &Path, platform: &Path) -> Value {
    let o = Command::new(mpiscope())
        .arg("replay")
        .arg(input)
        .arg("--platform")
        .arg(platform)
        .args(["--json", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn dir_size(d: &Path) -> u64 {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// Saves the structural form of `trace` to `out` (gzip-compressed when it ends in `.gz`),
/// exact (`--tolerance 0`) or approximate (the default).
fn save(trace: &Path, out: &Path, exact: bool) {
    let o = Command::new(mpiscope())
        .arg("structure")
        .arg(trace)
        .arg("--save")
        .arg(out)
        .args(if exact {
            &["--tolerance", "0"][..]
        } else {
            &[]
        })
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Messages of the trace's replay.
fn z_messages(trace: &Path, platform: &Path) -> Value {
    replay(trace, platform)["messages"].clone()
}

/// Traces `iters` iterations; returns (trace size, structural file size, gzipped form size).
fn check(iters: u32, tmp: &Path, platform: &Path) -> (u64, u64, u64) {
    let exe = build(Mpi::OpenMpi, "npb/halo.c", &[]);
    let d = tmp.join(format!("it{iters}"));
    std::fs::create_dir_all(&d).unwrap();
    // Wall-time bursts: the form's mean times smooth out the iterations' variations, which
    // under load are preemptions in both replays alike; with CPU times the preemptions are
    // gone from both, and what is left to smooth (short bursts slowed by cold caches after
    // one) is a larger share of a run this short, tens of percent on a loaded machine. The
    // form's CPU times are tested in crates/sim/tests/sim/cputime.rs.
    let (run, trace) = {
        let _g = mpi_lock();
        let opts = ["--cpu-time", "off"];
        run_traced(
            Mpi::OpenMpi,
            4,
            &exe,
            &[&iters.to_string(), "10"],
            &opts,
            &d,
        )
    };
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let form = d.join("halo.structure.json");
    let gz = d.join("halo.structure.json.gz");
    save(&trace, &form, true);
    save(&trace, &gz, true);
    // The approximate form: a tenth of the trace or less, replaying within 3%.
    let approx = d.join("halo.approx.json.gz");
    save(&trace, &approx, false);
    let a = replay(&approx, platform);
    assert_eq!(a["messages"], z_messages(&trace, platform));
    let (mt, ma) = (
        replay(&trace, platform)["makespan_s"].as_f64().unwrap(),
        a["makespan_s"].as_f64().unwrap(),
    );
    assert!(
        (mt - ma).abs() <= 0.03 * mt,
        "{iters} iterations: trace {mt} s, approximate form {ma} s"
    );
    let approx_size = std::fs::metadata(&approx).unwrap().len();
    assert!(
        approx_size * 10 <= dir_size(&trace),
        "approximate form {approx_size} bytes, trace {}",
        dir_size(&trace)
    );
    assert_eq!(std::fs::read(&gz).unwrap()[..2], [0x1f, 0x8b], "not gzip");
    let t = replay(&trace, platform);
    let s = replay(&form, platform);
    // The compressed form is the same form.
    let z = replay(&gz, platform);
    assert_eq!(s["makespan_s"], z["makespan_s"]);
    assert_eq!(s["messages"], z["messages"]);
    // Per iteration 2 sends per rank, every 10 an allreduce.
    assert_eq!(t["messages"], s["messages"]);
    assert!(t["messages"].as_u64().unwrap() >= u64::from(8 * iters));
    for (a, b) in t["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .zip(s["per_rank"].as_array().unwrap())
    {
        let (ca, cb) = (
            a["compute_s"].as_f64().unwrap(),
            b["compute_s"].as_f64().unwrap(),
        );
        assert!((ca - cb).abs() <= 1e-3 * ca + 1e-7, "compute {ca} vs {cb}");
    }
    let (mt, ms) = (
        t["makespan_s"].as_f64().unwrap(),
        s["makespan_s"].as_f64().unwrap(),
    );
    assert!(
        (mt - ms).abs() <= 0.08 * mt,
        "{iters} iterations: trace {mt} s, structural {ms} s"
    );
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    (dir_size(&trace), size(&form), size(&gz))
}

#[test]
fn structural_form_replays_like_the_trace_in_constant_size() {
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let (trace100, form100, _) = check(100, tmp.path(), &platform);
    let (trace1000, form1000, gz1000) = check(1000, tmp.path(), &platform);
    assert!(trace1000 > 5 * trace100, "{trace100} {trace1000}");
    // Near-constant: counts and statistics change, not the shape.
    assert!(
        (form1000 as f64) < 1.05 * form100 as f64,
        "100 iterations: {form100} bytes, 1000: {form1000} bytes"
    );
    assert!(form1000 * 20 < trace1000, "{form1000} vs trace {trace1000}");
    assert!(gz1000 * 4 < form1000, "gzipped {gz1000} vs {form1000}");
}

/// A truncated compressed form is refused with the file named, not half-replayed.
#[test]
fn truncated_compressed_form() {
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let f = tmp.path().join("cut.json.gz");
    // A gzip stream of a valid form, cut in the middle.
    let full = {
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"{\"format\": \"mpiscope-structure-replay/1\", \"ranks\": []}")
            .unwrap();
        z.finish().unwrap()
    };
    std::fs::write(&f, &full[..full.len() / 2]).unwrap();
    let err = refused(&f, &platform);
    assert!(err.contains("cut.json.gz") && err.contains("gzip"), "{err}");
}

/// `mpiscope replay FILE` fails; returns its error output.
fn refused(file: &Path, platform: &Path) -> String {
    let o = Command::new(mpiscope())
        .arg("replay")
        .arg(file)
        .arg("--platform")
        .arg(platform)
        .output()
        .unwrap();
    assert!(!o.status.success());
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A file that is neither a run nor a structural form is refused with a message.
#[test]
fn bad_structural_form() {
    let tmp = tempdir();
    let platform = cluster(tmp.path());
    let f = tmp.path().join("bad.json");
    std::fs::write(&f, "{\"format\": \"something else\", \"ranks\": []}").unwrap();
    let err = refused(&f, &platform);
    assert!(err.contains("mpiscope-structure-replay/1"), "{err}");
}
