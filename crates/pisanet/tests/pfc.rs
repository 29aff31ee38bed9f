//! Priority flow control (IEEE 802.1Qbb) end to end: a lossless incast, head-
//! of-line blocking (seed 002 Fig. 1), headroom too small, a deadlock, and
//! determinism. Scenarios are custom topologies with flow lists and UDP
//! senders at line rate (the simplest senders that overload a port).

mod common;

use pisanet::{run_toml, ErrorKind, RunOutput};

fn tmpdir(name: &str) -> std::path::PathBuf {
    common::tmpdir("pfc", name)
}

/// Runs a custom topology `topo` with the flow list `flows` and `extra`
/// config lines; UDP at 10 Gb/s unless `extra` says otherwise.
fn try_run(name: &str, topo: &str, flows: &str, extra: &str) -> Result<RunOutput, pisanet::Error> {
    let d = tmpdir(name);
    std::fs::write(d.join("t.toml"), topo).unwrap();
    std::fs::write(d.join("flows.csv"), flows).unwrap();
    let cfg = format!(
        "[run]\nmax_sim_time_ms = 20\n[topology]\nkind = \"custom\"\nfile = \"t.toml\"\n\
         [transport]\nkind = \"udp\"\nudp_rate_gbps = 10.0\n\
         [workload]\npattern = \"file\"\nfile = \"flows.csv\"\n{extra}"
    );
    // `extra` may re-open a table: TOML forbids that, so merge by overrides.
    let (base, sets) = split_sets(&cfg);
    run_toml(&base, Some(&d), &sets, &mut |_| true)
}

/// Lines of the form `key.path=value` become overrides.
fn split_sets(cfg: &str) -> (String, Vec<String>) {
    let mut base = String::new();
    let mut sets = Vec::new();
    for line in cfg.lines() {
        if line.contains('=') && line.split('=').next().unwrap().contains('.') {
            sets.push(line.to_string());
        } else {
            base.push_str(line);
            base.push('\n');
        }
    }
    (base, sets)
}

fn run(name: &str, topo: &str, flows: &str, extra: &str) -> RunOutput {
    try_run(name, topo, flows, extra).unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn port<'a>(out: &'a RunOutput, name: &str) -> &'a serde_json::Value {
    out.ports
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no port {name}"))
}

/// Two senders and a receiver on one switch, 10 Gb/s each.
const INCAST: &str = r#"
nodes = [
  { name = "a", kind = "host" }, { name = "b", kind = "host" }, { name = "r", kind = "host" },
  { name = "s", kind = "switch" },
]
links = [
  { a = "a", b = "s", gbps = 10 }, { a = "b", b = "s", gbps = 10 }, { a = "r", b = "s", gbps = 10 },
]
"#;
const INCAST_FLOWS: &str = "0,0,2,2000000\n0,1,2,2000000\n";

