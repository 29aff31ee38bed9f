use super::*;

fn ends() -> FlowEnds {
    FlowEnds {
        flow: 9,
        src_addr: 1,
        dst_addr: 2,
        sport: 5000,
        dport: 6000,
        dscp: 3,
        prio: 1,
    }
}

#[test]
fn source_paces_datagrams_at_the_wire_rate() {
    // 1472 B payload = 1518 B frames; at 10 Gb/s one every 1.2144 us.
    let mut src = UdpCbrSource::new(ends(), BitRate::from_gbps(10.0), 1472, 3 * 1472 + 100);
    let mut out = Vec::new();
    src.on_start(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 1);
    let gap = SimTime::from_ps(1_214_400);
    assert_eq!(src.timer_deadline(), Some(gap));
    // Early call: nothing.
    src.on_timer(SimTime::from_ns(1000), &mut out);
    assert_eq!(out.len(), 1);
    src.on_timer(gap, &mut out);
    // A late wake-up does not shift the schedule.
    src.on_timer(gap + gap + SimTime::from_ns(300), &mut out);
    assert_eq!(src.timer_deadline(), Some(gap + gap + gap));
    src.on_timer(SimTime::from_us(10), &mut out);
    assert_eq!(out.len(), 4);
    assert!(src.is_complete());
    assert_eq!(src.timer_deadline(), None);
    let payloads: Vec<u32> = out.iter().map(|p| p.payload()).collect();
    assert_eq!(payloads, vec![1472, 1472, 1472, 100]);
    let p = &out[3];
    assert_eq!(
        (p.size, p.flow, p.ip.proto, p.ip.dscp, p.prio),
        (146, 9, PROTO_UDP, 3, 1)
    );
    assert_eq!(p.five_tuple(), (1, 2, PROTO_UDP, 5000, 6000));
    assert_eq!(p.sent_at, SimTime::from_us(10));
}

#[test]
fn zero_rate_or_empty_source_sends_nothing() {
    let mut out = Vec::new();
    let mut a = UdpCbrSource::new(ends(), BitRate(0), 1000, 5000);
    a.on_start(SimTime::ZERO, &mut out);
    let mut b = UdpCbrSource::new(ends(), BitRate::from_gbps(1.0), 1000, 0);
    b.on_start(SimTime::ZERO, &mut out);
    assert!(out.is_empty());
    assert_eq!((a.timer_deadline(), b.timer_deadline()), (None, None));
}

#[test]
fn sink_counts_bytes_and_reordering() {
    let mut src = UdpCbrSource::new(ends(), BitRate::from_gbps(1.0), 1000, 5000);
    let mut out = Vec::new();
    src.on_start(SimTime::ZERO, &mut out);
    while let Some(t) = src.timer_deadline() {
        src.on_timer(t, &mut out);
    }
    assert_eq!(out.len(), 5);
    let mut sink = UdpSink::new();
    for i in [0, 2, 1, 3, 4] {
        sink.on_packet(out[i].sent_at + SimTime::from_us(5), &out[i]);
    }
    assert_eq!(sink.received_bytes(), 5000);
    assert_eq!(sink.received_packets(), 5);
    assert_eq!(sink.reordered_packets(), 1);
    assert_eq!(sink.mean_latency(), Some(SimTime::from_us(5)));
}
