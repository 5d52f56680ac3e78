//! The options a platform file carries (`<config><prop id value>` in SimGrid XML, `[config]`
//! in TOML): which ones mpiscope reads, which are SimGrid 3.32's and not modelled here, and
//! the warning a reader gives for every other one, so that a misspelt option is not
//! ignored in silence.
//!
//! Readers call [`check_key`] once per key and keep its message, with the file and line,
//! as an [`OptionWarning`] in [`crate::platform::Platform::warnings`]; front ends print them.

use crate::calibration::Key;

/// An option of a platform file that the simulator does not use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionWarning {
    /// The platform file.
    pub path: String,
    /// 1-based line of the option.
    pub line: usize,
    /// The option's name.
    pub key: String,
    /// Why it is not used ([`check_key`]'s message).
    pub message: String,
}

impl std::fmt::Display for OptionWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

/// Which platform format a key was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// SimGrid platform XML.
    Xml,
    /// mpiscope's TOML.
    Toml,
}

/// The network options mpiscope reads, by SimGrid's name; SMPI's per-call costs
/// ([`COST_OPTIONS`]) and the measured parameters ([`crate::calibration::Key`]) besides.
pub const READ: &[&str] = &[
    "network/model",
    "network/weight-S",
    "network/TCP-gamma",
    "network/TCP_gamma",
    "network/crosstraffic",
    "smpi/lat-factor",
    "smpi/bw-factor",
    "smpi/send-is-detached-thresh",
];

/// SMPI's per-call costs and their family, which `crate::costs::CallCosts::read` reads.
pub const COST_OPTIONS: &[&str] = &[
    "smpi/test",
    "smpi/iprobe",
    "smpi/grow-injected-times",
    "smpi/iprobe-cpu-usage",
    "smpi/os",
    "smpi/or",
    "smpi/ois",
    "smpi/async-small-thresh",
    "smpi/init",
    "smpi/finalization-barrier",
    "smpi/simulate-computation",
];

/// Every option mpiscope reads, by name (the measured parameters aside).
fn read_options() -> impl Iterator<Item = &'static str> {
    READ.iter().chain(COST_OPTIONS).copied()
}

/// SimGrid options that change nothing in a replay (see [`crate::costs`]): SimGrid uses
/// them on the application it runs, not on the actions it replays.
const NO_EFFECT_ON_REPLAY: &[&str] = &["smpi/wtime", "smpi/host-speed", "smpi/cpu-threshold"];

/// Read from SimGrid XML only (a TOML platform says `loopback = { ... }`).
const XML_ONLY: &[&str] = &["network/loopback-bw", "network/loopback-lat"];

/// SimGrid 3.32's options (its `--help-cfg`, and those SMPI adds) that mpiscope does not
/// model: tracing, contexts, solvers' precision, SMPI's overheads, privatization and the
/// like. A platform may carry them for SimGrid's sake.
const SIMGRID_NOT_MODELLED: &[&str] = &[
    "bmf/max-iterations",
    "bmf/precision",
    "cmonkey/host",
    "cmonkey/link",
    "cmonkey/tell",
    "cmonkey/time",
    "contexts/factory",
    "contexts/guard-size",
    "contexts/nthreads",
    "contexts/stack-size",
    "contexts/synchro",
    "cpu/maxmin-selective-update",
    "cpu/model",
    "cpu/optim",
    "cpu/solver",
    "debug/breakpoint",
    "debug/clean-atexit",
    "debug/verbose-exit",
    "disk/model",
    "disk/solver",
    "exception/cutpath",
    "help-nostop",
    "host/model",
    "host/solver",
    "maxmin/concurrency-limit",
    "maxmin/precision",
    "model-check/replay",
    "model-check/timeout",
    "network/bandwidth-factor",
    "network/latency-factor",
    "network/maxmin-selective-update",
    "network/optim",
    "network/solver",
    "ns3/TcpModel",
    "ns3/seed",
    "path",
    "plugin",
    "plugin/dvfs/governor",
    "plugin/dvfs/max-pstate",
    "plugin/dvfs/min-pstate",
    "plugin/dvfs/sampling-rate",
    "smpi/IB-penalty-factors",
    "smpi/allgather",
    "smpi/allgatherv",
    "smpi/allreduce",
    "smpi/alltoall",
    "smpi/alltoallv",
    "smpi/auto-shared-malloc-thresh",
    "smpi/barrier",
    "smpi/bcast",
    "smpi/coll-selector",
    "smpi/comp-adjustment-file",
    "smpi/display-allocs",
    "smpi/display-timing",
    "smpi/errors-are-fatal",
    "smpi/gather",
    "smpi/hostfile",
    "smpi/keep-temps",
    "smpi/list-leaks",
    "smpi/map",
    "smpi/np",
    "smpi/pedantic",
    "smpi/privatization",
    "smpi/privatize-libs",
    "smpi/reduce",
    "smpi/reduce_scatter",
    "smpi/replay",
    "smpi/scatter",
    "smpi/shared-malloc",
    "smpi/shared-malloc-blocksize",
    "smpi/shared-malloc-hugepage",
    "smpi/tmpdir",
    "smpi/trace-call-location",
    "smpi/trace-call-use-absolute-path",
    "surf/precision",
    "tracing",
];