#[test]
fn incast_at_line_rate_is_lossless_with_pfc_and_shares_the_link() {
    let out = run(
        "incast-on",
        INCAST,
        INCAST_FLOWS,
        "topology.pfc.enabled=true",
    );
    let s = &out.summary;
    assert_eq!(s["packets"]["dropped"], 0, "{s}");
    assert_eq!(s["conservation_ok"], true);
    assert_eq!(s["flows"]["completed"], 2, "{s}");
    let pauses = s["pfc"]["pause_frames_sent"].as_u64().unwrap();
    assert!(pauses > 0, "{s}");
    assert!(s["pfc"]["paused_time_us"].as_f64().unwrap() > 0.0);
    // The switch paused the two senders' NICs: its ports facing them sent
    // PAUSE frames, the NICs received them.
    for h in ["a", "b"] {
        assert!(
            port(&out, &format!("s->{h}"))["pause_sent"]
                .as_u64()
                .unwrap()
                > 0
        );
        assert!(
            port(&out, &format!("{h}->s"))["pause_received"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
    // Each sender gets half the receiver's link: 2 MB at 5 Gb/s = 3.2 ms.
    for i in 0..2 {
        let rate_gbps = out.flows.bytes[i] as f64 * 8.0 / out.flows.fct_us[i] / 1e3;
        assert!(
            (rate_gbps - 5.0).abs() < 0.5,
            "flow {i}: {rate_gbps} Gb/s, not about half of 10"
        );
    }
    // PFC off: the same incast drops.
    let off = run("incast-off", INCAST, INCAST_FLOWS, "");
    assert!(off.summary["packets"]["dropped"].as_u64().unwrap() > 0);
    assert!(off.summary.get("pfc").is_none());
}

#[test]
fn pfc_runs_are_deterministic_and_conserve_with_tcp_too() {
    let a = run("det-a", INCAST, INCAST_FLOWS, "topology.pfc.enabled=true");
    let b = run("det-b", INCAST, INCAST_FLOWS, "topology.pfc.enabled=true");
    assert_eq!(a.summary["digest"], b.summary["digest"]);
    assert_eq!(a.summary["pfc"], b.summary["pfc"]);
    // TCP (DCTCP with TSQ) through a paused NIC: every byte, in order, no drop.
    let tcp = run(
        "det-tcp",
        INCAST,
        INCAST_FLOWS,
        "transport.kind=\"dctcp\"\ntransport.udp_rate_gbps=10.0\nrun.unused_keys=\"ignore\"\ntopology.pfc.enabled=true\ntopology.ecn_threshold_kb=0\ntopology.pfc.xoff_kb=20",
    );
    assert_eq!(tcp.summary["flows"]["completed"], 2, "{}", tcp.summary);
    assert_eq!(tcp.summary["packets"]["dropped"], 0);
    assert!(tcp.summary["pfc"]["pause_frames_sent"].as_u64().unwrap() > 0);
}

/// Seed 002 Fig. 1: leaf `l` carries a congested flow a->r and a victim
/// v->u to spine `s`; b->r congests s's port to r.
const HOL: &str = r#"
nodes = [
  { name = "a", kind = "host" }, { name = "v", kind = "host" }, { name = "b", kind = "host" },
  { name = "r", kind = "host" }, { name = "u", kind = "host" },
  { name = "l", kind = "switch" }, { name = "s", kind = "switch", tier = 1 },
]
links = [
  { a = "a", b = "l", gbps = 10 }, { a = "v", b = "l", gbps = 10 }, { a = "l", b = "s", gbps = 40 },
  { a = "b", b = "s", gbps = 10 }, { a = "r", b = "s", gbps = 10 }, { a = "u", b = "s", gbps = 10 },
]
"#;
/// a->r, b->r (congested), v->u (the victim, flow 2).
const HOL_FLOWS: &str = "0,0,3,4000000\n0,2,3,4000000\n0,1,4,2000000\n";

fn victim_gbps(out: &RunOutput) -> f64 {
    let i = 2;
    assert_eq!((out.flows.src[i], out.flows.dst[i]), (1, 4));
    assert!(!out.flows.fct_us[i].is_nan(), "victim did not finish");
    out.flows.bytes[i] as f64 * 8.0 / out.flows.fct_us[i] / 1e3
}

#[test]
fn head_of_line_blocking_slows_the_victim_under_pfc() {
    let off = run("hol-off", HOL, HOL_FLOWS, "");
    let on = run("hol-on", HOL, HOL_FLOWS, "topology.pfc.enabled=true");
    assert_eq!(on.summary["packets"]["dropped"], 0);
    // The spine paused the leaf's uplink (congestion spreading), and the
    // leaf in turn paused the hosts.
    assert!(port(&on, "s->l")["pause_sent"].as_u64().unwrap() > 0);
    assert!(port(&on, "l->s")["paused_us"].as_f64().unwrap() > 0.0);
    assert!(port(&on, "v->l")["pause_received"].as_u64().unwrap() > 0);
    let (v_off, v_on) = (victim_gbps(&off), victim_gbps(&on));
    assert!(v_off > 9.0, "victim alone on its path: {v_off} Gb/s");
    assert!(
        v_on < 0.8 * v_off,
        "victim under PFC {v_on} vs {v_off} Gb/s"
    );
}

#[test]
fn headroom_below_the_links_need_is_warned_and_its_losses_reported() {
    // 20 us of cable at 10 Gb/s: 50 KB in flight both ways; 2 KB reserved.
    let topo = INCAST.replace("gbps = 10 }", "gbps = 10, delay_us = 20 }");
    let out = run(
        "headroom",
        &topo,
        INCAST_FLOWS,
        "topology.pfc.enabled=true\ntopology.pfc.headroom_kb=2\ntopology.pfc.xoff_kb=30",
    );
    let s = &out.summary;
    assert_eq!(s["pfc"]["headroom_too_small"], true);
    let w = s["warnings"][0].as_str().unwrap();
    assert!(
        w.starts_with("topology.pfc.headroom_kb: 2000 bytes is less than port"),
        "{w}"
    );
    let lost = s["pfc"]["lossless_drops"].as_u64().unwrap();
    assert!(lost > 0, "{s}");
    assert_eq!(s["packets"]["dropped"].as_u64().unwrap(), lost);
    assert_eq!(s["conservation_ok"], true);
    // The same with the headroom the helper computes: nothing lost.
    let auto = run(
        "headroom-auto",
        &topo,
        INCAST_FLOWS,
        "topology.pfc.enabled=true\ntopology.pfc.xoff_kb=30",
    );
    assert_eq!(auto.summary["packets"]["dropped"], 0, "{}", auto.summary);
    assert_eq!(auto.summary["pfc"]["headroom_too_small"], false);
}

/// Five switches in a ring, one host each; every flow goes two hops
/// clockwise (its only shortest path), so every ring link carries two
/// line-rate flows and waits for the next: a cyclic buffer dependency.
fn ring() -> (String, String) {
    let n = 5;
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    for i in 0..n {
        nodes.push(format!("{{ name = \"h{i}\", kind = \"host\" }}"));
    }
    for i in 0..n {
        nodes.push(format!("{{ name = \"s{i}\", kind = \"switch\" }}"));
        links.push(format!("{{ a = \"h{i}\", b = \"s{i}\", gbps = 10 }}"));
        links.push(format!(
            "{{ a = \"s{i}\", b = \"s{}\", gbps = 10 }}",
            (i + 1) % n
        ));
    }
    let topo = format!(
        "nodes = [{}]\nlinks = [{}]\n",
        nodes.join(", "),
        links.join(", ")
    );
    let flows: String = (0..n)
        .map(|i| format!("0,{i},{},50000000\n", (i + 2) % n))
        .collect();
    (topo, flows)
}

#[test]
fn a_cyclic_buffer_dependency_is_reported_as_a_deadlock_naming_the_cycle() {
    let (topo, flows) = ring();
    let Err(e) = try_run(
        "deadlock",
        &topo,
        &flows,
        "topology.pfc.enabled=true\ntopology.pfc.deadlock_ms=1\ntopology.buffer_kb=50",
    ) else {
        panic!("the ring did not deadlock");
    };
    assert_eq!(e.kind, ErrorKind::Invariant);
    assert!(e.message.starts_with("PFC deadlock: s"), "{}", e.message);
    // The cycle is the ring, all five links, in order.
    let hops = e.message.matches("->").count();
    assert!(hops >= 10, "{}", e.message);
    assert!(!e.message.contains('\n'));
    // Without PFC the ring drops instead and ends normally.
    let off = try_run("deadlock-off", &topo, &flows, "topology.buffer_kb=50").unwrap();
    assert!(off.summary["packets"]["dropped"].as_u64().unwrap() > 0);
}

#[test]
fn bad_pfc_settings_are_one_line_errors() {
    let e = try_run(
        "bad1",
        INCAST,
        INCAST_FLOWS,
        "topology.pfc.enabled=true\ntopology.pfc.xoff_kb=10\ntopology.pfc.xon_kb=20",
    )
    .err()
    .unwrap();
    assert_eq!(e.kind, ErrorKind::Input);
    assert_eq!(
        e.message,
        "topology.pfc.xon_kb: must be at most topology.pfc.xoff_kb (10), got 20"
    );
    let e = try_run(
        "bad2",
        INCAST,
        INCAST_FLOWS,
        "topology.pfc.enabled=true\ntopology.pfc.priorities=[0, 3]",
    )
    .err()
    .unwrap();
    assert_eq!(
        e.message,
        "topology.pfc.priorities: 3 is not a priority of this fabric (topology.priorities = 1, so 0..=0)"
    );
    let e = try_run(
        "bad4",
        INCAST,
        INCAST_FLOWS,
        "topology.pfc.enabled=true\ntopology.pfc.headroom_kb=\"lots\"",
    )
    .err()
    .unwrap();
    assert_eq!(
        e.message,
        "topology.pfc.headroom_kb: invalid value: string \"lots\", expected \"auto\" or a number of KB"
    );
    // A PFC key with PFC off is refused, saying when it applies.
    let e = try_run("bad3", INCAST, INCAST_FLOWS, "topology.pfc.xoff_kb=10")
        .err()
        .unwrap();
    assert!(
        e.message
            .starts_with("topology.pfc.xoff_kb: is read only when topology.pfc.enabled = true"),
        "{}",
        e.message
    );
}
