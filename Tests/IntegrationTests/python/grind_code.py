#!/usr/bin/env python3
"""A man in the middle's bridge side: asks for a code challenge again and again with one key,
each time on a new connection, to re-roll the bridge's nonce (and so the code) until it matches.
Usage: grind_code.py PORT ATTEMPTS [bad-reveal]
Prints one line per attempt: "challenge REQUEST" or "refused CODE MESSAGE"; with bad-reveal, the
first attempt reveals a nonce that does not match its commitment."""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
import lanbridge_wire as w  # noqa: E402

port, attempts = int(sys.argv[1]), int(sys.argv[2])
bad_reveal = len(sys.argv) > 3 and sys.argv[3] == "bad-reveal"
key = os.urandom(32)
details = {"displayName": "Ada's phone", "platform": "ios", "caps": [], "commands": [],
           "flags": {"requiresForeground": False, "supportsInputInjection": False}}
for attempt in range(attempts):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    session = w.connect(sock, key)
    assert w.recv_message(session)["type"] == "welcome"
    nonce = os.urandom(32)
    w.send_message(session, {"type": "pair.request", "details": details, "commitment": w.commitment(session.handshake_hash, nonce).hex()})
    reply = w.recv_message(session)
    if reply["type"] == "pair.challenge":
        w.send_message(session, {"type": "pair.reveal", "nonce": (os.urandom(32) if bad_reveal else nonce).hex()})
        answer = w.recv_message(session)
        if answer["type"] == "error":
            print("refused %s %s" % (answer["code"], answer["message"]), flush=True)
        else:
            print("challenge %s" % reply["requestId"], flush=True)
    else:
        print("refused %s %s" % (reply.get("code"), reply.get("message")), flush=True)
    sock.close()
