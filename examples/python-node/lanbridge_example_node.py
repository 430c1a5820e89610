#!/usr/bin/env python3
"""A small lanbridge node for a Linux machine, on the lanbridge_node package
(`pip install ./sdk/python`). Commands: system.info, system.notify (through notify-send when
there is one), device.echo. Prints one line per event, like lanbridge-node-sim:
`code 123456 request k3f9q2xm`, `paired NODE-ID`, `connected BRIDGE`, `invoke COMMAND`.

    lanbridge_example_node.py --connect 192.168.1.20:18790 --name "Kitchen Pi"   # pair by code, then serve
    lanbridge_example_node.py --invite 'lanbridge://…'                            # pair by invite, then serve
    lanbridge_example_node.py --domain bridges.example.com --name "Kitchen Pi"   # find it in a DNS zone, pair by code
    lanbridge_example_node.py                                                    # serve the pinned bridge
"""
import argparse
import asyncio
import os
import platform
import shutil
import socket
import sys
import time

from lanbridge_node import Details, LanbridgeError, Node, NotPaired, Revoked
from lanbridge_node.node import format_address


def say(*words):
    print(*words, flush=True)


def build(state_dir, name, discover=None):
    def event(kind, detail):
        say(kind, detail)
        if kind == "connected" and node.bridge is not None:  # where it found the bridge this time
            say("via", format_address((node.bridge.host, node.bridge.port)))

    node = Node(state_dir, Details(name, platform="linux", os_version=platform.release(), app_version="example-0.9.0"),
                on_event=event, discover=discover)

    @node.handle("system.info")
    async def info(params):
        with open("/proc/uptime") as uptime:
            seconds = float(uptime.read().split()[0])
        return {"hostname": socket.gethostname(), "system": platform.system(), "release": platform.release(),
                "machine": platform.machine(), "python": platform.python_version(), "uptimeSeconds": int(seconds)}

    @node.handle("system.notify")
    async def notify(params):
        params = params if isinstance(params, dict) else {}
        title, body = str(params.get("title", "lanbridge")), str(params.get("body", ""))
        sender = shutil.which("notify-send")
        if sender is None:
            return {"shown": False, "reason": "notify-send is not installed"}
        process = await asyncio.create_subprocess_exec(sender, "--", title, body)
        status = await process.wait()
        if status != 0:
            raise LanbridgeError("COMMAND_FAILED", "notify-send exited %d" % status)
        return {"shown": True}

    @node.handle("device.echo")
    async def echo(params):
        return params

    return node


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", default=os.path.expanduser("~/.local/state/lanbridge-example-node"))
    parser.add_argument("--connect", metavar="HOST:PORT", help="pair by code with the bridge there")
    parser.add_argument("--invite", metavar="URI", help="pair with a lanbridge:// invite")
    parser.add_argument("--domain", help="find the bridge in this DNS zone (wide-area DNS-SD; needs dnspython)")
    parser.add_argument("--resolver", metavar="HOST[:PORT]", help="the DNS server to ask for --domain (default: the system's)")
    parser.add_argument("--name", default=socket.gethostname())
    arguments = parser.parse_args()
    discover, servers = None, None
    if arguments.domain:
        from lanbridge_node.node import parse_address
        from lanbridge_node.wide_area import browse, wide_area
        resolver = parse_address(arguments.resolver, default_port=53) if arguments.resolver else None
        if arguments.resolver and resolver is None:
            parser.error("--resolver takes HOST[:PORT]")
        servers, port = ([resolver[0]], resolver[1]) if resolver else (None, 53)
        discover = wide_area(arguments.domain, servers, port)
    node = build(arguments.state_dir, arguments.name, discover)
    try:
        if arguments.domain and node.bridge is None and not arguments.invite:
            found = await browse(arguments.domain, servers, port)
            if not found:
                say("fatal", "no bridge in", arguments.domain)
                sys.exit(1)
            say("found", found[0].name, format_address((found[0].addresses[0], found[0].port)))
            say("node", node.node_id)
            say("paired", await node.pair_by_code(found[0].addresses[0], found[0].port,
                                                  lambda code, request: say("code", code, "request", request)))
        elif arguments.invite:
            say("paired", await node.pair_by_invite(arguments.invite))
        elif arguments.connect and node.bridge is None:
            host, _, port = arguments.connect.rpartition(":")
            say("node", node.node_id)
            say("paired", await node.pair_by_code(host.strip("[]"), int(port), lambda code, request: say("code", code, "request", request)))
        await node.run()
    except (NotPaired, Revoked, LanbridgeError) as error:
        say("fatal", error)
        sys.exit(1)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
