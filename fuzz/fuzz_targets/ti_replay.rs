//! Fuzz target: a SimGrid time-independent trace, parsed and replayed on a small cluster,
//! must give a result or an error (syntax, deadlock, invalid call, time overflow), never a
//! panic; read strictly, or leniently (skipping bad lines) when the first byte is odd.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpiscope_sim::platform::xml::from_simgrid_xml_str;
use mpiscope_sim::workload::ti;
use mpiscope_sim::{SimConfig, Simulation};

const CLUSTER: &str = "<?xml version='1.0'?><platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1GBps\" lat=\"10us\"/></zone></platform>";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Gigabyte collectives are valid but expand into millions of segment steps: keep each
    // run short (numbers up to 7 digits).
    let mut digits = 0;
    for b in text.bytes() {
        digits = if b.is_ascii_digit() { digits + 1 } else { 0 };
        if digits > 7 {
            return;
        }
    }
    let skipped = ti::SkippedLines::default();
    let options = ti::TiOptions {
        lenient: (data.first().is_some_and(|b| b % 2 == 1)).then(|| skipped.clone()),
        ..ti::TiOptions::default()
    };
    let Ok(workloads) = ti::from_str(text, "fuzz", options) else {
        return;
    };
    // Rank counts are bounded only by memory; keep the fuzzer's runs small.
    if workloads.is_empty() || workloads.len() > 16 {
        return;
    }
    let platform = from_simgrid_xml_str(CLUSTER, "cluster").expect("platform");
    let hosts = (0..workloads.len() as u32).map(|r| r % 4).collect();
    let sim = Simulation::new(&platform, SimConfig::default(), hosts, workloads);
    if let Ok(sim) = sim {
        let _ = sim.run();
    }
    assert!(skipped.first().len() as u64 <= skipped.count());
});
