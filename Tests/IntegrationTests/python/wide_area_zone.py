"""Reads `lanbridge discover records` output with dnspython (an implementation we did not write)
and follows the chain a wide-area DNS-SD browser follows (RFC 6763 §11): browsing domain ->
service type -> instance -> SRV and TXT -> address. Prints the instance, target, port, TXT and
address as JSON; exits 1 with the reason if the zone does not parse or the chain breaks.

    lanbridge discover records --domain D ... | wide_area_zone.py D
"""
import json
import sys

import dns.name
import dns.rdatatype
import dns.zone


def main():
    domain = sys.argv[1].rstrip(".") + "."
    zone = dns.zone.from_text(sys.stdin.read(), origin=domain, relativize=False, check_origin=False)

    def one(name, kind):
        answer = zone.get_rdataset(dns.name.from_text(name), kind)
        if answer is None or len(answer) != 1:
            sys.exit(f"no single {dns.rdatatype.to_text(kind)} at {name}")
        return next(iter(answer))

    browse = one(f"b._dns-sd._udp.{domain}", dns.rdatatype.PTR).target.to_text()
    service = one(f"_services._dns-sd._udp.{browse}", dns.rdatatype.PTR).target.to_text()
    if not service.startswith("_lanbridge._tcp."):
        sys.exit(f"the service type is {service}")
    instance = one(service, dns.rdatatype.PTR).target
    srv = one(instance.to_text(), dns.rdatatype.SRV)
    txt = one(instance.to_text(), dns.rdatatype.TXT)
    address = zone.get_rdataset(srv.target, dns.rdatatype.A) or zone.get_rdataset(srv.target, dns.rdatatype.AAAA)
    print(json.dumps({
        "instance": instance.labels[0].decode("utf-8"),
        "target": srv.target.to_text(),
        "port": srv.port,
        "txt": [s.decode("utf-8") for s in txt.strings],
        "address": next(iter(address)).address if address else None,
    }))


if __name__ == "__main__":
    main()
