//! SimGrid platform XML v4.1 reader.
//!
//! Reads the platform files of SimGrid 3.32 and builds the same platform: same host and
//! link names, same link characteristics (units as in [`super::units`]) and the same route,
//! link by link, between any two hosts. Supported:
//!
//! * `<platform version="4.1">` (versions 4.0 to 4.1) with one root `<zone>` (or `<AS>`) or
//!   `<cluster>`; `<config>` (`network/loopback-bw`, `network/loopback-lat` here; the
//!   others are kept as the simulation's options, and those mpiscope does not read give
//!   a warning in [`Platform::warnings`]).
//! * `<zone id routing>` with routing `Full`, `Floyd`, `Dijkstra`, `DijkstraCache`
//!   (shortest paths in number of links, SimGrid's tie-breaking), `Cluster` (a star filled
//!   by hand: `<host_link id up down>`, `<backbone>`, `<cabinet>`, self `<route>`s) and
//!   `None`; nested zones with `<zoneRoute src dst gw_src gw_dst [symmetrical]>` (alias
//!   `<ASroute>`), routed hierarchically as SimGrid does; `<bypassRoute>` and
//!   `<bypassZoneRoute>` (alias `<bypassASroute>`). Zones without child zones of kind
//!   Full/Floyd/Dijkstra route a host to itself over `__loopback__` (10 GB/s, 0 s, FATPIPE)
//!   unless a self route is given.
//! * `<host id speed [core] [pstate]>` (comma-separated pstate speeds; the `pstate`
//!   attribute picks the one in force), with `<prop id="wattage_per_state"
//!   value="idle:max, …">` (or `idle:epsilon:max`) and `<prop id="wattage_off">` as
//!   SimGrid's energy plugin reads them.
//! * `<link id bandwidth [latency] [sharing_policy=SHARED|SPLITDUPLEX|FATPIPE]>`
//!   (`SPLITDUPLEX`, or its old name `FULLDUPLEX`, makes `<id>_UP` and `<id>_DOWN`).
//! * `<route src dst [symmetrical=YES|NO]>` with `<link_ctn id [direction=UP|DOWN|NONE]>`;
//!   the symmetric route crosses the links in reverse order with directions swapped.
//! * `<router id>`.
//! * `<cluster>` with all its attributes (`id prefix suffix radical speed core bw lat
//!   sharing_policy topology topo_parameters bb_bw bb_lat bb_sharing_policy router_id
//!   limiter_link loopback_bw loopback_lat`) and `<prop>` children (applied to every host),
//!   flat or `topology="FAT_TREE|TORUS|DRAGONFLY"` (see [`mod@crate::platform::cluster`],
//!   [`mod@crate::platform::fat_tree`], [`mod@crate::platform::torus`],
//!   [`mod@crate::platform::dragonfly`]). As in SimGrid 3.32, a
//!   cluster's `sharing_policy="FATPIPE"` gives SHARED cables (SimGrid only distinguishes
//!   split-duplex from the rest for cluster cables); the backbone honours FATPIPE.
//!
//! Ignored: `<prop>` of links and zones, `<disk>`, `<trace>`, `<trace_connect>`, profile
//! attributes (`speed_file`, `bandwidth_file`, …), `coordinates`. Refused with an error:
//! Vivaldi and Wi-Fi zones, `<peer>`, anything unknown, speeds and bandwidths that are not
//! positive, and elements nested deeper than [`MAX_DEPTH`]. Errors name the file and the
//! line. Differences from SimGrid: Floyd zones of more than 600 vertices use Dijkstra
//! (equal route lengths, ties possibly different); a route from a host to a host of a
//! child zone of its own zone, which SimGrid does not handle, is an error.
//!
//! One [`Reader`] walks the document once, depth first: this module reads the platform,
//! its options, zones, hosts, routers and links; `routes` the routes of every kind;
//! `cluster` the `<cluster>` element and the content of `Cluster` zones.

mod cluster;
mod routes;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;

use roxmltree::Node;

