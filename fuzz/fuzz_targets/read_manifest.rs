//! Fuzz target: a manifest is parsed and checked cleanly whatever its bytes: no panic, and
//! no rank count accepted that the data does not back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = serde_json::from_slice::<mpiscope_trace::Manifest>(data) {
        let last = data.first().map(|&b| u32::from(b));
        if m.validate(last).is_ok() {
            assert!(m.ranks >= 1);
            assert!(m.ranks as usize <= m.placement.len().max(last.unwrap_or(0) as usize + 1));
        }
    }
});
