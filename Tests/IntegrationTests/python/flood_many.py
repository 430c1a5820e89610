#!/usr/bin/env python3
"""Holds silent, slow connections to the bridge from many loopback addresses, the way the review's
flood did: COUNT addresses (127.0.1.1, 127.0.1.2, ...), PER connections each, every one dribbling
a valid preamble one byte a second and never finishing a handshake; a connection the bridge
closes is reopened after RETRY seconds. Bounded: stops after SECONDS, or when stdin closes.
Usage: flood_many.py PORT COUNT PER SECONDS [RETRY]
Prints "flooding" once every slot has been tried, and "opened N closed-by-bridge M" at the end."""
import select, socket, sys, time

port, count, per, seconds = (int(a) for a in sys.argv[1:5])
retry = float(sys.argv[5]) if len(sys.argv) > 5 else 0.5
PREAMBLE = b"\x00\x07LNBR\x01\x01\x01"
addresses = ["127.0.%d.%d" % (1 + i // 250, 1 + i % 250) for i in range(count)]
slots = [{"address": a, "sock": None, "sent": 0, "next": 0.0} for a in addresses for _ in range(per)]
opened = closed = 0
start = time.time()
announced = False
while time.time() - start < seconds:
    now = time.time()
    for slot in slots:
        if slot["sock"] is None and now >= slot["next"]:
            s = socket.socket()
            s.setblocking(False)
            s.bind((slot["address"], 0))
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                slot["next"] = now + retry
                continue
            slot.update(sock=s, sent=0, next=now)
            opened += 1
        elif slot["sock"] is not None and now >= slot["next"] and slot["sent"] < len(PREAMBLE):
            try:
                slot["sock"].send(PREAMBLE[slot["sent"]:slot["sent"] + 1])
                slot["sent"] += 1
            except OSError:
                pass
            slot["next"] = now + 1.0
    if not announced:
        print("flooding", flush=True)
        announced = True
    live = [slot for slot in slots if slot["sock"] is not None]
    readable, _, _ = select.select([slot["sock"] for slot in live] + [sys.stdin], [], [], 0.1)
    if sys.stdin in readable and not sys.stdin.readline():
        break
    for slot in live:
        if slot["sock"] in readable:
            try:
                data = slot["sock"].recv(4096)
            except OSError:
                data = b""
            if not data:
                slot["sock"].close()
                slot.update(sock=None, next=time.time() + retry)
                closed += 1
print("opened %d closed-by-bridge %d" % (opened, closed), flush=True)
