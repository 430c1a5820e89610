#!/usr/bin/env python3
"""Opens many connections to the bridge from one source address and holds them, mid-handshake.
Usage: flood.py PORT SOURCE_ADDRESS COUNT — prints "flood done" when every attempt was made."""
import socket
import sys

port, source, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
held = []
for _ in range(count):
    s = socket.socket()
    s.bind((source, 0))
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"\x00\x07LNBR\x01\x01\x01")  # a valid preamble, then silence
        held.append(s)
    except OSError:
        s.close()
print("flood done", flush=True)
sys.stdin.read()  # hold the sockets until the test closes our stdin or kills us
