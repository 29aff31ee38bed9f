"""One ns-3 3.44 run of a cross-check scenario (run by crosscheck.py in .venv-ns3).

Usage: ns3_sim.py SPEC.json OUT.json

SPEC (written by crosscheck.py) holds the topology (nodes and links, as in
pisanet's `custom` topology), the flow list (start_us, src, dst, bytes; hosts
numbered in node order, as pisanet numbers them), the TCP variant, the switch
queue (packets or bytes, RED ECN marking at K for DCTCP) and a dict of ns-3
attribute defaults (`attrs`: "ns3::TcpSocket::SegmentSize" -> "1460", ...).

Every switch egress port gets the queue disc; each host NIC a FIFO queue disc
of 100000 packets (pisanet's host NIC is an unbounded FIFO). Every device's own
transmit queue holds 1 packet, so the queue disc holds the queue (traffic
control stops it while the device is busy). Each flow is a BulkSendApplication
(MaxBytes = flow bytes) started at start_us towards a PacketSink on port 5000.

FCT of a flow = the last packet the sender received on the connection (the ACK
of its last byte; the receiving PacketSink never closes, so nothing follows it)
minus start_us, from FlowMonitor: the same definition as pisanet's (start to
the last byte acknowledged), the handshake included. A flow whose receiver
did not get all its bytes (the sender gave up: `TcpSocket::DataRetries` or
`SynRetries`, 6 each) gets no FCT (NaN) and is listed in "incomplete".
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from ns import ns  # type: ignore[import-not-found]

SINK_PORT = 5000

# Optional per-socket trace (spec["trace"] = output path): every TCP socket's
# congestion-state changes (CA_OPEN 0, CA_DISORDER 1, CA_CWR 2, CA_RECOVERY 3,
# CA_LOSS 4: an RTO), RTO and RTT updates, segments sent and received, one
# line each: "time_ns path event a b" (rx / rxe: ACK number and payload bytes of a
# received segment, rxe when it carries ECE; tx: sequence number and payload of
# a sent one; cwnd / ssth: old and new value in bytes). Connected at each flow
# start. With spec["trace_nics"] = [host names], also those hosts' NIC queue
# disc lengths ("nic-HOST qlen old new", in packets); with spec["trace_qlen"]
# = [switch queue-disc numbers], theirs ("qdiscN qlen old new"); with
# spec["trace_alpha"], each DCTCP socket's alpha at the end of each
# observation window ("alpha marked_bytes acked_bytes alpha x 1e6"); with
# spec["trace_ecn"], each socket's ECN state changes ("ecn old new", ns-3's
# TcpSocketState::EcnState_t: 0 disabled, 1 idle, 2 CE received, 3 sending
# ECE, 4 ECE received, 5 CWR sent), the sequence number of the last CE
# segment it accepted as new ("ceseq old new", TcpSocketBase's m_ecnCESeq)
# and the segments without payload it sends ("txack ack_number tcp_flags").
TRACE_CPP = r"""
#include <fstream>
#include <set>
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/tcp-header.h"
namespace xc {
using namespace ns3;
static std::ofstream out;
static std::set<Object*> seen;
static void Cong(std::string ctx, TcpSocketState::TcpCongState_t a, TcpSocketState::TcpCongState_t b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " cong " << int(a) << " " << int(b) << "\n";
}
static void Rto(std::string ctx, Time a, Time b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " rto " << a.GetNanoSeconds() << " " << b.GetNanoSeconds() << "\n";
}
static void Rtt(std::string ctx, Time a, Time b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " rtt " << a.GetNanoSeconds() << " " << b.GetNanoSeconds() << "\n";
}
static void Tx(std::string ctx, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  if (p->GetSize() > 0)
    out << Simulator::Now().GetNanoSeconds() << " " << ctx << " tx " << h.GetSequenceNumber().GetValue() << " " << p->GetSize() << "\n";
}
static void Rx(std::string ctx, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  const char* ev = (h.GetFlags() & TcpHeader::ECE) ? " rxe " : " rx ";
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << ev << h.GetAckNumber().GetValue() << " " << p->GetSize() << "\n";
}
static bool traceEcn = false;
static void EcnState(std::string ctx, TcpSocketState::EcnState_t a, TcpSocketState::EcnState_t b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " ecn " << int(a) << " " << int(b) << "\n";
}
static void CeSeq(std::string ctx, SequenceNumber32 a, SequenceNumber32 b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " ceseq " << a.GetValue() << " " << b.GetValue() << "\n";
}
static void TxAck(std::string ctx, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  if (p->GetSize() == 0)
    out << Simulator::Now().GetNanoSeconds() << " " << ctx << " txack " << h.GetAckNumber().GetValue() << " " << int(h.GetFlags()) << "\n";
}
static void Cwnd(std::string ctx, uint32_t a, uint32_t b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " cwnd " << a << " " << b << "\n";
}
static void Ssth(std::string ctx, uint32_t a, uint32_t b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " ssth " << a << " " << b << "\n";
}
// TcpDctcp's CongestionEstimate (spec["trace_alpha"]): at the end of each
// observation window, bytes acknowledged with ECE, bytes acknowledged, and
// the new alpha ("alpha" line: marked bytes, acked bytes, alpha x 1e6).
static bool traceAlpha = false;
static void Alpha(std::string ctx, uint32_t marked, uint32_t acked, double alpha) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " alpha " << marked << " " << acked << " "
      << int64_t(alpha * 1e6) << "\n";
}
static void Qlen(std::string ctx, uint32_t a, uint32_t b) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " qlen " << a << " " << b << "\n";
}
static void Drop(std::string ctx, Ptr<const QueueDiscItem> item) {
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " drop 0 0\n";
}
// A switch queue disc's packet: reason, IP ECN bits (0 not-ECT, 1 ECT(1),
// 2 ECT(0), 3 CE), TCP flags, ports, sequence, payload bytes.
static void Pkt(const char* ev, std::string ctx, Ptr<const QueueDiscItem> item, const char* reason) {
  Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
  if (!ip) return;
  TcpHeader t;
  Ptr<Packet> p = ip->GetPacket()->Copy();
  p->RemoveHeader(t);
  out << Simulator::Now().GetNanoSeconds() << " " << ctx << " " << ev << " " << int(ip->GetHeader().GetTos() & 3)
      << " " << int(t.GetFlags()) << " " << t.GetSourcePort() << " " << t.GetDestinationPort()
      << " " << t.GetSequenceNumber().GetValue() << " " << p->GetSize() << " " << reason << "\n";
}
static void DropR(std::string ctx, Ptr<const QueueDiscItem> item, const char* reason) { Pkt("qdrop", ctx, item, reason); }
static void MarkR(std::string ctx, Ptr<const QueueDiscItem> item, const char* reason) { Pkt("qmark", ctx, item, reason); }
static void Enq(std::string ctx, Ptr<const QueueDiscItem> item) {
  Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
  if (!ip) return;
  TcpHeader t;
  ip->GetPacket()->PeekHeader(t);
  if (t.GetFlags() & TcpHeader::SYN) Pkt("qsyn", ctx, item, "enqueue");
}
void ConnectReasons(Ptr<QueueDisc> q, std::string ctx) {
  q->TraceConnect("DropBeforeEnqueue", ctx, MakeCallback(&DropR));
  q->TraceConnect("DropAfterDequeue", ctx, MakeCallback(&DropR));
  q->TraceConnect("Mark", ctx, MakeCallback(&MarkR));
  q->TraceConnect("Enqueue", ctx, MakeCallback(&Enq));
}
void Open(std::string path) { out.open(path); }
void Close() { out.close(); }
void ConnectAll() {
  Config::MatchContainer m = Config::LookupMatches("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*");
  for (uint32_t i = 0; i < m.GetN(); i++) {
    Ptr<Object> o = m.Get(i);
    if (seen.count(PeekPointer(o))) continue;
    seen.insert(PeekPointer(o));
    std::string ctx = m.GetMatchedPath(i);
    o->TraceConnect("CongState", ctx, MakeCallback(&Cong));
    o->TraceConnect("RTO", ctx, MakeCallback(&Rto));
    o->TraceConnect("RTT", ctx, MakeCallback(&Rtt));
    o->TraceConnect("Tx", ctx, MakeCallback(&Tx));
    o->TraceConnect("Rx", ctx, MakeCallback(&Rx));
    o->TraceConnect("CongestionWindow", ctx, MakeCallback(&Cwnd));
    o->TraceConnect("SlowStartThreshold", ctx, MakeCallback(&Ssth));
    if (traceEcn) {
      o->TraceConnect("EcnState", ctx, MakeCallback(&EcnState));
      o->TraceConnect("EcnCeSeq", ctx, MakeCallback(&CeSeq));
      o->TraceConnect("Tx", ctx, MakeCallback(&TxAck));
    }
    if (traceAlpha) {
      PointerValue cc;
      o->GetAttribute("CongestionOps", cc);
      Ptr<Object> ops = cc.Get<Object>();
      if (ops) ops->TraceConnect("CongestionEstimate", ctx, MakeCallback(&Alpha));
    }
  }
}
void TraceAlpha() { traceAlpha = true; }
void TraceEcn() { traceEcn = true; }
void ScheduleConnect(uint64_t at_ns) { Simulator::Schedule(NanoSeconds(at_ns), &ConnectAll); }
void ConnectDrops(Ptr<QueueDisc> q, std::string ctx) {
  q->TraceConnect("Drop", ctx, MakeCallback(&Drop));
}
void ConnectQlen(Ptr<QueueDisc> q, std::string ctx) {
  q->TraceConnect("PacketsInQueue", ctx, MakeCallback(&Qlen));
}
}
"""


# Optional TCP counters (spec["count_tcp"]): over every socket, data segments
# resent (a segment whose end is not beyond the highest byte the socket had
# sent), duplicate ACKs received (an ACK without payload for the same number
# as the previous one while data is outstanding), entries into fast recovery
# (CA_RECOVERY) and RTO expiries (CA_LOSS). Connected at each flow start.
COUNT_CPP = r"""
#include <map>
#include <set>
namespace xcnt {
using namespace ns3;
struct Sock { uint32_t high = 0; uint32_t lastAck = 0; bool any = false; };
static std::map<const TcpSocketBase*, Sock> socks;
static std::set<Object*> seen;
static uint64_t retx = 0, dupacks = 0, recoveries = 0, rtos = 0, segs = 0;
static void Tx(std::string ctx, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  uint32_t n = p->GetSize();
  if (n == 0) return;
  Sock& k = socks[PeekPointer(s)];
  uint32_t end = h.GetSequenceNumber().GetValue() + n;
  segs++;
  if (k.any && int32_t(end - k.high) <= 0) retx++;
  else { k.high = end; k.any = true; }
}
static void Rx(std::string ctx, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s) {
  Sock& k = socks[PeekPointer(s)];
  uint32_t a = h.GetAckNumber().GetValue();
  if (p->GetSize() == 0 && k.any && a == k.lastAck && int32_t(k.high - a) > 0
      && !(h.GetFlags() & (TcpHeader::SYN | TcpHeader::FIN))) dupacks++;
  k.lastAck = a;
}
static void Cong(std::string ctx, TcpSocketState::TcpCongState_t a, TcpSocketState::TcpCongState_t b) {
  if (b == TcpSocketState::CA_RECOVERY && a != b) recoveries++;
  if (b == TcpSocketState::CA_LOSS && a != b) rtos++;
}
void ConnectAll() {
  Config::MatchContainer m = Config::LookupMatches("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*");
  for (uint32_t i = 0; i < m.GetN(); i++) {
    Ptr<Object> o = m.Get(i);
    if (seen.count(PeekPointer(o))) continue;
    seen.insert(PeekPointer(o));
    std::string ctx = m.GetMatchedPath(i);
    o->TraceConnect("Tx", ctx, MakeCallback(&Tx));
    o->TraceConnect("Rx", ctx, MakeCallback(&Rx));
    o->TraceConnect("CongState", ctx, MakeCallback(&Cong));
  }
}
void ScheduleConnect(uint64_t at_ns) { Simulator::Schedule(NanoSeconds(at_ns), &ConnectAll); }
uint64_t Retx() { return retx; }
uint64_t DupAcks() { return dupacks; }
uint64_t Recoveries() { return recoveries; }
uint64_t Rtos() { return rtos; }
uint64_t Segs() { return segs; }
}
"""

# Bytes each PacketSink received, per (local address, peer address, peer
# port), from its RxWithAddresses trace (always connected; a few map updates
# per packet).
RX_CPP = r"""
#include <map>
#include <tuple>
#include <vector>
namespace xrx {
using namespace ns3;
static std::map<std::tuple<uint32_t, uint32_t, uint16_t>, uint64_t> bytes;
static std::vector<std::tuple<uint32_t, uint32_t, uint16_t, uint64_t>> flat;
static void Rx(Ptr<const Packet> p, const Address& from, const Address& local) {
  InetSocketAddress f = InetSocketAddress::ConvertFrom(from);
  InetSocketAddress l = InetSocketAddress::ConvertFrom(local);
  bytes[std::make_tuple(f.GetIpv4().Get(), l.GetIpv4().Get(), f.GetPort())] += p->GetSize();
}
void Connect(Ptr<Application> a) { a->TraceConnectWithoutContext("RxWithAddresses", MakeCallback(&Rx)); }
uint32_t N() {
  flat.clear();
  for (auto& kv : bytes) flat.emplace_back(std::get<0>(kv.first), std::get<1>(kv.first), std::get<2>(kv.first), kv.second);
  return flat.size();
}
uint32_t Addr(uint32_t k) { return std::get<0>(flat[k]); }
uint32_t Local(uint32_t k) { return std::get<1>(flat[k]); }
uint16_t Port(uint32_t k) { return std::get<2>(flat[k]); }
uint64_t Bytes(uint32_t k) { return std::get<3>(flat[k]); }
}
"""

# Flow-hash ECMP for ns-3 (spec["routing"] = "flowhash"): ns-3 3.44's global
# routing either takes the first of several equal-cost routes or, with
# RandomEcmpRouting, a random one per packet. This subclass of
# Ipv4GlobalRouting forwards a packet with several equal-cost routes by a hash
# of its 5-tuple (src, dst, protocol, TCP ports) and a salt (spec["hash_salt"]),
# so a connection keeps one path; the routes themselves are ns-3's (the same
# candidate set as LookupGlobal: the host routes to the destination, else
# every matching network route). Packets for this node, multicast and
# single-route packets go to Ipv4GlobalRouting::RouteInput unchanged.
HASH_CPP = r"""
#include "ns3/ipv4-global-routing.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/global-router-interface.h"
#include "ns3/hash.h"
#include "ns3/tcp-header.h"
namespace xhash {
using namespace ns3;
static uint32_t salt = 0;
static uint64_t picks[8] = {0};
class HashRouting : public Ipv4GlobalRouting {
 public:
  void SetIpv4(Ptr<Ipv4> ipv4) override { m_ip = ipv4; Ipv4GlobalRouting::SetIpv4(ipv4); }
  void DoDispose() override { m_ip = nullptr; Ipv4GlobalRouting::DoDispose(); }
  bool RouteInput(Ptr<const Packet> p, const Ipv4Header& h, Ptr<const NetDevice> idev,
                  const UnicastForwardCallback& ucb, const MulticastForwardCallback& mcb,
                  const LocalDeliverCallback& lcb, const ErrorCallback& ecb) override {
    Ipv4Address dst = h.GetDestination();
    int32_t iif = m_ip->GetInterfaceForDevice(idev);
    if (dst.IsMulticast() || dst.IsBroadcast() || m_ip->IsDestinationAddress(dst, iif) || h.GetProtocol() != 6)
      return Ipv4GlobalRouting::RouteInput(p, h, idev, ucb, mcb, lcb, ecb);
    std::vector<Ipv4RoutingTableEntry*> hostR, netR;
    for (uint32_t i = 0; i < GetNRoutes(); i++) {
      Ipv4RoutingTableEntry* e = GetRoute(i);
      if (e->IsHost() && e->GetDest() == dst) hostR.push_back(e);
      else if (e->IsNetwork() && e->GetDestNetworkMask().IsMatch(e->GetDestNetwork(), dst)) netR.push_back(e);
    }
    std::vector<Ipv4RoutingTableEntry*>& c = hostR.empty() ? netR : hostR;
    if (c.size() < 2) return Ipv4GlobalRouting::RouteInput(p, h, idev, ucb, mcb, lcb, ecb);
    TcpHeader t;
    p->PeekHeader(t);
    uint8_t buf[17];
    uint32_t s = h.GetSource().Get(), d = dst.Get();
    uint16_t sp = t.GetSourcePort(), dp = t.GetDestinationPort();
    memcpy(buf, &s, 4); memcpy(buf + 4, &d, 4); buf[8] = 6;
    memcpy(buf + 9, &sp, 2); memcpy(buf + 11, &dp, 2); memcpy(buf + 13, &salt, 4);
    uint32_t k = Hash32((const char*)buf, 17) % c.size();
    picks[k % 8]++;
    Ipv4RoutingTableEntry* e = c[k];
    Ptr<Ipv4Route> r = Create<Ipv4Route>();
    r->SetDestination(e->GetDest());
    r->SetSource(m_ip->GetAddress(e->GetInterface(), 0).GetLocal());
    r->SetGateway(e->GetGateway());
    r->SetOutputDevice(m_ip->GetNetDevice(e->GetInterface()));
    ucb(r, p, h);
    return true;
  }
 private:
  Ptr<Ipv4> m_ip;
};
class HashRoutingHelper : public Ipv4RoutingHelper {
 public:
  HashRoutingHelper* Copy() const override { return new HashRoutingHelper(*this); }
  Ptr<Ipv4RoutingProtocol> Create(Ptr<Node> node) const override {
    // As Ipv4GlobalRoutingHelper::Create, with the subclass.
    Ptr<GlobalRouter> router = CreateObject<GlobalRouter>();
    node->AggregateObject(router);
    Ptr<HashRouting> routing = CreateObject<HashRouting>();
    router->SetRoutingProtocol(routing);
    return routing;
  }
};
void SetSalt(uint32_t v) { salt = v; }
uint64_t Picks(int i) { return picks[i]; }
}
"""

# Optional attribute changes during the run (spec["set_at"] = [[time_ns,
# config path, value], ...]): Config::Set at that time, e.g. one socket's
# ClockGranularity, to test what a single socket's setting changes (trace
# scripts only; the cross-check's runs have none).
SET_AT_CPP = r"""
namespace xset {
using namespace ns3;
static void Set(std::string path, std::string value) { Config::Set(path, StringValue(value)); }
void At(uint64_t at_ns, std::string path, std::string value) {
  Simulator::Schedule(NanoSeconds(at_ns), &Set, path, value);
}
}
"""


# Optional DCTCP with pisanet's rules in ns-3 (spec["dctcp_rules"] = {"alpha":
# bool, "ca": bool}; trace scripts only): a TcpDctcp whose ECN cut uses an
# alpha of its own, updated as pisanet's dctcp.rs does ("alpha": an
# observation window ends when the ACK passes the highest byte sent at its
# start, `m_highTxMark`, where TcpDctcp ends it at `m_nextTxSequence`, which
# a resend moves back), and whose congestion avoidance counts bytes as
# pisanet's NewReno does ("ca": a segment per cwnd bytes acknowledged, the
# count reset at each cut, where TcpLinuxReno adds one per floor(cwnd / SMSS)
# segments and keeps its count across cuts). Everything else is TcpDctcp's.
RULES_CPP = r"""
#include "ns3/tcp-dctcp.h"
namespace xrules {
using namespace ns3;
static bool alphaRule = false, caRule = false;
class PisaDctcp : public TcpDctcp {
 public:
  static TypeId GetTypeId() {
    static TypeId tid = TypeId("xrules::PisaDctcp").SetParent<TcpDctcp>().SetGroupName("Internet")
      .AddConstructor<PisaDctcp>();
    return tid;
  }
  PisaDctcp() : TcpDctcp() {}
  PisaDctcp(const PisaDctcp& o) : TcpDctcp(o), m_a(o.m_a), m_end(o.m_end), m_started(o.m_started),
    m_acked(o.m_acked), m_marked(o.m_marked), m_caBytes(o.m_caBytes) {}
  std::string GetName() const override { return "PisaDctcp"; }
  Ptr<TcpCongestionOps> Fork() override { return CopyObject<PisaDctcp>(this); }
  uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t inFlight) override {
    m_caBytes = 0;
    if (!alphaRule) return TcpDctcp::GetSsThresh(tcb, inFlight);
    return static_cast<uint32_t>((1 - m_a / 2.0) * tcb->m_cWnd);
  }
  void PktsAcked(Ptr<TcpSocketState> tcb, uint32_t segs, const Time& rtt) override {
    TcpDctcp::PktsAcked(tcb, segs, rtt);
    m_acked += segs * tcb->m_segmentSize;
    if (tcb->m_ecnState == TcpSocketState::ECN_ECE_RCVD) m_marked += segs * tcb->m_segmentSize;
    if (!m_started) { m_end = tcb->m_highTxMark; m_started = true; }
    if (tcb->m_lastAckedSeq > m_end) {
      double f = m_acked > 0 ? double(m_marked) / double(m_acked) : 0.0;
      m_a = (1.0 - 1.0 / 16) * m_a + f / 16;
      m_end = tcb->m_highTxMark;
      m_acked = m_marked = 0;
    }
  }
 protected:
  void CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segs) override {
    if (!caRule) { TcpDctcp::CongestionAvoidance(tcb, segs); return; }
    m_caBytes += uint64_t(segs) * tcb->m_segmentSize;
    if (m_caBytes >= tcb->m_cWnd) { m_caBytes -= tcb->m_cWnd; tcb->m_cWnd += tcb->m_segmentSize; }
  }
 private:
  double m_a = 1.0;
  SequenceNumber32 m_end{0};
  bool m_started = false;
  uint64_t m_acked = 0, m_marked = 0, m_caBytes = 0;
};
NS_OBJECT_ENSURE_REGISTERED(PisaDctcp);
void Set(bool a, bool c) { alphaRule = a; caRule = c; PisaDctcp::GetTypeId(); }
}
"""


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    wall = time.time()
    ns.RngSeedManager.SetSeed(spec.get("seed", 1))
    cc = {"newreno": "ns3::TcpNewReno", "dctcp": "ns3::TcpDctcp"}[spec["cc"]]
    if spec.get("dctcp_rules") and spec["cc"] == "dctcp":
        ns.cppyy.cppdef(RULES_CPP)
        rules = spec["dctcp_rules"]
        ns.cppyy.gbl.xrules.Set(bool(rules.get("alpha")), bool(rules.get("ca")))
        cc = "xrules::PisaDctcp"
    ns.Config.SetDefault(
        "ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(cc))
    )
    for key, value in spec["attrs"].items():
        ns.Config.SetDefault(key, ns.StringValue(str(value)))

    # A segment must fit the links' 1500 B MTU, or IP fragments it and the
    # packet-counted queues hold two packets per segment (checked, not fixed).
    seg = int(spec["attrs"].get("ns3::TcpSocket::SegmentSize", 536))
    ts = str(spec["attrs"].get("ns3::TcpSocketBase::Timestamp", "true")).lower() != "false"
    if seg + 40 + (12 if ts else 0) > 1500:
        sys.exit(f"ns3_sim: SegmentSize {seg} with timestamps {ts} exceeds the 1500 B MTU")

    names = [n["name"] for n in spec["nodes"]]
    kinds = {n["name"]: n["kind"] for n in spec["nodes"]}
    hosts = [n for n in names if kinds[n] == "host"]
    nodes = ns.NodeContainer()
    nodes.Create(len(names))
    node_of = {name: nodes.Get(i) for i, name in enumerate(names)}
    if spec.get("spray") or spec.get("routing") == "spray":
        # Before the stack is installed: a default reaches only the
        # Ipv4GlobalRouting objects created after it is set.
        ns.Config.SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", ns.BooleanValue(True))
    stack = ns.InternetStackHelper()
    if spec.get("routing") == "flowhash":
        ns.cppyy.cppdef(HASH_CPP)
        xh = ns.cppyy.gbl.xhash
        xh.SetSalt(int(spec.get("hash_salt", 0)))
        routing = ns.Ipv4ListRoutingHelper()
        static = ns.Ipv4StaticRoutingHelper()
        hashed = xh.HashRoutingHelper()
        routing.Add(static, 0)
        routing.Add(hashed, -10)
        stack.SetRoutingHelper(routing)
    stack.InstallAll()

    q = spec["queue"]
    switch_tc = ns.TrafficControlHelper()
    limit = f"{q['limit_pkts']}p" if q.get("limit_pkts") else f"{q['limit_bytes']}B"
    if q.get("ecn_k_pkts"):
        # DCTCP marking as in ns-3's examples/tcp/dctcp-example.cc: RED on the
        # instantaneous queue (QW = 1), MinTh = MaxTh = K and Gentle off:
        # mark every ECT packet arriving to K or more queued packets (RED's
        # forced region; with Gentle on it would only begin at 2 K).
        k = float(q["ecn_k_pkts"])
        switch_tc.SetRootQueueDisc(
            "ns3::RedQueueDisc",
            "MaxSize",
            ns.QueueSizeValue(ns.QueueSize(limit)),
            "UseEcn",
            ns.BooleanValue(True),
            "UseHardDrop",
            ns.BooleanValue(False),
            "QW",
            ns.DoubleValue(1.0),
            "MinTh",
            ns.DoubleValue(k),
            "MaxTh",
            ns.DoubleValue(k),
            "MeanPktSize",
            ns.UintegerValue(1500),
            "Gentle",
            ns.BooleanValue(False),
        )
    else:
        switch_tc.SetRootQueueDisc(
            "ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize(limit))
        )
    host_tc = ns.TrafficControlHelper()
    host_tc.SetRootQueueDisc(
        "ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize("100000p"))
    )

    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))
    host_addr: dict[str, object] = {}
    switch_qdiscs = []
    host_qdiscs: dict[str, object] = {}
    for link in spec["links"]:
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{link['gbps']}Gbps"))
        p2p.SetChannelAttribute("Delay", ns.StringValue(f"{link['delay_us']}us"))
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))
        devs = p2p.Install(node_of[link["a"]], node_of[link["b"]])
        for i, end in enumerate((link["a"], link["b"])):
            one = ns.NetDeviceContainer(devs.Get(i))
            if kinds[end] == "switch":
                qdc = switch_tc.Install(one)
                switch_qdiscs.append(qdc.Get(0))
            else:
                hq = host_tc.Install(one)
                host_qdiscs[end] = hq.Get(0)
        ifs = addr.Assign(devs)
        addr.NewNetwork()
        for i, end in enumerate((link["a"], link["b"])):
            if kinds[end] == "host":
                host_addr[end] = ifs.GetAddress(i)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    sink = ns.PacketSinkHelper(
        "ns3::TcpSocketFactory",
        ns.InetSocketAddress(ns.Ipv4Address.GetAny(), SINK_PORT).ConvertTo(),
    )
    sinks = sink.Install(_hosts(node_of, hosts))
    sinks.Start(ns.Seconds(0.0))
    ns.cppyy.cppdef(RX_CPP)
    for i in range(sinks.GetN()):
        ns.cppyy.gbl.xrx.Connect(sinks.Get(i))

    flows = spec["flows"]
    for f in flows:
        src, dst = hosts[f["src"]], hosts[f["dst"]]
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(host_addr[dst], SINK_PORT).ConvertTo(),
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(int(f["bytes"])))
        bulk.SetAttribute(
            "SendSize",
            ns.UintegerValue(int(spec["attrs"].get("ns3::TcpSocket::SegmentSize", 1460))),
        )
        apps = bulk.Install(node_of[src])
        apps.Start(ns.NanoSeconds(round(float(f["start_us"]) * 1000)))

    if spec.get("trace"):
        ns.cppyy.cppdef(TRACE_CPP)
        xc = ns.cppyy.gbl.xc
        xc.Open(spec["trace"])
        for i, qd in enumerate(switch_qdiscs):
            xc.ConnectDrops(qd, f"qdisc{i}")
            if spec.get("trace_qdisc"):
                # Per packet dropped or marked (and every SYN enqueued):
                # its ECN bits, TCP flags and the queue disc's reason.
                xc.ConnectReasons(qd, f"qdisc{i}")
        # NIC queue length of the hosts named in spec["trace_nics"].
        for h in spec.get("trace_nics", []):
            xc.ConnectQlen(host_qdiscs[h], f"nic-{h}")
        # Queue-disc length (packets) of the switch ports numbered in
        # spec["trace_qlen"] (in link order, as the qdisc<i> contexts).
        for i in spec.get("trace_qlen", []):
            xc.ConnectQlen(switch_qdiscs[int(i)], f"qdisc{int(i)}")
        if spec.get("trace_alpha"):
            xc.TraceAlpha()
        if spec.get("trace_ecn"):
            xc.TraceEcn()
        for t_ns in sorted({round(float(f["start_us"]) * 1000) for f in flows}):
            # Sockets exist once the applications started (and the sinks'
            # accepted ones after the SYN): connect shortly after each start.
            for dt_ns in (1, 20_000):
                xc.ScheduleConnect(t_ns + dt_ns)

    if spec.get("set_at"):
        ns.cppyy.cppdef(SET_AT_CPP)
        for at_ns, path, value in spec["set_at"]:
            ns.cppyy.gbl.xset.At(int(at_ns), str(path), str(value))

    if spec.get("count_tcp"):
        ns.cppyy.cppdef(COUNT_CPP)
        for t_ns in sorted({round(float(f["start_us"]) * 1000) for f in flows}):
            for dt_ns in (1, 20_000):
                ns.cppyy.gbl.xcnt.ScheduleConnect(t_ns + dt_ns)

    fm_helper = ns.FlowMonitorHelper()
    monitor = fm_helper.InstallAll()
    ns.Simulator.Stop(ns.Seconds(spec["stop_s"]))
    ns.Simulator.Run()
    monitor.CheckForLostPackets()
    classifier = fm_helper.GetClassifier()
    classifier = ns.DynamicCast[ns.Ipv4FlowClassifier](classifier)

    addr_host = {str(a): h for h, a in host_addr.items()}
    host_index = {h: i for i, h in enumerate(hosts)}
    # Per (src, dst) pair: connections by (first sent, port) = flows by (start, index).
    fwd: dict[tuple[int, int], list[tuple[int, int, float, int]]] = {}
    back: dict[tuple[int, int, int], float] = {}
    for item in monitor.GetFlowStats():
        st = item.second
        t = classifier.FindFlow(item.first)
        s_host = host_index[addr_host[str(t.sourceAddress)]]
        d_host = host_index[addr_host[str(t.destinationAddress)]]
        if t.destinationPort == SINK_PORT:
            fwd.setdefault((s_host, d_host), []).append(
                (
                    st.timeFirstTxPacket.GetNanoSeconds(),
                    t.sourcePort,
                    st.timeLastRxPacket.GetNanoSeconds(),
                    st.rxBytes,
                )
            )
        else:
            back[(d_host, s_host, t.destinationPort)] = st.timeLastRxPacket.GetNanoSeconds()
    by_pair: dict[tuple[int, int], list[int]] = {}
    for i, f in enumerate(flows):
        by_pair.setdefault((f["src"], f["dst"]), []).append(i)
    # Bytes each receiving socket got in order, by (sender host, receiver
    # host, sender port): a flow whose sender gave up (ns-3 aborts a
    # connection after `TcpSocket::DataRetries` = 6 resends of one segment,
    # as after `SynRetries` SYNs) has an ACK trace but not all its bytes, and
    # gets no FCT.
    got: dict[tuple[int, int, int], int] = {}
    rx = ns.cppyy.gbl.xrx
    for k in range(int(rx.N())):
        key = (
            host_index[addr_host[str(ns.Ipv4Address(int(rx.Addr(k))))]],
            host_index[addr_host[str(ns.Ipv4Address(int(rx.Local(k))))]],
            int(rx.Port(k)),
        )
        got[key] = int(rx.Bytes(k))
    fct_us = [float("nan")] * len(flows)
    incomplete: list[int] = []
    for pair, ids in by_pair.items():
        ids.sort(key=lambda i: (flows[i]["start_us"], i))
        conns = sorted(fwd.get(pair, []))
        for i, (_first_ns, port, _last_fwd_ns, _rx) in zip(ids, conns, strict=False):
            last_ack_ns = back.get((pair[0], pair[1], port))
            if got.get((pair[0], pair[1], port), 0) < int(flows[i]["bytes"]):
                incomplete.append(i)
            elif last_ack_ns is not None:
                fct_us[i] = last_ack_ns / 1000.0 - flows[i]["start_us"]
    delivered = sum(
        ns.DynamicCast[ns.PacketSink](sinks.Get(i)).GetTotalRx() for i in range(sinks.GetN())
    )
    expected = sum(int(f["bytes"]) for f in flows)
    drops = sum(qd.GetStats().nTotalDroppedPackets for qd in switch_qdiscs)
    marks = sum(qd.GetStats().nTotalMarkedPackets for qd in switch_qdiscs)
    if spec.get("debug"):
        for qd in switch_qdiscs:
            print(qd.GetStats())
    # Drops and marks per queue-disc reason (RED: "Unforced drop" / "Forced
    # drop" of a packet it would have marked but cannot, "Queue full"; marks
    # "Unforced mark" / "Forced mark").
    reasons: dict[str, int] = {}
    for qd in switch_qdiscs:
        st = qd.GetStats()
        for kind, m in (("drop", st.nDroppedPacketsBeforeEnqueue), ("mark", st.nMarkedPackets)):
            for it in m:
                key = f"{kind}: {it.first}"
                reasons[key] = reasons.get(key, 0) + int(it.second)
    out = {
        "fct_us": fct_us,
        "drops": int(drops),
        "ecn_marks": int(marks),
        "delivered_bytes": int(delivered),
        "expected_bytes": int(expected),
        "sim_time_s": ns.Simulator.Now().GetSeconds(),
        "wall_s": time.time() - wall,
        "reasons": reasons,
        # Flows whose receiver did not get all their bytes (no FCT).
        "incomplete": incomplete,
    }
    if spec.get("count_tcp"):
        c = ns.cppyy.gbl.xcnt
        out["tcp"] = {
            "segments_sent": int(c.Segs()),
            "retransmissions": int(c.Retx()),
            "dup_acks": int(c.DupAcks()),
            "fast_recoveries": int(c.Recoveries()),
            "rtos": int(c.Rtos()),
        }
    if spec.get("routing") == "flowhash":
        # Packets forwarded per member index of a hashed choice (a check
        # that the hash spreads them).
        out["hash_picks"] = [int(ns.cppyy.gbl.xhash.Picks(i)) for i in range(8)]
    if spec.get("trace"):
        ns.cppyy.gbl.xc.Close()
    ns.Simulator.Destroy()
    Path(sys.argv[2]).write_text(json.dumps(out))


def _hosts(node_of: dict[str, object], hosts: list[str]) -> object:
    c = ns.NodeContainer()
    for h in hosts:
        c.Add(node_of[h])
    return c


if __name__ == "__main__":
    main()