use super::config::{check_key, Format, OptionWarning};
use super::nesting;
use super::units::{parse_bandwidth, parse_speeds, parse_time};
use crate::platform::routing::zones::{Local, NetPoint, Routed, RoutedKind, ZoneTree};
use crate::platform::topology::cluster::StarRouting;
use crate::platform::topology::graph::LinkTable;
use crate::platform::{
    HostPower, HostSpec, LinkId, LinkPolicy, Parts, Platform, PlatformError, Sharing,
};

/// Reads a SimGrid platform file.
pub fn from_simgrid_xml(path: &Path) -> Result<Platform, PlatformError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| PlatformError::Io {
        path: name.clone(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|e| PlatformError::Syntax {
        path: name.clone(),
        line: 0,
        message: format!("not UTF-8 text: {e}"),
    })?;
    from_simgrid_xml_str(&text, &name)
}

/// Reads SimGrid platform XML from a string; `name` names it in errors.
pub fn from_simgrid_xml_str(text: &str, name: &str) -> Result<Platform, PlatformError> {
    if let Err(deep) = nesting::check(text, MAX_DEPTH) {
        return Err(PlatformError::Syntax {
            path: name.to_string(),
            line: deep.line,
            message: format!(
                "elements nested {} deep; a platform nests at most {MAX_DEPTH}",
                deep.depth
            ),
        });
    }
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    let doc =
        roxmltree::Document::parse_with_options(text, opts).map_err(|e| PlatformError::Syntax {
            path: name.to_string(),
            line: e.pos().row as usize,
            message: e.to_string(),
        })?;
    let mut r = Reader {
        path: name,
        doc: &doc,
        parts: Parts::default(),
        tree: ZoneTree::default(),
        links: LinkTable::new(),
        names: HashMap::new(),
        loopback_bw: 1e10,
        loopback_lat: 0.0,
        loopback: None,
        config: Default::default(),
        warnings: Vec::new(),
    };
    r.platform(doc.root_element())?;
    let Reader {
        parts,
        tree,
        config,
        warnings,
        ..
    } = r;
    if parts.hosts.is_empty() {
        return Err(PlatformError::Syntax {
            path: name.to_string(),
            line: 0,
            message: "the platform has no hosts".into(),
        });
    }
    let mut platform = parts
        .finish(Box::new(tree))
        .map_err(|e| PlatformError::Syntax {
            path: name.to_string(),
            line: 0,
            message: e.to_string(),
        })?;
    platform.config = config;
    platform.warnings = warnings;
    Ok(platform)
}

/// Elements may nest this deep: SimGrid's platforms nest a few levels, and both the XML
/// parser and the zone reader are recursive: a deeper text is refused before it is parsed.
pub const MAX_DEPTH: usize = 256;

/// Pending content of a `Cluster` zone, applied at its end (as SimGrid does).
#[derive(Default)]
pub(super) struct StarPending<'a, 'i> {
    pub(super) backbone: Option<Node<'a, 'i>>,
    pub(super) host_links: Vec<Node<'a, 'i>>,
    pub(super) cabinets: Vec<Node<'a, 'i>>,
}

/// The reader of one document: what it has built so far.
struct Reader<'a, 'i> {
    path: &'a str,
    doc: &'a roxmltree::Document<'i>,
    parts: Parts,
    tree: ZoneTree,
    links: LinkTable,
    /// Hosts, routers and zones by name (one namespace, as in SimGrid).
    names: HashMap<String, NetPoint>,
    loopback_bw: f64,
    /// Every `<config>` prop, for the simulation's options.
    config: std::collections::BTreeMap<String, String>,
    loopback_lat: f64,
    loopback: Option<LinkId>,
    /// Options not used, one each (see [`check_key`]).
    warnings: Vec<OptionWarning>,
}

/// What the reader's steps give.
type R<T> = Result<T, PlatformError>;

impl<'a, 'i> Reader<'a, 'i> {
    pub(super) fn err(&self, node: Node, message: impl Into<String>) -> PlatformError {
        PlatformError::Syntax {
            path: self.path.to_string(),
            line: self.doc.text_pos_at(node.range().start).row as usize,
            message: message.into(),
        }
    }

