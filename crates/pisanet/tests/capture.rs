//! pcap capture and the per-packet trace (`[metrics.pcap]`, `[metrics.trace]`)
//! through the public API: the files parse, the frames carry the model's
//! fields and the schemes' headers, capture does not change the run, and the
//! bounds hold.

use pisanet::capture::TRACE_EVENTS;
use pisanet::{run_toml, ErrorKind, RunOutput};

const SMALL: &str = r#"
[run]
seed = 3
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_link_gbps = 10.0
fabric_link_gbps = 10.0
link_delay_us = 1.0
buffer_kb = 200
ecn_threshold_kb = 65
[transport]
kind = "dctcp"
[workload]
flows = 30
load = 0.5
"#;

fn run(sets: &[&str]) -> RunOutput {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run_toml(SMALL, None, &o, &mut |_| true).unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// The records of a pcap file: (ts_ns, incl bytes, orig_len).
fn records(file: &[u8]) -> Vec<(u64, &[u8], u32)> {
    assert_eq!(
        &file[0..4],
        &0xa1b2_3c4du32.to_le_bytes(),
        "nanosecond magic"
    );
    assert_eq!(
        u32::from_le_bytes(file[20..24].try_into().unwrap()),
        1,
        "Ethernet"
    );
    let u32_at = |o: usize| u32::from_le_bytes(file[o..o + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut o = 24;
    while o < file.len() {
        let ts = u32_at(o) as u64 * 1_000_000_000 + u32_at(o + 4) as u64;
        let incl = u32_at(o + 8) as usize;
        let orig = u32_at(o + 12);
        out.push((ts, &file[o + 16..o + 16 + incl], orig));
        o += 16 + incl;
    }
    assert_eq!(o, file.len());
    out
}

fn pcap<'a>(out: &'a RunOutput, port: &str) -> &'a [u8] {
    &out.capture
        .pcaps
        .iter()
        .find(|(n, _)| n == port)
        .unwrap_or_else(|| panic!("no capture of {port}"))
        .1
}

#[test]
fn capture_writes_frames_and_changes_nothing_else() {
    let plain = run(&[]);
    assert!(plain.capture.pcaps.is_empty() && plain.summary.get("capture").is_none());
    let sets = [
        r#"metrics.pcap.ports=["leaf0->spine0", "h0->leaf0"]"#,
        "metrics.pcap.snaplen=96",
    ];
    let a = run(&sets);
    assert_eq!(a.summary["digest"], plain.summary["digest"]);
    assert_eq!(a.summary["packets"], plain.summary["packets"]);
    let up = records(pcap(&a, "leaf0->spine0"));
    assert!(up.len() > 100, "{} packets", up.len());
    let tx = a
        .ports
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "leaf0->spine0")
        .unwrap();
    assert_eq!(up.len() as u64, tx["tx_packets"].as_u64().unwrap());
    let files = a.summary["capture"]["pcap"]["files"].as_array().unwrap();
    assert_eq!(files[0]["port"], "leaf0->spine0");
    assert_eq!(files[0]["packets"], up.len());
    assert_eq!(files[0]["seen"], up.len());
    let mut last = 0;
    for (ts, bytes, orig) in &up {
        assert!(*ts >= last, "timestamps in order");
        last = *ts;
        assert!(bytes.len() <= 96 && bytes.len() as u32 <= *orig);
        assert_eq!(&bytes[12..14], &[0x08, 0x00], "IPv4");
        assert_eq!(bytes[23], 6, "TCP");
        // leaf0 is node 4 (after 4 hosts); MACs are 02:00 and the node id.
        assert_eq!(&bytes[6..12], &[2, 0, 0, 0, 0, 4]);
    }
    assert!(records(pcap(&a, "h0->leaf0"))
        .iter()
        .all(|r| r.1[6..12] == [2, 0, 0, 0, 0, 0]));
    // Deterministic bytes.
    assert_eq!(run(&sets).capture.pcaps, a.capture.pcaps);
}

