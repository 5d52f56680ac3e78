//! The LogGP model: no contention, closed-form message times.
//!
//! A message of `S` bytes costs the sender an overhead `o`, then travels `L + (S - 1) G`
//! (`L` the route latency of the platform, or the model's own `L` when given), and costs the
//! receiver `o` again; consecutive messages leaving one host are separated by at least `g`
//! (and by `(S - 1) G`, the time the NIC is busy injecting). Contention between different
//! hosts' messages is ignored: this is the fast model. Registered as [`LOGGP`] (`loggp`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{NetworkKind, NetworkModel, NetworkParams, Registration, TransferId};
use crate::calibration::{Calibration, Key, LogGpValues};
use crate::platform::{HostId, LinkId, Platform, PlatformError};
use crate::time::Time;

/// LogGP parameters (seconds; `big_g` in seconds per byte).
#[derive(Debug, Clone, PartialEq)]
pub struct LogGp {
    /// Latency; `None` takes the platform route's latency.
    pub l: Option<f64>,
    /// Overhead per message, paid at both ends.
    pub o: f64,
    /// Gap between message injections of one host.
    pub g: f64,
    /// Gap per byte (1 / bandwidth); `None` takes the route's bottleneck bandwidth.
    pub big_g: Option<f64>,
}

impl Default for LogGp {
    fn default() -> Self {
        LogGp {
            l: None,
            o: 0.0,
            g: 0.0,
            big_g: None,
        }
    }
}

impl From<LogGpValues> for LogGp {
    /// The parameters `mpiscope calibrate` measured (`mpiscope/loggp`), all four given.
    fn from(v: LogGpValues) -> LogGp {
        LogGp {
            l: Some(v.l),
            o: v.o,
            g: v.g,
            big_g: Some(v.big_g),
        }
    }
}

impl NetworkParams for LogGp {
    fn build<'p>(&self, platform: &'p Platform) -> Box<dyn NetworkModel + 'p> {
        Box::new(LogGpModel::new(platform, self.clone()))
    }
}

/// `loggp`: LogGP with the platform's `mpiscope/loggp` values when it has them, else the
/// routes' latencies and bandwidths without overheads.
pub const LOGGP: Registration = Registration {
    name: "loggp",
    about: "LogGP: closed-form message times, no contention",
    configure: |options| {
        let measured = Calibration::read(options, &[Key::LogGp])?;
        Ok(NetworkKind::new(
            measured.loggp.map_or_else(LogGp::default, LogGp::from),
        ))
    },
};

/// The LogGP network model.
#[derive(Debug)]
pub struct LogGpModel {
    params: LogGp,
    /// When each host's NIC is free again.
    nic_free: Vec<Time>,
    heap: BinaryHeap<Reverse<(Time, TransferId)>>,
    next_id: TransferId,
    route: Vec<LinkId>,
    carried: Vec<f64>,
}

impl LogGpModel {
    /// A model for `platform`.
    pub fn new(platform: &Platform, params: LogGp) -> LogGpModel {
        LogGpModel {
            params,
            nic_free: vec![Time::ZERO; platform.hosts.len()],
            heap: BinaryHeap::new(),
            next_id: 0,
            route: Vec::new(),
            carried: vec![0.0; platform.links.len()],
        }
    }
}

impl NetworkModel for LogGpModel {
    fn start(
        &mut self,
        platform: &Platform,
        now: Time,
        src: HostId,
        dst: HostId,
        bytes: u64,
    ) -> Result<TransferId, PlatformError> {
        let route_lat = platform.route(src, dst, &mut self.route)?;
        let l = self.params.l.unwrap_or(route_lat);
        let big_g = match self.params.big_g {
            Some(g) => g,
            None => {
                let bw = self
                    .route
                    .iter()
                    .map(|&k| platform.links[k as usize].bandwidth)
                    .fold(f64::INFINITY, f64::min);
                if bw.is_finite() && bw > 0.0 {
                    1.0 / bw
                } else {
                    0.0
                }
            }
        };
        for &k in &self.route {
            self.carried[k as usize] += bytes as f64;
        }
        let inject = self.params.o + (bytes.saturating_sub(1)) as f64 * big_g;
        let nic = &mut self.nic_free[src as usize];
        let begin = (*nic).max(now);
        *nic = begin.plus(Time::from_secs(inject.max(self.params.g)));
        let end = begin.plus(Time::from_secs(inject + l + self.params.o));
        let id = self.next_id;
        self.next_id += 1;
        self.heap.push(Reverse((end, id)));
        Ok(id)
    }

    fn next_transfer(&mut self) -> Option<(Time, TransferId)> {
        self.heap.peek().map(|Reverse(e)| *e)
    }

    fn advance(&mut self, now: Time, done: &mut Vec<TransferId>) {
        while let Some(&Reverse((t, id))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            done.push(id);
        }
    }

    fn link_bytes(&self) -> Vec<(u32, f64)> {
        self.carried
            .iter()
            .enumerate()
            .map(|(i, &b)| (i as u32, b))
            .collect()
    }
}
