//! Recorder options, read from the environment once at load time.
//!
//! `mpiscope trace` sets these; they can also be set by hand:
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `MPISCOPE_DIR` | output directory | `mpiscope-trace` |
//! | `MPISCOPE_START_AFTER` | seconds after `MPI_Init` before recording starts | `0` |
//! | `MPISCOPE_DURATION` | seconds of recording, then stop | unlimited |
//! | `MPISCOPE_SAMPLE` | `MPI_Iprobe=10000,probe=100`: record 1 call in N | none |
//! | `MPISCOPE_INCLUDE` | functions or groups to record (`p2p,collective,MPI_Wtime`) | all |
//! | `MPISCOPE_EXCLUDE` | functions or groups not to record | none |
//! | `MPISCOPE_PCONTROL` | `on`: `MPI_Pcontrol(0)`/`(1)` pause and resume; `off`: ignore | `on` |
//! | `MPISCOPE_BUFFER` | bytes per thread buffer (one block), `K`/`M` suffixes | `256K` |
//! | `MPISCOPE_STACK` | frames per callsite: 0 none, 1 return address, N unwound | `1` |
//! | `MPISCOPE_CORE` | `sampled` (every 16th event reads the core), `every`, `off` | `sampled` |
//! | `MPISCOPE_CLOCK` | `auto`, `tsc`, `monotonic` | `auto` |
//! | `MPISCOPE_PLUGIN` | shared object with PRE/POST callbacks | none |
//! | `MPISCOPE_SIGNALS` | `on`: write the record when a signal ends the process | `on` |
//! | `MPISCOPE_FLUSH_EVERY` | seconds: a buffer older than this is written, and a thread inside one MPI call for this long has its record written (0: only full buffers) | `1` |
//! | `MPISCOPE_HANG_AFTER` | seconds inside one MPI call after which the rank's record is written and the hang reported | off |
//! | `MPISCOPE_HANG_ACTION` | `report` (the program goes on) or `kill` (the rank ends after its record) | `report` |
//! | `MPISCOPE_CPU_TIME` | seconds: compute bursts at least this long get the thread's CPU time beside their wall time (a system call at their two ends, so never more than one per this interval); `off`: none | `0.00005` |
//! | `MPISCOPE_DISABLE` | `1`: load but record nothing | unset |
//! | `MPISCOPE_COMMAND` | the launch command, as a JSON array (set by the CLI) | unset |

use mpiscope_mpispec::Group;

/// How often the CPU core is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreMode {
    /// Never.
    Off,
    /// On one event in 16 (and the first of each block).
    Sampled,
    /// On every event.
    Every,
}

/// All options.
#[derive(Debug, Clone)]
pub struct Config {
    /// Output directory.
    pub dir: String,
    /// Delay after initialization before recording, in ns.
    pub start_after_ns: u64,
    /// Recording duration, in ns.
    pub duration_ns: Option<u64>,
    /// (function or group, N): record one call in N.
    pub sample: Vec<(String, u32)>,
    /// Functions or groups to record (empty: all).
    pub include: Vec<String>,
    /// Functions or groups not to record.
    pub exclude: Vec<String>,
    /// Honour `MPI_Pcontrol`.
    pub pcontrol: bool,
    /// Bytes per thread buffer.
    pub buffer: usize,
    /// Frames per callsite.
    pub stack: u32,
    /// Core reads.
    pub core: CoreMode,
    /// Clock choice.
    pub clock: String,
    /// Plugin path.
    pub plugin: Option<String>,
    /// Flush on fatal signals.
    pub signals: bool,
    /// Buffers older than this are written (ns; 0: only full buffers).
    pub flush_every_ns: u64,
    /// Report a call that lasts longer than this (ns).
    pub hang_after_ns: Option<u64>,
    /// End the rank after reporting a hang.
    pub hang_kill: bool,
    /// Bursts at least this long (ns) get their CPU time; `None`: no CPU time is read.
    pub cpu_time_ns: Option<u64>,
    /// Record nothing.
    pub disabled: bool,
    /// Launch command from the CLI.
    pub command: Option<Vec<String>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            dir: "mpiscope-trace".into(),
            start_after_ns: 0,
            duration_ns: None,
            sample: Vec::new(),
            include: Vec::new(),
            exclude: Vec::new(),
            pcontrol: true,
            buffer: 256 << 10,
            stack: 1,
            core: CoreMode::Sampled,
            clock: "auto".into(),
            plugin: None,
            signals: true,
            flush_every_ns: 1_000_000_000,
            hang_after_ns: None,
            hang_kill: false,
            cpu_time_ns: Some(50_000),
            disabled: false,
            command: None,
        }
    }
}

