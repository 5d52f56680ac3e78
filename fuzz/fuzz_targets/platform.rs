//! Fuzz target: platform files (SimGrid XML and mpiscope TOML) load or fail cleanly, and
//! the routes of a loaded platform can be asked for without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpiscope_sim::platform::toml::from_toml_str;
use mpiscope_sim::platform::xml::from_simgrid_xml_str;
use mpiscope_sim::platform::Platform;

fn exercise(p: &Platform) {
    let n = p.hosts.len().min(8) as u32;
    let mut route = Vec::new();
    for a in 0..n {
        for b in 0..n {
            let _ = p.route(a, b, &mut route);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Generated topologies may legitimately have millions of hosts: stay small.
    if text.bytes().filter(u8::is_ascii_digit).count() > 64 {
        return;
    }
    if let Ok(p) = from_simgrid_xml_str(text, "fuzz.xml") {
        exercise(&p);
    }
    if let Ok(p) = from_toml_str(text, "fuzz.toml") {
        exercise(&p);
    }
});
