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
//!   flat or `topology="FAT_TREE|TORUS|DRAGONFLY"` (see [`mod@super::cluster`],
//!   [`mod@super::fat_tree`], [`mod@super::torus`], [`mod@super::dragonfly`]). As in SimGrid 3.32, a
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

use std::collections::HashMap;
use std::path::Path;

use roxmltree::Node;

use super::cluster::{self, parse_radicals, BackboneSpec, ClusterSpec, LoopbackSpec, StarRouting};
use super::dragonfly::{self, DragonflySpec};
use super::fat_tree::{self, FatTreeSpec};
use super::graph::{Direction, LinkRef, LinkTable};
use super::torus::{self, TorusSpec};
use super::units::{parse_bandwidth, parse_speeds, parse_time};
use super::zones::{Bypass, Local, NetPoint, RouteEntry, Routed, RoutedKind, ZoneTree};
use super::{HostPower, HostSpec, LinkId, LinkPolicy, Parts, Platform, PlatformError, Sharing};

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
    if let Err(deep) = super::nesting::check(text, MAX_DEPTH) {
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
struct StarPending<'a, 'i> {
    backbone: Option<Node<'a, 'i>>,
    host_links: Vec<Node<'a, 'i>>,
    cabinets: Vec<Node<'a, 'i>>,
}

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
    /// Options not used, one each (see [`super::config::check_key`]).
    warnings: Vec<super::config::OptionWarning>,
}

type R<T> = Result<T, PlatformError>;

impl<'a, 'i> Reader<'a, 'i> {
    fn err(&self, node: Node, message: impl Into<String>) -> PlatformError {
        PlatformError::Syntax {
            path: self.path.to_string(),
            line: self.doc.text_pos_at(node.range().start).row as usize,
            message: message.into(),
        }
    }

    fn attr<'n>(&self, node: Node<'n, 'i>, name: &str) -> R<&'n str> {
        node.attribute(name).ok_or_else(|| {
            self.err(
                node,
                format!("<{}> needs attribute `{name}`", node.tag_name().name()),
            )
        })
    }

