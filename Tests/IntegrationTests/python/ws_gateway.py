#!/usr/bin/env python3
"""An agent gateway written only from pairing/PROTOCOL.md §12, on Python's `websockets`.

It accepts the bridge's link (the mutual token proof of §12.1: it answers the bridge's challenge
with its own proof, and checks the bridge's proof in bridge.hello before anything else), waits until a node connects, then drives
node.list, node.describe and node.invoke (canvas.snapshot, plus a command the node may not run)
and checks every answer against the document. Prints "listening PORT" first and "PASS" at the end;
any mismatch exits 1 with the reason.

usage: ws_gateway.py TOKEN [CERT KEY]     (with CERT and KEY it serves wss://, TLS)
"""
import asyncio, base64, hashlib, hmac, http, json, os, ssl, sys
from websockets.asyncio.server import serve

TOKEN = sys.argv[1]
NONCES = {}  # connection -> (bridge nonce, gateway nonce)


def mac(label, bridge_nonce, gateway_nonce):
    return hmac.new(TOKEN.encode(), label + bridge_nonce + gateway_nonce, hashlib.sha256).digest()


def fail(why):
    print(f"FAIL {why}", flush=True)
    sys.exit(1)


def check_challenge(connection, request):
    try:
        bridge_nonce = bytes.fromhex(request.headers.get("Lanbridge-Challenge", ""))
    except ValueError:
        bridge_nonce = b""
    if len(bridge_nonce) != 32:
        return connection.respond(http.HTTPStatus.UNAUTHORIZED, "no token challenge\n")
    NONCES[connection] = (bridge_nonce, os.urandom(32))
    return None


def answer_challenge(connection, request, response):
    bridge_nonce, gateway_nonce = NONCES[connection]
    proof = mac(b"lanbridge-gateway-proof-v1", bridge_nonce, gateway_nonce)
    response.headers["Lanbridge-Proof"] = f"{gateway_nonce.hex()} {proof.hex()}"


async def session(ws, finished):
    pending, next_id, events = {}, 0, asyncio.Queue()

    async def reader():
        async for text in ws:
            frame = json.loads(text)
            if frame["type"] == "res":
                pending.pop(frame["id"]).set_result(frame)
            elif frame["type"] == "event":
                await events.put(frame)
            elif frame["type"] == "req":  # a node's agent call: accept it
                await ws.send(json.dumps({"type": "res", "id": frame["id"], "ok": True, "payload": {"accepted": True}}))

    async def request(method, params):
        nonlocal next_id
        next_id += 1
        rid = f"py{next_id}"
        pending[rid] = asyncio.get_running_loop().create_future()
        await ws.send(json.dumps({"type": "req", "id": rid, "method": method, "params": params}))
        frame = await asyncio.wait_for(pending[rid], 30)
        for key in ("type", "id", "ok"):
            if key not in frame:
                fail(f"response without {key}: {frame}")
        return frame

    hello = json.loads(await asyncio.wait_for(ws.recv(), 30))
    if hello.get("event") != "bridge.hello" or hello["payload"].get("protocol") != 1:
        fail(f"first frame is not bridge.hello: {hello}")
    expected = mac(b"lanbridge-bridge-proof-v1", *NONCES[ws])
    if not hmac.compare_digest(bytes.fromhex(hello["payload"].get("proof", "")), expected):
        await ws.close(1008, "bad token")
        fail("the bridge's proof of the token is wrong")
    task = asyncio.create_task(reader())
    print(f"hello {hello['payload']['bridgeName']}", flush=True)
    while True:
        event = await asyncio.wait_for(events.get(), 60)
        if event["event"] == "node.event" and event["payload"]["type"] == "connected":
            node_id = event["payload"]["nodeId"]
            break

    listed = await request("node.list", {})
    nodes = listed["payload"]["nodes"]
    if not listed["ok"] or [n["nodeId"] for n in nodes] != [node_id] or not nodes[0]["connected"]:
        fail(f"node.list: {listed}")
    for field in ("displayName", "platform", "foreground", "caps", "declaredCommands", "allowedCommands", "access"):
        if field not in nodes[0]:
            fail(f"node.list entry lacks {field}")
    described = await request("node.describe", {"nodeId": node_id})
    if not described["ok"] or described["payload"]["nodeId"] != node_id:
        fail(f"node.describe: {described}")

    snap = await request("node.invoke", {"nodeId": node_id, "command": "canvas.snapshot", "idempotencyKey": "py-snap-1"})
    if not snap["ok"] or not base64.b64decode(snap["payload"]["base64"]).startswith(b"\x89PNG\r\n\x1a\n"):
        fail(f"canvas.snapshot: {str(snap)[:300]}")
    denied = await request("node.invoke", {"nodeId": node_id, "command": "sms.send", "idempotencyKey": "py-sms-1"})
    error = denied.get("error", {})
    if denied["ok"] or error.get("code") != "FORBIDDEN" or error.get("details", {}).get("reason") != "NOT_ALLOWLISTED":
        fail(f"sms.send should be FORBIDDEN/NOT_ALLOWLISTED: {denied}")
    missing_key = await request("node.invoke", {"nodeId": node_id, "command": "canvas.hide"})
    if missing_key["ok"] or missing_key["error"]["code"] != "INVALID_REQUEST":
        fail(f"node.invoke without idempotencyKey: {missing_key}")
    unknown = await request("node.reboot", {})
    if unknown["ok"] or unknown["error"]["code"] != "UNKNOWN_METHOD":
        fail(f"unknown method: {unknown}")
    print("PASS", flush=True)
    task.cancel()
    finished.set_result(True)


async def main():
    finished = asyncio.get_running_loop().create_future()
    tls = None
    if len(sys.argv) > 3:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(sys.argv[2], sys.argv[3])
    async with serve(lambda ws: session(ws, finished), "127.0.0.1", 0, process_request=check_challenge, process_response=answer_challenge, max_size=64 << 20, ssl=tls) as server:
        print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.wait_for(finished, 120)


asyncio.run(main())
