#!/usr/bin/env python3
"""A simulator of an OpenClaw gateway's node-facing side, written from the checklist of
../shared/references/openclaw-gateway-protocol.md §9 (not from lanbridge's code), on Python's
`websockets` and `cryptography`. It is not OpenClaw: OpenClawRealGatewayTests run OpenClaw's real
gateway (Tests/Tools/openclaw), and this simulator stays for what that one cannot be made to do on
cue: protocol 4, a device held for its operator (--manual), a rotated device token (rotate), slow
reconnects, TLS and Unix-socket endpoints, kicks and cancels.

Checked against the real gateway (2026.4.12), and made to agree: the connect recipe and its
refusals, a node's commands before and after its operator approves a set (reconcile_surface), the
background queue, push registrations, voice and agent events. Known to differ: the real gateway
leaves an older socket of the same device open when a new one connects (and that older socket's
close then unregisters the new one, upstream's node-registry.ts), where this simulator closes it.

  openclaw_gateway.py TOKEN [--manual] [--tick-ms N] [--protocol 3|4] [--tls CERT KEY | --unix PATH]

Prints "listening PORT", then one line per thing a test waits for:
  paired DEVICE silent|manual         connected DEVICE PLATFORM NAME|commands=a,b
  pending REQUEST DEVICE              refused DEVICE DETAILCODE
  result INVOKE JSON                  queued ACTION DEVICE COMMAND
  acked IDS                           disconnected DEVICE
  surface-pending REQUEST DEVICE a,b  surface-approved DEVICE a,b
Reads commands on stdin:
  invoke DEVICE COMMAND PARAMSJSON [TIMEOUTMS]   (prints "invoking INVOKE" first)
  force DEVICE COMMAND PARAMSJSON [TIMEOUTMS]    (the same, skipping the command policy, as a
                                                   gateway that ignores it would: not upstream)
  approve REQUEST (a device's or a node surface's)     rotate DEVICE     kick DEVICE     cancel INVOKE
  devices             (prints "devices N upgrades M" and one "device ID PLATFORM FAMILY" line each)
  reload              (sends "reload" on every live-reload socket of the canvas host)
  lapse               (every canvas capability ends now, as if the gateway's clock passed them; prints "lapsed all")
The canvas host (openclaw_canvas.py) shares the port, as upstream's does, and prints
"canvas STATUS PATH" for every request it answers.
"""
import asyncio, base64, hashlib, hmac, json, os, secrets, ssl, sys, time, uuid
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from websockets.asyncio.server import serve, unix_serve
import openclaw_canvas as canvas_host

TOKEN = sys.argv[1]
MANUAL = "--manual" in sys.argv
TICK_MS = int(sys.argv[sys.argv.index("--tick-ms") + 1]) if "--tick-ms" in sys.argv else 30000
PROTOCOL = int(sys.argv[sys.argv.index("--protocol") + 1]) if "--protocol" in sys.argv else 4
# A device's second and later connects wait this long before hello-ok: the window in which a
# re-offering node has no socket, held open so a test can speak in it.
SLOW_RECONNECT_MS = int(sys.argv[sys.argv.index("--slow-reconnect-ms") + 1]) if "--slow-reconnect-ms" in sys.argv else 0
connected_before = set()
MIN_NODE_PROTOCOL = 3
SKEW_MS = 120_000
PREAUTH_BYTES = 64 * 1024
CLIENT_IDS = {"webchat-ui", "openclaw-control-ui", "openclaw-tui", "webchat", "cli", "gateway-client", "openclaw-macos",
              "openclaw-ios", "openclaw-android", "node-host", "test", "fingerprint", "openclaw-probe"}
MODES = {"webchat", "cli", "ui", "backend", "node", "probe", "test"}
CONNECT_KEYS = {"minProtocol", "maxProtocol", "client", "caps", "commands", "permissions", "pathEnv", "role", "scopes",
                "device", "auth", "locale", "userAgent"}
CLIENT_KEYS = {"id", "displayName", "version", "platform", "deviceFamily", "modelIdentifier", "mode", "instanceId"}
DEVICE_KEYS = {"id", "publicKey", "signature", "signedAt", "nonce"}
AUTH_KEYS = {"token", "bootstrapToken", "deviceToken", "password"}
CANVAS = ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.eval", "canvas.snapshot", "canvas.a2ui.push",
          "canvas.a2ui.pushJSONL", "canvas.a2ui.reset"]
