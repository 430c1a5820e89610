// OpenClaw's own GatewayClient (client.cjs from Tests/Tools/openclaw/build) set up as OpenClaw's
// iOS app sets it up (client openclaw-ios, mode node, role node), for the app-door differential of
// OpenClawRealGatewayTests: the same client against OpenClaw's real gateway and against lanbridge's
// door, printing what it is told at each step as a shape (keys and value types; a few values that
// mean something, such as error codes, as themselves), so that the two transcripts can be compared.
//   node openclaw_app_diff.js BUNDLE URL KEYFILE [--token T] [--tls SHA256] [--remote]
// --remote: every upgrade request carries X-Forwarded-For, so that OpenClaw's gateway on loopback
// treats the app as one on the LAN (no silent local pairing), as lanbridge's door does.
// Prints: "frame KIND SHAPE" for every frame, "connect-error CODE DETAILS_SHAPE", "hello",
// "closed CODE"; answers each node.invoke.request {ok:true, payload {shown}}; reads stdin lines
// "event NAME PAYLOAD_JSON" (a node.event, printed "event-answer SHAPE") and "quit".
"use strict";
const http = require("node:http");
const readline = require("node:readline");
const [bundle, url, keyFile, ...rest] = process.argv.slice(2);
const option = (name) => { const i = rest.indexOf(name); return i >= 0 ? rest[i + 1] : undefined; };
const say = (line) => process.stdout.write(line + "\n");

if (rest.includes("--remote")) {
  const request = http.request;
  http.request = function (options, ...more) {
    if (options && typeof options === "object") options.headers = { ...(options.headers || {}), "X-Forwarded-For": "192.0.2.10" };
    return request.call(this, options, ...more);
  };
}
const { GatewayClient } = require(bundle);

// Values that are the protocol's words rather than data: kept as themselves in a shape.
const WORDS = new Set(["type", "event", "code", "reason", "role", "recommendedNextStep", "kind"]);
function shape(value, key) {
  if (value === null) return "null";
  if (Array.isArray(value)) return value.length ? [shape(value[0])] : [];
  if (typeof value === "object") {
    const out = {};
    for (const k of Object.keys(value).sort()) out[k] = shape(value[k], k);
    return out;
  }
  if (typeof value === "string" && WORDS.has(key)) return value;
  if (typeof value === "boolean") return value;
  return typeof value;
}

const identity = require("../../Tools/openclaw/device-identity.cjs").loadOrCreate(keyFile);

// Every frame the app receives, before the client acts on it.
const handle = GatewayClient.prototype.handleMessage;
GatewayClient.prototype.handleMessage = function (raw) {
  try {
    const frame = JSON.parse(raw);
    const kind = frame.type === "event" ? `event:${frame.event}` : frame.type === "res" ? `res:${frame.ok ? "ok" : "error"}` : frame.type;
    say(`frame ${kind} ${JSON.stringify(shape(frame))}`);
  } catch {
    say("frame unreadable");
  }
  return handle.call(this, raw);
};

const client = new GatewayClient({
  url,
  token: option("--token"),
  tlsFingerprint: option("--tls"),
  instanceId: identity.deviceId.slice(0, 12),
  clientName: "openclaw-ios",
  clientDisplayName: "Ada's iPhone",
  clientVersion: "2026.4.12",
  platform: "iOS 19.0",
  deviceFamily: "iPhone",
  mode: "node",
  role: "node",
  scopes: [],
  caps: ["canvas", "device"],
  commands: ["canvas.navigate", "device.info"],
  deviceIdentity: identity,
  onHelloOk: () => say("hello"),
  onEvent: (evt) => {
    if (evt.event !== "node.invoke.request") return;
    const p = evt.payload;
    client.request("node.invoke.result", { id: p.id, nodeId: p.nodeId, ok: true, payloadJSON: JSON.stringify({ shown: p.command }) })
      .then((answer) => say(`invoke-answer ${JSON.stringify(shape(answer))}`))
      .catch((err) => say(`invoke-answer-error ${err.gatewayCode}`));
  },
  onConnectError: (err) => say(`connect-error ${err.gatewayCode ?? "CLIENT"} ${JSON.stringify(shape(err.details ?? null))}`),
  onClose: (code, reason) => {
    say(`closed ${code}`);
    // GatewayClient pauses after PAIRING_REQUIRED; the app retries while its approval screen is up.
    if (reason.includes("pairing required")) setTimeout(() => client.start(), 500);
  },
});
client.start();

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const m = line.match(/^event (\S+) (.*)$/);
  if (m) {
    client.request("node.event", { event: m[1], payloadJSON: m[2] })
      .then((answer) => say(`event-answer ${JSON.stringify(shape(answer))}`))
      .catch((err) => say(`event-answer-error ${err.gatewayCode}`));
  } else if (line === "quit") {
    client.stop();
    process.exit(0);
  }
});
