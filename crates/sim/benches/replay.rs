//! Replay throughput benchmark (a bench binary: `cargo bench -p mpiscope-sim --bench replay -- ...`).
//!
//! * `gen DIR RANKS ITERS`: writes a synthetic SimGrid time-independent trace: ranks on a
//!   2-D grid exchange halos with their four neighbours every iteration (`irecv` x4,
//!   `isend` x4, `waitall`, `compute`), messages alternating 8 KiB (eager) and 96 KiB
//!   (rendezvous): 10 actions per rank and iteration.
//! * `run INDEX PLATFORM HOSTFILE`: replays it and prints the makespan, the wall time, the
//!   actions per second and the peak memory.
//! * `synthetic RANKS ITERS PLATFORM`: the same pattern generated in memory (no files), for
//!   very large rank counts.
//!
//! `scripts/bench-replay.sh` runs these side by side with `smpirun -replay`.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use mpiscope_sim::platform::{self, HostId};
use mpiscope_sim::workload::{ti, Action, Outcome, RankWorkload, WorkloadError};
use mpiscope_sim::{SimConfig, Simulation};

fn grid(ranks: u32) -> (u32, u32) {
    let mut w = (ranks as f64).sqrt() as u32;
    while w > 1 && ranks % w != 0 {
        w -= 1;
    }
    (w.max(1), ranks / w.max(1))
}

fn neighbours(r: u32, ranks: u32) -> [u32; 4] {
    let (w, h) = grid(ranks);
    let (x, y) = (r % w, r / w);
    [
        ((x + 1) % w) + y * w,
        ((x + w - 1) % w) + y * w,
        x + ((y + 1) % h) * w,
        x + ((y + h - 1) % h) * w,
    ]
}

fn size_of(it: u32) -> u64 {
    if it % 2 == 0 {
        8192
    } else {
        98304
    }
}

fn gen(dir: &Path, ranks: u32, iters: u32) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut index = std::fs::File::create(dir.join("index.txt"))?;
    for r in 0..ranks {
        let name = format!("rank-{r}.txt");
        writeln!(index, "{}", dir.join(&name).display())?;
        let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join(name))?);
        writeln!(f, "{r} init")?;
        let nb = neighbours(r, ranks);
        for it in 0..iters {
            let s = size_of(it);
            for (k, &n) in nb.iter().enumerate() {
                writeln!(f, "{r} irecv {n} {} {s}", k ^ 1)?;
            }
            for (k, &n) in nb.iter().enumerate() {
                writeln!(f, "{r} isend {n} {k} {s}")?;
            }
            writeln!(f, "{r} waitall")?;
            writeln!(
                f,
                "{r} compute {}",
                1e5 + f64::from((r * 7 + it) % 13) * 1e3
            )?;
        }
        writeln!(f, "{r} finalize")?;
    }
    Ok(())
}

/// The same pattern, generated in memory.
struct Synthetic {
    rank: u32,
    ranks: u32,
    iters: u32,
    it: u32,
    step: u32,
}

impl RankWorkload for Synthetic {
    fn next(&mut self, _last: Outcome) -> Option<Result<Action, WorkloadError>> {
        if self.it == self.iters {
            return None;
        }
        let nb = neighbours(self.rank, self.ranks);
        let s = size_of(self.it);
        let a = match self.step {
            0..=3 => {
                let k = self.step as usize;
                Action::Recv {
                    src: i64::from(nb[k]),
                    tag: (k ^ 1) as i64,
                    bytes: s,
                    comm: 0,
                    req: Some(k as u64),
                }
            }
            4..=7 => {
                let k = (self.step - 4) as usize;
                Action::Send {
                    dst: nb[k],
                    tag: k as i64,
                    bytes: s,
                    comm: 0,
                    req: Some(4 + k as u64),
                    sync: false,
                }
            }
            8 => Action::Wait {
                reqs: (0..8).collect(),
            },
            _ => Action::Compute {
                flops: 1e5 + f64::from((self.rank * 7 + self.it) % 13) * 1e3,
            },
        };
        self.step += 1;
        if self.step == 10 {
            self.step = 0;
            self.it += 1;
        }
        Some(Ok(a))
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .map(|k| k / 1024.0)
        .unwrap_or(0.0)
}

fn run(workloads: Vec<Box<dyn RankWorkload>>, platform: &platform::Platform, hosts: Vec<HostId>) {
    let n = workloads.len();
    let t0 = Instant::now();
    let sim =
        Simulation::new(platform, SimConfig::default(), hosts, workloads).expect("simulation");
    let r = sim.run().expect("replay");
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "ranks {n} actions {} messages {} makespan {:.9} s wall {:.3} s actions/s {:.0} peak_rss_mib {:.1} solves {} mean_vars {:.0} mean_links {:.0} rounds {:.1} pops {:.1} local {} fallbacks {}",
        r.actions,
        r.messages,
        r.makespan_s,
        wall,
        r.actions as f64 / wall,
        peak_rss_mib(),
        r.solver.components,
        r.solver.variables as f64 / r.solver.components.max(1) as f64,
        r.solver.constraints as f64 / r.solver.components.max(1) as f64,
        r.solver.rounds as f64 / r.solver.components.max(1) as f64,
        r.solver.pops as f64 / r.solver.components.max(1) as f64,
        r.solver.local,
        r.solver.local_fallbacks,
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("gen") if args.len() == 4 => {
            gen(
                Path::new(&args[1]),
                args[2].parse().expect("ranks"),
                args[3].parse().expect("iterations"),
            )
            .expect("writing the trace");
        }
        Some("run") if args.len() == 4 => {
            let p = platform::load(Path::new(&args[2])).expect("platform");
            let names: Vec<String> = std::fs::read_to_string(&args[3])
                .expect("hostfile")
                .lines()
                .map(|l| l.trim().to_owned())
                .filter(|l| !l.is_empty())
                .collect();
            let w = ti::load(Path::new(&args[1]), ti::TiOptions::default()).expect("trace");
            let hosts = (0..w.len())
                .map(|i| {
                    p.host_id(&names[i % names.len()])
                        .expect("host in platform")
                })
                .collect();
            run(w, &p, hosts);
        }
        Some("synthetic") if args.len() == 4 => {
            let ranks: u32 = args[1].parse().expect("ranks");
            let iters: u32 = args[2].parse().expect("iterations");
            let p = platform::load(Path::new(&args[3])).expect("platform");
            let w: Vec<Box<dyn RankWorkload>> = (0..ranks)
                .map(|r| {
                    Box::new(Synthetic {
                        rank: r,
                        ranks,
                        iters,
                        it: 0,
                        step: 0,
                    }) as Box<dyn RankWorkload>
                })
                .collect();
            let hosts = (0..ranks).map(|r| r % p.hosts.len() as u32).collect();
            run(w, &p, hosts);
        }
        _ => {
            // `cargo bench` with no arguments: a small self-contained run.
            let dir = std::env::temp_dir().join("mpiscope-bench-replay");
            gen(&dir, 64, 200).expect("trace");
            let xml = dir.join("cluster.xml");
            std::fs::write(&xml, "<?xml version='1.0'?>\n<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-63\" speed=\"1Gf\" bw=\"10Gbps\" lat=\"2us\"/></zone></platform>\n").expect("platform");
            let p = platform::load(&xml).expect("platform");
            let w = ti::load(&dir.join("index.txt"), ti::TiOptions::default()).expect("trace");
            let hosts = (0..64).collect();
            run(w, &p, hosts);
        }
    }
}
