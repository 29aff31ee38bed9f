-- Wireshark dissector for the headers pisanet's switch programs add.
-- Generated from the header tables of the switch programs
-- (crates/pisanet-schemes/src/wire.rs); `make headers` rewrites it, a test
-- fails when it is stale. Do not edit. Layouts: docs/headers.md.
--
-- Use: wireshark -X lua_script:tools/wireshark/pisanet.lua FILE.pcap
--      tshark -X lua_script:tools/wireshark/pisanet.lua -r FILE.pcap -V
-- or copy this file to ~/.local/lib/wireshark/plugins/.

-- Adds each field {proto field, bit offset, bits} of a header to `tree`;
-- returns the values by name.
local function add_fields(tree, tvb, fields)
    local values = {}
    for _, f in ipairs(fields) do
        local field, off, bits, name = f[1], f[2], f[3], f[4]
        local first = math.floor(off / 8)
        local last = math.floor((off + bits - 1) / 8)
        local range = tvb(first, last - first + 1)
        local v = range:bitfield(off % 8, bits)
        values[name] = v
        if field then
            tree:add(field, range, v)
        end
    end
    return values
end

-- HULA probe: after IPv4, whose protocol field is 253.
local p_hula = Proto("pisanet_hula", "pisanet HULA probe")
local f_hula = {
    tor_id = ProtoField.uint24("pisanet_hula.tor_id", "tor_id", base.DEC, nil, nil, "ToR that generated the probe (HULA section 4.2, torID)"),
    min_util = ProtoField.uint8("pisanet_hula.min_util", "min_util", base.DEC, nil, nil, "utilization of the best path to tor_id so far, 0..254, 255 = infinity (HULA section 4.2, minUtil)"),
}
p_hula.fields = { f_hula.tor_id, f_hula.min_util }
local l_hula = {
    { f_hula.tor_id, 0, 24, "tor_id" },
    { f_hula.min_util, 24, 8, "min_util" },
}
function p_hula.dissector(tvb, pinfo, tree)
    if tvb:len() < 4 then
        return 0
    end
    pinfo.cols.protocol:set("HULA")
    local t = tree:add(p_hula, tvb(0, 4))
    local _ = add_fields(t, tvb, l_hula)
    return 4
end
DissectorTable.get("ip.proto"):add(253, p_hula)

-- CONGA overlay: between Ethernet and IPv4; Ethernet type 0x88b5, IPv4 follows.
local p_conga = Proto("pisanet_conga", "pisanet CONGA overlay")
local f_conga = {
    src_leaf = ProtoField.uint16("pisanet_conga.src_leaf", "src_leaf", base.DEC, nil, nil, "source leaf (CONGA section 3.1 reads it from the outer IP source address)"),
    lbtag = ProtoField.uint8("pisanet_conga.lbtag", "lbtag", base.DEC, nil, nil, "uplink the source leaf chose (section 3.1, LBTag); 15 = flowlet ECMP (conga_prime across pods)"),
    ce = ProtoField.uint8("pisanet_conga.ce", "ce", base.DEC, nil, nil, "congestion extent: the largest quantized DRE along the path so far (section 3.2, CE)"),
    fb_lbtag = ProtoField.uint8("pisanet_conga.fb_lbtag", "fb_lbtag", base.DEC, nil, nil, "piggybacked feedback: uplink of the path from the receiver's leaf (section 3.3, FB_LBTag)"),
    fb_metric = ProtoField.uint8("pisanet_conga.fb_metric", "fb_metric", base.DEC, nil, nil, "piggybacked feedback: that path's congestion metric (section 3.3, FB_Metric)"),
    fb_valid = ProtoField.uint8("pisanet_conga.fb_valid", "fb_valid", base.DEC, nil, nil, "1 when fb_lbtag and fb_metric carry feedback"),
    hash = ProtoField.uint32("pisanet_conga.hash", "hash", base.DEC, nil, nil, "flowlet hash every switch picks its ECMP member with (conga_prime across pods)"),
}
p_conga.fields = { f_conga.src_leaf, f_conga.lbtag, f_conga.ce, f_conga.fb_lbtag, f_conga.fb_metric, f_conga.fb_valid, f_conga.hash }
local l_conga = {
    { f_conga.src_leaf, 0, 16, "src_leaf" },
    { f_conga.lbtag, 16, 4, "lbtag" },
    { f_conga.ce, 20, 3, "ce" },
    { f_conga.fb_lbtag, 23, 4, "fb_lbtag" },
    { f_conga.fb_metric, 27, 3, "fb_metric" },
    { f_conga.fb_valid, 30, 1, "fb_valid" },
    { nil, 31, 1, "reserved" },
    { f_conga.hash, 32, 32, "hash" },
}
function p_conga.dissector(tvb, pinfo, tree)
    if tvb:len() < 8 then
        return 0
    end
    pinfo.cols.protocol:set("CONGA")
    local t = tree:add(p_conga, tvb(0, 8))
    local _ = add_fields(t, tvb, l_conga)
    Dissector.get("ip"):call(tvb(8):tvb(), pinfo, tree)
    return tvb:len()
