-- Wireshark dissector for nvo's routed overlay header (crates/wire/src/overlay.rs).
--
-- Load it with `tshark -X lua_script:dissectors/nvo_overlay.lua` or copy it to Wireshark's
-- personal plugins folder. The header is 20 bytes, carried over UDP (port 60002 by default):
--
--   0                   1                   2                   3
--   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
--  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
--  |  Version (1)  |  Application  |      TTL      |     Flags     |
--  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
--  |            VNI (24 bits)                      |   Reserved    |
--  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
--  |                          Flow hash                            |
--  |                     Destination node ID                       |
--  |                       Source node ID                          |
--  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
--
-- The payload goes to the Ethernet dissector (application 7), IPv4 (4) or IPv6 (6), and is
-- shown as data otherwise. A header shorter than 20 bytes or with a version other than 1 is
-- flagged as malformed and its payload is not dissected.

local HEADER_LEN = 20
local VERSION = 1
local DEFAULT_PORT = 60002

local nvo = Proto("nvo", "nvo Overlay Routing Header")

local applications = { [4] = "IPv4", [6] = "IPv6", [7] = "Ethernet" }

local f = nvo.fields
f.version = ProtoField.uint8("nvo.version", "Version", base.DEC)
f.app = ProtoField.uint8("nvo.app", "Application", base.DEC, applications)
f.ttl = ProtoField.uint8("nvo.ttl", "TTL", base.DEC)
f.flags = ProtoField.uint8("nvo.flags", "Flags", base.HEX)
f.vni = ProtoField.uint24("nvo.vni", "VNI", base.DEC)
f.reserved = ProtoField.uint8("nvo.reserved", "Reserved", base.HEX)
f.flow_hash = ProtoField.uint32("nvo.flow_hash", "Flow hash", base.HEX)
f.dst_node = ProtoField.uint32("nvo.dst_node", "Destination node", base.DEC)
f.src_node = ProtoField.uint32("nvo.src_node", "Source node", base.DEC)

local ef_short = ProtoExpert.new("nvo.short", "Overlay header shorter than 20 bytes",
    expert.group.MALFORMED, expert.severity.ERROR)
local ef_version = ProtoExpert.new("nvo.bad_version", "Unknown overlay version (expected 1)",
    expert.group.MALFORMED, expert.severity.ERROR)
nvo.experts = { ef_short, ef_version }

nvo.prefs.udp_port = Pref.uint("UDP port", DEFAULT_PORT,
    "UDP destination port the overlay header is carried on")

local payload_dissectors = {
    [7] = Dissector.get("eth_withoutfcs"),
    [4] = Dissector.get("ip"),
    [6] = Dissector.get("ipv6"),
}
local data_dissector = Dissector.get("data")

function nvo.dissector(tvb, pinfo, tree)
    local len = tvb:len()
    pinfo.cols.protocol = "NVO"
    local subtree = tree:add(nvo, tvb(0, math.min(len, HEADER_LEN)))

    if len < HEADER_LEN then
        subtree:add_proto_expert_info(ef_short,
            string.format("Overlay header shorter than 20 bytes (%d)", len))
        return len
    end

    local version = tvb(0, 1):uint()
    local app = tvb(1, 1):uint()
    local version_item = subtree:add(f.version, tvb(0, 1))
    subtree:add(f.app, tvb(1, 1))
    subtree:add(f.ttl, tvb(2, 1))
    subtree:add(f.flags, tvb(3, 1))
    subtree:add(f.vni, tvb(4, 3))
    subtree:add(f.reserved, tvb(7, 1))
    subtree:add(f.flow_hash, tvb(8, 4))
    subtree:add(f.dst_node, tvb(12, 4))
    subtree:add(f.src_node, tvb(16, 4))
    subtree:append_text(string.format(", VNI: %d, %d -> %d",
        tvb(4, 3):uint(), tvb(16, 4):uint(), tvb(12, 4):uint()))

    if version ~= VERSION then
        version_item:add_proto_expert_info(ef_version,
            string.format("Unknown overlay version %d (expected 1)", version))
        return len
    end

    if len > HEADER_LEN then
        local next_dissector = payload_dissectors[app] or data_dissector
        next_dissector:call(tvb(HEADER_LEN):tvb(), pinfo, tree)
    end
    return len
end

local udp_port_table = DissectorTable.get("udp.port")
local registered_port = DEFAULT_PORT
udp_port_table:add(registered_port, nvo)

function nvo.prefs_changed()
    if nvo.prefs.udp_port ~= registered_port then
        udp_port_table:remove(registered_port, nvo)
        registered_port = nvo.prefs.udp_port
        udp_port_table:add(registered_port, nvo)
    end
end
