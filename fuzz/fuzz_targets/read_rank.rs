//! Fuzz target: the rank-file reader must never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Raw input, and the same input behind a valid file header (to get past the magic).
    if let Ok(mut r) = mpiscope_trace::RankReader::new(data, "fuzz") {
        while r.next_event().is_some() {}
        let _ = r.stopped();
    }
    let mut framed = mpiscope_trace::block::file_header().to_vec();
    framed.extend_from_slice(data);
    if let Ok(mut r) = mpiscope_trace::RankReader::new(framed.as_slice(), "fuzz") {
        while r.next_event().is_some() {}
    }
});
