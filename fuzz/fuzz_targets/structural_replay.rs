//! Fuzz target: a structural form (`mpiscope structure --save`, plain or gzip JSON), parsed
//! and replayed on a small cluster, must give a result or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpiscope_sim::platform::xml::from_simgrid_xml_str;
use mpiscope_sim::workload::structural;
use mpiscope_sim::workload::trace::TraceOptions;
use mpiscope_sim::{SimConfig, Simulation};

const CLUSTER: &str = "<?xml version='1.0'?><platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\"/></zone></platform>";

fuzz_target!(|data: &[u8]| {
    let Ok(form) = structural::from_bytes(data, "fuzz") else {
        return;
    };
    // Loop counts are bounded only by time: replay only small forms with small numbers
    // (a compressed input is parsed, not replayed).
    if data.starts_with(&[0x1f, 0x8b]) || form.ranks.is_empty() || form.ranks.len() > 8 {
        return;
    }
    let mut digits = 0;
    for &b in data {
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
        if digits > 4 {
            return;
        }
    }
    let speeds = vec![1e9; form.ranks.len()];
    let Ok((workloads, _)) = structural::load(&form, TraceOptions::default(), &speeds) else {
        return;
    };
    let platform = from_simgrid_xml_str(CLUSTER, "cluster").expect("platform");
    let hosts = (0..workloads.len() as u32).map(|r| r % 4).collect();
    let sim = Simulation::new(&platform, SimConfig::default(), hosts, workloads);
    if let Ok(sim) = sim {
        let _ = sim.run();
    }
});
