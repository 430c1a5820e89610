"""The Python node against a bridge written from PROTOCOL.md with lanbridge_wire's blocking
`accept` (an implementation the node does not share code paths with above the wire format)."""
import asyncio
import json
import os
import socket
import threading

import pytest

import lanbridge_wire as wire
from lanbridge_node import BridgeMismatch, Canvas, Details, Invite, LanbridgeError, Node, PinMismatch, Revoked, fetch_canvas
from lanbridge_node.store import public_key


class FakeBridge:
    """One connection at a time on 127.0.0.1; `script(session)` plays the bridge's side."""

    def __init__(self, script, invites=None, connections=1):
        self.key = os.urandom(32)
        self.public = public_key(self.key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.script, self.invites, self.errors, self.connections = script, invites, [], connections
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        """`script(session)`, or `script(session, n)` for the n-th of several connections."""
        try:
            for n in range(self.connections):
                sock, _ = self.listener.accept()
                with sock:
                    sock.settimeout(10)
                    session = wire.accept(sock, self.key, invites=self.invites)
                    self.script(session, n) if self.connections > 1 else self.script(session)
        except Exception as error:  # reported by the test through .errors
            self.errors.append(error)

    def join(self):
        self.thread.join(10)
        self.listener.close()
        assert not self.errors, self.errors


def send(session, message):
    wire.send_message(session, message)


def receive(session):
    return wire.recv_message(session)


def test_pairs_by_code_showing_the_code_the_bridge_derives(tmp_path):
    seen = {}

    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": False, "nodeId": "x"})
        request = receive(session)
        assert request["type"] == "pair.request" and request["details"]["displayName"] == "Pi"
        assert "device.echo" in request["details"]["commands"]
        bridge_nonce = os.urandom(32)
        send(session, {"type": "pair.challenge", "requestId": "r1", "nonce": bridge_nonce.hex(), "expiresAt": "2030-01-01T00:00:00Z"})
        reveal = bytes.fromhex(receive(session)["nonce"])
        assert wire.commitment(session.handshake_hash, reveal).hex() == request["commitment"]
        seen["code"] = wire.verification_code(session.handshake_hash, reveal, bridge_nonce)
        # As the bridge does (§9.2): the request is recorded, then the operator decides.
        send(session, {"type": "pair.pending", "requestId": "r1", "expiresAt": "2030-01-01T00:00:00Z"})
        send(session, {"type": "pair.resolved", "outcome": "approved", "nodeId": wire.fingerprint(session.remote_static)})

    fake = FakeBridge(bridge)
    node = Node(str(tmp_path), Details("Pi"))

    @node.handle("device.echo")
    async def echo(params):
        return params

    shown = []
    node_id = asyncio.run(node.pair_by_code("127.0.0.1", fake.port, lambda code, request: shown.append((code, request))))
    fake.join()
    assert shown == [(seen["code"], "r1")]
    assert node_id == node.node_id
    assert node.bridge.public_key == fake.public and node.bridge.fingerprint == wire.fingerprint(fake.public)
    assert node.bridge.bridge_name == "fake" and node.bridge.port == fake.port
    assert oct(os.stat(tmp_path / "identity.key").st_mode & 0o777) == "0o600"


def test_a_rejected_request_raises_with_the_code_and_pins_nothing(tmp_path):
    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": False, "nodeId": "x"})
        receive(session)
        send(session, {"type": "pair.resolved", "outcome": "rejected", "nodeId": "x"})

    fake = FakeBridge(bridge)
    node = Node(str(tmp_path), Details("Pi"))
    with pytest.raises(LanbridgeError) as raised:
        asyncio.run(node.pair_by_code("127.0.0.1", fake.port, lambda *_: None))
    fake.join()
    assert raised.value.code == "PAIRING_REJECTED" and node.bridge is None


def test_pairs_by_invite_and_refuses_a_bridge_that_is_not_the_invites(tmp_path):
    secret = os.urandom(32)

    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": False, "nodeId": "x"})
        redeem = receive(session)
        assert redeem["type"] == "invite.redeem" and redeem["secret"] == secret.hex()
        send(session, {"type": "pair.resolved", "outcome": "approved", "nodeId": "n"})

    fake = FakeBridge(bridge, invites={wire.invite_id(secret): wire.invite_psk(secret)})
    uri = "lanbridge://127.0.0.1:%d/invite?fp=%s&s=%s&name=Pi" % (fake.port, wire.fingerprint(fake.public), secret.hex())
    assert Invite.parse(uri).name == "Pi"
    node = Node(str(tmp_path / "a"), Details("Pi"))
    assert asyncio.run(node.pair_by_invite(uri)) == "n"
    fake.join()
    assert node.bridge.public_key == fake.public

    impostor = FakeBridge(lambda session: None, invites={wire.invite_id(secret): wire.invite_psk(secret)})
    wrong = "lanbridge://127.0.0.1:%d/invite?fp=%s&s=%s" % (impostor.port, wire.fingerprint(fake.public), secret.hex())
    other = Node(str(tmp_path / "b"), Details("Pi"))
    with pytest.raises(BridgeMismatch):
        asyncio.run(other.pair_by_invite(wrong))
    impostor.thread.join(10)
    assert other.bridge is None


def paired_node(tmp_path, fake):
    from lanbridge_node.store import BridgePin
    node = Node(str(tmp_path), Details("Pi"))
    node.store.save_pin(BridgePin(fake.public, "127.0.0.1", fake.port, "fake"))
    return node


def test_answers_invokes_and_unknown_commands_sends_its_state_and_calls_the_agent(tmp_path):
    answers = {}

    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": True, "nodeId": "n"})
        assert receive(session) == {"type": "state", "foreground": True}
        send(session, {"type": "invoke", "id": "1", "command": "device.echo", "params": {"x": [1, "ü"]}})
        send(session, {"type": "invoke", "id": "2", "command": "camera.snap"})
        send(session, {"type": "invoke", "id": "3", "command": "device.fail"})
        call = None
        while len(answers) < 3 or call is None:  # results and the call, in whatever order they come
            message = receive(session)
            if message["type"] == "invoke.result":
                answers[message["id"]] = message
            else:
                call = message
        assert call["type"] == "gateway.call" and call["method"] == "agent" and call["idempotencyKey"] == "k1"
        send(session, {"type": "gateway.result", "id": call["id"], "ok": True, "payload": {"reply": "hi"}})
        denied = receive(session)
        send(session, {"type": "gateway.result", "id": denied["id"], "ok": False, "error": {"code": "FORBIDDEN", "message": "no"}})
        assert receive(session) == {"type": "state", "foreground": False}
        send(session, {"type": "revoked", "nodeId": "n"})

    fake = FakeBridge(bridge)
    node = paired_node(tmp_path, fake)

    @node.handle("device.echo")
    async def echo(params):
        return params

    @node.handle("device.fail")
    async def fail(params):
        raise LanbridgeError("COMMAND_FAILED", "no such file")

    results = {}

    async def main():
        runner = asyncio.ensure_future(node.run())
        await asyncio.wait_for(node.connected.wait(), 10)
        results["reply"] = await node.call("agent", {"message": "hello"}, idempotency_key="k1")
        with pytest.raises(LanbridgeError) as raised:
            await node.call("system.run", {})
        results["denied"] = raised.value.code
        await node.set_foreground(False)
        with pytest.raises(Revoked):
            await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    fake.join()
    assert answers["1"] == {"type": "invoke.result", "id": "1", "ok": True, "payload": {"x": [1, "ü"]}}
    assert answers["2"]["ok"] is False and answers["2"]["error"]["code"] == "UNKNOWN_COMMAND"
    assert answers["3"]["error"] == {"code": "COMMAND_FAILED", "message": "no such file"}
    assert results == {"reply": {"reply": "hi"}, "denied": "FORBIDDEN"}
    assert node.bridge is None, "revocation forgets the pin"


def test_refuses_a_bridge_with_another_key_than_the_pinned_one(tmp_path):
    fake = FakeBridge(lambda session: None)
    node = paired_node(tmp_path, fake)
    impostor = FakeBridge(lambda session: None)
    from lanbridge_node.store import BridgePin
    node.store.save_pin(BridgePin(fake.public, "127.0.0.1", impostor.port, "fake"))
    with pytest.raises(BridgeMismatch):
        asyncio.run(node.run())
    impostor.thread.join(10)
    fake.listener.close()


def test_the_state_files_are_the_swift_librarys():
    pin = {"publicKey": "PAsYwibJgSLoV9+KqIjd+saqQTaiAdVlWn7uY9DwLxM=", "fingerprint": "38HA-DWG7-JCF7-V2R8",
           "host": "10.0.0.2", "port": 18790, "bridgeName": "office", "pairedAt": "2026-11-22T12:00:00Z"}
    from lanbridge_node.store import BridgePin
    parsed = BridgePin.from_json(json.loads(json.dumps(pin)))
    assert parsed.fingerprint == pin["fingerprint"] and parsed.to_json() == pin


def test_reconnects_after_the_bridge_drops_it_and_stops_when_revoked(tmp_path):
    seen = []

    def bridge(session, n):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": True, "nodeId": "n"})
        seen.append(receive(session))  # the state, sent again on every connect
        if n == 1:
            send(session, {"type": "revoked", "nodeId": "n"})
        # n == 0: the connection just closes, as a restarting bridge's does

    fake = FakeBridge(bridge, connections=2)
    node = paired_node(tmp_path, fake)
    events = []
    node.on_event = lambda kind, detail: events.append(kind)
    with pytest.raises(Revoked):
        asyncio.run(asyncio.wait_for(node.run(), 20))
    fake.join()
    assert seen == [{"type": "state", "foreground": True}] * 2
    assert events[:3] == ["connected", "disconnected", "connected"], events


def test_invoke_cancel_stops_the_handler_and_sends_no_result(tmp_path):
    seen = []

    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": True, "nodeId": "n"})
        assert receive(session)["type"] == "state"
        send(session, {"type": "invoke", "id": "slow", "command": "device.slow"})
        send(session, {"type": "invoke", "id": "fast", "command": "device.echo", "params": 1})
        assert receive(session) == {"type": "invoke.result", "id": "fast", "ok": True, "payload": 1}
        send(session, {"type": "invoke.cancel", "id": "slow"})
        # The next invoke's answer is the next message: the cancelled one answered nothing.
        send(session, {"type": "invoke", "id": "after", "command": "device.echo", "params": 2})
        assert receive(session) == {"type": "invoke.result", "id": "after", "ok": True, "payload": 2}
        send(session, {"type": "revoked", "nodeId": "n"})

    fake = FakeBridge(bridge)
    node = paired_node(tmp_path, fake)

    @node.handle("device.echo")
    async def echo(params):
        seen.append(f"echo {params}")
        return params

    @node.handle("device.slow")
    async def slow(params):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "too late"

    async def main():
        runner = asyncio.ensure_future(node.run())
        with pytest.raises(Revoked):
            await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    fake.join()
    # Cancelled when the bridge said so, not when the connection ended.
    assert seen == ["echo 1", "cancelled", "echo 2"]


def test_registers_where_to_wake_it_and_hears_a_refusal(tmp_path):
    """§9.6: push.register is answered by push.result of its id; a refusal raises its code."""
    seen = []

    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": True, "nodeId": "n"})
        assert receive(session)["type"] == "state"
        accepted = receive(session)
        seen.append(accepted)
        send(session, {"type": "push.result", "id": accepted["id"], "ok": True})
        refused = receive(session)
        send(session, {"type": "push.result", "id": refused["id"], "ok": False, "error": {"code": "INVALID_REQUEST", "message": "push.register: topic"}})
        send(session, {"type": "revoked", "nodeId": "n"})

    fake = FakeBridge(bridge)
    node = paired_node(tmp_path, fake)
    codes = []

    async def main():
        runner = asyncio.ensure_future(node.run())
        await asyncio.wait_for(node.connected.wait(), 10)
        await node.register_push("apns", "ab" * 32, environment="sandbox", topic="com.example.app")
        with pytest.raises(LanbridgeError) as raised:
            await node.register_push("apns", "ab" * 32)
        codes.append(raised.value.code)
        with pytest.raises(Revoked):
            await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    fake.join()
    assert {k: v for k, v in seen[0].items() if k != "id"} == {
        "type": "push.register", "provider": "apns", "token": "ab" * 32, "environment": "sandbox", "topic": "com.example.app"}
    assert codes == ["INVALID_REQUEST"]


def test_learns_the_canvas_from_welcome_and_refreshes_it(tmp_path):
    """§9.8: welcome.canvas is kept as node.canvas; canvas.refresh is answered by canvas.grant of its id."""
    canvas = {"url": "https://192.168.1.10:18793/__openclaw__/cap/kWz4f-t5Z7fK2_YHJIBfbqFZ", "tlsSha256": "ab" * 32, "expiresAtMs": 1}

    def bridge(session):
        send(session, {"type": "welcome", "bridgeName": "fake", "paired": True, "nodeId": "n", "canvas": canvas})
        assert receive(session)["type"] == "state"
        refresh = receive(session)
        assert refresh["type"] == "canvas.refresh"
        send(session, {"type": "canvas.grant", "id": refresh["id"], "canvas": {**canvas, "expiresAtMs": 2}})
        refused = receive(session)
        send(session, {"type": "canvas.grant", "id": refused["id"], "error": {"code": "UNAVAILABLE", "message": "no canvas host"}})
        send(session, {"type": "revoked", "nodeId": "n"})

    fake = FakeBridge(bridge)
    node = paired_node(tmp_path, fake)
    seen = []

    async def main():
        runner = asyncio.ensure_future(node.run())
        await asyncio.wait_for(node.connected.wait(), 10)
        seen.append(node.canvas)
        seen.append(await node.refresh_canvas())
        with pytest.raises(LanbridgeError) as raised:
            await node.refresh_canvas()
        seen.append(raised.value.code)
        with pytest.raises(Revoked):
            await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    fake.join()
    assert seen[0] == Canvas(canvas["url"], "ab" * 32, 1) and seen[1].expires_at_ms == 2 and seen[2] == "UNAVAILABLE"
    assert seen[0].page() == canvas["url"] + "/__openclaw__/a2ui/"


def test_fetch_checks_the_pin_before_sending_anything(tmp_path):
    """The relay's certificate is self-signed: only its SHA-256 makes it trusted."""
    import datetime, hashlib, http.server, ssl
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "relay")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key()).serial_number(1)
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    (tmp_path / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "k.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "https://127.0.0.1:%d/__openclaw__/a2ui/" % server.server_address[1]
    pin = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    try:
        assert fetch_canvas(url, pin)[0] == 200 and requests == ["/__openclaw__/a2ui/"]
        with pytest.raises(PinMismatch):
            fetch_canvas(url, "00" * 32)
        assert requests == ["/__openclaw__/a2ui/"], "nothing was sent to a server with another certificate"
    finally:
        server.shutdown()


def test_invites_read_as_the_published_vectors_say():
    """pairing/vectors/invites.json: the addresses of each invite, first choice first (issue 25)."""
    from lanbridge_node.node import format_address
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "pairing", "vectors", "invites.json")
    with open(path) as file:
        cases = json.load(file)["cases"]
    for case in cases:
        assert [format_address(a) for a in Invite.parse(case["uri"]).addresses] == case["addresses"], case["uri"]


