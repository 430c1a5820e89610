#!/usr/bin/env python3
"""Pairs with a running bridge by code, using only sdk/python (written from PROTOCOL.md).
Usage: pair_by_code.py PORT [DISPLAY_NAME] — prints "code C request R", then "resolved OUTCOME NODEID"."""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
import lanbridge_wire as w  # noqa: E402

sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
session = w.connect(sock, os.urandom(32))
welcome = w.recv_message(session)
assert welcome["type"] == "welcome" and welcome["paired"] is False, welcome
details = {"displayName": sys.argv[2] if len(sys.argv) > 2 else "python node", "platform": "linux", "caps": [], "commands": ["device.echo"],
           "flags": {"requiresForeground": False, "supportsInputInjection": False}}
resolved = w.pair_by_code(session, details, lambda code, request: print("code %s request %s" % (code, request), flush=True))
print("resolved %s %s" % (resolved["outcome"], resolved["nodeId"]), flush=True)
