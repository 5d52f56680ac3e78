//! mpiscope's simulator: replays MPI traces and runs MPI skeletons on modeled platforms.
//!
//! * [`calibration`]: the measured parameters a platform carries (`mpiscope/*` keys);
//! * [`platform`]: hosts, links, routes; generators and SimGrid/TOML platform files;
//! * [`network`]: the network models by name: the flow model (weighted max-min sharing,
//!   SimGrid's CM02) and LogGP;
//! * [`cpu`]: computations sharing a host's cores;
//! * [`coll`]: collective algorithms as programs of point-to-point operations, and the
//!   Open MPI / MPICH selectors;
//! * [`config`]: a simulation's parameters, and those a platform file's options describe;
//! * [`costs`]: SMPI's per-call costs (tests, probes, send and receive overheads) and the
//!   options of the same family;
//! * [`engine`]: the discrete-event kernel and the MPI semantics (matching, eager and
//!   rendezvous sends, requests, probes, collectives);
//! * [`result`]: what a simulation gives, or why it stopped;
//! * [`workload`]: what ranks do: SimGrid time-independent traces, mpiscope traces, skeletons;
//! * [`report`]: a simulation's result as text, JSON and a timeline.
//!
//! The simulator knows nothing of MPI libraries or of the command line. Output is a pure
//! function of (input, platform, configuration, seed).

pub mod calibration;
pub mod coll;
pub mod config;
pub mod costs;
pub mod cpu;
pub mod engine;
pub mod network;
pub mod platform;
pub mod report;
pub mod result;
pub mod time;
pub mod workload;

pub use config::SimConfig;
pub use engine::Simulation;
pub use network::NetworkKind;
pub use result::{RankResult, SimError, SimResult};
pub use time::Time;
