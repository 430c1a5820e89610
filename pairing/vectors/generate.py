#!/usr/bin/env python3
"""Regenerates the vectors in this folder from pairing/lanbridge_wire.py (beside the spec; the Python SDK links to it), an implementation
written from PROTOCOL.md on the independent `noiseprotocol` package (pip install noiseprotocol).
The Swift tests check lanbridge against these files byte for byte.

    python3 pairing/vectors/generate.py
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import lanbridge_wire as w  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402


def seed(label, n=32):
    return hashlib.sha256(b"lanbridge test vector: " + label.encode()).digest()[:n]


def public(private):
    key = X25519PrivateKey.from_private_bytes(private).public_key()
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def write(name, obj):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def fingerprints():
    cases = []
    for i in range(4):
        pk = public(seed("fingerprint %d" % i))
        cases.append({"publicKey": pk.hex(), "fingerprint": w.fingerprint(pk)})
    return {"description": "node ID / bridge fingerprint of an X25519 public key (PROTOCOL.md §2)", "cases": cases}


def codes():
    cases = []
    i = 0
    # A few arbitrary cases, plus one whose code has a leading zero.
    while len(cases) < 4 or not any(c["code"].startswith("0") for c in cases):
        h, nn, nb = seed("h %d" % i), seed("Nn %d" % i), seed("Nb %d" % i)
        case = {"handshakeHash": h.hex(), "nodeNonce": nn.hex(), "bridgeNonce": nb.hex(),
                "commitment": w.commitment(h, nn).hex(), "code": w.verification_code(h, nn, nb)}
        if len(cases) < 4 or case["code"].startswith("0"):
            cases.append(case)
        i += 1
    return {"description": "pairing commitment and 6-digit verification code (PROTOCOL.md §6)", "cases": cases}


def transcript(invite):
    node_s, node_e = seed("node static"), seed("node ephemeral")
    bridge_s, bridge_e = seed("bridge static"), seed("bridge ephemeral")
    secret = seed("invite secret", 16) if invite else None
    iid = w.invite_id(secret) if invite else None
    psk = w.invite_psk(secret) if invite else None
    pre = w.preamble(1, 1, iid)
    node = w._noise(w.protocol_name(pre), "initiator", pre, node_s, psk, node_e)
    bridge = w._noise(w.protocol_name(pre), "responder", pre, bridge_s, psk, bridge_e)

    wire = []
    m1 = node.write_message(b"")
    wire.append({"from": "node", "bytes": (w.frame(pre) + w.frame(m1)).hex()})
    assert bridge.read_message(m1) == b""
    m2 = bridge.write_message(bytes([1]))
    wire.append({"from": "bridge", "bytes": w.frame(m2).hex()})
    assert node.read_message(m2) == bytes([1])
    m3 = node.write_message(b"")
    wire.append({"from": "node", "bytes": w.frame(m3).hex()})
    assert bridge.read_message(m3) == b""
    assert node.get_handshake_hash() == bridge.get_handshake_hash()

    transport = []
    for sender, receiver, who, message in [
        (node, bridge, "node", b"hello bridge"),
        (bridge, node, "bridge", b""),
        (node, bridge, "node", bytes(range(256)) * 256 + bytes(range(255))),  # 65791 bytes: a full chunk and a partial one
    ]:
        chunks = [message[i:i + w.MAX_CHUNK_DATA] for i in range(0, len(message), w.MAX_CHUNK_DATA)] or [b""]
        out = b""
        for i, chunk in enumerate(chunks):
            flag = w.CHUNK_FINAL if i == len(chunks) - 1 else w.CHUNK_MORE
            out += w.frame(sender.encrypt(bytes([flag]) + chunk))
        transport.append({"from": who, "messageSHA256": hashlib.sha256(message).hexdigest(),
                          "messageLength": len(message), "bytes": out.hex()})
        receiver_plain = b""
        # decrypt on the receiver to keep both cipher states in step
        data = out
        while data:
            n = int.from_bytes(data[:2], "big")
            receiver_plain += receiver.decrypt(data[2:2 + n])[1:]
            data = data[2 + n:]
        assert receiver_plain == message

    vector = {
        "protocolName": w.protocol_name(pre),
        "nodeStaticPrivate": node_s.hex(), "nodeStaticPublic": public(node_s).hex(),
        "nodeEphemeralPrivate": node_e.hex(),
        "bridgeStaticPrivate": bridge_s.hex(), "bridgeStaticPublic": public(bridge_s).hex(),
        "bridgeEphemeralPrivate": bridge_e.hex(),
        "nodeVersions": [1, 1], "bridgeVersions": [1, 1], "chosenVersion": 1,
        "preamble": pre.hex(), "prologue": w.prologue(pre).hex(),
        "handshakeWire": wire,
        "handshakeHash": node.get_handshake_hash().hex(),
        "nodeFingerprint": w.fingerprint(public(node_s)),
        "bridgeFingerprint": w.fingerprint(public(bridge_s)),
        "transport": transport,
    }
    if invite:
        vector["inviteSecret"] = secret.hex()
        vector["inviteID"] = iid.hex()
        vector["invitePSK"] = psk.hex()
    return vector


def messages():
    """Session messages (§9) as exact JSON text, each parsed here by Python's json module."""
    cases = [
        {"direction": "bridge -> node", "type": "invoke.cancel", "fields": {"id": "i3f09a1c2b7d4.17"}},
        {"direction": "node -> bridge", "type": "push.register", "fields": {
            "id": "p1", "provider": "apns", "token": "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592",
            "environment": "production", "topic": "com.example.companion"}},
        {"direction": "node -> bridge", "type": "push.register", "fields": {
            "id": "p2", "provider": "ntfy", "token": "https://ntfy.example.net/lanbridge-7Qx2"}},
        {"direction": "bridge -> node", "type": "push.result", "fields": {"id": "p1", "ok": True}},
        {"direction": "bridge -> node", "type": "welcome", "fields": {
            "bridgeName": "Kitchen", "paired": True, "nodeId": "7K2M-9QXD-3HJA-PW4T",
            "addresses": ["192.168.1.10:18790", "100.101.102.103:18790", "[fd7a:115c:a1e0::7]:18790"]}},
        {"direction": "bridge -> node", "type": "pair.resolved", "fields": {
            "outcome": "approved", "nodeId": "7K2M-9QXD-3HJA-PW4T", "addresses": ["192.168.1.10:18790"]}},
        {"direction": "bridge -> node", "type": "push.result", "fields": {"id": "p2", "ok": False, "error": {
            "code": "INVALID_REQUEST", "message": "push.register: token must be 1-4096 visible ASCII characters"}}},
        # §9.8: the agent's canvas, in welcome, refreshed on request, or re-announced unasked (id "").
        {"direction": "bridge -> node", "type": "welcome", "fields": {
            "bridgeName": "Kitchen", "paired": True, "nodeId": "7K2M-9QXD-3HJA-PW4T",
            "canvas": {"url": "https://192.168.1.10:18793/__openclaw__/cap/kWz4f-t5Z7fK2_YHJIBfbqFZ",
                       "tlsSha256": "bae5faff25c2c104cead5422418a7926b0d38f9e2339cc86112bff2a35ee0cee", "expiresAtMs": 1795719282959}}},
        {"direction": "node -> bridge", "type": "canvas.refresh", "fields": {"id": "v1"}},
        {"direction": "bridge -> node", "type": "canvas.grant", "fields": {"id": "v1", "canvas": {
            "url": "https://192.168.1.10:18793/__openclaw__/cap/kWz4f-t5Z7fK2_YHJIBfbqFZ",
            "tlsSha256": "bae5faff25c2c104cead5422418a7926b0d38f9e2339cc86112bff2a35ee0cee", "expiresAtMs": 1795719342959}}},
        {"direction": "bridge -> node", "type": "canvas.grant", "fields": {"id": "v2", "error": {
            "code": "UNAVAILABLE", "message": "this bridge has no canvas host"}}},
    ]
    for case in cases:
        case["json"] = json.dumps({"type": case["type"], **case["fields"]}, separators=(",", ":"), ensure_ascii=False)
        assert json.loads(case["json"]) == {"type": case["type"], **case["fields"]}
    return {"description": "session messages as they cross an established session (PROTOCOL.md §9); one object per message", "cases": cases}