end
DissectorTable.get("ethertype"):add(0x88b5, p_conga)

-- P4TE shim: after IPv4, whose protocol field is 254.
local p_p4te = Proto("pisanet_p4te", "pisanet P4TE shim")
local f_p4te = {
    flags = ProtoField.uint8("pisanet_p4te.flags", "flags", base.DEC, nil, nil, "1 HOLD (within B bytes of the last rate control), 2 ACTED, 4 FACK, 8 ACK_VALID (section 4.3.1)"),
    next_proto = ProtoField.uint8("pisanet_p4te.next_proto", "next_proto", base.DEC, nil, nil, "IPv4 protocol of what follows (the IPv4 header names this header instead)"),
    ack = ProtoField.uint32("pisanet_p4te.ack", "ack", base.DEC, nil, nil, "last ACK the sender's leaf sent down to the sender (mod 2^32)"),
    inflight = ProtoField.uint32("pisanet_p4te.inflight", "inflight", base.DEC, nil, nil, "data: bytes in flight as the sender's leaf estimates them; FACK: low 32 bits of the sequence number of the data packet acted on"),
}
p_p4te.fields = { f_p4te.flags, f_p4te.next_proto, f_p4te.ack, f_p4te.inflight }
local l_p4te = {
    { f_p4te.flags, 0, 8, "flags" },
    { f_p4te.next_proto, 8, 8, "next_proto" },
    { nil, 16, 16, "reserved" },
    { f_p4te.ack, 32, 32, "ack" },
    { f_p4te.inflight, 64, 32, "inflight" },
}
function p_p4te.dissector(tvb, pinfo, tree)
    if tvb:len() < 12 then
        return 0
    end
    pinfo.cols.protocol:set("P4TE")
    local t = tree:add(p_p4te, tvb(0, 12))
    local v = add_fields(t, tvb, l_p4te)
    if tvb:len() > 12 then
        DissectorTable.get("ip.proto"):try(v.next_proto, tvb(12):tvb(), pinfo, tree)
    end
    return tvb:len()
end
DissectorTable.get("ip.proto"):add(254, p_p4te)

