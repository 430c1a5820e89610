"""The Python SDK's node session walks the same table as the Swift one (PROTOCOL.md Appendix C):
pairing/vectors/node-session.json, step by step."""
import json
import os

from lanbridge_node.node_session import NodeSession

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "pairing", "vectors", "node-session.json")


def summary(action, runs):
    verb = action[0]
    if verb == "send":
        return "send " + action[1]["type"]
    if verb in ("authorize", "canvas"):
        return verb
    if verb == "pin":
        return "pin " + action[1]
    if verb == "start":
        return "start " + str(action[2]["id"])
    if verb == "cancel":
        return "cancel " + runs.get(action[1], "?")
    if verb == "answer":
        return "answer %s %s" % (action[1], "ok" if action[2] else action[3]["code"])
    if verb == "notify":
        kind, value = action[1], action[2]
        if kind == "code":
            return "notify code " + value[1]
        if kind == "error":
            return "notify error " + value[0]
        return "notify %s %s" % (kind, value)
    if verb == "end":
        return "end " + action[1]
    raise AssertionError(action)


def test_every_walk_goes_as_the_table_says():
    walks = json.load(open(VECTORS))["walks"]
    assert len(walks) >= 8
    for walk in walks:
        setup = walk["setup"]
        session = NodeSession({"displayName": "phone", "platform": "ios"}, bytes([7] * 32), bytes([9] * 32),
                              pinned=setup["pinned"], invite_secret=bytes([5] * 16) if setup["invite"] else None,
                              foreground=setup["foreground"])
        runs, started = {}, []
        for index, step in enumerate(walk["steps"], 1):
            now = 1000 + step["at"]
            if "receive" in step:
                actions = session.received(step["receive"], now)
            elif "finished" in step:
                key = started[step["finished"] - 1]
                actions = session.handler_finished(key, {"type": "invoke.result", "id": runs[key], "ok": True, "payload": {}}, now)
            elif "request" in step:
                actions = session.request(step["request"]["id"], step["request"], now + step["deadline"], now)
            elif "foreground" in step:
                actions = session.set_foreground(step["foreground"], now)
            elif "event" in step:
                actions = session.app_event(step["event"], None, now)
            elif "tick" in step:
                actions = session.tick(now)
            else:
                actions = session.closed(now)
            for action in actions:
                if action[0] == "start":
                    runs[action[1]] = str(action[2]["id"])
                    started.append(action[1])
            assert [summary(a, runs) for a in actions] == step["do"], "%s, step %d" % (walk["name"], index)
            assert session.state == step["state"], "%s, step %d" % (walk["name"], index)


def test_the_code_is_the_protocols_and_is_shown_only_once_recorded():
    import lanbridge_wire as wire
    session = NodeSession({"displayName": "phone"}, bytes([7] * 32), bytes([9] * 32), pinned=False)
    (verb, request), = session.received({"type": "welcome", "bridgeName": "desk", "paired": False}, 0)
    assert request["commitment"] == wire.commitment(bytes([7] * 32), bytes([9] * 32)).hex()
    assert session.received({"type": "pair.challenge", "requestId": "r1", "nonce": "03" * 32}, 0) == [("send", {"type": "pair.reveal", "nonce": "09" * 32})]
    shown = session.received({"type": "pair.pending", "requestId": "r1"}, 0)
    assert shown[0] == ("notify", "code", (wire.verification_code(bytes([7] * 32), bytes([9] * 32), bytes([3] * 32)), "r1"))
