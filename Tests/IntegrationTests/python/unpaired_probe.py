#!/usr/bin/env python3
"""An unpaired key tries everything but pairing. Prints one JSON line per reply.
Usage: unpaired_probe.py PORT"""
import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
import lanbridge_wire as w  # noqa: E402

sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
session = w.connect(sock, os.urandom(32))
print(json.dumps(json.loads(session.recv())), flush=True)  # welcome
for attempt in [
    {"type": "invoke", "id": "1", "command": "canvas.snapshot"},
    {"type": "state", "foreground": True},
    {"type": "event", "event": "hello"},
    {"type": "invoke.result", "id": "1", "ok": True, "payload": {}},
]:
    session.send(json.dumps(attempt).encode())
    print(json.dumps(json.loads(session.recv())), flush=True)
