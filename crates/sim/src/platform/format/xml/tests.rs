//! The SimGrid XML reader on small platforms: elements, attributes, errors.

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
    assert!(
        err_of("<platform version=\"4.1\"><zone id=\"z\" routing=\"Vivaldi\"/></platform>")
            .contains("not supported")
    );
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
