"""The canvas host of the OpenClaw gateway simulator (openclaw_gateway.py), on the gateway's own
port as upstream serves it. Written from ../shared/references/openclaw-apps-and-canvas.md §A1,
which cites OpenClaw's sources; the rules followed, with their upstream lines:

- A capability is 18 random bytes in base64url (src/gateway/canvas-capability.ts:20-22), minted
  at every connect and returned as hello-ok.canvasHostUrl = <http://Host>/__openclaw__/cap/<cap>,
  built from the socket's Host header (message-handler.ts:1208-1229; src/infra/canvas-host-url.ts:57-93).
- node.canvas.capability.refresh replaces the socket's capability
  (src/gateway/server-methods/nodes.ts:753-797).
- /__openclaw__/cap/<cap>/<rest> is rewritten to /<rest>?oc_cap=<cap>; a malformed scoped path
  is 401 (server-http.ts:887-894; canvas-capability.ts:42-86).
- The canvas-auth stage accepts a capability equal (constant time) to an unexpired one of any
  connected client; a hit extends it by 10 minutes (http-auth.ts:24-91). It dies with its socket
  (ws-connection.ts:259). Upgrades to /__openclaw__/ws are checked the same way (server-http.ts:1137-1166).
- /__openclaw__/a2ui serves index.html and a2ui.bundle.js; /__openclaw__/canvas serves the
  canvas root; GET/HEAD only (src/canvas-host/server.ts:366-371); /__openclaw__/ws sends "reload".
- Other routes are the gateway's own (Control UI, /v1/*): here they answer 200 "gateway-private",
  so a test can tell if one was ever reached.

Test-only routes under /__openclaw__/canvas/: big.bin (5 MiB), echo (prints the path it was asked
for, capability included: a page that shows its URL), redirect (a 302 naming the capability),
absolute-redirect (a 302 to the gateway's own origin, built from Host as upstream builds its URLs),
chunked (a chunked page whose capability is split across two chunks, as a streaming host splits text).
`lapse()` ends every capability now: the gateway's clock passed them (a suspended host).
Every request is printed: "canvas STATUS PATH", the path as the host received it.
"""
import hmac, secrets, time
from websockets.datastructures import Headers
from websockets.http11 import Response

TTL_S = 600
PREFIX = "/__openclaw__/cap/"
BIG = bytes(range(256)) * (5 * 1024 * 1024 // 256)
A2UI_INDEX = b"""<!doctype html><html><head><meta charset="utf-8"><title>A2UI</title>
<script src="a2ui.bundle.js"></script></head><body><div id="root">A2UI host</div>
<script>
(() => {
  try {
    const cap = new URLSearchParams(location.search).get("oc_cap");
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const capQuery = cap ? "?oc_cap=" + encodeURIComponent(cap) : "";
    const ws = new WebSocket(proto + "://" + location.host + "/__openclaw__/ws" + capQuery);
    ws.onopen = () => { document.title = "live"; };
    ws.onmessage = (ev) => { if (String(ev.data || "") === "reload") document.title = "reloaded"; };
  } catch {}
})();
</script></body></html>
"""
A2UI_BUNDLE = b"globalThis.openclawA2UI = { applyMessages(m) { return m.length; }, reset() {} };\n"

caps = {}  # capability -> [owner websocket, expires]


def mint(ws):
    for cap, (owner, _) in list(caps.items()):
        if owner is ws:
            del caps[cap]
    cap = secrets.token_urlsafe(18)
    caps[cap] = [ws, time.time() + TTL_S]
    return cap


def host_url(ws, cap):
    return f"http://{ws.request.headers.get('Host')}{PREFIX}{cap}"


def forget(ws):
    for cap, (owner, _) in list(caps.items()):
        if owner is ws:
            del caps[cap]


def authorized(cap):
    now = time.time()
    for known, entry in caps.items():
        if hmac.compare_digest(known.encode(), (cap or "").encode()) and entry[1] > now:
            entry[1] = now + TTL_S
            return True
    return False


def lapse():
    for entry in caps.values():
        entry[1] = 0


def respond(say, path, status, body, content_type="text/plain", extra=(), chunked=False):
    say(f"canvas {status} {path}")
    framing = ("Transfer-Encoding", "chunked") if chunked else ("Content-Length", str(len(body)))
    headers = Headers([("Content-Type", content_type), framing, ("Connection", "close"), *extra])
    return Response(status, {200: "OK", 302: "Found", 401: "Unauthorized", 404: "Not Found"}.get(status, "X"), headers, body)


def chunks(*parts):
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def process_request(say, connection, request):
    """websockets' process_request: an HTTP answer, or None to go on with a WebSocket handshake."""
    raw = request.path
    path, _, query = raw.partition("?")
    cap = None
    for item in query.split("&"):
        if item.startswith("oc_cap="):
            cap = item[len("oc_cap="):]
    if path.startswith(PREFIX):
        rest = path[len(PREFIX):]
        slash = rest.find("/")
        if slash <= 0:
            return respond(say, raw, 401, b"unauthorized")
        cap, path = rest[:slash], rest[slash:]
    canvas = path.startswith("/__openclaw__/a2ui") or path.startswith("/__openclaw__/canvas") or path == "/__openclaw__/ws"
    if not canvas:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None  # the gateway's own WebSocket (nodes and operators)
        return respond(say, raw, 200, b"gateway-private")
    if not authorized(cap):
        return respond(say, raw, 401, b"unauthorized")
    if path == "/__openclaw__/ws":
        say(f"canvas 101 {raw}")
        return None
    if path in ("/__openclaw__/a2ui", "/__openclaw__/a2ui/", "/__openclaw__/a2ui/index.html"):
        return respond(say, raw, 200, A2UI_INDEX, "text/html; charset=utf-8")
    if path == "/__openclaw__/a2ui/a2ui.bundle.js":
        return respond(say, raw, 200, A2UI_BUNDLE, "text/javascript")
    if path in ("/__openclaw__/canvas", "/__openclaw__/canvas/"):
        return respond(say, raw, 200, b"<!doctype html><title>canvas</title><p>canvas home</p>", "text/html")
    if path == "/__openclaw__/canvas/big.bin":
        return respond(say, raw, 200, BIG, "application/octet-stream")
    if path == "/__openclaw__/canvas/echo":
        return respond(say, raw, 200, f"you asked for {raw}\n".encode())
    if path == "/__openclaw__/canvas/redirect":
        return respond(say, raw, 302, b"", extra=[("Location", f"/__openclaw__/canvas/?oc_cap={cap}")])
    if path == "/__openclaw__/canvas/absolute-redirect":
        return respond(say, raw, 302, b"", extra=[("Location", f"http://{request.headers.get('Host')}{PREFIX}{cap}/__openclaw__/canvas/")])
    if path == "/__openclaw__/canvas/chunked":
        half = len(cap) // 2
        return respond(say, raw, 200, chunks(f"<a href=\"{PREFIX}{cap[:half]}".encode(), f"{cap[half:]}/x\">here</a>".encode()), "text/html", chunked=True)
    return respond(say, raw, 404, b"not found")


async def live_reload(say, ws, reloads):
    """The /__openclaw__/ws socket: "reload" whenever the test asks."""
    say("livereload connected")
    reloads.add(ws)
    try:
        await ws.wait_closed()
    finally:
        reloads.discard(ws)
        say("livereload closed")
