"""The node: pairs with a bridge, then stays connected, answers its commands and calls the agent.

    node = Node("~/.local/state/my-node", Details("Kitchen Pi", commands=["device.echo"]))

    @node.handle("device.echo")
    async def echo(params):
        return params

    await node.pair_by_code("192.168.1.20", 18790, on_code=lambda code, request: print(code))
    await node.run()          # reconnects with backoff until node.stop(), or raises Revoked
"""
import asyncio
import itertools
import logging
import os
import random
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

import lanbridge_wire as wire

from .canvas import Canvas
from .node_session import NodeSession
from .session import AsyncSession
from .store import BridgePin, NodeStore, now

log = logging.getLogger("lanbridge_node")

Handler = Callable[[Any], Awaitable[Any]]


class LanbridgeError(Exception):
    """An error with one of the protocol's codes (PROTOCOL.md §9.5, §12.6)."""

    def __init__(self, code: str, message: str = "", retryable: bool = False, retry_after_ms: Optional[int] = None):
        super().__init__("%s: %s" % (code, message) if message else code)
        self.code, self.message, self.retryable, self.retry_after_ms = code, message, retryable, retry_after_ms

    @classmethod
    def from_json(cls, value: dict) -> "LanbridgeError":
        return cls(str(value.get("code", "UNKNOWN")), str(value.get("message", "")), bool(value.get("retryable", False)),
                   value.get("retryAfterMs"))

    def to_json(self) -> dict:
        out = {"code": self.code, "message": self.message or self.code}
        if self.retryable:
            out["retryable"] = True
        if self.retry_after_ms is not None:
            out["retryAfterMs"] = self.retry_after_ms
        return out


class NotPaired(LanbridgeError):
    """There is no pinned bridge, or the bridge no longer knows this node."""


class Revoked(LanbridgeError):
    """The operator removed this node's pairing; its pin is forgotten."""


class BridgeMismatch(LanbridgeError):
    """The bridge presented a key other than the pinned one (or the invite's fingerprint)."""


@dataclass
class Details:
    """What the node tells the bridge about itself when it pairs (§9.2). All of it is a claim:
    the bridge's access rules decide what it may run."""

    display_name: str
    platform: str = "linux"
    commands: List[str] = field(default_factory=list)
    caps: List[str] = field(default_factory=list)
    requires_foreground: bool = False
    supports_input_injection: bool = False
    os_version: Optional[str] = None
    app_version: Optional[str] = None
    device_model: Optional[str] = None

    def to_json(self) -> dict:
        out = {"displayName": self.display_name, "platform": self.platform, "caps": self.caps, "commands": self.commands,
               "flags": {"requiresForeground": self.requires_foreground, "supportsInputInjection": self.supports_input_injection}}
        for key, value in (("osVersion", self.os_version), ("appVersion", self.app_version), ("deviceModel", self.device_model)):
            if value is not None:
                out[key] = value
        return out


MAX_ADDRESSES = 4
STAGGER = 0.25  # seconds between the starts of two connection attempts (happy eyeballs)

Address = Tuple[str, int]


def parse_address(text: str, default_port: Optional[int] = None) -> Optional[Address]:
    """`host:port` or `[v6]:port` (§9.1), else None: a list a peer sent is a hint, not trusted.
    With `default_port`, also a bare `host`, `v6` or `[v6]` (what a user types for a server)."""
    if default_port is not None:
        if text.startswith("[") and "]:" not in text:
            text = f"{text}:{default_port}"
        elif not text.startswith("[") and text.count(":") != 1:
            text = f"[{text}]:{default_port}" if ":" in text else f"{text}:{default_port}"
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.rpartition(":")
        if ":" in host:
            return None
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535 or len(host) > 253:
        return None
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:")
    if not set(host) <= allowed or host[0] in "-." or (":" in host and not set(host.lower()) <= set("0123456789abcdef:.")):
        return None
    return host, int(port)


