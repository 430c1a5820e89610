"""The README's "Writing a node" Python snippet, run as printed against a bridge played by
lanbridge_wire: only its state directory and the bridge's address are swapped for the test's."""
import asyncio
import os
import pathlib
import re
import textwrap

import pytest

import lanbridge_node
from test_node import FakeBridge, receive, send, wire

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def readme_snippet():
    blocks = re.findall(r"```python\n(.*?)```\n", README.read_text(encoding="utf-8"), re.S)
    found = [block for block in blocks if "Node(" in block and "pair_by_code" in block]
    assert len(found) == 1, "the README's Python node snippet is gone or doubled"
    return found[0]


def swap(text, old, new):
    assert text.count(old) == 1, "the README snippet no longer has %r" % old
    return text.replace(old, new)


def test_the_readme_snippet_pairs_serves_and_stops_when_revoked(tmp_path, capsys):
    seen = {}

    def bridge(session, n):
        if n == 0:  # pair_by_code
            send(session, {"type": "welcome", "bridgeName": "fake", "paired": False, "nodeId": "x"})
            request = receive(session)
            bridge_nonce = os.urandom(32)
            send(session, {"type": "pair.challenge", "requestId": "r1", "nonce": bridge_nonce.hex(), "expiresAt": "2030-01-01T00:00:00Z"})
            reveal = bytes.fromhex(receive(session)["nonce"])
            seen["code"] = wire.verification_code(session.handshake_hash, reveal, bridge_nonce)
            send(session, {"type": "pair.pending", "requestId": "r1", "expiresAt": "2030-01-01T00:00:00Z"})
            send(session, {"type": "pair.resolved", "outcome": "approved", "nodeId": wire.fingerprint(session.remote_static)})
        else:  # run
            send(session, {"type": "welcome", "bridgeName": "fake", "paired": True, "nodeId": "n"})
            assert receive(session)["type"] == "state"
            send(session, {"type": "invoke", "id": "1", "command": "device.echo", "params": {"hi": 1}})
            seen["echo"] = receive(session)
            send(session, {"type": "revoked", "nodeId": "n"})

    fake = FakeBridge(bridge, connections=2)
    code = readme_snippet()
    code = swap(code, '"~/.local/state/my-node"', repr(str(tmp_path)))
    code = swap(code, '"192.168.1.20", 18790', '"127.0.0.1", %d' % fake.port)
    namespace = {"Node": lanbridge_node.Node, "Details": lanbridge_node.Details}
    exec("async def snippet():\n" + textwrap.indent(code, "    "), namespace)
    with pytest.raises(lanbridge_node.Revoked):
        asyncio.run(asyncio.wait_for(namespace["snippet"](), 20))
    fake.join()
    assert capsys.readouterr().out.splitlines() == ["code " + seen["code"]]
    assert seen["echo"] == {"type": "invoke.result", "id": "1", "ok": True, "payload": {"hi": 1}}
