#!/usr/bin/env python3
"""A simulator of OpenClaw's own node apps, written from their sources as
../shared/references/openclaw-apps-and-canvas.md §B2-B4 reads them (not from lanbridge's code):

- iOS (`--platform ios`): client id openclaw-ios, platform "iOS 18.2", family iPhone, protocol 3,
  **binary** frames (GatewayChannel.swift:471), node.invoke.result with `payloadJSON`
  (GatewayNodeSession.swift:480-504); Android (`--platform android`): openclaw-android, text frames,
  a parsed `payload` (GatewaySession.kt:708-744), and it gives up on a challenge after 2 s
  (GatewaySession.kt:668-674).
- v3 signature over v3|deviceId|clientId|mode|role|scopes|signedAtMs|token|nonce|platform|family,
  platform and family lowercased, signed with the app's own clock (DeviceAuthPayload.swift:5-55);
  deviceId = hex SHA-256 of the raw Ed25519 key; key and signature base64url.
- PAIRING_REQUIRED: shows details.userMessage / actionCommand and retries (every 6 s in the apps;
  `--retry` here), while "the screen is open" (until --give-up).
- TLS: trust on first use of the leaf's SHA-256, printed as the apps show it; `--pin SHA` refuses
  any other certificate (GatewayTLSPinning.swift:120-129).

  openclaw_app.py (URL | --setup-code CODE) --state FILE [--platform ios|android] [--pin SHA] [--retry S] [--give-up S] [--role node|operator]

Prints: "tls SHA", "pairing-required REQUEST COMMAND", "hello PROTOCOL", "canvas HOSTURL", "invoke COMMAND PARAMS",
"tick", "voice ok|error ...", "closed CODE REASON", "refused CODE DETAIL". Reads "voice TEXT" and "canvas-refresh" on stdin.
"""
import argparse, asyncio, base64, hashlib, json, os, ssl, sys, time, uuid
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

parser = argparse.ArgumentParser()
parser.add_argument("url", nargs="?")
parser.add_argument("--setup-code", help="an OpenClaw setup code: base64url JSON {url, bootstrapToken} (src/pairing/setup-code.ts)")
parser.add_argument("--state", required=True)
parser.add_argument("--platform", default="ios", choices=["ios", "android"])
parser.add_argument("--pin")
parser.add_argument("--retry", type=float, default=6)
parser.add_argument("--give-up", type=float, default=120)
parser.add_argument("--role", default="node")
parser.add_argument("--name", default="Ada's iPhone")
opts = parser.parse_args()
IOS = opts.platform == "ios"
BOOTSTRAP = ""
if opts.setup_code:
    setup = json.loads(base64.urlsafe_b64decode(opts.setup_code + "=" * (-len(opts.setup_code) % 4)))
    opts.url, BOOTSTRAP = setup["url"], setup["bootstrapToken"]


