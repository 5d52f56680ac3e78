//! `mpiscope-bench` under a real `mpirun` (Open MPI): every operation present in the
//! MPITEST's syntax and with long options, output file, JSON and CSV, validation of the
//! results, and clean errors for bad parameters.

use std::path::Path;
use std::process::{Command, Output};

/// One `mpirun` at a time: concurrent launches race on Open MPI's session directory.
static MPIRUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn mpirun(np: u32, args: &[&str]) -> Output {
    let _one = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        // Ranks that outnumber the cores must not spin in each other's way.
        .args(["--mca", "mpi_yield_when_idle", "1"])
        .arg(env!("CARGO_BIN_EXE_mpiscope-bench"))
        .args(args)
        .output()
        .expect("mpirun (install openmpi-bin)")
}

const SEED_NAMES: [&str; 13] = [
    "TIMING",
    "BARRIER",
    "ALLREDUCE",
    "REDUCE",
    "BROADCAST",
    "GATHER",
    "ALLGATHER",
    "ALL-TO-ALL",
    "ISEND & WAIT",
    "BLOCKING SEND",
    "SENDRECV",
    "SEND & RECV",
    "SIGNAL SENDING",
];

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

#[test]
fn seed_syntax_writes_the_table_to_the_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("transfer.dat");
    let o = format!("o{}", out.display());
    let r = mpirun(
        2,
        &["m1", "M100", "K10", "T5", "t20", "R2", &o, "--validate"],
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(r.stdout.is_empty(), "table on stdout: {}", text(&r.stdout));
    let table = std::fs::read_to_string(&out).unwrap();
    assert!(
        table.contains("np=2 m1 M100 K10 T5 t20 R2 b16777216"),
        "{table}"
    );
    let rows: Vec<&str> = table.lines().filter(|l| !l.starts_with('#')).collect();
    // Per repeat: 3 fast operations, 10 others at 3 lengths.
    assert_eq!(rows.len(), 2 * (3 + 10 * 3), "{table}");
    for name in SEED_NAMES {
        assert!(
            rows.iter().any(|l| l.contains(&format!(" {name} "))),
            "{name} missing:\n{table}"
        );
    }
    for n in ["1", "10", "100"] {
        assert!(
            rows.iter()
                .any(|l| l.split_whitespace().nth(2) == Some(n) && l.contains("ALLREDUCE")),
            "length {n} missing"
        );
    }
    assert!(
        !table.contains("INVALID") && !table.contains("skipped"),
        "{table}"
    );
}

