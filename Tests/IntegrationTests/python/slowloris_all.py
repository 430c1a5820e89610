#!/usr/bin/env python3
"""A slowloris against every door at once (issue 48 §3): from each of COUNT loopback addresses
(127.0.2.1, 127.0.2.2, ..., 127.0.3.1, ...) PER connections to each listener given as KIND:PORT, as fast as one
process can open them. Each sends the start of what its door expects, then never reads again
(so a TLS close_notify from the bridge goes unanswered, as the review's did), and after HOLD
seconds is dropped and opened anew:

  noise:PORT    a valid preamble
  tls:PORT      a TLS handshake (the canvas relay, OpenClaw's apps), then a head that never ends
  http:PORT     a head that never ends (the console, metrics)

Bounded: stops after SECONDS (or when stdin closes). Prints "flooding" once every listener has had
a connection, "saturated" once every slot has been opened twice, then "opened N per-second R".

    slowloris_all.py COUNT PER SECONDS HOLD KIND:PORT [KIND:PORT ...]
"""
import asyncio, os, ssl, sys, time

count, per, seconds, hold_for = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
targets = [(kind, int(port)) for kind, port in (arg.split(":") for arg in sys.argv[5:])]
addresses = ["127.0.%d.%d" % (2 + i // 250, 1 + i % 250) for i in range(count)]
slots = len(addresses) * len(targets) * per
PREAMBLE = b"\x00\x07LNBR\x01\x01\x01"
context = ssl.create_default_context()
context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
stats = {"opened": 0}
seen = set()


async def hold(kind, port, address):
    """One slot: connect, start, stop reading, and after a while drop it and connect again."""
    while True:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                "127.0.0.1", port, local_addr=(address, 0), ssl=context if kind == "tls" else None), 10)
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            await asyncio.sleep(0.05)
            continue
        stats["opened"] += 1
        if kind not in seen:
            seen.add(kind)
            if len(seen) == len({k for k, _ in targets}):
                print("flooding", flush=True)
        if stats["opened"] == 2 * slots:
            print("saturated", flush=True)
        try:
            writer.write(PREAMBLE if kind == "noise" else b"GET /__openclaw__/a2ui/ HTTP/1.1\r\nHost: x\r\n")
            await asyncio.wait_for(writer.drain(), 1)
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            pass
        writer.transport.pause_reading()
        await asyncio.sleep(hold_for)
        writer.transport.abort()


async def main():
    start = time.monotonic()
    tasks = [asyncio.create_task(hold(kind, port, address)) for address in addresses for kind, port in targets for _ in range(per)]
    stdin_closed = asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await asyncio.wait([stdin_closed], timeout=seconds)
    for task in tasks:
        task.cancel()
    elapsed = time.monotonic() - start
    print(f"opened {stats['opened']} per-second {stats['opened'] / elapsed:.0f}", flush=True)
    os._exit(0)  # the stdin reader thread would keep the process alive


asyncio.run(main())