-- P4QCN feedback: between Ethernet and IPv4; Ethernet type 0x22e9, IPv4 follows.
local p_p4qcn_fb = Proto("pisanet_p4qcn_fb", "pisanet P4QCN feedback")
local f_p4qcn_fb = {
    qdepth = ProtoField.uint16("pisanet_p4qcn_fb.qdepth", "qdepth", base.DEC, nil, nil, "q of eq. 1: packets ahead in the egress queue of the packet that triggered the feedback (enq_qdepth, saturating)"),
    cpid = ProtoField.uint16("pisanet_p4qcn_fb.cpid", "cpid", base.DEC, nil, nil, "the congestion point: low 16 bits of the switch's id (QCN's CPID)"),
}
p_p4qcn_fb.fields = { f_p4qcn_fb.qdepth, f_p4qcn_fb.cpid }
local l_p4qcn_fb = {
    { f_p4qcn_fb.qdepth, 0, 16, "qdepth" },
    { f_p4qcn_fb.cpid, 16, 16, "cpid" },
}
function p_p4qcn_fb.dissector(tvb, pinfo, tree)
    if tvb:len() < 4 then
        return 0
    end
    pinfo.cols.protocol:set("P4QCN_FB")
    local t = tree:add(p_p4qcn_fb, tvb(0, 4))
    local _ = add_fields(t, tvb, l_p4qcn_fb)
    Dissector.get("ip"):call(tvb(4):tvb(), pinfo, tree)
    return tvb:len()
end
DissectorTable.get("ethertype"):add(0x22e9, p_p4qcn_fb)

-- DCQCN congestion notification packet (CNP): between Ethernet and IPv4; Ethernet type 0x8915, IPv4 follows.
local p_cnp = Proto("pisanet_cnp", "pisanet DCQCN congestion notification packet (CNP)")
local f_cnp = {
    opcode = ProtoField.uint8("pisanet_cnp.opcode", "opcode", base.DEC, nil, nil, "0x81: the InfiniBand BTH opcode of a congestion notification packet (RoCEv2 Annex A17)"),
}
p_cnp.fields = { f_cnp.opcode }
local l_cnp = {
    { f_cnp.opcode, 0, 8, "opcode" },
    { nil, 8, 24, "reserved" },
}
function p_cnp.dissector(tvb, pinfo, tree)
    if tvb:len() < 4 then
        return 0
    end
    pinfo.cols.protocol:set("CNP")
    local t = tree:add(p_cnp, tvb(0, 4))
    local _ = add_fields(t, tvb, l_cnp)
    Dissector.get("ip"):call(tvb(4):tvb(), pinfo, tree)
    return tvb:len()
end
DissectorTable.get("ethertype"):add(0x8915, p_cnp)

-- Go-back-N ACK / NAK of a rate-based (RoCEv2-like) flow: between Ethernet and IPv4; Ethernet type 0x8916, IPv4 follows.
local p_gbn_ack = Proto("pisanet_gbn_ack", "pisanet Go-back-N ACK / NAK of a rate-based (RoCEv2-like) flow")
local f_gbn_ack = {
    opcode = ProtoField.uint8("pisanet_gbn_ack.opcode", "opcode", base.DEC, nil, nil, "0x11: the InfiniBand BTH opcode of an RC Acknowledge (IBTA vol. 1, 9.7)"),
    syndrome = ProtoField.uint8("pisanet_gbn_ack.syndrome", "syndrome", base.DEC, nil, nil, "AETH syndrome: 0x00 ACK, 0x60 NAK PSN sequence error (IBTA vol. 1, 9.7)"),
    psn = ProtoField.uint32("pisanet_gbn_ack.psn", "psn", base.DEC, nil, nil, "the receiver's expected PSN: every packet below it arrived (ACK); go back to it (NAK)"),
}
p_gbn_ack.fields = { f_gbn_ack.opcode, f_gbn_ack.syndrome, f_gbn_ack.psn }
local l_gbn_ack = {
    { f_gbn_ack.opcode, 0, 8, "opcode" },
    { f_gbn_ack.syndrome, 8, 8, "syndrome" },
    { nil, 16, 16, "reserved" },
    { f_gbn_ack.psn, 32, 32, "psn" },
}
function p_gbn_ack.dissector(tvb, pinfo, tree)
    if tvb:len() < 8 then
        return 0
    end
    pinfo.cols.protocol:set("GBN_ACK")
    local t = tree:add(p_gbn_ack, tvb(0, 8))
    local _ = add_fields(t, tvb, l_gbn_ack)
    Dissector.get("ip"):call(tvb(8):tvb(), pinfo, tree)
    return tvb:len()