def format_address(address: Address) -> str:
    host, port = address
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def address_list(texts: Any) -> List[Address]:
    """At most four distinct `host:port` entries from a peer's list; the rest is skipped."""
    out: List[Address] = []
    for text in (texts if isinstance(texts, list) else [])[:4 * MAX_ADDRESSES]:
        address = parse_address(text) if isinstance(text, str) else None
        if address is not None and address not in out and len(out) < MAX_ADDRESSES:
            out.append(address)
    return out


class AllFailed(ConnectionError):
    """Every address was tried and none reached the bridge."""

    def __init__(self, failures: List[Tuple[Address, BaseException]]):
        super().__init__("; ".join("%s: %s" % (format_address(a), e or type(e).__name__) for a, e in failures) or "no address to try")
        self.failures = failures


async def race(candidates: List[Address], attempt: Callable[[Address], Awaitable[Any]], discard: Callable[[Any], None],
               stagger: float = STAGGER) -> Tuple[Any, Address]:
    """Runs `attempt` on each candidate, `stagger` seconds apart or at once after a failure, and
    returns the first success with its address; attempts still running are cancelled, and a
    success that arrives late is handed to `discard`."""
    if not candidates:
        raise AllFailed([])
    running: Dict[asyncio.Future, int] = {}
    failures: List[Tuple[Address, BaseException]] = []
    started = 0

    def start() -> None:
        nonlocal started
        running[asyncio.ensure_future(attempt(candidates[started]))] = started
        started += 1

    def late(task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is None:
            discard(task.result())

    start()
    try:
        while running:
            done, _ = await asyncio.wait(list(running), timeout=stagger if started < len(candidates) else None,
                                         return_when=asyncio.FIRST_COMPLETED)
            if not done:
                start()
                continue
            winner = None
            for task in done:
                index = running.pop(task)
                if task.exception() is None and winner is None:
                    winner = (task.result(), candidates[index])
                elif task.exception() is None:
                    discard(task.result())
                else:
                    failures.append((candidates[index], task.exception()))
            if winner is not None:
                return winner
            if started < len(candidates):
                start()
        raise AllFailed(failures)
    finally:
        for task in running:
            task.cancel()
            task.add_done_callback(late)


@dataclass(frozen=True)
class Invite:
    """A `lanbridge://HOST:PORT/invite?fp=…&s=…[&a=HOST:PORT…][&name=…]` URI (§9.3)."""

    host: str
    port: int
    fingerprint: str
    secret: bytes
    name: Optional[str] = None
    alternates: Tuple[Address, ...] = ()

    @property
    def addresses(self) -> List[Address]:
        """HOST:PORT, then up to three `a=` alternates, first choice first."""
        return [(self.host, self.port)] + [a for a in self.alternates if a != (self.host, self.port)][:MAX_ADDRESSES - 1]

    @classmethod
    def parse(cls, uri: str) -> "Invite":
        parts = urllib.parse.urlsplit(uri)
        query = urllib.parse.parse_qs(parts.query)
        if parts.scheme != "lanbridge" or parts.path != "/invite" or not parts.hostname or not parts.port:
            raise ValueError("not a lanbridge invite URI: %r" % uri)
        try:
            secret = bytes.fromhex(query["s"][0])
            fingerprint = query["fp"][0]
        except (KeyError, ValueError):
            raise ValueError("an invite URI needs fp= and a hex s=") from None
        return cls(parts.hostname, parts.port, fingerprint, secret, query.get("name", [None])[0],
                   tuple(address_list(query.get("a", []))[:MAX_ADDRESSES - 1]))


class Node:
    """A lanbridge node. Handlers are registered before `run`; `run` serves until `stop`."""

    PING_INTERVAL = 15.0
    IDLE_TIMEOUT = 40.0

    def __init__(self, state_dir: str, details: Details, *, on_event: Optional[Callable[[str, str], None]] = None,
                 discover: Optional[Callable[[str], Awaitable[List[Address]]]] = None):
        self.store = NodeStore(os.path.expanduser(state_dir))
        self.details = details
        self.on_event = on_event or (lambda kind, detail: None)
        # Given the pinned bridge's short fingerprint, where mDNS (or anything else) sees it now:
        # tried first. A hint only: the pinned key decides.
        self.discover = discover
        self._handlers: Dict[str, Handler] = {}
        self._session: Optional[AsyncSession] = None
        #: The protocol of the connection open now (PROTOCOL.md Appendix C): it decides, this class
        #: carries out.
        self._machine: Optional[NodeSession] = None
        #: The agent's canvas as the bridge last said (PROTOCOL.md §9.7); None without a canvas host.
        self.canvas: Optional[Canvas] = None
        self._foreground = True
        self._calls: Dict[str, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._stopping = False
        self._stopped: Optional[asyncio.Event] = None
        self.connected = asyncio.Event()

    # --- identity and pin -----------------------------------------------------------------------

    @property
    def node_id(self) -> str:
        """The node's ID: the fingerprint of its public key (§2)."""
        from .store import public_key
        return wire.fingerprint(public_key(self.store.identity()))

    @property
    def bridge(self) -> Optional[BridgePin]:
        """The pinned bridge (name, fingerprint, address), or None before pairing."""
        return self.store.pin()

    def forget_bridge(self) -> None:
        """Unpairs locally: the pin goes, the key stays (pairing again gives the same node ID)."""
        self.store.forget_pin()

    # --- handlers ---------------------------------------------------------------------------------

    def handle(self, command: str) -> Callable[[Handler], Handler]:
        """Registers an async function `f(params) -> payload` for `command`; raise LanbridgeError
        to answer with a code. The command is added to the details the node pairs with."""
        def register(function: Handler) -> Handler:
            self._handlers[command] = function
            if command not in self.details.commands:
                self.details.commands.append(command)
            return function
        return register

    # --- pairing ----------------------------------------------------------------------------------

    async def pair_by_code(self, host: str, port: int, on_code: Callable[[str, str], None]) -> str:
        """Asks to pair (§9.2); `on_code(code, request_id)` once the bridge has recorded the request,
        to be shown to the operator. Returns this node's ID once approved; raises LanbridgeError
        otherwise."""
        session = await AsyncSession.connect(host, port, self.store.identity())
        try:
            machine = NodeSession(self.details.to_json(), session.handshake_hash, os.urandom(32), pinned=False, foreground=self._foreground)
            return await self._pair(session, machine, (host, port), on_code)
        finally:
            session.close()

    async def pair_by_invite(self, uri: str) -> str:
        """Pairs at once with an invite (§9.3), trying its addresses in order (staggered, as `run`
        does) and checking the bridge against the invite's fingerprint."""
        invite = Invite.parse(uri)
        identity = self.store.identity()

        async def attempt(address: Address) -> AsyncSession:
            session = await AsyncSession.connect(address[0], address[1], identity, invite_secret=invite.secret)
            if wire.fingerprint(session.remote_static) != invite.fingerprint:
                session.close()
                raise BridgeMismatch("BRIDGE_MISMATCH", "the bridge's key at %s is not the invite's" % format_address(address))
            return session

        session, address = await self._dial(invite.addresses, attempt)
        try:
            machine = NodeSession(self.details.to_json(), session.handshake_hash, os.urandom(32), pinned=False,
                                  invite_secret=invite.secret, foreground=self._foreground)
            return await self._pair(session, machine, address, None, [format_address(a) for a in invite.addresses])
        finally:
            session.close()

    async def _pair(self, session: AsyncSession, machine: NodeSession, address: Address,
                    on_code: Optional[Callable[[str, str], None]], listed: Optional[List[str]] = None) -> str:
        """Drives a pairing connection until the session is connected; any error from the bridge
        ends the attempt (raised)."""
        welcome = message = await self._welcome(session)
        while True:
            for action in machine.received(message, time.monotonic()):
                verb = action[0]
                if verb == "send":
                    await session.send(action[1])
                elif verb == "notify" and action[1] == "code" and on_code is not None:
                    on_code(*action[2])
                elif verb == "notify" and action[1] == "error":
                    raise LanbridgeError.from_json(message)
                elif verb == "pin":
                    self._save_pin(session, address[0], address[1], {**welcome, "addresses": action[2] or listed})
                elif verb == "end":
                    raise self._stopped_by(action[1])
            if machine.connected:
                return str(message.get("nodeId") or self.node_id)
            message = await session.receive()

    def _stopped_by(self, failure: str) -> LanbridgeError:
        """What a session's stop raises; a revocation also forgets the pin."""
        if failure == "revoked":
            self.store.forget_pin()
            return Revoked("REVOKED", "the operator removed this node's pairing")
        codes = {"rejected": "PAIRING_REJECTED", "expired": "PAIRING_EXPIRED", "replaced": "SESSION_REPLACED", "invite-refused": "PAIRING_FAILED"}
        return LanbridgeError(codes.get(failure, "PAIRING_FAILED"), failure)

    # --- the paired session -------------------------------------------------------------------------

    async def run(self) -> None:
        """Connects to the pinned bridge and serves, reconnecting after 0.25 s doubling to 30 s
        (with jitter), until `stop()`. Raises NotPaired or Revoked when the pairing is gone."""
        self._stopping = False
        self._stopped = asyncio.Event()
        delay = 0.25
        while not self._stopping:
            pin = self.store.pin()
            if pin is None:
                raise NotPaired("NOT_PAIRED", "no pinned bridge: pair first")
            try:
                await self._serve(pin)
                delay = 0.25
            except (NotPaired, Revoked, BridgeMismatch):
                raise
            except (OSError, ConnectionError, asyncio.TimeoutError, wire.ProtocolError, ValueError) as error:
                self.on_event("disconnected", str(error) or type(error).__name__)
            if self._stopping:
                break
            try:
                await asyncio.wait_for(self._stopped.wait(), delay * random.uniform(0.8, 1.2))
            except asyncio.TimeoutError:
                pass
            delay = min(delay * 2, 30.0)

    def stop(self) -> None:
        """Ends `run` and closes the connection."""
        self._stopping = True
        if self._stopped is not None:
            self._stopped.set()
        if self._session is not None:
            self._session.close()

    async def set_foreground(self, foreground: bool) -> None:
        """Tells the bridge the app moved (§9.4); kept and sent again on every reconnect."""
        self._foreground = foreground
        await self._carry_out(self._machine.set_foreground(foreground, time.monotonic()) if self._machine else [])

    async def call(self, method: str, params: Optional[dict] = None, *, idempotency_key: Optional[str] = None,
                   timeout: float = 30.0) -> Any:
        """Calls the gateway (§12.5: `agent`, with an idempotency key, or `system-event`) and returns
        its payload; raises LanbridgeError with the code, or TIMEOUT after `timeout` seconds."""
        message = {"type": "gateway.call", "method": method, "params": params or {}}
        if idempotency_key is not None:
            message["idempotencyKey"] = idempotency_key
        return await self._request("call", message, timeout)

    async def register_push(self, provider: str, token: str, *, environment: Optional[str] = None,
                            topic: Optional[str] = None, timeout: float = 30.0) -> None:
        """Tells the bridge where to wake this node (§9.6): the push provider's token, and for APNs
        the environment and the app's bundle ID as `topic`. The latest registration replaces the one
        before. Raises LanbridgeError: INVALID_REQUEST, RATE_LIMITED, UNAVAILABLE or TIMEOUT."""
        message = {"type": "push.register", "provider": provider, "token": token}
        if environment is not None:
            message["environment"] = environment
        if topic is not None:
            message["topic"] = topic
        await self._request("push", message, timeout)

    async def refresh_canvas(self, timeout: float = 30.0) -> "Canvas":
        """Extends this session's canvas capability (§9.7) and returns the canvas; raises
        LanbridgeError UNAVAILABLE when the bridge has no canvas host."""
        return await self._request("canvas", {"type": "canvas.refresh"}, timeout)

    async def _request(self, prefix: str, message: dict, timeout: float) -> Any:
        """Sends a message the bridge answers by `id` (gateway.result, push.result, canvas.grant),
        on this connection, and waits for that answer; the session answers it if the connection
        ends first."""
        machine = self._machine
        if machine is None or not machine.connected:
            raise LanbridgeError("UNAVAILABLE", "not connected to the bridge", retryable=True)
        call_id = "%s-%d" % (prefix, next(self._ids))
        future = asyncio.get_running_loop().create_future()
        self._calls[call_id] = future
        try:
            await self._carry_out(machine.request(call_id, {**message, "id": call_id}, time.monotonic() + timeout, time.monotonic()))
            try:
                return await asyncio.wait_for(asyncio.shield(future), timeout)
            except asyncio.TimeoutError:
                await self._carry_out(machine.tick(time.monotonic() + 1e-3))
                if not future.done():
                    raise LanbridgeError("TIMEOUT", "no answer within %g s" % timeout, retryable=True) from None
                return future.result()
        finally:
            self._calls.pop(call_id, None)

    async def _carry_out(self, actions: List[Tuple[Any, ...]], session: Optional[AsyncSession] = None,
                         tasks: Optional[Dict[int, "asyncio.Task[None]"]] = None, pin: Optional[BridgePin] = None,
                         address: Optional[Address] = None) -> None:
        """Does what the session decided, in order; a stop raises."""
        session = session or self._session
        for action in actions:
            verb = action[0]
            if verb == "send":
                if session is not None:
                    await session.send(action[1])
            elif verb == "start" and tasks is not None and session is not None:
                tasks[action[1]] = asyncio.ensure_future(self._invoke(session, self._machine, action[1], action[2]))
            elif verb == "cancel" and tasks is not None:
                task = tasks.pop(action[1], None)
                if task is not None:
                    task.cancel()
            elif verb == "answer":
                future = self._calls.get(action[1])
                if future is not None and not future.done():
                    if action[2]:
                        future.set_result(Canvas.from_json(action[3]) if action[1].startswith("canvas-") else action[3])
                    else:
                        future.set_exception(LanbridgeError.from_json(action[3]))
            elif verb == "canvas":
                self.canvas = Canvas.from_json(action[1])
            elif verb == "pin" and pin is not None and address is not None:
                listed = tuple(format_address(a) for a in address_list(action[2])) or pin.addresses
                if address != (pin.host, pin.port) or listed != pin.addresses:
                    self.store.save_pin(BridgePin(pin.public_key, address[0], address[1], pin.bridge_name, pin.paired_at, listed))
            elif verb == "notify" and action[1] == "connected":
                self._session = session
                self.connected.set()
                self.on_event("connected", str(action[2]))
            elif verb == "notify" and action[1] == "error":
                code, message = action[2]
                if code == "NOT_PAIRED":
                    raise NotPaired(code, message)
                self.on_event("error", str(LanbridgeError(code, message)))
            elif verb == "end":
                raise self._stopped_by(action[1])

    # --- internals ----------------------------------------------------------------------------------

    async def _welcome(self, session: AsyncSession) -> dict:
        welcome = await asyncio.wait_for(session.receive(), 10)
        if welcome["type"] != "welcome":
            raise wire.ProtocolError("the bridge's first message was %r, not welcome" % welcome["type"])
        return welcome

    def _save_pin(self, session: AsyncSession, host: str, port: int, welcome: dict) -> None:
        listed = tuple(format_address(a) for a in address_list(welcome.get("addresses")))
        self.store.save_pin(BridgePin(session.remote_static, host, port, welcome.get("bridgeName"), now(), listed))

    async def _dial(self, candidates: List[Address], attempt: Callable[[Address], Awaitable[AsyncSession]]) -> Tuple[AsyncSession, Address]:
        """The race of `race()`; with one address its own error stands (a wrong key there is
        someone in the middle), with several a wrong key fails only that address."""
        try:
            return await race(candidates, attempt, lambda session: session.close())
        except AllFailed as failed:
            if len(failed.failures) == 1:
                raise failed.failures[0][1] from None
            raise

    async def _candidates(self, pin: BridgePin) -> List[Address]:
        """mDNS (or whatever `discover` finds) first, then the address that worked last, then the
        bridge's own list; at most eight, without repeats."""
        found: List[Address] = []
        if self.discover is not None:
            try:
                found = list(await asyncio.wait_for(self.discover(pin.fingerprint[:9]), 3))[:MAX_ADDRESSES]
            except Exception as error:  # discovery is optional; its failure is no reason not to dial
                log.info("discovery failed: %s", error)
        out: List[Address] = []
        for address in found + [(pin.host, pin.port)] + address_list(list(pin.addresses)):
            if address not in out:
                out.append(address)
        return out[:2 * MAX_ADDRESSES]

    async def _serve(self, pin: BridgePin) -> None:
        identity = self.store.identity()

        async def attempt(address: Address) -> AsyncSession:
            session = await AsyncSession.connect(address[0], address[1], identity)
            if session.remote_static != pin.public_key:
                session.close()
                raise BridgeMismatch("BRIDGE_MISMATCH", "the bridge at %s is not the pinned one (%s)" % (format_address(address), pin.fingerprint))
            return session

        session, address = await self._dial(await self._candidates(pin), attempt)
        machine = self._machine = NodeSession(self.details.to_json(), session.handshake_hash, os.urandom(32), pinned=True,
                                              foreground=self._foreground)
        tasks: Dict[int, "asyncio.Task[None]"] = {}  # this connection's running handlers, by run key
        pinger: Optional["asyncio.Future[None]"] = None
        try:
            message = await self._welcome(session)
            while True:
                await self._carry_out(machine.received(message, time.monotonic()), session, tasks, pin, address)
                if machine.connected and pinger is None:
                    pinger = asyncio.ensure_future(self._ping(session))
                message = await asyncio.wait_for(session.receive(), self.IDLE_TIMEOUT)
        finally:
            if pinger is not None:
                pinger.cancel()
            # Every run cancelled, every call answered UNAVAILABLE (nothing is sent any more).
            for action in machine.closed(time.monotonic()):
                if action[0] == "cancel" and action[1] in tasks:
                    tasks.pop(action[1]).cancel()
                elif action[0] == "answer":
                    future = self._calls.get(action[1])
                    if future is not None and not future.done():
                        future.set_exception(LanbridgeError("UNAVAILABLE", "the connection to the bridge closed", retryable=True))
            self._machine = None
            self._session = None
            self.connected.clear()
            session.close()

    async def _ping(self, session: AsyncSession) -> None:
        for n in itertools.count(1):
            await asyncio.sleep(self.PING_INTERVAL)
            await session.send({"type": "ping", "id": n})

    async def _invoke(self, session: AsyncSession, machine: Optional[NodeSession], key: int, message: dict) -> None:
        invoke_id, command = str(message.get("id")), str(message.get("command"))
        self.on_event("invoke", command)
        handler = self._handlers.get(command)
        timeout = message.get("timeoutMs")
        try:
            if handler is None:
                raise LanbridgeError("UNKNOWN_COMMAND", "this node has no %s" % command)
            call = handler(message.get("params"))
            payload = await (asyncio.wait_for(call, timeout / 1000) if isinstance(timeout, (int, float)) and timeout > 0 else call)
            answer = {"type": "invoke.result", "id": invoke_id, "ok": True, "payload": payload}
        except LanbridgeError as error:
            answer = {"type": "invoke.result", "id": invoke_id, "ok": False, "error": error.to_json()}
        except asyncio.TimeoutError:
            answer = {"type": "invoke.result", "id": invoke_id, "ok": False,
                      "error": {"code": "TIMEOUT", "message": "the handler did not finish in time", "retryable": True}}
        except Exception as error:  # a handler's bug is the caller's failure, not the node's end
            log.exception("handler for %s failed", command)
            answer = {"type": "invoke.result", "id": invoke_id, "ok": False,
                      "error": {"code": "COMMAND_FAILED", "message": "%s: %s" % (type(error).__name__, error)}}
        # Once, on the connection the invoke came on, unless cancelled (the session decides).
        if machine is not None:
            for action in machine.handler_finished(key, answer, time.monotonic()):
                await session.send(action[1])
