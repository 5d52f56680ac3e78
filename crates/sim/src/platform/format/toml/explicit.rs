//! A platform of explicit `[[host]]`, `[[router]]`, `[[link]]` and `[[route]]` lists: a
//! graph routed along shortest paths ([`crate::platform::graph()`]), or with
//! `routing = "full"` exactly the routes given, as one SimGrid `Full` zone.

use std::collections::HashMap;

use super::file::{link_ref, loopback_shared, policy, power, Ctx, File, LoopbackKey};
use crate::platform::routing::zones::{Local, NetPoint, RouteEntry, Routed, RoutedKind, ZoneTree};
use crate::platform::topology::cluster::LoopbackSpec;
use crate::platform::topology::graph::{GraphEdge, GraphHost, GraphLink, GraphSpec, LinkTable};
use crate::platform::{
    check_bandwidth, check_host, check_latency, graph, HostSpec, LinkId, LinkPolicy, Parts,
    Platform, PlatformError, Sharing,
};

/// The platform of `file`'s explicit lists.
pub(super) fn explicit_platform(ctx: &Ctx, file: File) -> Result<Platform, PlatformError> {
    let full = match &file.routing {
        None => false,
        Some(r) => match r.get_ref().as_str() {
            "shortest" => false,
            "full" => true,
            other => {
                return Err(ctx.err(
                    r.span(),
                    format!("routing must be \"shortest\" or \"full\", not `{other}`"),
                ))
            }
        },
    };
    let loopback = loopback_of(ctx, &file)?;
    let mut hosts = Vec::new();
    for h in &file.host {
        let span = h.name.span();
        let p = power(h.watts.as_deref(), h.watts_off).map_err(|e| ctx.err(span.clone(), e))?;
        hosts.push(GraphHost {
            name: h.name.get_ref().clone(),
            host: HostSpec {
                speed: h.speed.map_or(1e9, |v| v.0),
                cores: h.cores.unwrap_or(1),
                power: p,
            },
        });
    }
    let mut links = Vec::new();
    for l in &file.link {
        links.push(GraphLink {
            name: l.name.get_ref().clone(),
            bandwidth: l.bandwidth.0,
            latency: l.latency.map_or(0.0, |t| t.0),
            policy: policy(l.sharing.as_deref(), LinkPolicy::Shared)
                .map_err(|e| ctx.err(l.name.span(), e))?,
        });
    }
    let edges: Vec<GraphEdge> = file
        .route
        .iter()
        .map(|r| GraphEdge {
            src: r.src.get_ref().clone(),
            dst: r.dst.get_ref().clone(),
            links: r.links.get_ref().iter().map(|s| link_ref(s)).collect(),
            symmetric: r.symmetric.unwrap_or(true),
        })
        .collect();
    let spec = GraphSpec {
        hosts,
        routers: file
            .router
            .iter()
            .map(|r| r.name.get_ref().clone())
            .collect(),
        links,
        edges,
        loopback,
    };
    if full {
        full_zone(ctx, &file, spec)
    } else {
        shortest(ctx, &file, spec)
    }
}

/// The loopback: SimGrid's (10 GB/s, 0 s, fatpipe) unless `loopback` says otherwise.
fn loopback_of(ctx: &Ctx, file: &File) -> Result<Option<LoopbackSpec>, PlatformError> {
    Ok(match &file.loopback {
        None | Some(LoopbackKey::Enabled(true)) => Some(LoopbackSpec {
            bandwidth: 1e10,
            latency: 0.0,
            shared: false,
        }),
        Some(LoopbackKey::Enabled(false)) => None,
        Some(LoopbackKey::Link {
            bandwidth,
            latency,
            sharing,
        }) => Some(LoopbackSpec {
            bandwidth: bandwidth.0,
            latency: latency.map_or(0.0, |t| t.0),
            shared: loopback_shared(sharing.as_deref())
                .map_err(|e| ctx.err(0..0, format!("loopback: {e}")))?,
        }),
    })
}

/// The graph of `spec` routed along shortest paths; an error points at the entry it names.
fn shortest(ctx: &Ctx, file: &File, spec: GraphSpec) -> Result<Platform, PlatformError> {
    graph::graph(spec).map_err(|e| {
        let msg = e.to_string();
        let names = |name: &str| msg.contains(&format!("`{name}`"));
        let span = file
            .route
            .iter()
            .find(|r| {
                names(r.src.get_ref())
                    || names(r.dst.get_ref())
                    || r.links.get_ref().iter().any(|l| names(&link_ref(l).name))
            })
            .map(|r| r.src.span())
            .or_else(|| {
                file.link
                    .iter()
                    .find(|l| names(l.name.get_ref()))
                    .map(|l| l.name.span())
            })
            .or_else(|| {
                file.host
                    .iter()
                    .find(|h| names(h.name.get_ref()))
                    .map(|h| h.name.span())
            })
            .unwrap_or(0..0);
        ctx.err(span, msg)
    })
}