def invites():
    """Invite URIs (§9.3) built here with urllib, and the addresses a node reads from each, first
    choice first: the authority, then up to three `a=` entries that are HOST:PORT."""
    import urllib.parse
    fp, secret = "7K2M-9QXD-3HJA-PW4T", bytes(range(16)).hex()

    def uri(host, port, alternates=(), name=None):
        query = [("fp", fp), ("s", secret)] + [("a", a) for a in alternates] + ([("name", name)] if name else [])
        authority = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        return "lanbridge://%s/invite?%s" % (authority, urllib.parse.urlencode(query, safe=":", quote_via=urllib.parse.quote))

    cases = [
        {"note": "one address, as before issue 25", "uri": uri("192.168.1.10", 18790), "addresses": ["192.168.1.10:18790"]},
        {"note": "LAN first, then a tailnet's IPv4 and IPv6, then a name",
         "uri": uri("192.168.1.10", 18790, ["100.101.102.103:18790", "[fd7a:115c:a1e0::7]:18790", "bridge.example.net:443"], "Ada's phone"),
         "addresses": ["192.168.1.10:18790", "100.101.102.103:18790", "[fd7a:115c:a1e0::7]:18790", "bridge.example.net:443"]},
        {"note": "entries that are not HOST:PORT are skipped; past three the rest are cut",
         "uri": uri("10.0.0.1", 1, ["no port", "10.0.0.2", "10.0.0.3:3", "10.0.0.4:4", "10.0.0.5:5", "10.0.0.6:6"]),
         "addresses": ["10.0.0.1:1", "10.0.0.3:3", "10.0.0.4:4", "10.0.0.5:5"]},
    ]
    for case in cases:
        assert urllib.parse.urlsplit(case["uri"]).scheme == "lanbridge"
    return {"description": "invite URIs and the addresses a node dials from each, in order (PROTOCOL.md §9.3)", "cases": cases}


if __name__ == "__main__":
    write("invites.json", invites())
    write("messages.json", messages())
    write("fingerprint.json", fingerprints())
    write("verification-code.json", codes())
    write("handshake.json", {
        "description": "complete lanbridge connections with fixed keys (PROTOCOL.md §3-§5); bytes are exactly what goes on the TCP stream",
        "vectors": [transcript(False), transcript(True)],
    })
    print("wrote invites.json, messages.json, fingerprint.json, verification-code.json, handshake.json")
