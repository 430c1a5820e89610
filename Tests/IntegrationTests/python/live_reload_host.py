#!/usr/bin/env python3
"""A canvas host's live-reload WebSocket, for nginx to proxy /__openclaw__/ws to (CanvasSmugglingTests).
Written on the `websockets` library, which we did not write. Prints "listening PORT"; for each
socket "live connected", then sends "reload"; prints "live message TEXT" for anything the page
sends (a relay must never let one through) and "live closed" when it goes.

    live_reload_host.py
"""
import asyncio
from websockets.asyncio.server import serve


def say(line):
    print(line, flush=True)


async def main():
    async def handler(ws):
        say("live connected")
        await ws.send("reload")
        try:
            async for message in ws:
                say(f"live message {message}")
        except Exception:  # noqa: BLE001 - a closed socket is the end either way
            pass
        say("live closed")

    async with serve(handler, "127.0.0.1", 0) as server:
        say(f"listening {server.sockets[0].getsockname()[1]}")
        await asyncio.Future()


asyncio.run(main())
