//! Fuzz target: a capacity-planning study file is parsed cleanly whatever its text (an
//! error, never a panic), and its points enumerate without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(study) = mpiscope_plan::study::Study::parse(text, std::path::Path::new("study.toml")) {
        // A study may describe a huge sweep: look at the first points only.
        let _ = study.points().into_iter().take(1000).count();
    }
});