def test_a_stale_address_list_still_finds_the_bridge():
    """The pinned host is dead and so is the first listed address; the second works (issue 25)."""
    dead = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    ports = [s.getsockname()[1] for s in dead]
    for s in dead:
        s.close()  # nothing listens there now: refused at once

    def script(session):
        wire.send_message(session, {"type": "welcome", "bridgeName": "b", "paired": True, "nodeId": "x",
                                    "addresses": ["127.0.0.1:%d" % bridge.port]})
        wire.recv_message(session)  # state

    bridge = FakeBridge(script)
    from lanbridge_node.store import BridgePin, NodeStore
    import tempfile
    directory = tempfile.mkdtemp()
    NodeStore(directory).save_pin(BridgePin(bridge.public, "127.0.0.1", ports[0], "b", None,
                                            ("127.0.0.1:%d" % ports[1], "127.0.0.1:%d" % bridge.port)))
    node = Node(directory, Details("n"))

    async def main():
        runner = asyncio.ensure_future(node.run())
        await asyncio.wait_for(node.connected.wait(), 10)
        node.stop()
        await asyncio.wait_for(runner, 10)

    asyncio.run(main())
    bridge.join()
    pin = node.bridge
    assert (pin.host, pin.port) == ("127.0.0.1", bridge.port), "it remembers where the bridge answered"
    assert pin.addresses == ("127.0.0.1:%d" % bridge.port,), "and the bridge's own list"


