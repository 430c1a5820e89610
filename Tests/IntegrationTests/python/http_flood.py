#!/usr/bin/env python3
"""Another local user's attack on the daemon's HTTP listener (run as that user, e.g. through setpriv).

    http_flood.py idle PORT COUNT   opens COUNT idle connections and holds them; prints "held N"
                                    (those the server has not closed once it stops closing them),
                                    then waits for stdin to close
    http_flood.py trickle PORT      sends a request head one byte every half second; prints
                                    "closed after S" when the server closes it (or "never closed")

Loopback only; bounded in count and time."""
import select
import socket
import sys
import time


def idle(port, count):
    held = []
    for _ in range(count):
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", port))
            held.append(s)
        except OSError:
            s.close()
    # The server closes what it refuses at once: wait until a second passes with no more EOFs.
    open_ = list(held)
    while open_:
        readable, _, _ = select.select(open_, [], [], 1.0)
        if not readable:
            break
        for s in readable:
            try:
                if s.recv(1) == b"":
                    open_.remove(s)
            except OSError:
                open_.remove(s)
    print(f"held {len(open_)}", flush=True)
    sys.stdin.read()


def trickle(port):
    s = socket.create_connection(("127.0.0.1", port))
    start = time.monotonic()
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
    for byte in head:
        try:
            s.sendall(bytes([byte]))
        except OSError:
            break
        readable, _, _ = select.select([s], [], [], 0.5)
        if readable:
            try:
                if s.recv(4096) == b"":
                    break
            except OSError:
                break
        if time.monotonic() - start > 60:
            print("never closed", flush=True)
            return
    print(f"closed after {time.monotonic() - start:.1f}", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "idle":
        idle(int(sys.argv[2]), int(sys.argv[3]))
    else:
        trickle(int(sys.argv[2]))
