//! The rate of large messages whose data comes from memory, from mpiscope-bench's COLD SEND
//! (`cold_send`: contiguous, caches flushed before each sample, timed until a zero-byte
//! answer). SEND & RECV's repeats send the same buffer, which the caches keep warm: on shared
//! memory here 13-15 GB/s against 5-6 GB/s from memory. An application's large messages
//! mostly come from memory (HPL's row swaps move at 4 GB/s here), so when COLD SEND was
//! measured the calibrated platform's large messages (from [`crate::large::MIN_BYTES`]
//! up, or from the fit's last piece when it starts above) take its rate, through the last
//! `smpi/bw-factor` entry.
//!
//! Fit: as VECTOR SEND's ([`crate::large`]): `t = a + c S` on the per-size medians of the
//! sizes of at least [`MIN_BYTES`]; the rate is `1 / c`.

use serde::Serialize;

use crate::large::{large_message_slope, MIN_BYTES};
use crate::{CalibrationError, Network};

/// What COLD SEND says.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cold {
    /// Seconds per byte of a large contiguous message from memory (the fit's slope).
    pub seconds_per_byte: f64,
    /// Sizes fitted.
    pub samples: usize,
}

impl Cold {
    /// Fits the `cold_send` rows of `mpiscope-bench --json` output; `None` when fewer than
    /// two sizes of at least [`MIN_BYTES`] were measured.
    pub fn from_bench(text: &str, path: &str) -> Result<Option<Cold>, CalibrationError> {
        let b = crate::bench_json::BenchResults::parse(text, path)?;
        Ok(Self::from_results(&b))
    }

    /// [`Cold::from_bench`] on results already parsed.
    pub(crate) fn from_results(b: &crate::bench_json::BenchResults) -> Option<Cold> {
        large_message_slope(b, "cold_send").map(|(slope, samples)| Cold {
            seconds_per_byte: slope,
            samples,
        })
    }

    /// The rate, bytes per second.
    pub fn bytes_per_second(&self) -> f64 {
        1.0 / self.seconds_per_byte.max(1e-15)
    }

    /// `net` with its large messages at this rate: the last `smpi/bw-factor` entry's
    /// factor replaced when it starts at [`MIN_BYTES`] or more, else an entry appended
    /// there. Returns the size the rate applies from.
    pub fn apply(&self, net: &mut Network) -> u64 {
        let factor = self.bytes_per_second() / net.bandwidth;
        let mut entries: Vec<(u64, String)> = net
            .bw_factor
            .split(';')
            .filter_map(|e| {
                let (t, f) = e.split_once(':')?;
                Some((t.trim().parse().ok()?, f.trim().to_string()))
            })
            .collect();
        match entries.last_mut() {
            Some((from, f)) if *from >= MIN_BYTES => *f = factor.to_string(),
            _ => entries.push((MIN_BYTES, factor.to_string())),
        }
        net.bw_factor = entries
            .iter()
            .map(|(t, f)| format!("{t}:{f}"))
            .collect::<Vec<_>>()
            .join(";");
        entries.last().map_or(MIN_BYTES, |e| e.0)
    }

    /// The platform `[config]` comment saying what [`Cold::apply`] did.
    pub fn config_lines(&self, from_bytes: u64, warm: f64) -> String {
        format!(
            "# messages of {from_bytes} bytes or more move at {:.2} GB/s, their rate from \
             memory (COLD SEND, {} sizes), against {:.2} with warm caches\n",
            self.bytes_per_second() / 1e9,
            self.samples,
            warm / 1e9
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn network(bw_factor: &str) -> Network {
        Network {
            latency: 1e-6,
            bandwidth: 1e10,
            lat_factor: "0:1".into(),
            bw_factor: bw_factor.into(),
        }
    }

    #[test]
    fn large_messages_take_the_cold_rate() {
        // 5 GB/s plus 20 us, three repeats per size; a small size is left out of the fit.
        let rows: Vec<_> = [1u64 << 16, 1 << 18, 1 << 20, 16]
            .iter()
            .flat_map(|&ints| {
                let t = 20e-6 + (4 * ints) as f64 * 0.2e-9;
                [t, 1.1 * t, t]
                    .map(|t| json!({"key": "cold_send", "ints": ints, "time": {"median": t}}))
            })
            .collect();
        let text = json!({ "results": rows }).to_string();
        let c = Cold::from_bench(&text, "b.json").unwrap().unwrap();
        assert_eq!(c.samples, 3);
        assert!((c.bytes_per_second() - 5e9).abs() < 1e3, "{c:?}");
        // The last piece starts above 64 KiB: its factor becomes 5 / 10.
        let last = |net: &Network| -> (String, f64) {
            let (head, f) = net.bw_factor.rsplit_once(':').unwrap();
            (head.to_string(), f.parse().unwrap())
        };
        let mut net = network("0:0.1;144:0.5;131088:1");
        assert_eq!(c.apply(&mut net), 131088);
        let (head, f) = last(&net);
        assert!(
            head == "0:0.1;144:0.5;131088" && (f - 0.5).abs() < 1e-9,
            "{net:?}"
        );
        // It starts below: an entry at 64 KiB.
        let mut net = network("0:0.1;2064:1");
        assert_eq!(c.apply(&mut net), 65536);
        let (head, f) = last(&net);
        assert!(
            head == "0:0.1;2064:1;65536" && (f - 0.5).abs() < 1e-9,
            "{net:?}"
        );
        assert!(c.config_lines(65536, 1e10).contains("5.00 GB/s"));
        let none =
            json!({ "results": [{"key": "send_recv", "ints": 1024, "time": {"median": 1e-6}}] });
        assert_eq!(Cold::from_bench(&none.to_string(), "b.json").unwrap(), None);
    }
}
