//! mpiscope's simulator: replays MPI traces and runs MPI skeletons on modeled platforms.
//!
//! * [`platform`]: hosts, links, routes; generators and SimGrid/TOML platform files;
//! * [`coll`]: collective algorithms as programs of point-to-point operations, and the
//!   Open MPI / MPICH selectors.
//!
//! The simulator knows nothing of MPI libraries or of the command line.

pub mod coll;
pub mod platform;