#[test]
fn long_options_and_json() {
    let r = mpirun(
        3,
        &[
            "--min",
            "4",
            "--max",
            "64",
            "--factor",
            "4",
            "--long-iters",
            "7",
            "--fast-iters",
            "30",
            "--repeats",
            "1",
            "--validate",
            "--json",
        ],
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).expect("JSON on stdout");
    assert_eq!(j["np"], 3);
    assert!(j["overheads"]["dt"].as_f64().unwrap() >= 0.0);
    assert!(j["mpi_library"].as_str().unwrap().contains("Open MPI"));
    let rows = j["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3 + 10 * 3);
    for row in rows {
        let fast = row["ints"].is_null();
        let iters = if fast { 30 } else { 7 };
        assert_eq!(row["iterations"], iters, "{row}");
        assert_eq!(row["time"]["n"], iters, "{row}");
        let t = &row["time"];
        assert!(t["min"].as_f64().unwrap() <= t["median"].as_f64().unwrap());
        assert!(t["ci_low"].as_f64().unwrap() <= t["ci_high"].as_f64().unwrap());
        if !fast {
            assert_eq!(row["valid"], true, "{row}");
        }
    }
    // GATHER at 16 integers on 3 ranks: the root receives 2 x 64 bytes.
    let g = rows
        .iter()
        .find(|r| r["operation"] == "GATHER" && r["ints"] == 16)
        .unwrap();
    assert_eq!(g["bytes"], 128);
}

#[test]
fn csv_subset_and_small_buffer() {
    let r = mpirun(
        4,
        &[
            "m1",
            "M1000",
            "K1000",
            "T3",
            "t10",
            "b4096",
            "--only",
            "alltoall,signal",
            "--csv",
        ],
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    let csv = text(&r.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("repeat,operation,ints,bytes"));
    assert_eq!(lines.len(), 1 + 2 + 1, "{csv}");
    // 1000 integers x 4 ranks x 2 buffers do not fit in 4096 bytes.
    let big = lines
        .iter()
        .find(|l| l.contains("ALL-TO-ALL") && l.contains(",1000,"))
        .unwrap();
    assert!(big.contains("needs a"), "{big}");
    assert!(lines.iter().any(|l| l.contains("SIGNAL SENDING")));
}

#[test]
fn bad_parameters_are_named_and_nothing_runs() {
    for (args, needle) in [
        (&["K1"][..], "K (--factor)"),
        (&["M0"], "below m"),
        (&["--only", "teleport"], "teleport"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.dat");
        let o = format!("o{}", out.display());
        let mut a = args.to_vec();
        a.push(&o);
        let r = mpirun(2, &a);
        assert!(!r.status.success(), "{args:?} succeeded");
        let err = text(&r.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!Path::new(&out).exists(), "{args:?} wrote output");
    }
}

/// The operations beyond MPITEST's run when named: the sender's time of a blocking send to a
/// late receiver, and the time per message of a window of non-blocking sends.
#[test]
fn eager_send_and_message_rate() {
    let r = mpirun(
        2,
        &[
            "--bytes",
            "m8",
            "M8",
            "--only",
            "eager_send,message_rate",
            "T10",
            "--validate",
            "--json",
        ],
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let rows = j["results"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["operation"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["EAGER SEND", "MESSAGE RATE"], "{j}");
    for row in rows {
        assert_eq!(row["valid"], true, "{row}");
        let t = row["time"]["median"].as_f64().unwrap();
        // An 8-byte send returns before the receiver, 50 us late, posts its receive.
        assert!(t > 0.0 && t < 25e-6, "{row}");
    }
    assert_eq!(j["params"]["eager_probe_delay"], 50e-6);
}

/// The operations that calibrate the simulator beyond the network: a strided message
/// received contiguous and its contiguous twin, caches cold (sizes as asked, positive
/// times), and a round trip while the other
/// ranks compute on the same cores (within the busy window of 30 ms).
#[test]
fn vector_send_cold_send_and_busy_signal() {
    let r = mpirun(
        4,
        &[
            "--bytes",
            "m4096",
            "M65536",
            "K16",
            "--only",
            "vector_send,cold_send,busy_signal",
            "T5",
            "--json",
        ],
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let rows = j["results"].as_array().unwrap();
    for operation in ["VECTOR SEND", "COLD SEND"] {
        let sizes: Vec<(u64, f64)> = rows
            .iter()
            .filter(|r| r["operation"] == operation)
            .map(|r| {
                (
                    r["bytes"].as_u64().unwrap(),
                    r["time"]["median"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            sizes.iter().map(|v| v.0).collect::<Vec<_>>(),
            [4096, 65536],
            "{operation}: {j}"
        );
        assert!(sizes.iter().all(|v| v.1 > 0.0 && v.1 < 0.1), "{j}");
    }
    let busy: Vec<f64> = rows
        .iter()
        .filter(|r| r["operation"] == "SIGNAL WITH BUSY CORES")
        .map(|r| r["time"]["median"].as_f64().unwrap())
        .collect();
    assert_eq!(busy.len(), 1, "{j}");
    assert!(busy[0] > 0.0 && busy[0] < 30e-3, "{j}");
}

/// REDUCE LOCAL: the library's sum of integers on one process, checked (`--validate`),
/// per call, and slower for a large vector than for a small one; a single process runs it.
#[test]
fn reduce_local_times_the_operator() {
    for np in [1, 2] {
        let r = mpirun(
            np,
            &[
                "--bytes",
                "m64",
                "M262144",
                "K64",
                "--only",
                "reduce_local",
                "T20",
                "--validate",
                "--json",
            ],
        );
        assert!(r.status.success(), "{}", text(&r.stderr));
        let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        let rows = j["results"].as_array().unwrap();
        let times: Vec<(u64, f64)> = rows
            .iter()
            .map(|r| {
                assert_eq!(r["operation"], "REDUCE LOCAL", "{r}");
                assert_eq!(r["valid"], true, "{r}");
                (
                    r["bytes"].as_u64().unwrap(),
                    r["time"]["median"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            times.iter().map(|t| t.0).collect::<Vec<_>>(),
            [64, 4096, 262144],
            "{j}"
        );
        // 256 KiB of sums take longer than 64 bytes of them, and less than a millisecond.
        assert!(times[2].1 > times[0].1 && times[2].1 < 1e-3, "{j}");
    }
}

/// `--in-call`: the operation alone next to MPITEST's corrected time, in `--json` only when
/// asked for.
#[test]
fn in_call_times_the_operation_alone() {
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "--bytes",
            "m8",
            "M64",
            "K8",
            "--only",
            "allreduce,broadcast,send_recv",
            "T10",
            "--json",
        ];
        a.extend_from_slice(extra);
        a
    };
    let r = mpirun(2, &args(&["--in-call"]));
    assert!(r.status.success(), "{}", text(&r.stderr));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(j["params"]["in_call"], true, "{j}");
    let rows = j["results"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "{j}");
    for row in rows {
        let alone = row["in_call"]["median"].as_f64().unwrap();
        // The operation alone: positive, and less than the sample with its barriers.
        assert!(
            alone > 0.0 && alone < row["raw"]["median"].as_f64().unwrap(),
            "{row}"
        );
    }
    let r = mpirun(2, &args(&[]));
    assert!(r.status.success(), "{}", text(&r.stderr));
    let j: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert!(j["params"].get("in_call").is_none(), "{j}");
    assert!(j["results"][0].get("in_call").is_none(), "{j}");
}