    fn bandwidth(&self, node: Node, value: &str) -> R<f64> {
        let v = parse_bandwidth(value).map_err(|e| self.err(node, e))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.err(node, format!("invalid bandwidth `{value}`")))
        }
    }

    fn time(&self, node: Node, value: &str) -> R<f64> {
        let v = parse_time(value).map_err(|e| self.err(node, e))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.err(node, format!("invalid time `{value}`")))
        }
    }

    fn int(&self, node: Node, value: &str) -> R<u32> {
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
                if let Some(message) = super::config::check_key(id, super::config::Format::Xml) {
                    self.warnings.push(super::config::OptionWarning {
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
    fn name(&mut self, node: Node, name: &str, np: NetPoint) -> R<()> {
        if self.names.contains_key(name) {
            return Err(self.err(node, format!("`{name}` names two hosts, routers or zones")));
        }
        self.names.insert(name.to_string(), np);
        Ok(())
    }

    fn netpoint(&self, node: Node, name: &str) -> R<NetPoint> {
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
    fn star_vertex(&mut self, z: u32) {
        if let Local::Star(s) = &mut self.tree.zones[z as usize].local {
            s.add_vertex();
        }
    }

    fn props(&self, node: Node) -> R<Vec<(String, String)>> {
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
    fn power(&self, node: Node, props: &[(String, String)], pstate: usize) -> R<HostPower> {
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

    /// The `<link_ctn>` children of a route element.
    fn link_refs(&self, node: Node) -> R<Vec<LinkRef>> {
        let mut v = Vec::new();
        for c in node.children().filter(Node::is_element) {
            if c.tag_name().name() != "link_ctn" {
                return Err(self.err(
                    c,
                    format!("unexpected <{}> in a route", c.tag_name().name()),
                ));
            }
            let id = self.attr(c, "id")?;
            let direction = match c.attribute("direction") {
                None | Some("NONE") => None,
                Some("UP") => Some(Direction::Up),
                Some("DOWN") => Some(Direction::Down),
                Some(d) => return Err(self.err(c, format!("invalid direction `{d}`"))),
            };
            v.push(LinkRef {
                name: id.to_string(),
                direction,
            });
        }
        if v.is_empty() {
            return Err(self.err(node, "empty routes are forbidden"));
        }
        Ok(v)
    }

    fn resolve(&self, node: Node, refs: &[LinkRef], reverse: bool) -> R<Vec<LinkId>> {
        let mut out = Vec::with_capacity(refs.len());
        let iter: Box<dyn Iterator<Item = &LinkRef>> = if reverse {
            Box::new(refs.iter().rev())
        } else {
            Box::new(refs.iter())
        };
        for r in iter {
            out.push(
                self.links
                    .resolve(r, reverse)
                    .map_err(|e| self.err(node, e))?,
            );
        }
        Ok(out)
    }

    fn symmetrical(&self, node: Node) -> R<bool> {
        match node.attribute("symmetrical") {
            None | Some("YES") | Some("yes") => Ok(true),
            Some("NO") | Some("no") => Ok(false),
            Some(s) => Err(self.err(node, format!("invalid symmetrical=\"{s}\""))),
        }
    }

    /// Index of `np` among the vertices of zone `z`.
    fn vertex_in(&self, node: Node, z: u32, np: NetPoint, name: &str) -> R<u32> {
        let zone = &self.tree.zones[z as usize];
        zone.vertices
            .iter()
            .position(|&v| v == np)
            .map(|i| i as u32)
            .ok_or_else(|| self.err(node, format!("`{name}` is not in zone `{}`", zone.name)))
    }

    fn route(&mut self, node: Node, z: u32) -> R<()> {
        let (src, dst) = (self.attr(node, "src")?, self.attr(node, "dst")?);
        let (s, d) = (self.netpoint(node, src)?, self.netpoint(node, dst)?);
        if matches!(s, NetPoint::Zone(_)) || matches!(d, NetPoint::Zone(_)) {
            return Err(self.err(
                node,
                "a <route> joins hosts or routers: use <zoneRoute> for zones",
            ));
        }
        let (sv, dv) = (
            self.vertex_in(node, z, s, src)?,
            self.vertex_in(node, z, d, dst)?,
        );
        let refs = self.link_refs(node)?;
        let sym = self.symmetrical(node)?;
        let fwd = self.resolve(node, &refs, false)?;
        let back = if sym {
            Some(self.resolve(node, &refs, true)?)
        } else {
            None
        };
        let err = |r: &Self, e: String| r.err(node, format!("route {src} -> {dst}: {e}"));
        match &mut self.tree.zones[z as usize].local {
            Local::Routed(r) => {
                let kind = r.kind();
                r.add(
                    sv,
                    dv,
                    RouteEntry {
                        links: fwd,
                        gw: None,
                    },
                )
                .and_then(|()| match back {
                    Some(b) if sv != dv || kind != RoutedKind::Full => r
                        .add(dv, sv, RouteEntry { links: b, gw: None })
                        .map_err(|e| {
                            format!("{e}; do not declare the reverse of a symmetrical route")
                        }),
                    _ => Ok(()),
                })
                .map_err(|e| err(self, e))
            }
            Local::Star(st) => {
                if sv != dv {
                    return Err(err(
                        self,
                        "a Cluster zone only accepts routes from a host to itself".into(),
                    ));
                }
                st.set_loopback(sv, &fwd);
                Ok(())
            }
            _ => Err(err(self, "this zone does not accept routes".into())),
        }
    }

    /// `gw` must be a host or router inside zone `zone`.
    fn gateway(&self, node: Node, gw: &str, zone: u32) -> R<NetPoint> {
        let np = self.netpoint(node, gw)?;
        if matches!(np, NetPoint::Zone(_)) {
            return Err(self.err(node, format!("gateway `{gw}` must be a host or a router")));
        }
        if !self.tree.is_inside(np, zone) {
            return Err(self.err(
                node,
                format!(
                    "gateway `{gw}` is not inside zone `{}`",
                    self.tree.zones[zone as usize].name
                ),
            ));
        }
        Ok(np)
    }

    fn zone_of(&self, node: Node, name: &str) -> R<u32> {
        match self.netpoint(node, name)? {
            NetPoint::Zone(z) => Ok(z),
            _ => Err(self.err(node, format!("`{name}` is not a zone"))),
        }
    }

    fn zone_route(&mut self, node: Node, z: u32) -> R<()> {
        let (src, dst) = (self.attr(node, "src")?, self.attr(node, "dst")?);
        let (zs, zd) = (self.zone_of(node, src)?, self.zone_of(node, dst)?);
        let (sv, dv) = (
            self.vertex_in(node, z, NetPoint::Zone(zs), src)?,
            self.vertex_in(node, z, NetPoint::Zone(zd), dst)?,
        );
        let gs = self.gateway(node, self.attr(node, "gw_src")?, zs)?;
        let gd = self.gateway(node, self.attr(node, "gw_dst")?, zd)?;
        if gs == gd {
            return Err(self.err(node, "a zone route cannot go from a gateway to itself"));
        }
        let refs = self.link_refs(node)?;
        let sym = self.symmetrical(node)?;
        let fwd = self.resolve(node, &refs, false)?;
        let back = if sym {
            Some(self.resolve(node, &refs, true)?)
        } else {
            None
        };
        let msg = format!("zone route {src} -> {dst}");
        match &mut self.tree.zones[z as usize].local {
            Local::Routed(r) => {
                let res = r
                    .add(
                        sv,
                        dv,
                        RouteEntry {
                            links: fwd,
                            gw: Some((gs, gd)),
                        },
                    )
                    .and_then(|()| match back {
                        Some(b) if sv != dv => r.add(
                            dv,
                            sv,
                            RouteEntry {
                                links: b,
                                gw: Some((gd, gs)),
                            },
                        ),
                        _ => Ok(()),
                    });
                res.map_err(|e| self.err(node, format!("{msg}: {e}")))
            }
            _ => Err(self.err(
                node,
                format!("{msg}: this zone does not accept zone routes"),
            )),
        }
    }

    fn bypass(&mut self, node: Node, z: u32, zones: bool) -> R<()> {
        let (src, dst) = (self.attr(node, "src")?, self.attr(node, "dst")?);
        let refs = self.link_refs(node)?;
        let links = self.resolve(node, &refs, false)?;
        let (key, gw) = if zones {
            let (zs, zd) = (self.zone_of(node, src)?, self.zone_of(node, dst)?);
            let gs = self.gateway(node, self.attr(node, "gw_src")?, zs)?;
            let gd = self.gateway(node, self.attr(node, "gw_dst")?, zd)?;
            ((NetPoint::Zone(zs), NetPoint::Zone(zd)), Some((gs, gd)))
        } else {
            ((self.netpoint(node, src)?, self.netpoint(node, dst)?), None)
        };
        let zone = &mut self.tree.zones[z as usize];
        if zone.bypass.contains_key(&key) {
            return Err(self.err(node, format!("bypass route {src} -> {dst} declared twice")));
        }
        zone.bypass.insert(key, Bypass { links, gw });
        Ok(())
    }

    /// Registers the links made since link `from` (by a cluster) for `<link_ctn>`s.
    fn register_links(&mut self, node: Node, from: usize) -> R<()> {
        let mut i = from;
        while i < self.parts.links.len() {
            let name = self.parts.links[i].name.clone();
            let pair = name.strip_suffix("_UP").and_then(|base| {
                let next = self.parts.links.get(i + 1)?;
                (next.name.strip_suffix("_DOWN") == Some(base)).then(|| base.to_string())
            });
            let res = match pair {
                Some(base) => {
                    let r = self.links.add(
                        &base,
                        LinkPolicy::SplitDuplex,
                        i as LinkId,
                        (i + 1) as LinkId,
                        &self.parts,
                    );
                    i += 2;
                    r
                }
                None => {
                    let r = self.links.add(
                        &name,
                        LinkPolicy::Shared,
                        i as LinkId,
                        i as LinkId,
                        &self.parts,
                    );
                    i += 1;
                    r
                }
            };
            res.map_err(|e| self.err(node, e))?;
        }
        Ok(())
    }

    fn cluster(&mut self, node: Node<'a, 'i>, parent: Option<u32>) -> R<()> {
        let id = self.attr(node, "id")?.to_string();
        let opt = |name: &str| node.attribute(name).filter(|v| !v.is_empty());
        let radicals =
            parse_radicals(self.attr(node, "radical")?).map_err(|e| self.err(node, e))?;
        let speeds = parse_speeds(self.attr(node, "speed")?).map_err(|e| self.err(node, e))?;
        let speed = speeds.first().copied().unwrap_or(f64::NAN);
        if !(speed.is_finite() && speed > 0.0) {
            return Err(self.err(
                node,
                format!("cluster `{id}`: speed must be a positive number of flop/s"),
            ));
        }
        let cores = match opt("core") {
            Some(c) => self.int(node, c)?,
            None => 1,
        };
        let bw = self.bandwidth(node, self.attr(node, "bw")?)?;
        let lat = self.time(node, self.attr(node, "lat")?)?;
        let sharing = match opt("sharing_policy") {
            None => LinkPolicy::SplitDuplex,
            Some(p) => match LinkPolicy::parse(p) {
                // SimGrid 3.32 makes plain (SHARED) links for every non-split policy.
                Some(LinkPolicy::FatPipe) => LinkPolicy::Shared,
                Some(p) => p,
                None => return Err(self.err(node, format!("invalid sharing_policy `{p}`"))),
            },
        };
        let bb_bw = match opt("bb_bw") {
            Some(v) => self.bandwidth(node, v)?,
            None => 0.0,
        };
        let bb_lat = match opt("bb_lat") {
            Some(v) => self.time(node, v)?,
            None => 0.0,
        };
        let bb_sharing = match opt("bb_sharing_policy") {
            None => Sharing::Shared,
            Some(p) => match p.to_ascii_uppercase().as_str() {
                "SHARED" => Sharing::Shared,
                "FATPIPE" => Sharing::FatPipe,
                _ => return Err(self.err(node, format!("invalid bb_sharing_policy `{p}`"))),
            },
        };
        let limiter = match opt("limiter_link") {
            Some(v) => Some(self.bandwidth(node, v)?).filter(|&b| b > 0.0),
            None => None,
        };
        let lb_bw = match opt("loopback_bw") {
            Some(v) => self.bandwidth(node, v)?,
            None => 0.0,
        };
        let lb_lat = match opt("loopback_lat") {
            Some(v) => self.time(node, v)?,
            None => 0.0,
        };
        for c in node.children().filter(Node::is_element) {
            if c.tag_name().name() != "prop" {
                return Err(self.err(
                    c,
                    format!("unexpected <{}> in <cluster>", c.tag_name().name()),
                ));
            }
        }
        let props = self.props(node)?;
        let power = self.power(node, &props, 0)?;
        let spec = ClusterSpec {
            id: id.clone(),
            prefix: node.attribute("prefix").unwrap_or("").to_string(),
            suffix: node.attribute("suffix").unwrap_or("").to_string(),
            radicals,
            host: HostSpec {
                speed,
                cores,
                power,
            },
            bandwidth: bw,
            latency: lat,
            sharing,
            backbone: (bb_bw > 0.0 || bb_lat > 0.0).then_some(BackboneSpec {
                bandwidth: bb_bw,
                latency: bb_lat,
                sharing: bb_sharing,
            }),
            loopback: (lb_bw > 0.0 || lb_lat > 0.0).then_some(LoopbackSpec {
                bandwidth: lb_bw,
                latency: lb_lat,
                shared: false,
            }),
            limiter,
            router_id: opt("router_id").map(str::to_string),
        };
        let topology = opt("topology").unwrap_or("FLAT");
        let params = node.attribute("topo_parameters").unwrap_or("");
        let first_link = self.parts.links.len();
        let wrap = |r: &Self, e: PlatformError| r.err(node, e.to_string());
        let (local, hosts, router) = match topology {
            "FLAT" => {
                let b = cluster::build(&spec, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::Star(b.star), b.hosts, Some(b.router))
            }
            "FAT_TREE" => {
                let s = FatTreeSpec::new(spec.clone(), params).map_err(|e| wrap(self, e))?;
                let b = fat_tree::build(&s, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::FatTree(b.routing), b.hosts, None)
            }
            "TORUS" => {
                let s = TorusSpec::new(spec.clone(), params).map_err(|e| wrap(self, e))?;
                let b = torus::build(&s, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::Torus(b.routing), b.hosts, None)
            }
            "DRAGONFLY" => {
                let s = DragonflySpec::new(spec.clone(), params).map_err(|e| wrap(self, e))?;
                let b = dragonfly::build(&s, &mut self.parts).map_err(|e| wrap(self, e))?;
                (Local::Dragonfly(b.routing), b.hosts, None)
            }
            other => return Err(self.err(node, format!("unknown cluster topology `{other}`"))),
        };
        let z = self.tree.add_zone(id.clone(), parent, local);
        self.name(node, &id, NetPoint::Zone(z))?;
        for h in hosts {
            let name = self.parts.hosts[h as usize].name.clone();
            self.name(node, &name, NetPoint::Host(h))?;
            self.tree.add_host(z, h, name);
        }
        if let Some(router) = router {
            let (r, _) = self.tree.add_router(z, router.clone());
            self.name(node, &router, NetPoint::Router(r))?;
        }
        self.register_links(node, first_link)
    }

    /// Applies the backbone, host links and cabinets of a `Cluster` zone.
    fn populate_star(&mut self, z: u32, pending: StarPending<'a, 'i>) -> R<()> {
        let backbone = match pending.backbone {
            Some(b) => {
                let id = self.attr(b, "id")?;
                let bw = self.bandwidth(b, self.attr(b, "bandwidth")?)?;
                let lat = self.time(b, self.attr(b, "latency")?)?;
                if bw <= 0.0 {
                    return Err(self.err(b, "the backbone has no bandwidth"));
                }
                let l = self
                    .parts
                    .add_link(id.to_string(), bw, lat, Sharing::Shared);
                self.links
                    .add(id, LinkPolicy::Shared, l, l, &self.parts)
                    .map_err(|e| self.err(b, e))?;
                Some(l)
            }
            None => None,
        };
        let set = |r: &mut Self, v: u32, up: LinkId, down: LinkId| {
            let mut ups = vec![up];
            ups.extend(backbone);
            let mut downs: Vec<LinkId> = backbone.into_iter().collect();
            downs.push(down);
            if let Local::Star(s) = &mut r.tree.zones[z as usize].local {
                s.set_up(v, &ups);
                s.set_down(v, &downs);
            }
        };
        for hl in pending.host_links {
            let id = self.attr(hl, "id")?;
            let np = self.netpoint(hl, id)?;
            if !matches!(np, NetPoint::Host(_)) {
                return Err(self.err(hl, format!("`{id}` is not a host")));
            }
            let v = self.vertex_in(hl, z, np, id)?;
            let up = self
                .links
                .resolve(&LinkRef::new(self.attr(hl, "up")?), false)
                .map_err(|e| self.err(hl, e))?;
            let down = self
                .links
                .resolve(&LinkRef::new(self.attr(hl, "down")?), false)
                .map_err(|e| self.err(hl, e))?;
            set(self, v, up, down);
        }
        for cab in pending.cabinets {
            let prefix = cab.attribute("prefix").unwrap_or("");
            let suffix = cab.attribute("suffix").unwrap_or("");
            let radicals =
                parse_radicals(self.attr(cab, "radical")?).map_err(|e| self.err(cab, e))?;
            let speeds = parse_speeds(self.attr(cab, "speed")?).map_err(|e| self.err(cab, e))?;
            let bw = self.bandwidth(cab, self.attr(cab, "bw")?)?;
            let lat = self.time(cab, self.attr(cab, "lat")?)?;
            if bw <= 0.0 {
                return Err(self.err(cab, "a cabinet needs a bandwidth"));
            }
            let speed = speeds.first().copied().unwrap_or(f64::NAN);
            if !(speed.is_finite() && speed > 0.0) {
                return Err(self.err(cab, "cabinet speed must be a positive number of flop/s"));
            }
            let spec = HostSpec {
                speed,
                cores: 1,
                power: HostPower::default(),
            };
            for r in radicals {
                let name = format!("{prefix}{r}{suffix}");
                let h = self.parts.add_host(name.clone(), &spec);
                self.name(cab, &name, NetPoint::Host(h))?;
                let v = self.tree.add_host(z, h, name.clone());
                self.star_vertex(z);
                let from = self.parts.links.len();
                let up = self
                    .parts
                    .add_link(format!("link_{name}_UP"), bw, lat, Sharing::Shared);
                let down =
                    self.parts
                        .add_link(format!("link_{name}_DOWN"), bw, lat, Sharing::Shared);
                for (i, l) in [(from, up), (from + 1, down)] {
                    let n = self.parts.links[i].name.clone();
                    self.links
                        .add(&n, LinkPolicy::Shared, l, l, &self.parts)
                        .map_err(|e| self.err(cab, e))?;
                }
                set(self, v, up, down);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SMALL: &str = r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="AS0" routing="Full">
    <host id="a" speed="1Gf" core="2">
      <prop id="wattage_per_state" value="100.0:93.3:200.0"/>
      <prop id="wattage_off" value="10"/>
    </host>
    <host id="b" speed="100Mf,50Mf" pstate="1"/>
    <host id="c" speed="1Gf"/>
    <link id="l1" bandwidth="10Gbps" latency="24us"/>
    <link id="l2" bandwidth="1GBps" latency="1ms" sharing_policy="SPLITDUPLEX"/>
    <link id="fp" bandwidth="100MBps" latency="0" sharing_policy="FATPIPE"/>
    <route src="a" dst="b"><link_ctn id="l1"/><link_ctn id="l2" direction="UP"/></route>
    <route src="a" dst="c" symmetrical="NO"><link_ctn id="fp"/></route>
  </zone>
</platform>
"#;

    #[test]
    fn platform_xml_small() {
        let p = from_simgrid_xml_str(SMALL, "small.xml").unwrap();
        assert_eq!(p.hosts.len(), 3);
        let a = p.host_id("a").unwrap();
        let b = p.host_id("b").unwrap();
        let c = p.host_id("c").unwrap();
        assert_eq!(p.hosts[a as usize].cores, 2);
        assert_eq!(p.hosts[b as usize].speed, 5e7);
        let pw = p.host_power(a);
        assert_eq!(
            (pw.idle, pw.epsilon, pw.max, pw.off),
            (100.0, 93.3, 200.0, 10.0)
        );
        let l1 = &p.links[p.link_id("l1").unwrap() as usize];
        assert_eq!(l1.bandwidth, 1.25e9);
        assert_eq!(l1.latency, 24.0 * 1e-6);
        assert_eq!(p.route_names(a, b).unwrap(), ["l1", "l2_UP"]);
        assert_eq!(p.route_names(b, a).unwrap(), ["l2_DOWN", "l1"]);
        assert_eq!(p.route_names(a, c).unwrap(), ["fp"]);
        assert!(matches!(
            p.route(c, a, &mut Vec::new()),
            Err(PlatformError::NoRoute { .. })
        ));
        assert_eq!(p.route_names(a, a).unwrap(), ["__loopback__"]);
        let fp = &p.links[p.link_id("fp").unwrap() as usize];
        assert_eq!(fp.sharing, Sharing::FatPipe);
        let lb = &p.links[p.link_id("__loopback__").unwrap() as usize];
        assert_eq!(
            (lb.bandwidth, lb.latency, lb.sharing),
            (1e10, 0.0, Sharing::FatPipe)
        );
    }

    fn err_of(text: &str) -> String {
        match from_simgrid_xml_str(text, "t.xml") {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn platform_xml_errors_name_file_and_line() {
        let bad_unit = SMALL.replace("10Gbps", "10Gbits");
        assert!(
            err_of(&bad_unit).starts_with("t.xml:11:"),
            "{}",
            err_of(&bad_unit)
        );
        let bad_link = SMALL.replace(r#"<link_ctn id="l1"/>"#, r#"<link_ctn id="nope"/>"#);
        let e = err_of(&bad_link);
        assert!(e.starts_with("t.xml:14:") && e.contains("nope"), "{e}");
        let no_dir = SMALL.replace(r#" direction="UP""#, "");
        assert!(err_of(&no_dir).contains("direction"));
        let dup = SMALL.replace(r#"<host id="c""#, r#"<host id="a""#);
        assert!(err_of(&dup).contains("`a`"));
        let reverse = SMALL.replace(
            "</zone>",
            r#"<route src="b" dst="a"><link_ctn id="l1"/></route></zone>"#,
        );
        assert!(err_of(&reverse).contains("already exists"));
        assert!(
            err_of("<platform version=\"3\"><zone id=\"z\" routing=\"Full\"/></platform>")
                .contains("version")
        );
        assert!(err_of("<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\"><host id=\"h\" speed=\"1Gflops\"/></zone></platform>")
            .starts_with("t.xml:1:"));
        let truncated = &SMALL[..SMALL.len() / 2];
        assert!(err_of(truncated).starts_with("t.xml:"));
        assert!(err_of(
            "<platform version=\"4.1\"><zone id=\"z\" routing=\"Vivaldi\"/></platform>"
        )
        .contains("not supported"));
    }

    #[test]
    fn platform_xml_clusters_and_zone_routes() {
        // The note's zr.xml: two clusters joined by a zone route between their routers.
        let text = r#"<?xml version='1.0'?>
<platform version="4.1">
<zone id="world" routing="Full">
  <cluster id="c1" prefix="n" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="10us" bb_bw="2GBps" bb_lat="1us"/>
  <cluster id="c2" prefix="m" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="10us"/>
  <link id="inter" bandwidth="100MBps" latency="50us"/>
  <zoneRoute src="c1" dst="c2" gw_src="nc1_router" gw_dst="mc2_router"><link_ctn id="inter"/></zoneRoute>
</zone>
</platform>
"#;
        let p = from_simgrid_xml_str(text, "zr.xml").unwrap();
        assert_eq!(p.hosts.len(), 4);
        let (n0, n1, m0) = (
            p.host_id("n0").unwrap(),
            p.host_id("n1").unwrap(),
            p.host_id("m0").unwrap(),
        );
        assert_eq!(
            p.route_names(n0, m0).unwrap(),
            ["c1_link_0_UP", "c1_backbone", "inter", "c2_link_0_DOWN"]
        );
        let mut out = Vec::new();
        let lat = p.route(n0, m0, &mut out).unwrap();
        assert!((lat - 71e-6).abs() < 1e-12);
        assert_eq!(p.route_bottleneck(n0, m0).unwrap(), 1e8);
        let lat = p.route(n0, n1, &mut out).unwrap();
        assert!((lat - 21e-6).abs() < 1e-12);
        assert_eq!(
            p.route_names(m0, n0).unwrap(),
            ["c2_link_0_UP", "inter", "c1_backbone", "c1_link_0_DOWN"]
        );
    }

    #[test]
    fn platform_xml_cluster_fatpipe_is_shared() {
        let text = r#"<platform version="4.1"><zone id="w" routing="Full">
<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="10us" sharing_policy="FATPIPE" bb_bw="2GBps" bb_lat="1us" bb_sharing_policy="FATPIPE" limiter_link="3GBps"/>
</zone></platform>"#;
        let p = from_simgrid_xml_str(text, "fp.xml").unwrap();
        let link = |n: &str| &p.links[p.link_id(n).unwrap() as usize];
        assert_eq!(link("c_link_0").sharing, Sharing::Shared);
        assert_eq!(link("c_backbone").sharing, Sharing::FatPipe);
        assert_eq!(link("c_link_0_limiter").bandwidth, 3e9);
        assert_eq!(
            p.route_names(0, 1).unwrap(),
            [
                "c_link_0_limiter",
                "c_link_0",
                "c_backbone",
                "c_link_1",
                "c_link_1_limiter"
            ]
        );
    }

    #[test]
    fn platform_xml_aliases_root_cluster_config() {
        // A cluster as the root zone.
        let text = r#"<platform version="4"><cluster id="c" prefix="n" suffix=".x" radical="1,3,5-6" speed="2Gf" core="2" bw="1GBps" lat="1us"><prop id="wattage_per_state" value="10:20"/></cluster></platform>"#;
        let p = from_simgrid_xml_str(text, "root.xml").unwrap();
        assert_eq!(p.hosts.len(), 4);
        assert_eq!(p.hosts[2].name, "n5.x");
        assert_eq!((p.hosts[3].cores, p.hosts[3].watts_max), (2, 20.0));
        assert_eq!(
            p.route_names(0, 3).unwrap(),
            ["c_link_1_UP", "c_link_6_DOWN"]
        );
        // Old element names and the loopback configuration.
        let text = r#"<platform version="4.1">
<config><prop id="network/loopback-bw" value="5e9"/><prop id="network/loopback-lat" value="1e-7"/></config>
<AS id="top" routing="Full">
  <AS id="a" routing="Full"><host id="h1" speed="1Gf"/><router id="ra"/>
    <link id="l1" bandwidth="1GBps" latency="1us"/>
    <route src="h1" dst="ra"><link_ctn id="l1"/></route></AS>
  <AS id="b" routing="Floyd"><host id="h2" speed="1Gf"/></AS>
  <link id="ab" bandwidth="1GBps" latency="9us"/>
  <ASroute src="a" dst="b" gw_src="ra" gw_dst="h2"><link_ctn id="ab"/></ASroute>
</AS></platform>"#;
        let p = from_simgrid_xml_str(text, "as.xml").unwrap();
        assert_eq!(p.route_names(0, 1).unwrap(), ["l1", "ab"]);
        assert_eq!(p.route_names(1, 0).unwrap(), ["ab", "l1"]);
        assert_eq!(p.route_names(1, 1).unwrap(), ["__loopback__"]);
        let lb = &p.links[p.link_id("__loopback__").unwrap() as usize];
        assert_eq!((lb.bandwidth, lb.latency), (5e9, 1e-7));
        // The top zone has child zones: no loopback there, but each leaf zone has one.
        assert_eq!(p.route_names(0, 0).unwrap(), ["__loopback__"]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn platform_xml_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = from_simgrid_xml_str(&text, "garbage.xml");
        }

        #[test]
        fn platform_xml_truncated_or_mutated_never_panics(cut in 0usize..2000, pos in 0usize..2000, byte in 32u8..127) {
            let base = SMALL.to_string() + r#"<!-- --><platform version="4.1"><zone id="w" routing="Floyd"><cluster id="c" prefix="n" suffix="" radical="0-15" speed="1Gf" bw="1GBps" lat="10us" topology="FAT_TREE" topo_parameters="2;4,4;1,2;1,2"/></zone></platform>"#;
            let cut = cut.min(base.len());
            let _ = from_simgrid_xml_str(&base[..cut], "t.xml");
            let mut m = base.into_bytes();
            let pos = pos.min(m.len() - 1);
            m[pos] = byte;
            let _ = from_simgrid_xml_str(&String::from_utf8_lossy(&m), "m.xml");
        }

        #[test]
        fn platform_xml_random_topologies_never_panic(topo in "[0-9,;]{0,16}", kind in 0usize..3) {
            let t = ["FAT_TREE", "TORUS", "DRAGONFLY"][kind];
            let text = format!(r#"<platform version="4.1"><zone id="w" routing="Full"><cluster id="c" prefix="n" suffix="" radical="0-63" speed="1Gf" bw="1GBps" lat="10us" topology="{t}" topo_parameters="{topo}"/></zone></platform>"#);
            if let Ok(p) = from_simgrid_xml_str(&text, "t.xml") {
                let n = p.hosts.len() as u32;
                let mut out = Vec::new();
                for a in 0..n.min(8) {
                    for b in 0..n.min(8) {
                        let _ = p.route(a, b, &mut out);
                    }
                }
            }
        }
    }
}
