//! The recorder's options, checked on the command line before anything is launched.
//!
//! The recorder (`crates/preload/src/config.rs`, `Config::from_lookup`) reads the same
//! values from `MPISCOPE_*` variables inside every rank; a value it refuses there disables
//! tracing after the launch, with the run lost. These checks repeat its limits so that
//! `mpiscope trace` refuses such a value at once, naming the option. The recorder crate
//! links MPI, so the CLI cannot call its parser: the limits are kept in step by hand, and
//! each check below names the one of `config.rs` it mirrors.

use anyhow::{bail, Result};

/// Smallest and largest per-thread buffer: `parse_size`'s 4K..1G.
const BUFFER_MIN: u64 = 4096;
const BUFFER_MAX: u64 = 1 << 30;
/// Largest `--stack`: `MPISCOPE_STACK`'s 0 to 64 frames.
const STACK_MAX: u32 = 64;
/// Largest number of seconds: `seconds`' range.
const SECONDS_MAX: f64 = 1e9;

/// `--cpu-time`: `off` or a duration from 1 us to 1 s, passed as `MPISCOPE_CPU_TIME`'s
/// seconds (`config.rs` takes `off` or at least 0.000001 seconds).
pub fn cpu_time(v: &str) -> Result<String, String> {
    let t = v.trim();
    if t == "off" {
        return Ok(t.into());
    }
    // Divided, not multiplied, so that `50us` is the double nearest 5e-5.
    let (num, per_second) = if let Some(n) = t.strip_suffix("us") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>().map(|n| n / per_second) {
        Ok(s) if (1e-6..=1.0).contains(&s) => Ok(format!("{s}")),
        _ => Err(format!(
            "`{v}`: expected off, or a duration between 1us and 1s (`50us`, `1ms`, `0.0001`)"
        )),
    }
}

/// `--buffer`: `256K`, `4M`, `1G` or bytes, between 4K and 1G (as `parse_size`).
pub fn buffer(v: &str) -> Result<u64> {
    let t = v.trim();
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let Ok(n) = num.parse::<u64>() else {
        bail!("--buffer {v}: expected a size like 256K, 4M or 65536");
    };
    match n.checked_mul(mult) {
        Some(b) if (BUFFER_MIN..=BUFFER_MAX).contains(&b) => Ok(b),
        _ => bail!("--buffer {v}: must be between 4K and 1G"),
    }
}

/// `--start-after`, `--duration`: a finite number of seconds, 0 or more (as `seconds`).
pub fn seconds(option: &str, s: f64) -> Result<()> {
    if !(s.is_finite() && (0.0..=SECONDS_MAX).contains(&s)) {
        bail!("{option} {s}: expected a number of seconds from 0 to 1e9");
    }
    Ok(())
}

/// `--stack`: 0 to 64 frames.
pub fn stack(n: u32) -> Result<()> {
    if n > STACK_MAX {
        bail!("--stack {n}: expected 0 to {STACK_MAX} frames");
    }
    Ok(())
}

/// `--core`: off, sampled or every.
pub fn core(v: &str) -> Result<()> {
    if !matches!(v.trim(), "off" | "sampled" | "every") {
        bail!("--core {v}: expected off, sampled or every");
    }
    Ok(())
}

/// `--clock`: auto, tsc or monotonic.
pub fn clock(v: &str) -> Result<()> {
    if !matches!(v.trim(), "auto" | "tsc" | "monotonic") {
        bail!("--clock {v}: expected auto, tsc or monotonic");
    }
    Ok(())
}

/// `--sample FUNC=N` (comma-separated items allowed): a name and a whole N >= 1. Whether
/// the name is a wrapped function or a group is the recorder's to say (it knows the
/// wrapped functions); an empty name is refused here.
pub fn sample(v: &str) -> Result<()> {
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, n)) = item.split_once('=') else {
            bail!("--sample {item}: expected FUNCTION=N");
        };
        if name.trim().is_empty() {
            bail!("--sample {item}: no function or group before `=`");
        }
        if !n.trim().parse::<u32>().is_ok_and(|n| n >= 1) {
            bail!("--sample {item}: N must be a whole number >= 1");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_takes_off_or_a_duration_the_recorder_accepts() {
        assert_eq!(cpu_time("off").unwrap(), "off");
        assert_eq!(cpu_time("50us").unwrap().parse::<f64>().unwrap(), 50e-6);
        assert_eq!(cpu_time("1ms").unwrap().parse::<f64>().unwrap(), 1e-3);
        assert_eq!(cpu_time("0.0002").unwrap().parse::<f64>().unwrap(), 2e-4);
        for bad in ["0", "0.5us", "2s", "soon", ""] {
            assert!(
                cpu_time(bad).unwrap_err().contains("between 1us and 1s"),
                "{bad}"
            );
        }
    }

    #[test]
    fn buffers_follow_the_recorders_limits() {
        assert_eq!(buffer("4K").unwrap(), 4096);
        assert_eq!(buffer("256k").unwrap(), 256 << 10);
        assert_eq!(buffer("1G").unwrap(), 1 << 30);
        assert_eq!(buffer("65536").unwrap(), 65536);
        for bad in [
            "0",
            "4095",
            "2G",
            "",
            "K",
            "1.5M",
            "-4K",
            "99999999999999999999G",
        ] {
            let e = buffer(bad).unwrap_err().to_string();
            assert!(e.starts_with("--buffer"), "{e}");
        }
    }

    #[test]
    fn other_options_are_checked() {
        assert!(seconds("--duration", 0.0).is_ok());
        assert!(seconds("--duration", 2.5).is_ok());
        for bad in [-1.0, f64::NAN, f64::INFINITY, 2e9] {
            let e = seconds("--start-after", bad).unwrap_err().to_string();
            assert!(e.starts_with("--start-after"), "{e}");
        }
        assert!(stack(64).is_ok() && stack(65).is_err());
        assert!(core("every").is_ok() && core("always").is_err());
        assert!(clock("tsc").is_ok() && clock("rdtsc").is_err());
        assert!(sample("MPI_Iprobe=10000, p2p=3").is_ok());
        for bad in ["MPI_Iprobe", "MPI_Iprobe=0", "=3", "MPI_Send=x", "p2p=-1"] {
            let e = sample(bad).unwrap_err().to_string();
            assert!(e.starts_with("--sample"), "{e}");
        }
    }
}
