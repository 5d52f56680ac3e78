//! Fuzz target: manifest parsing must fail cleanly on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = serde_json::from_slice::<mpiscope_trace::Manifest>(data);
});
