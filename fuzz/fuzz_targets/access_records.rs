//! Fuzz target: the access records `mpiscope overlap predict --access` and the order files
//! `mpiscope overlap --order` read are parsed cleanly whatever their text (an error, never a
//! panic), and the consensus orders of what parses are computed without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpiscope_overlap_core::access;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(records) = access::Record::parse_lines(text) {
        let _ = access::orders(&records);
    }
    let _ = access::parse_orders(text);
});
