//! Go-back-N for rate-based (UDP) hosts end to end (`transport.go_back_n`):
//! a lossy UDP incast completes every flow with every byte delivered in
//! order and retransmissions counted; without it, loss stays visible.

mod common;

use pisanet::{run_toml, RunOutput};

fn tmpdir(name: &str) -> std::path::PathBuf {
    common::tmpdir("gbn", name)
}

/// A 2 x 2 leaf-spine (hosts 0, 1 under leaf0; 2, 3 under leaf1), 10 Gb/s,
/// 1 us links, small buffers.
const SMALL: &str = small_leaf_spine!(60, 30);

fn run(name: &str, extra: &str, flows: &str, sets: &[&str]) -> RunOutput {
    common::run_flows("gbn", name, &format!("{SMALL}\n{extra}"), flows, sets)
}

/// Three senders at 4 Gb/s each into host 3's 10 Gb/s link (overflowing
/// its buffer), and 1 % loss on every link.
const INCAST: &str = "0,0,3,600000\n0,1,3,600000\n0,2,3,600000\n";
const UDP: &str = "[transport]\nkind = \"udp\"\nudp_rate_gbps = 4";

#[test]
fn a_lossy_udp_incast_with_go_back_n_delivers_every_byte() {
    let sets = ["topology.link_loss_rate=0.01", "transport.go_back_n=true"];
    let out = run("incast-gbn", UDP, INCAST, &sets);
    assert_eq!(out.summary["stop_reason"], "all_flows_done");
    assert_eq!(out.summary["conservation_ok"], true);
    assert_eq!(out.summary["flows"]["completed"], 3);
    assert!(out.summary["packets"]["dropped"].as_u64().unwrap() > 0);
    for i in 0..3 {
        assert_eq!(out.flows.bytes[i], 600_000, "flow {i}");
        assert_eq!(out.flows.delivered[i], 600_000, "flow {i}");
        assert_eq!(out.flows.lost_packets[i], 0, "flow {i}");
        assert_eq!(out.flows.lost_bytes[i], 0, "flow {i}");
        assert!(out.flows.retransmissions[i] > 0, "flow {i}");
        assert!(!out.flows.fct_us[i].is_nan());
    }
}

#[test]
fn without_go_back_n_the_same_incast_loses_bytes() {
    let out = run(
        "incast-plain",
        UDP,
        INCAST,
        &["topology.link_loss_rate=0.01"],
    );
    assert_eq!(out.summary["flows"]["completed"], 3);
    let lost: u64 = out.flows.lost_bytes.iter().sum();
    assert!(lost > 0);
    assert!(out.flows.retransmissions.iter().all(|&r| r == 0));
    assert!((0..3).all(|i| out.flows.delivered[i] + out.flows.lost_bytes[i] == 600_000));
}

#[test]
fn per_flow_udp_flows_of_a_tcp_run_use_go_back_n() {
    // A DCTCP run (the default) whose two UDP rows overload host 3 beside a
    // TCP flow: the UDP flows recover their losses too.
    let flows = "start_us,src,dst,bytes,transport,rate_gbps\n\
                 0,0,3,400000,udp,6\n\
                 0,1,3,400000,udp,6\n\
                 0,2,3,400000,tcp,\n";
    let out = run("mixed-gbn", "", flows, &["transport.go_back_n=true"]);
    assert_eq!(out.summary["conservation_ok"], true);
    assert_eq!(out.summary["flows"]["completed"], 3);
    assert_eq!(out.flows.transport, vec![1, 1, 0]);
    for i in 0..3 {
        assert_eq!(out.flows.delivered[i], 400_000, "flow {i}");
    }
    assert!(out.flows.retransmissions[0] + out.flows.retransmissions[1] > 0);
}

#[test]
fn go_back_n_settings_without_go_back_n_are_refused_as_unread() {
    let d = tmpdir("unread");
    std::fs::write(d.join("flows.csv"), INCAST).unwrap();
    let text = format!("{SMALL}\n{UDP}\n[workload]\npattern = \"file\"\nfile = \"flows.csv\"\n");
    let sets = vec!["transport.gbn_timeout_us=100".to_string()];
    let Err(e) = run_toml(&text, Some(&d), &sets, &mut |_| true) else {
        panic!("an unread key is refused");
    };
    assert!(e.to_string().contains("transport.gbn_timeout_us"), "{e}");
    assert!(!e.to_string().contains('\n'), "{e}");
}
