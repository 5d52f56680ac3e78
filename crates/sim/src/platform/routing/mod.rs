//! Routing across zones: the hierarchy of a platform file's zones and the explicit or
//! shortest-path routing of the routes it declares, as SimGrid's `NetZoneImpl` and its
//! `Full`, `Floyd` and `Dijkstra` zones.
//!
//! A generated topology routes itself ([`super::topology`]); a platform read from a file
//! ([`super::format`]) routes through a [`zones::ZoneTree`], whose zones delegate to the
//! topologies' routings for the clusters they hold.

pub mod zones;
