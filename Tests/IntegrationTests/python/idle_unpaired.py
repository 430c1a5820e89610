#!/usr/bin/env python3
"""Completes the handshake as an unpaired key, then never asks to pair (it answers pings, so it is
not idle as far as keepalives go). Prints "welcome", then "closed after S seconds" when the bridge
hangs up. Usage: idle_unpaired.py PORT"""
import json, os, socket, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
import lanbridge_wire as w  # noqa: E402

sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=120)
session = w.connect(sock, os.urandom(32))
start = time.time()
assert w.recv_message(session)["type"] == "welcome"
print("welcome", flush=True)
try:
    while True:
        message = w.recv_message(session)
        if message["type"] == "ping":
            w.send_message(session, {"type": "pong", "id": message["id"]})
except Exception:
    print("closed after %.1f seconds" % (time.time() - start), flush=True)
