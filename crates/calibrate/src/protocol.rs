//! The eager/rendezvous threshold and LogGP parameters, from mpiscope-bench's operations
//! beyond the seed: EAGER SEND (a blocking send whose receiver posts late, timed on the
//! sender: short while the send returns without the receiver, at least the delay once it
//! waits) and MESSAGE RATE (back-to-back non-blocking sends, per message).
//!
//! * threshold: the smallest measured size whose send waited (more than half the delay);
//!   every smaller measured size returned at once. SimGrid's `smpi/send-is-detached-thresh`
//!   detaches sends strictly below it.
//! * `o`: the sender's time for the smallest message (LogGP's send overhead);
//! * `g`: the time per message of MESSAGE RATE at the smallest size;
//! * `L`: the fitted one-way latency minus `2 o`; `G`: 1 / the nominal bandwidth.

use mpiscope_sim::calibration::{Calibration, LogGpValues};
use serde::Serialize;

use crate::{CalibrationError, Network};

/// What the sender-side measurements say.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Protocol {
    /// Largest measured size (bytes) whose blocking send returned before the receive.
    pub largest_eager: Option<u64>,
    /// Smallest measured size (bytes) whose blocking send waited for the receiver.
    pub smallest_rendezvous: Option<u64>,
    /// LogGP `o`, seconds (EAGER SEND at the smallest size).
    pub o: Option<f64>,
    /// LogGP `g`, seconds (MESSAGE RATE at the smallest size).
    pub g: Option<f64>,
}

/// How late EAGER SEND's receiver posts when the results do not say, seconds.
pub const DEFAULT_PROBE_DELAY: f64 = 50e-6;

impl Protocol {
    /// Reads EAGER SEND and MESSAGE RATE rows of `mpiscope-bench --json` output (`None`
    /// when the run has neither).
    pub fn from_bench(text: &str, path: &str) -> Result<Option<Protocol>, CalibrationError> {
        let b = crate::bench_json::BenchResults::parse(text, path)?;
        let rows = |key: &str| -> Vec<(u64, f64)> {
            let mut v: Vec<(u64, f64)> = b
                .results
                .iter()
                .filter(|r| r.key == key && r.skipped.is_none())
                .filter_map(|r| Some((4 * r.ints?, r.time.median)))
                .collect();
            v.sort_by_key(|x| x.0);
            v
        };
        let eager = rows("eager_send");
        let rate = rows("message_rate");
        if eager.is_empty() && rate.is_empty() {
            return Ok(None);
        }
        let delay = b.params.eager_probe_delay.unwrap_or(DEFAULT_PROBE_DELAY);
        let waited = |t: f64| t > delay / 2.0;
        let smallest_rendezvous = eager.iter().find(|x| waited(x.1)).map(|x| x.0);
        let largest_eager = eager
            .iter()
            .take_while(|x| !waited(x.1))
            .last()
            .map(|x| x.0);
        Ok(Some(Protocol {
            largest_eager,
            smallest_rendezvous,
            o: eager.first().filter(|x| !waited(x.1)).map(|x| x.1.max(0.0)),
            g: rate.first().map(|x| x.1.max(0.0)),
        }))
    }

    /// LogGP `(L, o, g, G)` given the network fit: `L = L0 - 2 o` (at least 0), `G = 1 / B0`.
    pub fn loggp(&self, net: &Network) -> (f64, f64, f64, f64) {
        let o = self.o.unwrap_or(0.0);
        let g = self.g.unwrap_or(o);
        ((net.latency - 2.0 * o).max(0.0), o, g, 1.0 / net.bandwidth)
    }

    /// The platform `[config]` lines: the eager threshold and `mpiscope/loggp`.
    pub fn config_lines(&self, net: &Network) -> String {
        let mut s = String::new();
        match (self.largest_eager, self.smallest_rendezvous) {
            (eager, Some(r)) => {
                s += &format!(
                    "# blocking sends wait for the receiver from {r} bytes{}\n\
                     \"smpi/send-is-detached-thresh\" = {r}\n",
                    eager.map_or(String::new(), |e| format!(" (return at once up to {e})"))
                );
            }
            (Some(e), None) => {
                s += &format!(
                    "# every measured blocking send returned at once (up to {e} bytes)\n\
                     \"smpi/send-is-detached-thresh\" = {}\n",
                    e + 1
                );
            }
            (None, None) => {}
        }
        let (l, o, g, big_g) = self.loggp(net);
        s += "# LogGP L, o, g (seconds), G (seconds per byte)\n";
        let measured = Calibration {
            loggp: Some(LogGpValues { l, o, g, big_g }),
            ..Calibration::default()
        };
        s += &measured.to_config();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_json::rows_json as bench;

    #[test]
    fn threshold_and_loggp_from_the_sender_side() {
        let text = bench(&[
            ("eager_send", 512, 51e-6),
            ("eager_send", 2, 0.1e-6),
            ("eager_send", 32, 0.12e-6),
            ("eager_send", 8192, 60e-6),
            ("message_rate", 2, 0.2e-6),
            ("message_rate", 512, 0.7e-6),
            ("send_recv", 2, 1.0e-6),
        ]);
        let p = Protocol::from_bench(&text, "b.json").unwrap().unwrap();
        assert_eq!(
            (p.largest_eager, p.smallest_rendezvous),
            (Some(128), Some(2048))
        );
        assert_eq!((p.o, p.g), (Some(0.1e-6), Some(0.2e-6)));
        let net = Network {
            latency: 0.5e-6,
            bandwidth: 1e10,
            lat_factor: String::new(),
            bw_factor: String::new(),
        };
        let (l, o, g, big_g) = p.loggp(&net);
        assert!((l - 0.3e-6).abs() < 1e-15 && o == 0.1e-6 && g == 0.2e-6 && big_g == 1e-10);
        let lines = p.config_lines(&net);
        assert!(
            lines.contains("\"smpi/send-is-detached-thresh\" = 2048"),
            "{lines}"
        );
        assert!(
            lines.contains("\"mpiscope/loggp\" = \"3e-7,1e-7,2e-7,1e-10\""),
            "{lines}"
        );
    }

    #[test]
    fn absent_or_all_eager() {
        assert_eq!(
            Protocol::from_bench(&bench(&[("send_recv", 2, 1e-6)]), "b").unwrap(),
            None
        );
        let p = Protocol::from_bench(
            &bench(&[("eager_send", 2, 1e-7), ("eager_send", 8, 1e-7)]),
            "b",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (p.largest_eager, p.smallest_rendezvous, p.g),
            (Some(32), None, None)
        );
        assert!(Protocol::from_bench("[", "x.json")
            .unwrap_err()
            .to_string()
            .contains("x.json"));
    }
}
