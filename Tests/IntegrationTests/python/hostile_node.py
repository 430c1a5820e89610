#!/usr/bin/env python3
"""A paired node that misbehaves on purpose. Pairs through an invite URI, then for each invoke
sends back the raw result text given for its command (bytes as they are, so malformed JSON stays
malformed), and answers any other command with a valid result. Prints "paired NODEID" once ready.
Usage: hostile_node.py INVITE_URI [flood=STATES,EVENTS,BYTES] COMMAND=RAW_RESULT_TEMPLATE ...
flood= first sends STATES state messages (alternating, the last one "background"), EVENTS events
of BYTES bytes each and one event of 200 KB, then prints "flooded".
In a template, {id} stands for the invoke's ID, {ff} for a raw 0xFF byte (invalid UTF-8) and {nl} for a newline."""
import json
import os
import socket
import sys
from urllib.parse import parse_qs, urlparse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
import lanbridge_wire as w  # noqa: E402

uri = urlparse(sys.argv[1])
query = parse_qs(uri.query)
secret = bytes.fromhex(query["s"][0])
templates = dict(arg.split("=", 1) for arg in sys.argv[2:])
flood = templates.pop("flood", None)
sock = socket.create_connection((uri.hostname, uri.port), timeout=60)
session = w.connect(sock, os.urandom(32), invite_secret=secret)
assert w.recv_message(session)["type"] == "welcome"
details = {"displayName": "hostile", "platform": "linux", "caps": [], "commands": sorted(set(templates) | {"device.echo"}),
           "flags": {"requiresForeground": False, "supportsInputInjection": False}}
w.send_message(session, {"type": "invite.redeem", "secret": secret.hex(), "details": details})
resolved = w.recv_message(session)
assert resolved["type"] == "pair.resolved" and resolved["outcome"] == "approved", resolved
w.send_message(session, {"type": "state", "foreground": True})
print("paired %s" % resolved["nodeId"], flush=True)
if flood:
    states, events, size = (int(n) for n in flood.split(","))
    for k in range(states):
        w.send_message(session, {"type": "state", "foreground": (states - k) % 2 == 0})
    for k in range(events):
        w.send_message(session, {"type": "event", "event": "flood", "payload": {"n": k, "pad": "x" * size}})
    w.send_message(session, {"type": "event", "event": "huge", "payload": "x" * 200_000})
    print("flooded", flush=True)
while True:
    message = w.recv_message(session)
    if message["type"] == "ping":
        w.send_message(session, {"type": "pong", "id": message["id"]})
    elif message["type"] == "invoke":
        template = templates.get(message["command"])
        if template is None:
            w.send_message(session, {"type": "invoke.result", "id": message["id"], "ok": True, "payload": {"echo": message.get("params")}})
        else:
            raw = template.replace("{id}", message["id"]).replace("{nl}", "\n").encode()
            session.send(raw.replace(b"{ff}", b"\xff"))