/// The graph of `spec` with exactly its routes: one SimGrid `Full` zone.
fn full_zone(ctx: &Ctx, file: &File, spec: GraphSpec) -> Result<Platform, PlatformError> {
    let mut parts = Parts::default();
    let mut tree = ZoneTree::default();
    let z = tree.add_zone(
        "root".into(),
        None,
        Local::Routed(Routed::new(RoutedKind::Full)),
    );
    let mut names = HashMap::new();
    for (h, e) in spec.hosts.iter().zip(&file.host) {
        check_host(&format!("host `{}`", h.name), &h.host)
            .map_err(|x| ctx.err(e.name.span(), x.to_string()))?;
        let id = parts.add_host(h.name.clone(), &h.host);
        if names.insert(h.name.clone(), NetPoint::Host(id)).is_some() {
            return Err(ctx.err(e.name.span(), format!("`{}` is declared twice", h.name)));
        }
        tree.add_host(z, id, h.name.clone());
    }
    for r in &file.router {
        let (id, _) = tree.add_router(z, r.name.get_ref().clone());
        if names
            .insert(r.name.get_ref().clone(), NetPoint::Router(id))
            .is_some()
        {
            return Err(ctx.err(
                r.name.span(),
                format!("`{}` is declared twice", r.name.get_ref()),
            ));
        }
    }
    let mut table = LinkTable::new();
    for (l, e) in spec.links.iter().zip(&file.link) {
        let bad = |x: PlatformError| ctx.err(e.name.span(), x.to_string());
        check_bandwidth(&format!("link `{}`", l.name), l.bandwidth).map_err(bad)?;
        check_latency(&format!("link `{}`", l.name), l.latency).map_err(bad)?;
        let (up, down) = parts.add_cable(&l.name, l.bandwidth, l.latency, l.policy);
        table
            .add(&l.name, l.policy, up, down, &parts)
            .map_err(|m| ctx.err(e.name.span(), m))?;
    }
    let lb = match &spec.loopback {
        Some(l) => {
            check_bandwidth("loopback", l.bandwidth)?;
            check_latency("loopback", l.latency)?;
            Some(parts.add_link(
                "__loopback__".into(),
                l.bandwidth,
                l.latency,
                Sharing::FatPipe,
            ))
        }
        None => None,
    };
    for (edge, r) in spec.edges.iter().zip(&file.route) {
        add_route(ctx, &mut tree, z, &names, &table, edge, r)?;
    }
    let n = tree.zones[z as usize].vertices.len();
    if let Local::Routed(rt) = &mut tree.zones[z as usize].local {
        rt.seal(n, lb);
    }
    if parts.hosts.is_empty() {
        return Err(ctx.err(0..0, "the platform has no hosts"));
    }
    parts.finish(Box::new(tree))
}

/// Adds route `edge` (the file's entry `r`) to `Full` zone `z`, and its reverse when
/// symmetric.
fn add_route(
    ctx: &Ctx,
    tree: &mut ZoneTree,
    z: u32,
    names: &HashMap<String, NetPoint>,
    table: &LinkTable,
    edge: &GraphEdge,
    r: &super::file::RouteSpecEntry,
) -> Result<(), PlatformError> {
    let span = r.src.span();
    let vertex = |n: &str| -> Result<u32, PlatformError> {
        match names.get(n) {
            Some(&NetPoint::Host(h)) => Ok(tree.host_loc[h as usize].1),
            Some(&NetPoint::Router(x)) => Ok(tree.router_loc[x as usize].1),
            _ => Err(ctx.err(span.clone(), format!("no host or router `{n}`"))),
        }
    };
    let (sv, dv) = (vertex(&edge.src)?, vertex(&edge.dst)?);
    if edge.links.is_empty() {
        return Err(ctx.err(r.links.span(), "a route needs links"));
    }
    let resolve = |rev: bool| -> Result<Vec<LinkId>, PlatformError> {
        let mut v = Vec::new();
        let refs: Vec<_> = if rev {
            edge.links.iter().rev().collect()
        } else {
            edge.links.iter().collect()
        };
        for l in refs {
            v.push(
                table
                    .resolve(l, rev)
                    .map_err(|m| ctx.err(r.links.span(), m))?,
            );
        }
        Ok(v)
    };
    let fwd = resolve(false)?;
    let back = if edge.symmetric && sv != dv {
        Some(resolve(true)?)
    } else {
        None
    };
    if let Local::Routed(rt) = &mut tree.zones[z as usize].local {
        rt.add(
            sv,
            dv,
            RouteEntry {
                links: fwd,
                gw: None,
            },
        )
        .map_err(|m| ctx.err(span.clone(), m))?;
        if let Some(b) = back {
            rt.add(dv, sv, RouteEntry { links: b, gw: None })
                .map_err(|m| ctx.err(span.clone(), m))?;
        }
    }
    Ok(())
}
