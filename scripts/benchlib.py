"""What scripts/bench-gateway and scripts/soak share: release binaries, child processes that are
always reaped, the load generator, a bridge with a loopback gateway, pre-paired nodes, and readings
of a process's CPU and memory. Loopback only."""
import base64, datetime, json, os, signal, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Release binaries; LANBRIDGE_BENCH_BIN points elsewhere (scripts/bench-smoke: the package build's).
BIN = os.environ.get("LANBRIDGE_BENCH_BIN") or os.path.join(ROOT, ".build", "release")
sys.path.insert(0, os.path.join(ROOT, "sdk", "python"))
import lanbridge_wire as wire  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402

children = []


def spawn(argv, quiet=False, **kw):
    # Output nobody reads must not go to a pipe: a full pipe would block the child.
    out = subprocess.DEVNULL if quiet else subprocess.PIPE
    p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT if not quiet else subprocess.DEVNULL, text=True, **kw)
    children.append(p)
    return p


def stop_children():
    """SIGTERM to every child started here, then SIGKILL to any still running after 10 s."""
    for p in children:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in children:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    children.clear()


def raise_file_limit():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))


def cli(state, *argv):
    return subprocess.run([f"{BIN}/lanbridge", *argv, "--state-dir", state], check=True, capture_output=True, text=True).stdout


def cpu_seconds(pid):
    """User + system CPU time a process has used so far."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024


def percentiles(samples):
    s = sorted(samples)
    return s[len(s) // 2], s[min(len(s) - 1, int(len(s) * 0.99))]


class Driven:
    """A helper process driven one command per line on stdin, answering one line per command that
    starts with the command's name."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        children.append(self.proc)

    def ask(self, *words):
        self.proc.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if not line or line[0] != words[0]:
            raise SystemExit(f"{self.proc.args[1]}: {line}")
        return line[1:]


class LoadGenerator(Driven):
    """`lanbridge-bench gateway-load`: the gateway, on SwiftNIO."""

    def __init__(self):
        super().__init__([f"{BIN}/lanbridge-bench", "gateway-load"])
        self.port = int(self.proc.stdout.readline().split()[1])
        self.echo_port = int(self.proc.stdout.readline().split()[1])


def idle_nodes(port, keyfile):
    """`lanbridge-bench idle-nodes`: paired nodes on SwiftNIO (connect N / close)."""
    return Driven([f"{BIN}/lanbridge-bench", "idle-nodes", str(port), keyfile])


def pre_paired(n, keyfile):
    """n paired nodes for paired.json (allowed nothing), their private keys written to keyfile."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    keys, nodes = [], []
    for i in range(n):
        k = X25519PrivateKey.generate()
        priv = k.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
        pub = k.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        keys.append(priv)
        nodes.append({"nodeId": wire.fingerprint(pub), "publicKey": base64.b64encode(pub).decode(),
                      "details": {"displayName": f"idle {i}", "platform": "linux", "caps": [], "commands": [],
                                  "flags": {"requiresForeground": False, "supportsInputInjection": False}},
                      "pairingMethod": "code", "pairedAt": now, "firstSeen": now, "lastSeen": now, "access": {"allow": []}})
    with open(os.open(keyfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("\n".join(k.hex() for k in keys) + "\n")
    return nodes


def write_paired(state, nodes):
    with open(os.open(os.path.join(state, "paired.json"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        json.dump({"version": 1, "nodes": nodes, "blocked": []}, f)


def bridge_with_gateway(tmp, state, gateway_port, config, extra=()):
    """`lanbridge serve` on loopback with the load generator as its gateway; returns once the
    gateway link is up (invites name the address the bridge listens on, from runtime.json)."""
    tokfile = os.path.join(tmp, "token")
    with open(os.open(tokfile, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("bench-token")
    with open(os.path.join(state, "config.json"), "w") as f:
        json.dump(config, f)
    bridge = spawn([f"{BIN}/lanbridge", "serve", "--state-dir", state, "--bind", "loopback", "--port", "0", "--no-mdns",
                    "--gateway", f"ws://127.0.0.1:{gateway_port}", "--gateway-token-file", tokfile, "--gateway-auth", "bearer",
                    "--log-level", "error", *extra], quiet=True)
    runtime = os.path.join(state, "runtime.json")
    while not (os.path.exists(runtime) and json.load(open(runtime)).get("gateway", "").startswith("connected")):
        time.sleep(0.05)
    return bridge, int(json.load(open(runtime))["listening"][0].rsplit(":", 1)[1])


def node_sim(state, tmp, name, quiet=True):
    """A lanbridge-node-sim paired by a fresh invite (quiet=False: its lines on .stdout)."""
    uri = json.loads(cli(state, "invite", "--json"))["uri"]
    return spawn([f"{BIN}/lanbridge-node-sim", "--state-dir", os.path.join(tmp, name), "--invite", uri, "--platform", "linux",
                  "--name", name], quiet=quiet)
