"""A node's session with its bridge after the handshake, as a state machine without I/O
(PROTOCOL.md Appendix C; the Swift SDK's `NodeSession` is the same table). Events in, actions out:
`Node` carries the actions out. Time comes with each event, the pairing nonce with the setup.

Actions are tuples, first the verb:
  ("send", message)                 a message (dict) for the bridge
  ("authorize",)                    paired: the app's traffic may flow
  ("pin", bridge_name, addresses)   pin the bridge (first pairing) or remember what it listed
  ("start", key, invoke)            run the app's handler; `key` names the run
  ("cancel", key)                   the run was cancelled (its answer is never sent)
  ("answer", id, ok, value)         a call's answer: its payload, or an error dict
  ("canvas", canvas)                the canvas as the bridge gave it (a dict)
  ("notify", kind, value)           "code" (code, request_id), "pending" request_id,
                                    "connected" bridge_name, "error" (code, message)
  ("end", failure)                  stop, do not retry: revoked, rejected, expired, replaced,
                                    invite-refused
"""
from typing import Any, Dict, List, Optional, Tuple

from lanbridge_wire import commitment, verification_code

Action = Tuple[Any, ...]

AWAITING_WELCOME, REDEEMING_INVITE, REQUESTING_PAIRING = "awaiting-welcome", "redeeming-invite", "requesting-pairing"
REVEALED, PENDING, CONNECTED, ENDED = "revealed", "pending", "connected", "ended"
PAIRING = (REDEEMING_INVITE, REQUESTING_PAIRING, REVEALED, PENDING)

STOPS = {"PAIRING_EXPIRED": "expired", "PAIRING_REJECTED": "rejected", "SESSION_REPLACED": "replaced"}


