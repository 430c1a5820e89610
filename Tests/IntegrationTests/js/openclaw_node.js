// OpenClaw's own GatewayClient (bundled from OpenClaw's sources by Tests/Tools/openclaw/build: client.cjs)
// as a role-node client, set up the way OpenClaw's node host sets it up (src/node-host/runner.ts:179-222),
// against lanbridge's door for OpenClaw's apps.
//   node openclaw_node.js BUNDLE URL TLS_SHA256 [BOOTSTRAP_TOKEN]
// Prints: "hello PROTOCOL", "connect-error MESSAGE", "closed CODE REASON", "invoke COMMAND PARAMS".
const [bundle, url, fingerprint, bootstrapToken] = process.argv.slice(2);
const { GatewayClient } = require(bundle);

const deviceIdentity = require("../../Tools/openclaw/device-identity.cjs").create();
const say = (line) => process.stdout.write(line + "\n");

const client = new GatewayClient({
  url,
  instanceId: deviceIdentity.deviceId.slice(0, 12),
  clientName: "node-host",
  clientDisplayName: "openclaw node host",
  clientVersion: "test",
  platform: "linux",
  mode: "node",
  role: "node",
  scopes: [],
  caps: ["system", "canvas"],
  commands: ["canvas.navigate", "system.notify"],
  deviceIdentity,
  tlsFingerprint: fingerprint,
  bootstrapToken: bootstrapToken || undefined,
  onHelloOk: (hello) => say(`hello ${hello.protocol}`),
  onEvent: (evt) => {
    if (evt.event !== "node.invoke.request") return;
    const p = evt.payload;
    say(`invoke ${p.command} ${p.paramsJSON ?? "null"}`);
    const params = p.paramsJSON ? JSON.parse(p.paramsJSON) : {};
    client.request("node.invoke.result", { id: p.id, nodeId: p.nodeId, ok: true, payloadJSON: JSON.stringify({ shown: params.title ?? params.url ?? null }) })
      .catch((err) => say(`result-error ${err.message}`));
  },
  onConnectError: (err) => say(`connect-error ${err.message}`),
  onClose: (code, reason) => {
    say(`closed ${code} ${reason}`);
    // GatewayClient pauses after PAIRING_REQUIRED (client.ts:601-611); its caller tries again, as
    // the apps do every few seconds while the approval screen is up.
    if (reason.includes("pairing required")) setTimeout(() => client.start(), 500);
  },
});
client.start();
