//! Platform generators: a whole platform from a few parameters, hosts, links and the
//! topology's own routing.
//!
//! * [`cluster()`]: a flat cluster (a star: private cables to a core, a backbone or none);
//! * [`fat_tree()`]: fat trees, D-mod-K routing;
//! * [`torus()`]: n-dimensional tori, dimension-order routing;
//! * [`dragonfly()`]: dragonflies, minimal routing;
//! * [`graph()`]: any graph of hosts and routers, shortest paths.
//!
//! The first four build exactly what SimGrid 3.32 builds for the corresponding `<cluster>`
//! (same host and link names, same routes, link by link), so that a platform described
//! both ways simulates the same; the platform readers ([`super::format`]) build clusters
//! inside zones from the same pieces. Each topology computes its routes on demand from
//! host coordinates: no table of host pairs.

pub mod cluster;
pub mod dragonfly;
pub mod fat_tree;
pub mod graph;
pub mod torus;

pub use cluster::{cluster, BackboneSpec, ClusterSpec, LoopbackSpec};
pub use dragonfly::{dragonfly, DragonflySpec};
pub use fat_tree::{fat_tree, FatTreeSpec};
pub use graph::{graph, Direction, GraphEdge, GraphHost, GraphLink, GraphSpec, LinkRef};
pub use torus::{torus, TorusSpec};
