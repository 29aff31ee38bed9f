//! HULA at small scale, end to end (issue 5's regression tests): on the
//! asymmetric HULA topology (S2-A4 down) at high load HULA beats ECMP, and
//! after a link failure HULA moves traffic off the failed link within about
//! a millisecond of simulated time (HULA sections 6.2 and 6.3).

use pisanet::{run_toml, RunOutput};

const HULA3TIER: &str = r#"
[run]
max_sim_time_ms = 300
[topology]
kind = "hula3tier"
hosts_per_tor = 8
host_link_gbps = 10.0
fabric_link_gbps = 40.0
link_delay_us = 1.0
buffer_kb = 500
ecn_threshold_kb = 0
[transport]
kind = "newreno"
# The default receive window: TCP small queues (transport.tsq_kb, default)
# bound each sender's backlog in its NIC (docs/model.md "Hosts").
[workload]
cdf = "websearch"
pattern = "client_server"
connections = 3
[scheme]
flowlet_timeout_us = 100.0
"#;

/// Runs with `sets`; like a sweep over schemes, the shared base config
/// carries keys only some schemes read (`run.unused_keys = "ignore"`).
fn run(text: &str, base: Option<&std::path::Path>, sets: &[String]) -> RunOutput {
    let mut sets = sets.to_vec();
    sets.push("run.unused_keys=ignore".into());
    run_toml(text, base, &sets, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

fn mean_fct(out: &RunOutput) -> f64 {
    out.summary["fct_us"]["mean"].as_f64().unwrap()
}

/// Bytes the ports whose name contains `name` transmitted.
fn tx_bytes(out: &RunOutput, name: &str) -> f64 {
    out.ports
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"].as_str().unwrap().contains(name))
        .map(|p| p["tx_bytes"].as_f64().unwrap())
        .sum()
}

#[test]
fn hula_beats_ecmp_on_the_asymmetric_topology_at_high_load() {
    let mut fct = std::collections::HashMap::new();
    for kind in ["ecmp", "hula"] {
        let mut sum = 0.0;
        let mut share = 0.0;
        for seed in [1, 2] {
            let sets: Vec<String> = [
                format!("scheme.kind={kind}"),
                format!("run.seed={seed}"),
                "workload.load=0.8".into(),
                "workload.flows=300".into(),
                r#"events=[{at_ms=0.0,kind="link_down",link="S2-A4"}]"#.into(),
            ]
            .into();
            let out = run(HULA3TIER, None, &sets);
            assert_eq!(out.summary["flows"]["completed"], 300, "{kind} seed {seed}");
            sum += mean_fct(&out);
            // The bottleneck S2->A3 carries what crosses the pods through S2.
            share += tx_bytes(&out, "S2->A3")
                / (tx_bytes(&out, "S1->A3") + tx_bytes(&out, "S1->A4") + tx_bytes(&out, "S2->A3"));
        }
        fct.insert(kind, (sum / 2.0, share / 2.0));
    }
    let (ecmp, hula) = (fct["ecmp"], fct["hula"]);
    // ECMP sends half of the cross-pod traffic over the one S2 link; HULA
    // balances the three remaining spine-to-pod-2 links (a third each).
    assert!(ecmp.1 > 0.4, "ecmp bottleneck share {:.2}", ecmp.1);
    assert!(hula.1 < 0.37, "hula bottleneck share {:.2}", hula.1);
    assert!(
        hula.0 < ecmp.0,
        "mean FCT: hula {:.0} us, ecmp {:.0} us",
        hula.0,
        ecmp.0
    );
}

#[test]
fn hula_moves_traffic_off_a_failed_link_within_a_millisecond() {
    let dir = std::env::temp_dir().join(format!("pisanet-hula-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Long-running flows (Fig. 9b): each pod-1 server sends to one in pod 2.
    // Ten flows (100 Gb/s) start 150 us apart, after the first probes.
    let flows: String = (0..10)
        .map(|i| format!("{},{i},{},200000000\n", 500 + 150 * i, 16 + (i * 5) % 16))
        .collect();
    std::fs::write(dir.join("flows.csv"), flows).unwrap();
    let text = format!(
        "{HULA3TIER}\n[metrics]\nport_rate_interval_us = 100\nport_rate_ports = [\"S1->A\", \"S2->A\"]\n"
    )
    .replace("pattern = \"client_server\"", "pattern = \"file\"\nfile = \"flows.csv\"");
    let down_ms = 6.0;
    let sets: Vec<String> = [
        "scheme.kind=hula".to_string(),
        "run.max_sim_time_ms=14".into(),
        format!(r#"events=[{{at_ms={down_ms},kind="link_down",link="S2-A3"}}, {{at_ms=10.0,kind="link_up",link="S2-A3"}}]"#),
    ]
    .into();
    let out = run(&text, Some(&dir), &sets);
    let r = &out.port_rates;
    let at = |port: &str, from_us: f64, to_us: f64, tx: bool| -> f64 {
        let v: Vec<f64> = (0..r.time_us.len())
            .filter(|&i| r.port[i] == port && r.time_us[i] > from_us && r.time_us[i] <= to_us)
            .map(|i| if tx { r.tx_gbps[i] } else { r.carried_gbps[i] })
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let down = down_ms * 1000.0;
    let into_pod2 = |from: f64, to: f64| {
        ["S1->A3", "S1->A4", "S2->A3", "S2->A4"]
            .iter()
            .map(|p| at(p, from, to, false))
            .sum::<f64>()
    };
    let before = into_pod2(down - 2000.0, down);
    assert!(
        at("S2->A3", down - 2000.0, down, true) > 20.0,
        "S2->A3 was in use before the failure"
    );
    // Within about a millisecond nothing is sent into the failed link ...
    let stuck = at("S2->A3", down + 1000.0, down + 3000.0, true);
    assert!(
        stuck < 1.0,
        "HULA still sends {stuck:.1} Gb/s into the failed link"
    );
    // ... and the three links left carry the flows that used it: the
    // flows stalled by the failure start new flowlets on other paths.
    let after = into_pod2(down + 1500.0, down + 4000.0);
    assert!(
        after > 0.7 * before,
        "into pod 2: {before:.1} Gb/s before, {after:.1} after"
    );
    // NOTE: long-running flows move back only at flowlet gaps, which steady
    // flows do not have: no assertion on the recovered link here (Fig. 9a's
    // web-search run in experiments/hula shows the return).
}

/// Aggregation-to-spine links ("A<n>->S<n>") that carried any bytes.
fn busy_agg_uplinks(out: &RunOutput) -> Vec<String> {
    out.ports
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            let name = p["name"].as_str().unwrap();
            name.starts_with('A') && name.contains("->S") && p["tx_bytes"].as_f64().unwrap() > 0.0
        })
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

/// `scheme.ecmp_hash_per_tier = false` (every tier picks from the same hash
/// bits) polarizes ECMP: a flow reaches an aggregation switch only if the
/// ToR's pick, h mod 2, chose it, and the aggregation switch's pick is the
/// same h mod 2, so each aggregation switch sends all its cross-pod traffic
/// to one spine: 4 of the 8 aggregation-to-spine links carry nothing. With
/// the default (a different bit slice per tier) all 8 carry traffic.
#[test]
fn ecmp_with_the_same_hash_bits_at_every_tier_uses_half_the_agg_uplinks() {
    let busy = |per_tier: bool| {
        let sets: Vec<String> = [
            "scheme.kind=ecmp".to_string(),
            "run.seed=1".into(),
            "workload.load=0.5".into(),
            "workload.flows=200".into(),
            format!("scheme.ecmp_hash_per_tier={per_tier}"),
        ]
        .into();
        let out = run(HULA3TIER, None, &sets);
        assert_eq!(
            out.summary["flows"]["completed"], 200,
            "per_tier {per_tier}"
        );
        busy_agg_uplinks(&out)
    };
    let (spread, polarized) = (busy(true), busy(false));
    assert_eq!(spread.len(), 8, "per-tier hash: {spread:?}");
    assert_eq!(polarized.len(), 4, "polarized: {polarized:?}");
    // One spine per aggregation switch.
    for a in ["A1", "A2", "A3", "A4"] {
        let n = polarized.iter().filter(|p| p.starts_with(a)).count();
        assert_eq!(n, 1, "{a}: {polarized:?}");
    }
}
