//! Per rank of a run directory, the compute bursts of the main thread between the end of
//! `MPI_Init` and the start of `MPI_Finalize`: their wall time, and for those whose CPU time
//! was recorded (format 1.2, `mpiscope trace --cpu-time`) their wall and CPU time.
//!
//! `cargo run --release -p mpiscope-trace --example burst_cpu -- RUN_DIR`

use mpiscope_trace::RunDir;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: burst_cpu RUN_DIR");
        std::process::exit(2);
    };
    let run = match RunDir::open(&dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("burst_cpu: {e}");
            std::process::exit(1);
        }
    };
    println!("rank  bursts  wall_s  with_cpu  their_wall_s  their_cpu_s  cpu/wall");
    for r in 0..run.ranks() {
        let mut reader = match run.open_rank(r) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("burst_cpu: rank {r}: {e}");
                std::process::exit(1);
            }
        };
        let (mut n, mut wall, mut n_cpu, mut wall_cpu, mut cpu) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut prev_exit: Option<u64> = None;
        while let Some((ev, tables)) = reader.next_with_tables() {
            if ev.thread != 0 {
                continue;
            }
            let name = tables.call_name(ev.call);
            if name == "MPI_Finalize" {
                break;
            }
            if let Some(p) = prev_exit {
                let w = ev.t_enter.saturating_sub(p);
                n += 1;
                wall += w;
                if let Some(c) = ev.cpu_ns {
                    n_cpu += 1;
                    wall_cpu += w;
                    cpu += c.min(w);
                }
            }
            prev_exit = Some(ev.t_exit);
        }
        let ratio = if wall_cpu > 0 {
            cpu as f64 / wall_cpu as f64
        } else {
            f64::NAN
        };
        println!(
            "{r:4}  {n:6}  {:6.3}  {n_cpu:8}  {:12.3}  {:11.3}  {ratio:8.3}",
            wall as f64 * 1e-9,
            wall_cpu as f64 * 1e-9,
            cpu as f64 * 1e-9
        );
    }
}