class NodeSession:
    def __init__(self, details: dict, handshake_hash: bytes, node_nonce: bytes, *, pinned: bool,
                 invite_secret: Optional[bytes] = None, foreground: bool = True):
        self.state = AWAITING_WELCOME
        self.details, self.handshake_hash, self.node_nonce = details, handshake_hash, node_nonce
        self.pinned, self.invite_secret, self.foreground = pinned, invite_secret, foreground
        self.code: Optional[str] = None
        self.bridge_name = ""
        self.running: Dict[int, str] = {}  # run key -> invoke id
        self.next_key = 0
        self.waiting: Dict[str, float] = {}  # call id -> deadline

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED

    @property
    def next_deadline(self) -> Optional[float]:
        return min(self.waiting.values()) if self.waiting else None

    # --- events ---------------------------------------------------------------------------------

    def received(self, message: dict, now: float) -> List[Action]:
        if self.state == ENDED:
            return []
        kind = message.get("type")
        if kind == "welcome":
            if self.state != AWAITING_WELCOME:
                return []
            self.bridge_name = str(message.get("bridgeName", ""))
            if message.get("paired"):
                return self._connect(message.get("addresses"), message.get("canvas"))
            if self.invite_secret is not None:
                self.state = REDEEMING_INVITE
                return [("send", {"type": "invite.redeem", "secret": self.invite_secret.hex(), "details": self.details})]
            if self.pinned:
                return self._end("revoked")
            self.state = REQUESTING_PAIRING
            return [("send", {"type": "pair.request", "details": self.details,
                              "commitment": commitment(self.handshake_hash, self.node_nonce).hex()})]
        if kind == "pair.challenge":
            if self.state != REQUESTING_PAIRING:
                return []
            try:
                bridge_nonce = bytes.fromhex(str(message.get("nonce")))
            except ValueError:
                return []
            self.code = verification_code(self.handshake_hash, self.node_nonce, bridge_nonce)
            self.state = REVEALED
            return [("send", {"type": "pair.reveal", "nonce": self.node_nonce.hex()})]
        if kind == "pair.pending":
            # The code is shown only now: the bridge has checked the commitment and recorded it.
            if self.state != REVEALED:
                return []
            self.state = PENDING
            request_id = str(message.get("requestId"))
            return [("notify", "code", (self.code, request_id)), ("notify", "pending", request_id)]
        if kind == "pair.resolved":
            if self.state not in PAIRING:
                return []
            outcome = message.get("outcome")
            if outcome == "approved":
                return self._connect(message.get("addresses"), message.get("canvas"))
            return self._end("rejected" if outcome == "rejected" else "expired")
        if kind == "ping":
            return [("send", {"type": "pong", "id": message.get("id")})]
        if kind == "revoked":
            return self._end("revoked")
        if kind == "invoke":
            # Only a bridge this node is paired with may run its commands: not one still pairing.
            if self.state != CONNECTED:
                return []
            self.next_key += 1
            self.running[self.next_key] = str(message.get("id"))
            return [("start", self.next_key, message)]
        if kind == "invoke.cancel":
            keys = sorted(key for key, invoke_id in self.running.items() if invoke_id == str(message.get("id")))
            for key in keys:
                del self.running[key]
            return [("cancel", key) for key in keys]
        if kind in ("gateway.result", "push.result"):
            ok = bool(message.get("ok"))
            value = message.get("payload") if ok else (message.get("error") or {"code": "COMMAND_FAILED", "message": "failed"})
            return self._answer(str(message.get("id")), ok, value)
        if kind == "canvas.grant":
            if self.state != CONNECTED:
                return []
            if message.get("canvas"):
                return [("canvas", message["canvas"])] + self._answer(str(message.get("id")), True, message["canvas"])
            return self._answer(str(message.get("id")), False, message.get("error") or {"code": "UNAVAILABLE", "message": "no canvas"})
        if kind == "error":
            code = str(message.get("code"))
            notice: List[Action] = [("notify", "error", (code, str(message.get("message", ""))))]
            if code in STOPS:
                return notice + self._end(STOPS[code])
            if code == "PAIRING_FAILED" and self.invite_secret is not None:
                return notice + self._end("invite-refused")
            return notice
        return []

    def handler_finished(self, key: int, result: dict, now: float) -> List[Action]:
        """`result` is the invoke.result message; sent once, unless the run was cancelled."""
        if self.state == ENDED or self.running.pop(key, None) is None:
            return []
        return [("send", result)]

    def request(self, call_id: str, message: dict, deadline: float, now: float) -> List[Action]:
        if self.state != CONNECTED:
            return [("answer", call_id, False, {"code": "UNAVAILABLE", "message": "not connected to the bridge", "retryable": True})]
        self.waiting[call_id] = deadline
        return [("send", message)]

    def app_event(self, name: str, payload: Any, now: float) -> List[Action]:
        return [("send", {"type": "event", "event": name, "payload": payload})] if self.state == CONNECTED else []

    def set_foreground(self, foreground: bool, now: float) -> List[Action]:
        if self.state == ENDED:
            return []
        self.foreground = foreground
        return [("send", {"type": "state", "foreground": foreground})] if self.state == CONNECTED else []

    def tick(self, now: float) -> List[Action]:
        due = sorted((deadline, call_id) for call_id, deadline in self.waiting.items() if deadline <= now)
        out: List[Action] = []
        for _, call_id in due:
            del self.waiting[call_id]
            out.append(("answer", call_id, False, {"code": "TIMEOUT", "message": "no answer in time", "retryable": True}))
        return out

    def closed(self, now: float) -> List[Action]:
        return [] if self.state == ENDED else self._end(None)

    # --- internals ------------------------------------------------------------------------------

    def _connect(self, addresses: Any, canvas: Any) -> List[Action]:
        self.state = CONNECTED
        out: List[Action] = [("authorize",), ("pin", self.bridge_name, addresses), ("send", {"type": "state", "foreground": self.foreground}),
                             ("notify", "connected", self.bridge_name)]
        return out + ([("canvas", canvas)] if canvas else [])

    def _answer(self, call_id: str, ok: bool, value: Any) -> List[Action]:
        if self.waiting.pop(call_id, None) is None:
            return []  # late, unknown or repeated
        return [("answer", call_id, ok, value)]

    def _end(self, failure: Optional[str]) -> List[Action]:
        self.state = ENDED
        out: List[Action] = [("cancel", key) for key in sorted(self.running)]
        out += [("answer", call_id, False, {"code": "UNAVAILABLE", "message": "the connection closed", "retryable": True})
                for call_id in sorted(self.waiting)]
        self.running.clear()
        self.waiting.clear()
        return out + ([("end", failure)] if failure else [])