ALLOW = {  # [A] platform defaults, §5.1
    "ios": CANVAS + ["camera.list", "location.get", "device.info", "device.status", "contacts.search", "calendar.events",
                     "reminders.list", "photos.latest", "motion.activity", "motion.pedometer", "system.notify"],
    "android": CANVAS + ["camera.list", "location.get", "notifications.list", "notifications.actions", "system.notify",
                         "device.info", "device.status", "device.permissions", "device.health", "contacts.search"],
    "macos": CANVAS + ["camera.list", "location.get", "device.info", "device.status", "system.run.prepare", "system.run",
                       "system.which", "system.notify", "browser.proxy"],
    "linux": ["system.run.prepare", "system.run", "system.which", "system.notify", "browser.proxy"],
}
NODE_METHODS = {"node.invoke.result", "node.event", "node.pending.drain", "node.pending.pull", "node.pending.ack", "health", "skills.bins",
                "node.canvas.capability.refresh"}
reloads = set()

devices = {}   # deviceId -> {publicKey, platform, family, token}
pending = {}   # requestId -> device record awaiting approval
sessions = {}  # deviceId -> (websocket, commands)
invokes = {}   # invokeId -> (deviceId, command, future)
queue = {}     # deviceId -> [action]
surfaces = {}  # deviceId -> the node commands its operator approved (the paired-node record)
surface_requests = {}  # requestId -> (deviceId, commands) awaiting node.pair approval
upgraded = [0]  # WebSocket upgrades accepted, for the squatting test


def say(line):
    print(line, flush=True)


def b64url_decode(text):
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def normalize(value):
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in (value or "").strip())


def platform_of(value):
    v = (value or "").lower()
    for prefix, name in (("ios", "ios"), ("android", "android"), ("mac", "macos"), ("darwin", "macos"), ("linux", "linux")):
        if v.startswith(prefix):
            return name
    return "unknown"


def frame(kind, **fields):
    return json.dumps({"type": kind, **fields})


async def refuse(ws, req_id, code, message, detail_code, device=None, close=1008, **details):
    if device:
        say(f"refused {device} {detail_code}")
    await ws.send(frame("res", id=req_id, ok=False, error={"code": code, "message": message, "details": {"code": detail_code, **details}}))
    await ws.close(close, message[:120])


def verify_device(params, nonce, token_signed):
    """§2.5 step 7, in order. Returns the failing detail code, or None."""
    d = params["device"]
    try:
        raw = b64url_decode(d["publicKey"])
    except Exception:
        raw = b""
    if hashlib.sha256(raw).hexdigest() != d["id"]:
        return "DEVICE_AUTH_DEVICE_ID_MISMATCH"
    if abs(int(time.time() * 1000) - d["signedAt"]) > SKEW_MS:
        return "DEVICE_AUTH_SIGNATURE_EXPIRED"
    if not d.get("nonce"):
        return "DEVICE_AUTH_NONCE_REQUIRED"
    if d["nonce"].strip() != nonce:
        return "DEVICE_AUTH_NONCE_MISMATCH"
    c = params["client"]
    base = [d["id"], c["id"], c["mode"], params.get("role", "operator"), ",".join(params.get("scopes", [])), str(d["signedAt"]), token_signed, d["nonce"]]
    payloads = ["|".join(["v3"] + base + [normalize(c.get("platform")), normalize(c.get("deviceFamily"))]), "|".join(["v2"] + base)]
    if "--no-v3" in sys.argv:
        payloads = payloads[1:]
    try:
        key = Ed25519PublicKey.from_public_bytes(raw)
    except Exception:
        return "DEVICE_AUTH_PUBLIC_KEY_INVALID"
    for payload in payloads:
        try:
            key.verify(b64url_decode(d["signature"]), payload.encode())
            return None
        except (InvalidSignature, ValueError):
            continue
    return "DEVICE_AUTH_SIGNATURE_INVALID"


def closed_schema(params):
    extra = set(params) - CONNECT_KEYS
    extra |= {f"client.{k}" for k in set(params.get("client", {})) - CLIENT_KEYS}
    extra |= {f"device.{k}" for k in set(params.get("device") or {}) - DEVICE_KEYS}
    extra |= {f"auth.{k}" for k in set(params.get("auth") or {}) - AUTH_KEYS}
    return sorted(extra)


