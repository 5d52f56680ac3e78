//! mpiscope's simulator: replays MPI traces and runs MPI skeletons on modeled platforms.
//!
//! * [`calibration`]: the measured parameters a platform carries (`mpiscope/*` keys);
//! * [`platform`]: hosts, links, routes; generators and SimGrid/TOML platform files;
//! * [`network`]: the flow model (weighted max-min sharing, SimGrid's CM02) and LogGP;
//! * [`cpu`]: computations sharing a host's cores;
//! * [`coll`]: collective algorithms as programs of point-to-point operations, and the
//!   Open MPI / MPICH selectors;
//! * [`engine`]: the discrete-event kernel and the MPI semantics (matching, eager and
//!   rendezvous sends, requests, probes, collectives);
//! * [`workload`]: what ranks do: SimGrid time-independent traces, mpiscope traces, skeletons;
//! * [`options`]: a configuration from a platform file's own options.
//!
//! The simulator knows nothing of MPI libraries or of the command line. Output is a pure
//! function of (input, platform, configuration, seed).

pub mod calibration;
pub mod coll;
pub mod cpu;
pub mod engine;
pub mod network;
pub mod options;
pub mod platform;
pub mod report;
pub mod time;
pub mod workload;

pub use engine::{RankResult, SimConfig, SimError, SimResult, Simulation};
pub use network::NetworkKind;
pub use time::Time;
