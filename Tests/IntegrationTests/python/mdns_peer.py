#!/usr/bin/env python3
"""An independent mDNS peer (python-zeroconf) for the discovery tests, bound to one address.

    mdns_peer.py browse ADDRESS        prints JSON lines: {"event": "added", "name", "port", "txt"}, {"event": "removed", "name"}
    mdns_peer.py publish ADDRESS NAME  registers NAME._lanbridge._tcp, prints "published NAME"
    MDNS_TYPE=_openclaw-gw._tcp mdns_peer.py browse ADDRESS    the same for another service type
Runs until stdin closes."""
import os
import json
import socket
import sys

from zeroconf import IPVersion, ServiceBrowser, ServiceInfo, ServiceListener, Zeroconf

TYPE = os.environ.get("MDNS_TYPE", "_lanbridge._tcp") + ".local."
mode, address = sys.argv[1], sys.argv[2]
zc = Zeroconf(interfaces=[address], ip_version=IPVersion.V4Only)


class Printer(ServiceListener):
    def add_service(self, zc, type_, name):
        info = zc.get_service_info(type_, name, timeout=3000)
        txt = {k.decode(): (v or b"").decode() for k, v in (info.properties if info else {}).items()}
        print(json.dumps({"event": "added", "name": name[: -len(TYPE) - 1], "port": info.port if info else None, "txt": txt}), flush=True)

    def remove_service(self, zc, type_, name):
        print(json.dumps({"event": "removed", "name": name[: -len(TYPE) - 1]}), flush=True)

    def update_service(self, zc, type_, name):
        info = zc.get_service_info(type_, name, timeout=3000)
        txt = {k.decode(): (v or b"").decode() for k, v in (info.properties if info else {}).items()}
        print(json.dumps({"event": "updated", "name": name[: -len(TYPE) - 1], "port": info.port if info else None, "txt": txt}), flush=True)


if mode == "browse":
    ServiceBrowser(zc, TYPE, Printer())
    print("browsing", flush=True)
else:
    name = sys.argv[3]
    zc.register_service(ServiceInfo(TYPE, "%s.%s" % (name, TYPE), addresses=[socket.inet_aton(address)], port=9,
                                    properties={"txtvers": "1"}, server="competitor.local."))
    print("published %s" % name, flush=True)
sys.stdin.read()
zc.close()