end
DissectorTable.get("ethertype"):add(0x8916, p_gbn_ack)

-- P4QoS QoS header: between Ethernet and IPv4; Ethernet type 0x88b6, IPv4 follows.
local p_p4qos = Proto("pisanet_p4qos", "pisanet P4QoS QoS header")
local f_p4qos = {
    deadline = ProtoField.uint16("pisanet_p4qos.deadline", "deadline", base.DEC, nil, nil, "remaining deadline d, in units of 2^time_shift ns (P4QoS section II)"),
    target = ProtoField.uint16("pisanet_p4qos.target", "target", base.DEC, nil, nil, "t_t: the latency left for queueing and processing, same unit (Alg. 1 line 2)"),
    n_btl = ProtoField.uint8("pisanet_p4qos.n_btl", "n_btl", base.DEC, nil, nil, "bottlenecks the packet met so far, saturating at 15 (Alg. 1 line 4)"),
    flags = ProtoField.uint8("pisanet_p4qos.flags", "flags", base.DEC, nil, nil, "1: t_send is an LLEP stamp (section II.A); 2: the packet is past its deadline"),
    t_send = ProtoField.uint32("pisanet_p4qos.t_send", "t_send", base.DEC, nil, nil, "LLEP: the upstream switch's egress timestamp, ns mod 2^32 (section II.A, step 1)"),
}
p_p4qos.fields = { f_p4qos.deadline, f_p4qos.target, f_p4qos.n_btl, f_p4qos.flags, f_p4qos.t_send }
local l_p4qos = {
    { f_p4qos.deadline, 0, 16, "deadline" },
    { f_p4qos.target, 16, 16, "target" },
    { f_p4qos.n_btl, 32, 4, "n_btl" },
    { f_p4qos.flags, 36, 4, "flags" },
    { f_p4qos.t_send, 40, 32, "t_send" },
}
function p_p4qos.dissector(tvb, pinfo, tree)
    if tvb:len() < 9 then
        return 0
    end
    pinfo.cols.protocol:set("P4QOS")
    local t = tree:add(p_p4qos, tvb(0, 9))
    local _ = add_fields(t, tvb, l_p4qos)
    Dissector.get("ip"):call(tvb(9):tvb(), pinfo, tree)
    return tvb:len()
end
DissectorTable.get("ethertype"):add(0x88b6, p_p4qos)

-- P4QoS control packet: after IPv4, whose protocol field is 252.
local p_p4qos_ctl = Proto("pisanet_p4qos_ctl", "pisanet P4QoS control packet")
local f_p4qos_ctl = {
    type = ProtoField.uint8("pisanet_p4qos_ctl.type", "type", base.DEC, nil, nil, "1: LLEP reply (section II.A, step 3); 2: target update (Alg. 1 line 16)"),
    a = ProtoField.uint32("pisanet_p4qos_ctl.a", "a", base.DEC, nil, nil, "reply: t_send as stamped (ns mod 2^32); update: trgt_new (ns)"),
    b = ProtoField.uint32("pisanet_p4qos_ctl.b", "b", base.DEC, nil, nil, "reply: t_q + t_p at the downstream switch (ns); update: id, the flow's CRC-32"),
}
p_p4qos_ctl.fields = { f_p4qos_ctl.type, f_p4qos_ctl.a, f_p4qos_ctl.b }
local l_p4qos_ctl = {
    { f_p4qos_ctl.type, 0, 8, "type" },
    { f_p4qos_ctl.a, 8, 32, "a" },
    { f_p4qos_ctl.b, 40, 32, "b" },
}
function p_p4qos_ctl.dissector(tvb, pinfo, tree)
    if tvb:len() < 9 then
        return 0
    end
    pinfo.cols.protocol:set("P4QOS_CTL")
    local t = tree:add(p_p4qos_ctl, tvb(0, 9))
    local _ = add_fields(t, tvb, l_p4qos_ctl)
    return 9
end
DissectorTable.get("ip.proto"):add(252, p_p4qos_ctl)
