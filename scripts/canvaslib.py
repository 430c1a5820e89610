"""The canvas page a user waits for (issue 53 §2), shared by scripts/bench-canvas and
scripts/bench-smoke: an A2UI-like page of 30 assets, a bridge with its canvas relay in front of a
canvas host, page loads timed in a fresh headless Chromium, and a delaying link."""
import base64, hashlib, json, os, socket, subprocess, sys, threading
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdk", "python"))
from benchlib import LoadGenerator, bridge_with_gateway, node_sim, spawn  # noqa: E402
from lanbridge_node.canvas import pinned_connection  # noqa: E402

PAGE = "/__openclaw__/canvas/page/index.html"


class DelayLink:
    """A TCP proxy on loopback that passes every read on `delay` ± `jitter` seconds later, in
    order, both ways: a link's latency (not its bandwidth), where the kernel has no netem."""

    def __init__(self, target_port, delay=0.005, jitter=0.001):
        import asyncio, random
        self.target_port, self.delay, self.jitter, self.random = target_port, delay, jitter, random.Random(7)
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def serve():
            self.server = await asyncio.start_server(self.connection, "127.0.0.1", 0)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            await self.server.serve_forever()
        threading.Thread(target=lambda: self.loop.run_until_complete(serve()), daemon=True).start()
        ready.wait()

    async def connection(self, client_reader, client_writer):
        import asyncio
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return

        async def pump(reader, writer):
            queue = asyncio.Queue()

            async def deliver():
                while (item := await queue.get()) is not None:
                    at, data = item
                    await asyncio.sleep(max(0, at - self.loop.time()))
                    writer.write(data)
                    await writer.drain()
                writer.close()
            sender = asyncio.ensure_future(deliver())
            last = 0.0
            try:
                while data := await reader.read(65536):
                    last = max(last, self.loop.time() + self.delay + self.random.uniform(-self.jitter, self.jitter))
                    queue.put_nowait((last, data))
            except OSError:
                pass
            queue.put_nowait(None)
            await sender
        await asyncio.gather(pump(client_reader, upstream_writer), pump(upstream_reader, client_writer), return_exceptions=True)


def png(path, width, height):
    """A valid PNG of random pixels (incompressible: its size is about 3 bytes a pixel)."""
    import struct, zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + os.urandom(width * 3) for _ in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b""))


def write_page(root):
    page = os.path.join(root, "__openclaw__", "canvas", "page")
    os.makedirs(page)
    head, body = [], []
    for i in range(8):
        with open(os.path.join(page, f"s{i}.css"), "w") as f:
            f.write("".join(f".c{i}-{k} {{ margin: {k}px; color: #{k:06x}; }}\n" for k in range(120)))
        head.append(f'<link rel="stylesheet" href="s{i}.css">')
    for i in range(10):
        with open(os.path.join(page, f"j{i}.js"), "w") as f:
            f.write("".join(f"window.v{i}_{k} = {k} * 2; // {'x' * 40}\n" for k in range(300)))
        body.append(f'<script src="j{i}.js"></script>')
    for i in range(11):
        png(os.path.join(page, f"i{i}.png"), 96, 96)
        body.append(f'<img src="i{i}.png" width="96" height="96" alt="">')
    png(os.path.join(page, "big.png"), 1290, 1290)
    body.append('<img src="big.png" width="320" alt="">')
    with open(os.path.join(page, "index.html"), "w") as f:
        f.write('<!doctype html><html><head><meta charset=utf-8><title>A2UI-like page</title><link rel="icon" href="data:,">' + "".join(head)
                + "</head><body><h1>canvas</h1>" + "".join(body) + "</body></html>")


def page_loads(url, spki, count):
    """Times `count` loads of `url`, each in a fresh Chromium (scripts/lib/page_load.py)."""
    loader = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "page_load.py")
    argv = [sys.executable, loader, url, "--count", str(count)] + (["--spki", spki] if spki else [])
    out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600).stdout
    loads = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for load in loads:
        assert load["resources"] == 30 and not load["failed"], load
    return [load["load"] for load in loads]


def p90(samples):
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * 0.9))]



def canvas_stack(tmp, root, limits=None, access=None):
    """Python's http.server as the canvas host for `root`, a bridge with its relay in front, the
    load generator as its gateway, and a paired node-sim. Returns what it started: the relay's URL
    with the capability and its pin (the node's view), the relay key's SPKI pin in base64
    (Chromium's), the canvas host's port, the gateway and its name for the node, the bridge
    process and its state directory."""
    s = socket.socket(); s.bind(("127.0.0.1", 0)); upstream_port = s.getsockname()[1]; s.close()
    spawn(quiet=True, argv=[sys.executable, "-m", "http.server", str(upstream_port), "--bind", "127.0.0.1", "--directory", root])
    state = os.path.join(tmp, "state")
    os.makedirs(state, mode=0o700)
    gw = LoadGenerator()
    config = {"canvas": {"upstream": f"http://127.0.0.1:{upstream_port}"}, "limits": {"canvasRequestsPerMinute": 100000, **(limits or {})}}
    if access:
        config["access"] = access
    bridge, _ = bridge_with_gateway(tmp, state, gw.port, config, extra=["--canvas-listen", "0"])
    sim = node_sim(state, tmp, "canvas-node", quiet=False)
    url = pin = None
    while url is None:
        line = sim.stdout.readline()
        if not line:
            raise SystemExit("node-sim ended before its welcome")
        if line.startswith("canvas "):
            url, pin = line.split()[1:3]
    threading.Thread(target=lambda: [None for _ in sim.stdout], daemon=True).start()  # keep its pipe drained
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    connection, _ = pinned_connection(url, pin)
    spki = x509.load_der_x509_certificate(connection.sock.getpeercert(binary_form=True)).public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    connection.close()
    return SimpleNamespace(url=url, pin=pin, spki=base64.b64encode(hashlib.sha256(spki).digest()).decode(), upstream_port=upstream_port,
                       gateway=gw, node=gw.ask("nodes", 1)[0], bridge=bridge, state=state)


def compare(relay, direct, spki, rounds):
    """Page loads through the relay and direct, alternating, after one warm-up load; the load times (ms)."""
    relayed, straight = [], []
    page_loads(relay + PAGE, spki, 1)  # warm: the canvas host's page cache, the relay's first handshake
    for _ in range(rounds):
        relayed += page_loads(relay + PAGE, spki, 1)
        straight += page_loads(direct + PAGE, None, 1)
    return relayed, straight