async def handshake(ws):
    upgraded[0] += 1
    nonce = str(uuid.uuid4())
    await ws.send(frame("event", event="connect.challenge", payload={"nonce": nonce, "ts": int(time.time() * 1000)}))
    try:
        raw = await asyncio.wait_for(ws.recv(), 15)
    except asyncio.TimeoutError:
        await ws.close(1000, "handshake timeout")
        return None
    if len(raw) > PREAUTH_BYTES:
        await ws.close(1009, "preauth payload too large")
        return None
    try:
        msg = json.loads(raw)
    except ValueError:
        msg = {}
    if msg.get("type") != "req" or msg.get("method") != "connect" or not isinstance(msg.get("params"), dict):
        await ws.send(frame("res", id=msg.get("id") or "invalid", ok=False, error={"code": "INVALID_REQUEST", "message": "invalid handshake: first request must be connect"}))
        await ws.close(1008, "invalid handshake")
        return None
    rid, p = msg["id"], msg["params"]
    extra = closed_schema(p)
    client = p.get("client", {})
    if extra or client.get("id") not in CLIENT_IDS or client.get("mode") not in MODES or not client.get("platform") or not client.get("version"):
        await refuse(ws, rid, "INVALID_REQUEST", f"invalid connect params: {extra or 'client'}", "INVALID_CONNECT_PARAMS")
        return None
    lo, hi, role = p.get("minProtocol", 0), p.get("maxProtocol", 0), p.get("role", "operator")
    node_client = role == "node" and client.get("mode") == "node"
    if lo <= PROTOCOL <= hi:
        negotiated = PROTOCOL
    elif node_client and lo <= MIN_NODE_PROTOCOL <= hi:
        negotiated = MIN_NODE_PROTOCOL
    else:
        await refuse(ws, rid, "INVALID_REQUEST", "protocol mismatch", "PROTOCOL_MISMATCH", close=1002, expectedProtocol=PROTOCOL)
        return None
    if role not in ("node", "operator"):
        await refuse(ws, rid, "INVALID_REQUEST", "invalid role", "INVALID_ROLE")
        return None
    if ws.request.headers.get("Origin") or ws.request.headers.get("X-Forwarded-For"):
        await refuse(ws, rid, "INVALID_REQUEST", "origin not allowed", "CONTROL_UI_ORIGIN_NOT_ALLOWED")
        return None
    if role == "node" and not p.get("device"):
        await refuse(ws, rid, "NOT_PAIRED", "device identity required", "DEVICE_IDENTITY_REQUIRED")
        return None
    auth = p.get("auth") or {}
    token_signed = auth.get("token") if auth.get("token") is not None else auth.get("deviceToken") if auth.get("deviceToken") is not None else auth.get("bootstrapToken") or ""
    failure = verify_device(p, nonce, token_signed)
    device_id = p["device"]["id"]
    if failure:
        await refuse(ws, rid, "INVALID_REQUEST", "device auth failed", failure, device=device_id)
        return None
    shared_ok = auth.get("token") is not None and hmac.compare_digest(auth["token"], TOKEN)
    known = devices.get(device_id)
    if not shared_ok:
        candidate = auth.get("deviceToken") or auth.get("token")
        if not candidate:
            await refuse(ws, rid, "INVALID_REQUEST", "unauthorized: token missing", "AUTH_TOKEN_MISSING", device=device_id)
            return None
        if not known or not known.get("token") or not hmac.compare_digest(candidate, known["token"]):
            code = "AUTH_DEVICE_TOKEN_MISMATCH" if auth.get("deviceToken") else "AUTH_TOKEN_MISMATCH"
            await refuse(ws, rid, "INVALID_REQUEST", "unauthorized: token mismatch", code, device=device_id, canRetryWithDeviceToken=False)
            return None
    platform, family = normalize(client.get("platform")), normalize(client.get("deviceFamily"))
    if known and known.get("approved"):
        if (known["platform"], known["family"]) != (platform, family):
            request_id = str(uuid.uuid4())
            pending[request_id] = {**known, "reason": "metadata-upgrade"}
            say(f"pending {request_id} {device_id}")
            await refuse(ws, rid, "NOT_PAIRED", "pairing required", "PAIRING_REQUIRED", device=device_id, requestId=request_id, reason="metadata-upgrade")
            return None
    else:
        record = {"publicKey": p["device"]["publicKey"], "platform": platform, "family": family, "token": None, "approved": False}
        if MANUAL:
            request_id = next((r for r, d in pending.items() if d["publicKey"] == record["publicKey"]), None) or str(uuid.uuid4())
            pending[request_id] = {**record, "deviceId": device_id}
            say(f"pending {request_id} {device_id}")
            await refuse(ws, rid, "NOT_PAIRED", "pairing required", "PAIRING_REQUIRED", device=device_id, requestId=request_id, reason="not-paired")
            return None
        record["approved"] = True
        devices[device_id] = record
        known = record
        say(f"paired {device_id} silent")
    if not known.get("token"):
        known["token"] = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    declared = [c for c in p.get("commands", []) if c in ALLOW.get(platform_of(client.get("platform")), [])]
    declared = reconcile_surface(device_id, declared)
    if device_id in sessions:  # a new session replaces the old one
        await sessions[device_id][0].close(1000, "replaced")
    if SLOW_RECONNECT_MS and device_id in connected_before:
        say(f"reconnecting {device_id}")
        await asyncio.sleep(SLOW_RECONNECT_MS / 1000)
    connected_before.add(device_id)
    sessions[device_id] = (ws, declared)
    await ws.send(frame("res", id=rid, ok=True, payload={
        "type": "hello-ok", "protocol": negotiated, "server": {"version": "sim", "connId": str(uuid.uuid4())},
        "features": {"methods": sorted(NODE_METHODS), "events": ["tick", "node.invoke.request"]},
        "snapshot": {"presence": [], "health": {}, "stateVersion": {"presence": 0, "health": 0}, "uptimeMs": 0},
        "auth": {"deviceToken": known["token"], "role": "node", "scopes": []},
        "canvasHostUrl": canvas_host.host_url(ws, canvas_host.mint(ws)),
        "policy": {"maxPayload": 26214400, "maxBufferedBytes": 52428800, "tickIntervalMs": TICK_MS}}))
    say(f"connected {device_id} {platform} {client.get('displayName', '')}|commands={','.join(declared)}")
    return device_id