    pub(super) fn attr<'n>(&self, node: Node<'n, 'i>, name: &str) -> R<&'n str> {
        node.attribute(name).ok_or_else(|| {
            self.err(
                node,
                format!("<{}> needs attribute `{name}`", node.tag_name().name()),
            )
        })
    }

    pub(super) fn bandwidth(&self, node: Node, value: &str) -> R<f64> {
        let v = parse_bandwidth(value).map_err(|e| self.err(node, e))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.err(node, format!("invalid bandwidth `{value}`")))
        }
    }

    pub(super) fn time(&self, node: Node, value: &str) -> R<f64> {
        let v = parse_time(value).map_err(|e| self.err(node, e))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.err(node, format!("invalid time `{value}`")))
        }
    }

    pub(super) fn int(&self, node: Node, value: &str) -> R<u32> {
        value
            .trim()
            .parse::<u32>()
            .map_err(|_| self.err(node, format!("`{value}` is not a non-negative integer")))
    }

    fn platform(&mut self, root: Node<'a, 'i>) -> R<()> {
        if root.tag_name().name() != "platform" {
            return Err(self.err(root, "the root element must be <platform>"));
        }
        let version = self.attr(root, "version")?;
        let v: f64 = version
            .trim()
            .parse()
            .map_err(|_| self.err(root, format!("invalid platform version `{version}`")))?;
        let v = (v * 100.0).round();
        if !(400.0..=410.0).contains(&v) {
            return Err(self.err(
                root,
                format!("platform version {version} is not supported (4.0 to 4.1 are)"),
            ));
        }
        let mut roots = 0;
        for child in root.children().filter(Node::is_element) {
            match child.tag_name().name() {
                "config" => self.config(child)?,
                "zone" | "AS" => {
                    roots += 1;
                    if roots > 1 {
                        return Err(self.err(child, "a platform has a single root zone"));
                    }
                    self.zone(child, None)?;
                }
                "cluster" => {
                    roots += 1;
                    if roots > 1 {
                        return Err(self.err(child, "a platform has a single root zone"));
                    }
                    self.cluster(child, None)?;
                }
                "trace" | "trace_connect" | "prop" => {}
                other => return Err(self.err(child, format!("unexpected <{other}> in <platform>"))),
            }
        }
        if roots == 0 {
            return Err(self.err(root, "the platform has no zone"));
        }
        Ok(())
    }

    fn config(&mut self, node: Node) -> R<()> {
        for p in node.children().filter(Node::is_element) {
            if p.tag_name().name() != "prop" {
                return Err(self.err(p, "<config> contains only <prop> elements"));
            }
            let (id, value) = (self.attr(p, "id")?, self.attr(p, "value")?);
            let num = || -> R<f64> {
                value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| self.err(p, format!("invalid value `{value}` for {id}")))
            };
            match id {
                "network/loopback-bw" => {
                    self.loopback_bw = num()?;
                    if self.loopback_bw <= 0.0 {
                        return Err(self.err(p, format!("{id} must be positive, not `{value}`")));
                    }
                }
                "network/loopback-lat" => self.loopback_lat = num()?,
                _ => {}
            }
            let seen = self.config.insert(id.to_string(), value.to_string());
            if seen.is_none() {
                if let Some(message) = check_key(id, Format::Xml) {
                    self.warnings.push(OptionWarning {
                        path: self.path.to_string(),
                        line: self.doc.text_pos_at(p.range().start).row as usize,
                        key: id.to_string(),
                        message,
                    });
                }
            }
        }
        Ok(())
    }

    /// Registers a netpoint name; fails if it exists.
    pub(super) fn name(&mut self, node: Node, name: &str, np: NetPoint) -> R<()> {
        if self.names.contains_key(name) {
            return Err(self.err(node, format!("`{name}` names two hosts, routers or zones")));
        }
        self.names.insert(name.to_string(), np);
        Ok(())
    }

    pub(super) fn netpoint(&self, node: Node, name: &str) -> R<NetPoint> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| self.err(node, format!("no host, router or zone named `{name}`")))
    }

    fn zone(&mut self, node: Node<'a, 'i>, parent: Option<u32>) -> R<u32> {
        let id = self.attr(node, "id")?;
        let routing = node.attribute("routing").unwrap_or("None");
        let local = match routing.to_ascii_lowercase().as_str() {
            "full" => Local::Routed(Routed::new(RoutedKind::Full)),
            "floyd" => Local::Routed(Routed::new(RoutedKind::Floyd)),
            "dijkstra" | "dijkstracache" => Local::Routed(Routed::new(RoutedKind::Dijkstra)),
            "cluster" => Local::Star(StarRouting::default()),
            "none" => Local::Empty,
            "vivaldi" | "wifi" => {
                return Err(self.err(node, format!("{routing} zones are not supported")))
            }
            _ => return Err(self.err(node, format!("unknown routing `{routing}`"))),
        };
        let z = self.tree.add_zone(id.to_string(), parent, local);
        self.name(node, id, NetPoint::Zone(z))?;
        let mut pending = StarPending::default();
        let mut has_children = false;
        for child in node.children().filter(Node::is_element) {
            let tag = child.tag_name().name();
            match tag {
                "host" => self.host(child, z)?,
                "router" => self.router(child, z)?,
                "link" => self.link(child)?,
                "route" => self.route(child, z)?,
                "zoneRoute" | "ASroute" => self.zone_route(child, z)?,
                "bypassRoute" => self.bypass(child, z, false)?,
                "bypassZoneRoute" | "bypassASroute" => self.bypass(child, z, true)?,
                "zone" | "AS" | "cluster" => {
                    if matches!(self.tree.zones[z as usize].local, Local::Star(_)) {
                        return Err(self.err(child, "a Cluster zone cannot contain zones"));
                    }
                    has_children = true;
                    if tag == "cluster" {
                        self.cluster(child, Some(z))?;
                    } else {
                        self.zone(child, Some(z))?;
                    }
                }
                "backbone" | "host_link" | "cabinet" => {
                    if !matches!(self.tree.zones[z as usize].local, Local::Star(_)) {
                        return Err(self.err(
                            child,
                            format!("<{tag}> is only allowed in zones with routing=\"Cluster\""),
                        ));
                    }
                    match tag {
                        "backbone" => {
                            if pending.backbone.is_some() {
                                return Err(self.err(child, "a zone has at most one backbone"));
                            }
                            pending.backbone = Some(child);
                        }
                        "host_link" => pending.host_links.push(child),
                        _ => pending.cabinets.push(child),
                    }
                }
                "prop" | "trace" | "trace_connect" => {}
                "peer" => return Err(self.err(child, "<peer> (Vivaldi) is not supported")),
                other => return Err(self.err(child, format!("unexpected <{other}> in <zone>"))),
            }
        }
        if matches!(self.tree.zones[z as usize].local, Local::Star(_)) {
            self.populate_star(z, pending)?;
        }
        // Seal.
        let n = self.tree.zones[z as usize].vertices.len();
        let loopback = if has_children {
            None
        } else if matches!(self.tree.zones[z as usize].local, Local::Routed(_)) {
            Some(self.loopback_link())
        } else {
            None
        };
        if let Local::Routed(r) = &mut self.tree.zones[z as usize].local {
            r.seal(n, loopback);
        }
        Ok(z)
    }

    fn loopback_link(&mut self) -> LinkId {
        if let Some(l) = self.loopback {
            return l;
        }
        let l = self.parts.add_link(
            "__loopback__".into(),
            self.loopback_bw,
            self.loopback_lat,
            Sharing::FatPipe,
        );
        self.links.add_plain("__loopback__", l);
        self.loopback = Some(l);
        l
    }

    /// Star vertex bookkeeping for a new vertex of zone `z`.
    pub(super) fn star_vertex(&mut self, z: u32) {
        if let Local::Star(s) = &mut self.tree.zones[z as usize].local {
            s.add_vertex();
        }
    }

    pub(super) fn props(&self, node: Node) -> R<Vec<(String, String)>> {
        let mut v = Vec::new();
        for p in node.children().filter(Node::is_element) {
            if p.tag_name().name() == "prop" {
                v.push((
                    self.attr(p, "id")?.to_string(),
                    self.attr(p, "value")?.to_string(),
                ));
            }
        }
        Ok(v)
    }

    /// Power model from properties, for pstate `pstate`.
    pub(super) fn power(
        &self,
        node: Node,
        props: &[(String, String)],
        pstate: usize,
    ) -> R<HostPower> {
        let mut power = HostPower::default();
        for (k, v) in props {
            match k.as_str() {
                "wattage_per_state" => {
                    let states: Vec<&str> = v.split(',').collect();
                    let s = states.get(pstate).or(states.first()).copied().unwrap_or("");
                    let off = power.off;
                    power = HostPower::parse_state(s).map_err(|e| self.err(node, e))?;
                    power.off = off;
                }
                "wattage_off" => {
                    power.off = v
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|w| w.is_finite() && *w >= 0.0)
                        .ok_or_else(|| self.err(node, format!("invalid wattage_off `{v}`")))?;
                }
                _ => {}
            }
        }
        Ok(power)
    }

    fn host(&mut self, node: Node, z: u32) -> R<()> {
        let id = self.attr(node, "id")?;
        let speeds = parse_speeds(self.attr(node, "speed")?).map_err(|e| self.err(node, e))?;
        let pstate = match node.attribute("pstate") {
            Some(p) => self.int(node, p)? as usize,
            None => 0,
        };
        let speed = *speeds.get(pstate).ok_or_else(|| {
            self.err(
                node,
                format!("pstate {pstate} but only {} speeds", speeds.len()),
            )
        })?;
        if !(speed.is_finite() && speed > 0.0) {
            return Err(self.err(
                node,
                format!("host `{id}`: speed must be a positive number of flop/s"),
            ));
        }
        let cores = match node.attribute("core") {
            Some(c) => self.int(node, c)?,
            None => 1,
        };
        if cores == 0 {
            return Err(self.err(node, format!("host `{id}` has no core")));
        }
        for c in node.children().filter(Node::is_element) {
            if !matches!(c.tag_name().name(), "prop" | "disk" | "mount") {
                return Err(self.err(c, format!("unexpected <{}> in <host>", c.tag_name().name())));
            }
        }
        let props = self.props(node)?;
        let power = self.power(node, &props, pstate)?;
        let spec = HostSpec {
            speed,
            cores,
            power,
        };
        let h = self.parts.add_host(id.to_string(), &spec);
        self.name(node, id, NetPoint::Host(h))?;
        self.tree.add_host(z, h, id.to_string());
        self.star_vertex(z);
        Ok(())
    }

    fn router(&mut self, node: Node, z: u32) -> R<()> {
        let id = self.attr(node, "id")?;
        let (r, _) = self.tree.add_router(z, id.to_string());
        self.name(node, id, NetPoint::Router(r))?;
        self.star_vertex(z);
        Ok(())
    }

    fn link(&mut self, node: Node) -> R<()> {
        let id = self.attr(node, "id")?;
        let bw = self.bandwidth(node, self.attr(node, "bandwidth")?)?;
        if bw <= 0.0 {
            return Err(self.err(node, format!("link `{id}` has no bandwidth")));
        }
        let lat = match node.attribute("latency") {
            Some(l) => self.time(node, l)?,
            None => 0.0,
        };
        let policy = match node.attribute("sharing_policy") {
            None => LinkPolicy::Shared,
            Some(p) => match LinkPolicy::parse(p) {
                Some(p) => p,
                None => return Err(self.err(node, format!("unsupported sharing_policy `{p}`"))),
            },
        };
        let (up, down) = self.parts.add_cable(id, bw, lat, policy);
        self.links
            .add(id, policy, up, down, &self.parts)
            .map_err(|e| self.err(node, e))
    }
}
