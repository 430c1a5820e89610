"""The README's "Writing a node" Python snippet, run as a file, as printed, against a bridge played
by lanbridge_wire: only its state directory and the bridge's address are swapped for the test's."""
import os
import pathlib
import re
import subprocess
import sys

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


def test_the_readme_snippet_pairs_serves_and_stops_when_revoked(tmp_path):
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
    program = tmp_path / "my_node.py"
    program.write_text(code, encoding="utf-8")
    # A file of its own, in a fresh interpreter that finds lanbridge_node where this test does.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, str(program)], env=env, capture_output=True, text=True, timeout=60)
    fake.join()
    assert "lanbridge_node.session.Revoked" in done.stderr or "Revoked" in done.stderr.splitlines()[-1], done.stderr
    assert done.stdout.splitlines() == ["code " + seen["code"]], done.stdout + done.stderr
    assert seen["echo"] == {"type": "invoke.result", "id": "1", "ok": True, "payload": {"hi": 1}}