def reconcile_surface(device_id, declared):
    """The node's effective commands for this session, as OpenClaw's reconcileNodePairingOnConnect
    (src/gateway/node-connect-reconcile.ts, applied by message-handler.ts:1143-1157) decides them,
    checked against the real gateway (OpenClawRealGatewayTests): with no approved node.pair record,
    every declared command is usable and a pending request lists them; with an approved record that
    lacks some declared command, a pending request is made and the session keeps to the approved
    commands. One pending request per node, refreshed on each connect (src/infra/node-pairing.ts)."""
    approved = surfaces.get(device_id)
    if approved is not None and all(c in approved for c in declared):
        return declared
    request_id = next((r for r, (d, _) in surface_requests.items() if d == device_id), None) or str(uuid.uuid4())
    surface_requests[request_id] = (device_id, declared)
    say(f"surface-pending {request_id} {device_id} {','.join(declared)}")
    return declared if approved is None else list(approved)


async def node_request(ws, device_id, msg, unauthorized):
    rid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if method not in NODE_METHODS:
        unauthorized[0] += 1
        await ws.send(frame("res", id=rid, ok=False, error={"code": "INVALID_REQUEST", "message": "unauthorized role: node"}))
        if unauthorized[0] > 10:
            await ws.close(1008, "repeated unauthorized calls")
        return
    unauthorized[0] = 0
    if method == "node.invoke.result":
        if params.get("nodeId") != device_id:
            return await ws.send(frame("res", id=rid, ok=False, error={"code": "INVALID_REQUEST", "message": "nodeId mismatch"}))
        # The result is taken before the reply, as OpenClaw's handleNodeInvokeResult does
        # (src/gateway/server-methods/nodes.handlers.invoke-result.ts:54-71): a node may close
        # right after sending it.
        entry = invokes.pop(params.get("id"), None)
        if entry:
            entry[2].set_result(params)
        await ws.send(frame("res", id=rid, ok=True, payload={"ok": True, **({} if entry else {"ignored": True})}))
    elif method == "node.canvas.capability.refresh":
        cap = canvas_host.mint(ws)
        say(f"canvas-refresh {device_id}")
        await ws.send(frame("res", id=rid, ok=True, payload={"canvasCapability": cap, "canvasCapabilityExpiresAtMs": int((time.time() + canvas_host.TTL_S) * 1000),
                                                             "canvasHostUrl": canvas_host.host_url(ws, cap)}))
    elif method == "node.pending.pull":
        actions = queue.get(device_id, [])
        await ws.send(frame("res", id=rid, ok=True, payload={"nodeId": device_id, "actions": actions}))
    elif method == "node.pending.ack":
        ids = params.get("ids") or []
        queue[device_id] = [a for a in queue.get(device_id, []) if a["id"] not in ids]
        await ws.send(frame("res", id=rid, ok=True, payload={"nodeId": device_id, "ackedIds": ids, "remainingCount": len(queue[device_id])}))
        say(f"acked {','.join(ids)}")
    elif method == "node.event":
        # openclaw-gateway-protocol.md §4.5 and OpenClaw's src/gateway/server-node-events.ts
        # (handleNodeEvent): payloadJSON is preferred over payload; voice.transcript needs a `text`
        # of at most 20,000 characters, agent.request a `message` (or attachments); unknown events
        # are accepted. The reply is [L]'s {ok, event, handled, reason?}. push.apns.register is
        # stored upstream with no reply of its own (server-node-events.ts:643-685): printed here.
        event = params.get("event")
        try:
            obj = json.loads(params["payloadJSON"]) if isinstance(params.get("payloadJSON"), str) else params.get("payload")
        except ValueError:
            obj = None
        handled, reason = True, None
        if event == "voice.transcript" and not (isinstance(obj, dict) and isinstance(obj.get("text"), str) and 0 < len(obj["text"].strip()) <= 20000):
            handled, reason = False, "no text"
        elif event == "agent.request" and not (isinstance(obj, dict) and (str(obj.get("message") or "").strip() or obj.get("attachments"))):
            handled, reason = False, "no message"
        say(f"node.event {device_id} {event} " + json.dumps(obj, separators=(",", ":"), sort_keys=True))
        await ws.send(frame("res", id=rid, ok=True, payload={"ok": True, "event": event, "handled": handled, **({"reason": reason} if reason else {})}))
    else:
        await ws.send(frame("res", id=rid, ok=True, payload={"ok": True}))