#[test]
fn hula_probes_carry_their_header() {
    let out = run(&[
        "scheme.kind=hula",
        r#"metrics.pcap.ports=["spine0->leaf1"]"#,
    ]);
    let recs = records(pcap(&out, "spine0->leaf1"));
    let probes: Vec<_> = recs.iter().filter(|r| r.1[23] == 253).collect();
    assert!(!probes.is_empty(), "probes on a spine's downlink");
    for (_, b, orig) in probes {
        assert_eq!(*orig, 60);
        // tor_id 24 bits, then min_util: probes down to leaf1 come from leaf0's ToR (0).
        let tor = u32::from_be_bytes([0, b[34], b[35], b[36]]);
        assert_eq!(tor, 0);
    }
}

#[test]
fn p4te_shim_sits_between_ipv4_and_tcp() {
    let out = run(&[
        "scheme.kind=p4te",
        r#"metrics.pcap.ports=["leaf0->spine1", "leaf0->spine0"]"#,
    ]);
    let mut shims = 0;
    for port in ["leaf0->spine0", "leaf0->spine1"] {
        for (_, b, _) in records(pcap(&out, port)) {
            if b[23] == 254 {
                shims += 1;
                assert_eq!(b[35], 6, "next_proto TCP");
                assert_eq!(b[46 + 12], 0x50, "a TCP header follows the 12-byte shim");
                // Data from a leaf0 host (its port), or a FACK from its receiver (port 80).
                let sport = u16::from_be_bytes([b[46], b[47]]);
                assert!(
                    sport >= 10_000 || (b[34] & 4 != 0 && sport == 80),
                    "{:?}",
                    &b[14..60]
                );
            }
        }
    }
    assert!(shims > 0, "data from leaf0's hosts carries the shim upward");
}

#[test]
fn max_packets_bounds_a_file_and_warns() {
    let out = run(&[
        r#"metrics.pcap.ports=["leaf0->spine0"]"#,
        "metrics.pcap.max_packets=5",
    ]);
    assert_eq!(records(pcap(&out, "leaf0->spine0")).len(), 5);
    let w = out.summary["warnings"][0].as_str().unwrap();
    assert!(
        w.starts_with("metrics.pcap: pcap/leaf0->spine0.pcap holds its first 5 packets of"),
        "{w}"
    );
}

#[test]
fn trace_follows_one_flow_hop_by_hop() {
    let out = run(&["metrics.trace.flows=[2]"]);
    let t = &out.capture.trace;
    assert!(!t.time_us.is_empty());
    assert!(t.flow.iter().all(|&f| f == 2));
    let ev = |name: &str| TRACE_EVENTS.iter().position(|e| *e == name).unwrap() as u8;
    // Every packet that starts on a wire was queued there first.
    let enq = t
        .event
        .iter()
        .filter(|&&e| e == ev("enqueue") || e == ev("ecn_mark"))
        .count();
    let deq = t.event.iter().filter(|&&e| e == ev("dequeue")).count();
    let drops = t.event.iter().filter(|&&e| e == ev("drop")).count();
    assert_eq!(
        enq,
        deq + drops,
        "{enq} enqueued, {deq} sent, {drops} dropped"
    );
    // One packet: a host NIC, then switches, in time order.
    let uid = t.packet[0];
    let hops: Vec<usize> = (0..t.packet.len())
        .filter(|&i| t.packet[i] == uid)
        .collect();
    assert!(hops.windows(2).all(|w| t.time_us[w[0]] <= t.time_us[w[1]]));
    assert!(t.port[hops[0]].starts_with('h'), "{}", t.port[hops[0]]);
    assert!(hops.len() >= 4, "enqueue and dequeue at two ports at least");
    assert_eq!(out.summary["capture"]["trace"]["rows"], t.time_us.len());
}

#[test]
fn bad_capture_config_is_one_line() {
    let o = vec![r#"metrics.pcap.ports=["leaf0->nowhere"]"#.to_string()];
    let e = run_toml(SMALL, None, &o, &mut |_| true).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Input);
    assert!(
        e.message
            .starts_with("metrics.pcap.ports[0]: no port \"leaf0->nowhere\""),
        "{}",
        e.message
    );
    let o = vec!["metrics.pcap.flows=[1]".to_string()];
    let e = run_toml(SMALL, None, &o, &mut |_| true).unwrap_err();
    assert_eq!(
        e.message,
        "metrics.pcap.flows: needs metrics.pcap.ports (the ports to capture)"
    );
}