def say(line):
    print(line, flush=True)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def identity():
    if os.path.exists(opts.state):
        seed = bytes.fromhex(open(opts.state).read().strip())
    else:
        seed = os.urandom(32)
        with open(os.open(opts.state, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(seed.hex())
    key = Ed25519PrivateKey.from_private_bytes(seed)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return key, raw, hashlib.sha256(raw).hexdigest()


KEY, RAW, DEVICE_ID = identity()
CLIENT = {"id": "openclaw-ios" if IOS else "openclaw-android", "displayName": opts.name, "version": "2026.4.13",
          "platform": "iOS 18.2" if IOS else "android", "mode": "node", "instanceId": DEVICE_ID[:12],
          "deviceFamily": "iPhone" if IOS else "Android", "modelIdentifier": "iPhone17,1" if IOS else "Pixel 8"}
COMMANDS = ["canvas.present", "canvas.hide", "canvas.navigate", "canvas.snapshot", "canvas.a2ui.pushJSONL", "camera.list", "location.get", "device.info", "system.notify"]


def connect_request(nonce):
    scopes = [] if opts.role == "node" else ["operator.read", "operator.write"]
    signed_at = int(time.time() * 1000)  # the app's own clock, not the challenge's ts
    token = BOOTSTRAP  # the signed token: the bootstrap token when the app has no other
    payload = "|".join(["v3", DEVICE_ID, CLIENT["id"], CLIENT["mode"] if opts.role == "node" else "ui", opts.role, ",".join(scopes),
                        str(signed_at), token, nonce, CLIENT["platform"].strip().lower(), CLIENT["deviceFamily"].strip().lower()])
    return {"type": "req", "id": str(uuid.uuid4()), "method": "connect", "params": {
        "minProtocol": 3, "maxProtocol": 3, "client": {**CLIENT, "mode": CLIENT["mode"] if opts.role == "node" else "ui"},
        "caps": ["canvas", "camera", "location"], "commands": COMMANDS if opts.role == "node" else [], "permissions": {},
        "locale": "en-US", "userAgent": "OpenClaw/2026.4.13", "role": opts.role, "scopes": scopes, "auth": {"bootstrapToken": BOOTSTRAP} if BOOTSTRAP else {},
        "device": {"id": DEVICE_ID, "publicKey": b64url(RAW), "signature": b64url(KEY.sign(payload.encode())),
                   "signedAt": signed_at, "nonce": nonce}}}


async def send(ws, obj):
    text = json.dumps(obj)
    await ws.send(text.encode() if IOS else text)  # iOS: binary frames of UTF-8 JSON


def answer(command, params):
    if command == "device.info":
        return {"deviceName": opts.name, "systemName": "iOS" if IOS else "Android", "model": CLIENT["modelIdentifier"]}
    if command == "canvas.navigate":
        return {"url": (params or {}).get("url")}
    if command == "canvas.hide":
        return None  # a void command: the app sends no payload (NodeAppModel.swift:930-932, GatewayNodeSession.swift:489-490)
    return {"ok": True}


async def session(ws, stdin_lines):
    challenge = json.loads(await asyncio.wait_for(ws.recv(), 2 if not IOS else 6))
    if challenge.get("event") != "connect.challenge":
        say("no challenge")
        return "stop"
    await send(ws, connect_request(challenge["payload"]["nonce"]))
    reply = json.loads(await asyncio.wait_for(ws.recv(), 12))
    if not reply.get("ok"):
        error = reply.get("error") or {}
        details = error.get("details") or {}
        if details.get("code") == "PAIRING_REQUIRED":
            say(f"pairing-required {details.get('requestId')} {details.get('actionCommand', '')}")
            return "retry"
        say(f"refused {error.get('code')} {details.get('code', '')}")
        return "stop"
    hello = reply["payload"]
    assert hello["type"] == "hello-ok" and "snapshot" in hello and "policy" in hello and "features" in hello and "server" in hello
    say(f"hello {hello['protocol']}")
    if hello.get("canvasHostUrl"):
        say(f"canvas {hello['canvasHostUrl']}")
    pending = {}

    async def reader():
        async for raw in ws:
            msg = json.loads(raw)
            if msg.get("type") == "event" and msg.get("event") == "tick":
                say("tick")
            elif msg.get("type") == "event" and msg.get("event") == "node.invoke.request":
                p = msg["payload"]
                params = json.loads(p["paramsJSON"]) if isinstance(p.get("paramsJSON"), str) else p.get("params")
                say(f"invoke {p['command']} {json.dumps(params, separators=(',', ':'))}")
                result = answer(p["command"], params)
                body = {"id": p["id"], "nodeId": p["nodeId"], "ok": True}
                if result is None:
                    pass
                elif IOS:
                    body["payloadJSON"] = json.dumps(result)
                else:
                    body["payload"] = result
                await send(ws, {"type": "req", "id": str(uuid.uuid4()), "method": "node.invoke.result", "params": body})
            elif msg.get("type") == "res" and msg.get("id") in pending:
                pending.pop(msg["id"]).set_result(msg)

    async def typed():
        while True:
            line = await stdin_lines.get()
            if line == "canvas-refresh":
                rid = str(uuid.uuid4())
                future = asyncio.get_running_loop().create_future()
                pending[rid] = future
                await send(ws, {"type": "req", "id": rid, "method": "node.canvas.capability.refresh", "params": {}})
                res = await asyncio.wait_for(future, 15)
                say(f"canvas-refresh ok {res['payload']['canvasCapability']}" if res.get("ok") else f"canvas-refresh error {json.dumps(res.get('error'))}")
            elif line.startswith("voice "):
                rid = str(uuid.uuid4())
                future = asyncio.get_running_loop().create_future()
                pending[rid] = future
                await send(ws, {"type": "req", "id": rid, "method": "node.event", "params": {
                    "event": "voice.transcript", "payloadJSON": json.dumps({"text": line[6:], "eventId": str(uuid.uuid4())})}})
                res = await asyncio.wait_for(future, 15)
                say("voice ok" if res.get("ok") else f"voice error {json.dumps(res.get('error'))}")

    tasks = [asyncio.create_task(reader()), asyncio.create_task(typed())]
    try:
        await tasks[0]
    finally:
        for t in tasks:
            t.cancel()
    return "closed"


async def main():
    lines = asyncio.Queue()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def pump():
        while line := (await reader.readline()).decode():
            await lines.put(line.rstrip("\n"))
    asyncio.create_task(pump())
    start = time.monotonic()
    context = None
    if opts.url.startswith("wss://"):
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # pinned below, as the apps do
    while time.monotonic() - start < opts.give_up:
        try:
            async with connect(opts.url, ssl=context, open_timeout=10, max_size=None) as ws:
                if context:
                    sha = hashlib.sha256(ws.transport.get_extra_info("ssl_object").getpeercert(binary_form=True)).hexdigest()
                    say(f"tls {sha}")
                    if opts.pin and sha != opts.pin:
                        say("pin mismatch")
                        return
                outcome = await session(ws, lines)
                if outcome == "stop":
                    return
        except ConnectionClosed as closed:
            say(f"closed {closed.rcvd.code if closed.rcvd else 1006} {closed.rcvd.reason if closed.rcvd else ''}")
            if closed.rcvd and closed.rcvd.code == 1008 and "revoked" in closed.rcvd.reason:
                return
        except (OSError, asyncio.TimeoutError) as error:
            say(f"error {type(error).__name__}")
        await asyncio.sleep(opts.retry)


asyncio.run(main())