async def connection(ws):
    if ws.request.path.partition("?")[0].endswith("/__openclaw__/ws"):
        return await canvas_host.live_reload(say, ws, reloads)
    try:
        await session(ws)
    finally:
        canvas_host.forget(ws)


async def session(ws):
    device_id = await handshake(ws)
    if not device_id:
        return
    unauthorized = [0]

    async def ticks():
        while True:
            await asyncio.sleep(TICK_MS / 1000)
            await ws.send(frame("event", event="tick", payload={"ts": int(time.time() * 1000)}))

    ticker = asyncio.create_task(ticks())
    try:
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("type") != "req":
                await ws.send(frame("res", id=msg.get("id") or "invalid", ok=False, error={"code": "INVALID_REQUEST", "message": "invalid request frame"}))
                continue
            await node_request(ws, device_id, msg, unauthorized)
    except Exception:
        pass
    finally:
        ticker.cancel()
        if sessions.get(device_id, (None,))[0] is ws:
            del sessions[device_id]
            for invoke_id, (owner, command, future) in list(invokes.items()):
                if owner == device_id and not future.done():
                    future.set_result({"ok": False, "error": {"code": "DISCONNECTED", "message": f"node disconnected ({command})"}})
            say(f"disconnected {device_id}")


async def invoke(device_id, command, params_json, timeout_ms, force=False):
    invoke_id = str(uuid.uuid4())
    say(f"invoking {invoke_id}")
    session = sessions.get(device_id)
    if not session:
        return say(f"result {invoke_id} " + json.dumps({"ok": False, "error": {"code": "UNAVAILABLE", "message": "node not connected", "details": {"code": "NOT_CONNECTED"}}}))
    ws, declared = session
    if command not in declared and not force:
        return say(f"result {invoke_id} " + json.dumps({"ok": False, "error": {"code": "INVALID_REQUEST", "message": "command not allowlisted", "details": {"reason": "command not declared by node", "command": command}}}))
    future = asyncio.get_running_loop().create_future()
    invokes[invoke_id] = (device_id, command, future)
    key = str(uuid.uuid4())
    await ws.send(frame("event", event="node.invoke.request", payload={
        "id": invoke_id, "nodeId": device_id, "command": command, "paramsJSON": params_json if params_json != "null" else None,
        "timeoutMs": timeout_ms, "idempotencyKey": key}))
    try:
        result = await asyncio.wait_for(future, timeout_ms / 1000)
    except asyncio.TimeoutError:
        invokes.pop(invoke_id, None)
        return say(f"result {invoke_id} " + json.dumps({"ok": False, "error": {"code": "TIMEOUT", "message": "node invoke timed out"}}))
    error = result.get("error") or {}
    platform = devices.get(device_id, {}).get("platform", "")
    if (not result.get("ok") and platform.startswith(("ios", "ipados")) and command.split(".")[0] in ("canvas", "camera", "screen", "talk")
            and (error.get("code") == "NODE_BACKGROUND_UNAVAILABLE" or "BACKGROUND_UNAVAILABLE" in (error.get("message") or ""))):
        action = {"id": str(uuid.uuid4()), "command": command, "paramsJSON": params_json if params_json != "null" else None, "enqueuedAtMs": int(time.time() * 1000)}
        queue.setdefault(device_id, []).append(action)
        say(f"queued {action['id']} {device_id} {command}")
        return say(f"result {invoke_id} " + json.dumps({"ok": False, "error": {"code": "UNAVAILABLE", "message": "node command queued until iOS returns to foreground",
                                                                              "retryable": True, "details": {"code": "QUEUED_UNTIL_FOREGROUND", "queuedActionId": action["id"], "nodeError": error}}}))
    say(f"result {invoke_id} " + json.dumps(result))


