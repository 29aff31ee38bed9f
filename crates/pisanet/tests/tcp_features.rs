//! The TCP host features of issue 13 end to end through the simulator:
//! CUBIC, classic ECN and SACK on a lossy fabric (the run's own checks:
//! conservation, exactly-once in-order delivery), and the application rate
//! cap.

mod common;

use pisanet::RunOutput;

/// Runs `flows` (CSV rows "start_us,src,dst,bytes") on SMALL with `sets`.
fn run_flows(name: &str, flows: &str, sets: &[&str]) -> RunOutput {
    common::run_flows("tcpf", name, SMALL, flows, sets)
}

const SMALL: &str = small_leaf_spine!(100, 30);

const FLOWS: &str = "0,0,2,3000000\n10,1,3,2000000\n20,3,0,1000000\n30,2,1,1000000\n";

#[test]
fn cubic_ecn_and_sack_deliver_every_byte_on_a_lossy_fabric() {
    for sets in [
        &["transport.kind=cubic", "transport.sack=true"][..],
        &[
            "transport.kind=cubic",
            "transport.ecn=true",
            "transport.sack=true",
        ],
        &["transport.kind=newreno", "transport.ecn=true"],
        &["transport.kind=dctcp", "transport.sack=true"],
    ] {
        let mut all = sets.to_vec();
        all.push("topology.link_loss_rate=0.01");
        let out = run_flows("lossy", FLOWS, &all);
        println!(
            "{sets:?}: retransmissions {}",
            out.summary["retransmissions"]
        );
        assert_eq!(out.summary["flows"]["completed"], 4, "{sets:?}");
        assert!(out.summary["conservation_ok"].as_bool().unwrap());
        assert!(out.summary["retransmissions"].as_u64().unwrap() > 0);
    }
}

#[test]
fn classic_ecn_marks_instead_of_dropping() {
    // Two flows into one host: the 100 KB port overflows without ECN.
    let flows = "0,0,3,5000000\n0,1,3,5000000\n";
    let plain = run_flows("ecn-off", flows, &["transport.kind=newreno"]);
    let ecn = run_flows(
        "ecn-on",
        flows,
        &["transport.kind=newreno", "transport.ecn=true"],
    );
    let drops = |o: &RunOutput| o.summary["packets"]["dropped"].as_u64().unwrap();
    println!("drops without ECN {}, with {}", drops(&plain), drops(&ecn));
    assert!(drops(&plain) > 0);
    assert_eq!(drops(&ecn), 0);
}

#[test]
fn a_rate_capped_flow_takes_bytes_over_rate() {
    let out = run_flows(
        "capped",
        "0,0,3,10000000\n",
        &["transport.kind=newreno", "transport.app_rate_gbps=2"],
    );
    let fct_s = out.flows.fct_us[0] * 1e-6;
    let rate = 10e6 * 8.0 / fct_s;
    println!("capped flow: {:.4} Gb/s", rate / 1e9);
    assert!((rate - 2e9).abs() < 0.01 * 2e9, "{rate}");
}
