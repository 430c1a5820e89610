"""Wide-area DNS-SD (RFC 6763 §11): find bridges in a unicast DNS zone the operator filled with
`lanbridge discover records`, for nodes that cannot hear the bridge's mDNS (another subnet, a VPN,
a tailnet). Needs dnspython (`pip install './sdk/python[wide-area]'`).

    from lanbridge_node.wide_area import browse, wide_area
    bridges = await browse("bridges.example.com")                  # [WideAreaBridge(...)]
    node = Node(state_dir, details, discover=wide_area("bridges.example.com"))

Everything found is a hint: the node trusts only the key its handshake proves.
"""
from dataclasses import dataclass, field
from typing import Awaitable, Callable, List, Optional, Sequence, Tuple

SERVICE = "_lanbridge._tcp"
MAX_INSTANCES = 8
MAX_ADDRESSES = 4

Address = Tuple[str, int]


@dataclass
class WideAreaBridge:
    """One instance of `_lanbridge._tcp` in the zone: its name, where to dial and its TXT hints."""
    name: str
    host: str
    port: int
    addresses: List[str] = field(default_factory=list)
    txt: dict = field(default_factory=dict)

    @property
    def short_fingerprint(self) -> Optional[str]:
        return self.txt.get("id") if self.txt.get("txtvers") == "1" else None


def _txt(strings: Sequence[bytes]) -> dict:
    fields: dict = {}
    for entry in strings:
        text = entry.decode("utf-8", "replace")
        key, eq, value = text.partition("=")
        if eq and key.lower() not in fields:  # the first wins (RFC 6763 §6.4)
            fields[key.lower()] = value
    return fields


def _resolver(nameservers: Optional[Sequence[str]], port: int, timeout: float):
    try:
        import dns.asyncresolver
    except ImportError as error:  # optional: only nodes that browse a zone need it
        raise RuntimeError("wide-area discovery needs dnspython: pip install dnspython") from error
    resolver = dns.asyncresolver.Resolver(configure=not nameservers)
    if nameservers:
        resolver.nameservers = list(nameservers)
        resolver.port = port
    resolver.lifetime = timeout
    return resolver


async def _records(resolver, name, kind: str) -> list:
    import dns.resolver
    try:
        return list(await resolver.resolve(name, kind, search=False))
    except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
        return []


async def browse(domain: str, nameservers: Optional[Sequence[str]] = None, port: int = 53, timeout: float = 3.0) -> List[WideAreaBridge]:
    """The bridges `_lanbridge._tcp.DOMAIN` lists now: PTR, then each instance's SRV and TXT, then
    the target's addresses. `nameservers`: servers to ask instead of the system's, on `port`."""
    import dns.name
    resolver = _resolver(nameservers, port, timeout)
    zone = dns.name.from_text(domain)
    service = dns.name.from_text(SERVICE, origin=zone)
    instances = []
    for record in await _records(resolver, service, "PTR"):
        if record.target.parent() == service and record.target not in instances:
            instances.append(record.target)
    bridges = []
    for instance in instances[:MAX_INSTANCES]:
        srv = sorted(await _records(resolver, instance, "SRV"), key=lambda r: r.priority)
        if not srv or srv[0].port == 0:
            continue
        txt = await _records(resolver, instance, "TXT")
        addresses = []
        for kind in ("A", "AAAA"):
            addresses += [r.address for r in await _records(resolver, srv[0].target, kind) if r.address not in addresses]
        if not addresses:
            continue
        label = instance.labels[0].decode("utf-8", "replace")
        bridges.append(WideAreaBridge(name=f"{label}.{zone.to_text(omit_final_dot=True)}", host=srv[0].target.to_text(), port=srv[0].port,
                                      addresses=addresses[:MAX_ADDRESSES], txt=_txt(txt[0].strings) if txt else {}))
    return bridges


def wide_area(domain: str, nameservers: Optional[Sequence[str]] = None, port: int = 53) -> Callable[[str], Awaitable[List[Address]]]:
    """A `discover` for `Node`: the addresses of the bridges in the zone whose TXT names the
    pinned bridge's short fingerprint."""
    async def discover(short_fingerprint: str) -> List[Address]:
        return [(address, bridge.port) for bridge in await browse(domain, nameservers, port)
                if bridge.short_fingerprint == short_fingerprint for address in bridge.addresses]
    return discover
