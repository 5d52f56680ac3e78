//! What the simulator's integration tests share: running `smpirun -replay` and our replay
//! of the same time-independent trace, and the platforms they run on.

use std::path::{Path, PathBuf};
use std::process::Command;

use mpiscope_sim::costs::CallCosts;
use mpiscope_sim::platform::{self, HostId};
use mpiscope_sim::workload::ti;
use mpiscope_sim::{SimConfig, Simulation};

/// Fails with how to install `tool` (SimGrid's) when it is missing.
pub fn need(tool: &str) {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{tool} is not installed: install SimGrid (Debian: apt-get install libsimgrid-dev)"
    );
}

/// SimGrid's replay time of `index`, with `--cfg=network/optim:MODE` when `optim` is set
/// and `--cfg=C` for each of `cfg`;
/// `Err(output)` when SimGrid aborts.
#[allow(clippy::too_many_arguments)]
pub fn simgrid_time(
    dir: &Path,
    index: &Path,
    np: u32,
    platform: &Path,
    hostfile: &Path,
    optim: Option<&str>,
    model: &str,
    cfg: &[&str],
) -> Result<f64, String> {
    let mut cmd = Command::new("smpirun");
    cmd.arg("-replay")
        .arg(index)
        .arg("-np")
        .arg(np.to_string())
        .arg("-platform")
        .arg(platform)
        .arg("-hostfile")
        .arg(hostfile)
        .arg(format!("--cfg=network/model:{model}"))
        .arg("--cfg=smpi/coll-selector:ompi")
        .arg("--log=smpi_replay.fmt:[%.12d]%e%m%n");
    if let Some(mode) = optim {
        cmd.arg(format!("--cfg=network/optim:{mode}"));
    }
    for c in cfg {
        cmd.arg(format!("--cfg={c}"));
    }
    let o = cmd.current_dir(dir).output().unwrap();
    let text =
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        return Err(text);
    }
    let line = text
        .lines()
        .rfind(|l| l.contains("Simulation time"))
        .unwrap_or_else(|| panic!("no simulation time in:\n{text}"));
    let t = line.trim_start_matches('[').split(']').next().unwrap();
    Ok(t.parse().unwrap())
}

/// Our replay time of `index`.
pub fn our_time(index: &Path, platform: &Path, hostfile: &Path, config: SimConfig) -> f64 {
    let p = platform::load(platform).unwrap();
    let w = ti::load(index, ti::TiOptions { lenient: None }).unwrap();
    let names: Vec<String> = std::fs::read_to_string(hostfile)
        .unwrap()
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    let hosts: Vec<HostId> = (0..w.len())
        .map(|i| p.host_id(&names[i % names.len()]).unwrap())
        .collect();
    let sim = Simulation::new(&p, config, hosts, w).unwrap();
    sim.run().unwrap().makespan_s
}

/// SimGrid's CM02 model with SMPI's per-call costs (`smpi/test`, `smpi/iprobe`), which
/// smpirun charges whatever the network model.
pub fn cm02() -> SimConfig {
    SimConfig {
        costs: CallCosts::smpi(),
        ..SimConfig::default()
    }
}

/// Test platforms, all with 16 hosts `n0..n15`, 1 GB/s links and 10 us latency.
#[derive(Debug, Clone, Copy)]
pub enum Topology {
    /// Private links, no backbone.
    Flat,
    /// Two-level fat tree `2;4,4;1,2;1,2`: 4 leaf switches of 4 hosts, 2 top switches.
    FatTree,
    /// 4x4 torus.
    Torus,
}

pub fn platform_files(dir: &Path, topo: Topology) -> (PathBuf, PathBuf) {
    let topology = match topo {
        Topology::Flat => String::new(),
        Topology::FatTree => " topology=\"FAT_TREE\" topo_parameters=\"2;4,4;1,2;1,2\"".into(),
        Topology::Torus => " topology=\"TORUS\" topo_parameters=\"4,4\"".into(),
    };
    let xml = dir.join("platform.xml");
    std::fs::write(
        &xml,
        format!(
            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n<zone id=\"AS0\" routing=\"Full\">\n<cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-15\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\"{topology}/>\n</zone>\n</platform>\n"
        ),
    )
    .unwrap();
    let hf = dir.join("hosts");
    std::fs::write(&hf, (0..16).map(|i| format!("n{i}\n")).collect::<String>()).unwrap();
    (xml, hf)
}