def test_wide_area_discovery_reads_the_zone_and_keeps_the_pinned_bridge_only(monkeypatch):
    """`wide_area` over a zone answered from a table (dnsmasq answers it for real in the Swift
    namespace test): instances of the service only, at most eight, the lowest SRV priority, and
    only the bridges whose TXT id is the pinned one's."""
    dns_name = pytest.importorskip("dns.name", reason="wide-area discovery needs dnspython (scripts/setup installs it)")
    from lanbridge_node import wide_area

    zone = "lanbridge.test."
    service = "_lanbridge._tcp." + zone
    table = {(service, "PTR"): [f"b{n}.{service}" for n in range(12)] + [zone]}
    for n in range(12):
        instance = f"b{n}.{service}"
        table[(instance, "SRV")] = [(10, 1), (0, 18790 + n)]
        table[(instance, "TXT")] = [[b"txtvers=1", b"pv=1-1", ("id=MINE-%04d" % (n % 2)).encode()]]
    table[("host." + zone, "A")] = ["100.64.77.1"]

    class Record:
        def __init__(self, kind, value):
            if kind == "PTR":
                self.target = dns_name.from_text(value)
            elif kind == "SRV":
                self.priority, self.port, self.target = value[0], value[1], dns_name.from_text("host." + zone)
            elif kind == "TXT":
                self.strings = value
            else:
                self.address = value

    async def records(resolver, name, kind):
        return [Record(kind, value) for value in table.get((name.to_text(), kind), [])]

    monkeypatch.setattr(wide_area, "_records", records)
    monkeypatch.setattr(wide_area, "_resolver", lambda *args: None)
    bridges = asyncio.run(wide_area.browse("lanbridge.test"))
    assert [b.name for b in bridges] == [f"b{n}.lanbridge.test" for n in range(8)]
    assert bridges[1].port == 18791 and bridges[1].addresses == ["100.64.77.1"] and bridges[1].short_fingerprint == "MINE-0001"
    found = asyncio.run(wide_area.wide_area("lanbridge.test")("MINE-0001"))
    assert found == [("100.64.77.1", 18790 + n) for n in (1, 3, 5, 7)]


def test_an_address_a_user_types_may_leave_out_the_port():
    from lanbridge_node.node import parse_address
    assert [parse_address(t, default_port=53) for t in ("10.0.0.1", "10.0.0.1:5353", "fd00::1", "[fd00::1]", "[fd00::1]:99")] == \
        [("10.0.0.1", 53), ("10.0.0.1", 5353), ("fd00::1", 53), ("fd00::1", 53), ("fd00::1", 99)]
    assert parse_address("10.0.0.1") is None, "a list a peer sent must say its port"
