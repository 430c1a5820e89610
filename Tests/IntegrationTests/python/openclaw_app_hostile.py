#!/usr/bin/env python3
"""Hostile peers at the door for OpenClaw's apps.

  openclaw_app_hostile.py bigframe URL        -> after the challenge, a 100 KiB connect (a long display name); "closed", or "answered"
                                                 when the bridge read it whole
  openclaw_app_hostile.py halfopen URL N      -> N TCP connections that never start TLS; "held N", then holds them until stdin closes
"""
import asyncio, json, socket, ssl, sys
from urllib.parse import urlsplit
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

mode, url = sys.argv[1], sys.argv[2]
parts = urlsplit(url)


async def bigframe():
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    async with connect(url, ssl=context, max_size=None) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "req", "id": "c", "method": "connect", "params": {
            "minProtocol": 3, "maxProtocol": 3, "role": "node", "client": {"id": "openclaw-ios", "mode": "node", "platform": "iOS",
                                                                          "displayName": "x" * (100 * 1024)}}}))
        try:
            await asyncio.wait_for(ws.recv(), 10)
            print("answered", flush=True)
        except ConnectionClosed:
            print("closed", flush=True)


if mode == "bigframe":
    asyncio.run(bigframe())
else:
    held = []
    for _ in range(int(sys.argv[3])):
        try:
            held.append(socket.create_connection((parts.hostname, parts.port), timeout=2))
        except OSError:
            pass
    print(f"held {len(held)}", flush=True)
    sys.stdin.read()