fn seconds(var: &str, v: &str) -> Result<u64, String> {
    let s: f64 = v
        .trim()
        .parse()
        .map_err(|_| format!("{var}={v}: expected a number of seconds"))?;
    if !(0.0..=1e9).contains(&s) {
        return Err(format!("{var}={v}: out of range"));
    }
    Ok((s * 1e9) as u64)
}

/// `MPISCOPE_CPU_TIME`: `off`, or seconds, at least 1 us.
fn cpu_time(v: &str) -> Result<Option<u64>, String> {
    if v.trim() == "off" {
        return Ok(None);
    }
    let ns = seconds("MPISCOPE_CPU_TIME", v)?;
    if ns < 1_000 {
        return Err(format!(
            "MPISCOPE_CPU_TIME={v}: expected off or at least 0.000001 seconds"
        ));
    }
    Ok(Some(ns))
}

/// Parses `256K`, `4M`, `65536`.
pub fn parse_size(var: &str, v: &str) -> Result<usize, String> {
    let t = v.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1usize << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: usize = num
        .parse()
        .map_err(|_| format!("{var}={v}: expected a size like 256K"))?;
    let n = n
        .checked_mul(mult)
        .ok_or_else(|| format!("{var}={v}: too large"))?;
    if !(4096..=1 << 30).contains(&n) {
        return Err(format!("{var}={v}: must be between 4K and 1G"));
    }
    Ok(n)
}