async def commands():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := (await reader.readline()).decode():
        words = line.split(maxsplit=4)
        if not words:
            continue
        if words[0] in ("invoke", "force"):
            asyncio.create_task(invoke(words[1], words[2], words[3], int(words[4]) if len(words) > 4 else 30000, force=words[0] == "force"))
        elif words[0] == "approve" and words[1] in surface_requests:
            # node.pair.approve (src/gateway/server-methods/nodes.ts:579-620): the record takes the
            # request's commands; only operators hear node.pair.resolved, and the node's live session
            # keeps its commands until it reconnects.
            device_id, approved = surface_requests.pop(words[1])
            surfaces[device_id] = approved
            say(f"surface-approved {device_id} {','.join(approved)}")
        elif words[0] == "approve" and words[1] in pending:
            record = pending.pop(words[1])
            device_id = record.pop("deviceId", None) or next(d for d, r in devices.items() if r["publicKey"] == record["publicKey"])
            devices[device_id] = {**record, "approved": True, "platform": record["platform"], "family": record["family"]}
            say(f"paired {device_id} manual")
        elif words[0] == "rotate" and words[1] in devices:
            devices[words[1]]["token"] = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
            if words[1] in sessions:
                await sessions[words[1]][0].close(4001, "device token rotated")
        elif words[0] == "kick" and words[1] in sessions:
            await sessions[words[1]][0].close(1012, "kicked")
        elif words[0] == "cancel" and words[1] in invokes:
            device_id = invokes[words[1]][0]
            await sessions[device_id][0].send(frame("event", event="node.invoke.cancel", payload={"invokeId": words[1], "nodeId": device_id}))
        elif words[0] == "lapse":
            canvas_host.lapse()
            say("lapsed all")
        elif words[0] == "reload":
            for ws in list(reloads):
                await ws.send("reload")
            say(f"reloaded {len(reloads)}")
        elif words[0] == "devices":
            say(f"devices {len(devices)} upgrades {upgraded[0]}")
            for device_id, record in devices.items():
                say(f"device {device_id} {record['platform']} {record['family']}")


async def main():
    # Not OpenClaw's own listeners (it serves ws:// on loopback): the TLS and Unix-socket fronts an
    # operator may put before it, for lanbridge's §12.1 endpoints.
    if "--unix" in sys.argv:
        async with unix_serve(connection, sys.argv[sys.argv.index("--unix") + 1], max_size=PREAUTH_BYTES * 400):
            say("listening 0")
            await commands()
        return
    tls = None
    if "--tls" in sys.argv:
        i = sys.argv.index("--tls")
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(sys.argv[i + 1], sys.argv[i + 2])
    async with serve(connection, "127.0.0.1", 0, max_size=PREAUTH_BYTES * 400, ssl=tls,
                     process_request=lambda c, r: canvas_host.process_request(say, c, r)) as server:
        say(f"listening {server.sockets[0].getsockname()[1]}")
        await commands()


asyncio.run(main())