/// SimGrid option families that mpiscope does not model (every key below them).
const SIMGRID_FAMILIES: &[&str] = &["tracing/", "contexts/", "model-check/", "plugin/"];

/// Why option `key` of a platform in `format` is not used, or `None` when mpiscope reads it.
pub fn check_key(key: &str, format: Format) -> Option<String> {
    if read_options().any(|k| k == key)
        || Key::named(key).is_some()
        || (format == Format::Xml && XML_ONLY.contains(&key))
    {
        return None;
    }
    if XML_ONLY.contains(&key) {
        return Some(format!(
            "option `{key}` is read from SimGrid XML platforms only (a TOML platform sets \
             `loopback = {{ bandwidth = ..., latency = ... }}`): ignored"
        ));
    }
    if NO_EFFECT_ON_REPLAY.contains(&key) {
        return Some(format!(
            "option `{key}` is SimGrid's for the applications it runs and changes nothing in a \
             replay (mpiscope traces' computations scale with --traced-speed): ignored"
        ));
    }
    if SIMGRID_NOT_MODELLED.contains(&key) || SIMGRID_FAMILIES.iter().any(|f| key.starts_with(f)) {
        return Some(format!(
            "option `{key}` is SimGrid's but mpiscope does not model it: ignored"
        ));
    }
    let hint = read_options()
        .chain(Key::ALL.iter().map(|k| k.name()))
        .chain(XML_ONLY.iter().copied())
        .filter(|k| close(k, key))
        .map(|k| format!(" (did you mean `{k}`?)"))
        .next()
        .unwrap_or_default();
    Some(format!(
        "unknown option `{key}`{hint}: neither mpiscope nor SimGrid reads it; ignored"
    ))
}

/// Whether two option names differ by at most two edits (a misspelling).
fn close(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 2 {
        return false;
    }
    // Levenshtein distance, one row at a time.
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            row[j + 1] = sub.min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()] <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_keys_pass_and_the_others_are_named() {
        for k in read_options().chain(Key::ALL.map(Key::name)) {
            assert_eq!(check_key(k, Format::Toml), None, "{k}");
            assert_eq!(check_key(k, Format::Xml), None, "{k}");
        }
        assert_eq!(check_key("network/loopback-bw", Format::Xml), None);
        let e = check_key("network/loopback-bw", Format::Toml).unwrap();
        assert!(e.contains("XML platforms only"), "{e}");
        for k in NO_EFFECT_ON_REPLAY {
            let e = check_key(k, Format::Toml).unwrap();
            assert!(e.contains("changes nothing in a replay"), "{e}");
        }
        let e = check_key("smpi/privatization", Format::Xml).unwrap();
        assert!(
            e.contains("SimGrid's but mpiscope does not model it"),
            "{e}"
        );
        let e = check_key("tracing/smpi/format", Format::Xml).unwrap();
        assert!(e.contains("SimGrid's"), "{e}");
        let e = check_key("smpi/bw-factr", Format::Toml).unwrap();
        assert!(
            e.starts_with("unknown option `smpi/bw-factr` (did you mean `smpi/bw-factor`?)"),
            "{e}"
        );
        let e = check_key("mpiscope/dgem", Format::Toml).unwrap();
        assert!(e.contains("(did you mean `mpiscope/dgemm`?)"), "{e}");
        let e = check_key("colour", Format::Toml).unwrap();
        assert_eq!(
            e,
            "unknown option `colour`: neither mpiscope nor SimGrid reads it; ignored"
        );
    }

    /// SMPI's per-call costs are read without a warning.
    #[test]
    fn every_cost_option_is_read_without_a_warning() {
        for k in COST_OPTIONS {
            assert_eq!(check_key(k, Format::Xml), None, "{k}");
            assert_eq!(check_key(k, Format::Toml), None, "{k}");
        }
    }

    #[test]
    fn misspellings_are_close() {
        assert!(close("mpiscope/dgemm", "mpiscope/dgem"));
        assert!(close("network/weight-S", "network/weight-s"));
        assert!(!close("network/model", "smpi/or"));
        assert!(!close("a", "abcd"));
    }
}