fn names(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn on_off(var: &str, v: &str) -> Result<bool, String> {
    match v.trim() {
        "1" | "on" | "yes" | "true" => Ok(true),
        "0" | "off" | "no" | "false" => Ok(false),
        _ => Err(format!("{var}={v}: expected on or off")),
    }
}

/// Checks that a filter term names a known function or group.
fn check_term(var: &str, term: &str, known: &[&str]) -> Result<(), String> {
    if term == "all"
        || Group::from_name(term).is_some()
        || known.iter().any(|k| k.eq_ignore_ascii_case(term))
    {
        Ok(())
    } else {
        Err(format!("{var}: `{term}` is neither a wrapped MPI function nor a group (p2p, probe, completion, collective, comm, datatype, rma, io, tools, other)"))
    }
}

impl Config {
    /// Reads the options through `get` (the environment in production).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        known: &[&str],
    ) -> Result<Config, String> {
        let mut c = Config::default();
        if let Some(v) = get("MPISCOPE_DISABLE") {
            c.disabled = on_off("MPISCOPE_DISABLE", &v)?;
        }
        if let Some(v) = get("MPISCOPE_DIR") {
            if v.trim().is_empty() {
                return Err("MPISCOPE_DIR is empty".into());
            }
            c.dir = v;
        }
        if let Some(v) = get("MPISCOPE_START_AFTER") {
            c.start_after_ns = seconds("MPISCOPE_START_AFTER", &v)?;
        }
        if let Some(v) = get("MPISCOPE_DURATION") {
            c.duration_ns = Some(seconds("MPISCOPE_DURATION", &v)?);
        }
        if let Some(v) = get("MPISCOPE_SAMPLE") {
            for item in names(&v) {
                let (name, n) = item
                    .split_once('=')
                    .ok_or_else(|| format!("MPISCOPE_SAMPLE: `{item}`: expected FUNCTION=N"))?;
                let n: u32 = n.trim().parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                    format!("MPISCOPE_SAMPLE: `{item}`: N must be a whole number >= 1")
                })?;
                check_term("MPISCOPE_SAMPLE", name.trim(), known)?;
                c.sample.push((name.trim().to_owned(), n));
            }
        }
        if let Some(v) = get("MPISCOPE_INCLUDE") {
            c.include = names(&v);
            for t in &c.include {
                check_term("MPISCOPE_INCLUDE", t, known)?;
            }
        }
        if let Some(v) = get("MPISCOPE_EXCLUDE") {
            c.exclude = names(&v);
            for t in &c.exclude {
                check_term("MPISCOPE_EXCLUDE", t, known)?;
            }
        }
        if let Some(v) = get("MPISCOPE_PCONTROL") {
            c.pcontrol = on_off("MPISCOPE_PCONTROL", &v)?;
        }
        if let Some(v) = get("MPISCOPE_BUFFER") {
            c.buffer = parse_size("MPISCOPE_BUFFER", &v)?;
        }
        if let Some(v) = get("MPISCOPE_STACK") {
            c.stack = v
                .trim()
                .parse()
                .ok()
                .filter(|&n| n <= 64)
                .ok_or_else(|| format!("MPISCOPE_STACK={v}: expected 0 to 64 frames"))?;
        }
        if let Some(v) = get("MPISCOPE_CORE") {
            c.core = match v.trim() {
                "off" => CoreMode::Off,
                "sampled" => CoreMode::Sampled,
                "every" => CoreMode::Every,
                _ => return Err(format!("MPISCOPE_CORE={v}: expected off, sampled or every")),
            };
        }
        if let Some(v) = get("MPISCOPE_CLOCK") {
            match v.trim() {
                "auto" | "tsc" | "monotonic" => c.clock = v.trim().to_owned(),
                _ => {
                    return Err(format!(
                        "MPISCOPE_CLOCK={v}: expected auto, tsc or monotonic"
                    ))
                }
            }
        }
        if let Some(v) = get("MPISCOPE_PLUGIN") {
            if !v.trim().is_empty() {
                c.plugin = Some(v);
            }
        }
        if let Some(v) = get("MPISCOPE_SIGNALS") {
            c.signals = on_off("MPISCOPE_SIGNALS", &v)?;
        }
        if let Some(v) = get("MPISCOPE_FLUSH_EVERY") {
            c.flush_every_ns = seconds("MPISCOPE_FLUSH_EVERY", &v)?;
        }
        if let Some(v) = get("MPISCOPE_HANG_AFTER") {
            let ns = seconds("MPISCOPE_HANG_AFTER", &v)?;
            if ns < 1_000_000 {
                return Err(format!(
                    "MPISCOPE_HANG_AFTER={v}: expected at least 0.001 seconds"
                ));
            }
            c.hang_after_ns = Some(ns);
        }
        if let Some(v) = get("MPISCOPE_HANG_ACTION") {
            c.hang_kill = match v.trim() {
                "report" => false,
                "kill" => true,
                _ => return Err(format!("MPISCOPE_HANG_ACTION={v}: expected report or kill")),
            };
        }
        if let Some(v) = get("MPISCOPE_CPU_TIME") {
            c.cpu_time_ns = cpu_time(&v)?;
        }
        if let Some(v) = get("MPISCOPE_COMMAND") {
            c.command = Some(
                serde_json::from_str::<Vec<String>>(&v)
                    .map_err(|e| format!("MPISCOPE_COMMAND: not a JSON array of strings: {e}"))?,
            );
        }
        Ok(c)
    }

    /// True when `name` (a C function name) matches a filter term.
    fn matches(term: &str, name: &str) -> bool {
        term == "all"
            || term.eq_ignore_ascii_case(name)
            || Group::from_name(term).is_some_and(|g| mpiscope_mpispec::group(name) == g)
    }

    /// Whether `name` is recorded at all, and if so one call in how many.
    pub fn mode_of(&self, name: &str) -> Option<u32> {
        if !self.include.is_empty() && !self.include.iter().any(|t| Self::matches(t, name)) {
            return None;
        }
        if self.exclude.iter().any(|t| Self::matches(t, name)) {
            return None;
        }
        // A function name wins over a group.
        let exact = self
            .sample
            .iter()
            .find(|(t, _)| t.eq_ignore_ascii_case(name));
        let any = exact.or_else(|| self.sample.iter().find(|(t, _)| Self::matches(t, name)));
        Some(any.map(|(_, n)| *n).unwrap_or(1))
    }

    /// The options as JSON, for the info block and the manifest.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "dir": self.dir,
            "start_after_s": self.start_after_ns as f64 / 1e9,
            "duration_s": self.duration_ns.map(|d| d as f64 / 1e9),
            "sample": self.sample.iter().map(|(n, k)| format!("{n}={k}")).collect::<Vec<_>>(),
            "include": self.include,
            "exclude": self.exclude,
            "pcontrol": self.pcontrol,
            "buffer_bytes": self.buffer,
            "stack_frames": self.stack,
            "core": format!("{:?}", self.core).to_lowercase(),
            "clock": self.clock,
            "plugin": self.plugin,
            "signals": self.signals,
            "flush_every_s": self.flush_every_ns as f64 / 1e9,
            "hang_after_s": self.hang_after_ns.map(|d| d as f64 / 1e9),
            "hang_action": if self.hang_kill { "kill" } else { "report" },
            "cpu_time_s": self.cpu_time_ns.map(|d| d as f64 / 1e9),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> Result<Config, String> {
        let map: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(
            |k| map.get(k).cloned(),
            &["MPI_Send", "MPI_Iprobe", "MPI_Wtime"],
        )
    }

    #[test]
    fn defaults_record_everything() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.mode_of("MPI_Send"), Some(1));
        assert_eq!(c.buffer, 256 << 10);
    }

    #[test]
    fn sampling_and_filters() {
        let c = cfg(&[
            ("MPISCOPE_SAMPLE", "MPI_Iprobe=10000, p2p=3"),
            ("MPISCOPE_EXCLUDE", "MPI_Wtime"),
            ("MPISCOPE_BUFFER", "1M"),
        ])
        .unwrap();
        assert_eq!(c.mode_of("MPI_Iprobe"), Some(10000));
        assert_eq!(c.mode_of("MPI_Send"), Some(3));
        assert_eq!(c.mode_of("MPI_Wtime"), None);
        assert_eq!(c.buffer, 1 << 20);
        let c = cfg(&[("MPISCOPE_INCLUDE", "collective")]).unwrap();
        assert_eq!(c.mode_of("MPI_Send"), None);
        assert_eq!(c.mode_of("MPI_Allreduce"), Some(1));
    }

    #[test]
    fn bad_options_are_named() {
        let e = cfg(&[("MPISCOPE_BUFFER", "lots")]).unwrap_err();
        assert!(e.contains("MPISCOPE_BUFFER=lots"), "{e}");
        let e = cfg(&[("MPISCOPE_SAMPLE", "MPI_Iprobe=0")]).unwrap_err();
        assert!(e.contains("MPI_Iprobe=0"), "{e}");
        let e = cfg(&[("MPISCOPE_EXCLUDE", "MPI_Bogus")]).unwrap_err();
        assert!(e.contains("MPI_Bogus"), "{e}");
        let e = cfg(&[("MPISCOPE_START_AFTER", "soon")]).unwrap_err();
        assert!(e.contains("MPISCOPE_START_AFTER"), "{e}");
        let e = cfg(&[("MPISCOPE_HANG_AFTER", "nan")]).unwrap_err();
        assert!(e.contains("MPISCOPE_HANG_AFTER"), "{e}");
        let e = cfg(&[("MPISCOPE_HANG_AFTER", "0")]).unwrap_err();
        assert!(e.contains("at least"), "{e}");
        let e = cfg(&[("MPISCOPE_HANG_ACTION", "panic")]).unwrap_err();
        assert!(e.contains("report or kill"), "{e}");
        let c = cfg(&[
            ("MPISCOPE_HANG_AFTER", "60"),
            ("MPISCOPE_HANG_ACTION", "kill"),
        ])
        .unwrap();
        assert_eq!((c.hang_after_ns, c.hang_kill), (Some(60_000_000_000), true));
    }

    #[test]
    fn cpu_time_threshold_or_off() {
        assert_eq!(cfg(&[]).unwrap().cpu_time_ns, Some(50_000));
        let c = cfg(&[("MPISCOPE_CPU_TIME", "0.001")]).unwrap();
        assert_eq!(c.cpu_time_ns, Some(1_000_000));
        assert_eq!(c.to_json()["cpu_time_s"], 0.001);
        let c = cfg(&[("MPISCOPE_CPU_TIME", "off")]).unwrap();
        assert_eq!(c.cpu_time_ns, None);
        let e = cfg(&[("MPISCOPE_CPU_TIME", "0")]).unwrap_err();
        assert!(
            e.contains("MPISCOPE_CPU_TIME=0") && e.contains("off"),
            "{e}"
        );
        let e = cfg(&[("MPISCOPE_CPU_TIME", "soon")]).unwrap_err();
        assert!(e.contains("MPISCOPE_CPU_TIME"), "{e}");
    }
}
