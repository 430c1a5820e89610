// OpenClaw's own GatewayClient (src/gateway/client.ts, bundled by ./build as client.cjs) as the
// real gateway's operator, for tests: it prints what the gateway tells it and runs what it is asked.
//   Tests/Tools/openclaw/operator --state DIR        (the gateway's state: its port and token)
// stdout: "hello PROTOCOL", "event NAME PAYLOAD_JSON", "result ID ANSWER_JSON", "closed CODE REASON",
//         "connect-error MESSAGE". stdin: "call ID METHOD PARAMS_JSON" (one line each), or "burst …" (below).
// ANSWER_JSON is {"ok":true,"payload":…} or {"ok":false,"error":{"code","message","details"}}.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const readline = require("node:readline");
const { GatewayClient } = require(path.join(process.env.OPENCLAW_BUILD, "client.cjs"));

const state = process.env.OPENCLAW_STATE_DIR;
const config = JSON.parse(fs.readFileSync(process.env.OPENCLAW_CONFIG_PATH, "utf8"));
const say = (line) => process.stdout.write(line + "\n");

// One identity per state directory, kept across restarts (as a real operator's device is).
const deviceIdentity = require("./device-identity.cjs").loadOrCreate(path.join(state, "operator-identity.json"));

const client = new GatewayClient({
  url: `ws://127.0.0.1:${config.gateway.port}`,
  token: config.gateway.auth.token,
  role: "operator",
  scopes: ["operator.admin", "operator.read", "operator.write", "operator.approvals", "operator.pairing"],
  clientDisplayName: "lanbridge test operator",
  clientVersion: "test",
  deviceIdentity,
  onHelloOk: (hello) => say(`hello ${hello.protocol}`),
  onEvent: (evt) => say(`event ${evt.event} ${JSON.stringify(evt.payload ?? null)}`),
  onConnectError: (err) => say(`connect-error ${String(err.message).replace(/\n/g, " ")}`),
  onClose: (code, reason) => say(`closed ${code} ${reason}`),
});
client.start();

// "burst ID N NODE COMMAND PARAMS_JSON": N node.invoke calls one after another, as an agent's tool
// loop would make them; prints "burst ID done MS" and one "burst ID OUTCOME COUNT" line per outcome
// (ok, or the error's details.code or code). For benchmarks (scripts/bench-reoffer).
// Each run of the same failing outcome is printed too: "burst ID streak OUTCOME AT_MS FOR_MS COUNT".
async function burst(id, n, nodeId, command, params) {
  const outcomes = new Map();
  const started = Date.now();
  let streak = null;
  const endStreak = () => {
    if (streak && streak.outcome !== "ok") say(`burst ${id} streak ${streak.outcome} ${streak.at - started} ${Date.now() - streak.at} ${streak.count}`);
  };
  for (let i = 0; i < n; i++) {
    let outcome;
    try {
      await client.request("node.invoke", { nodeId, command, params, timeoutMs: 10000, idempotencyKey: crypto.randomUUID() });
      outcome = "ok";
    } catch (err) {
      outcome = (err.details && err.details.code) || err.gatewayCode || "CLIENT";
      if (!outcomes.has(outcome)) say(`burst ${id} first ${outcome} ${JSON.stringify(err.message)}`);
    }
    outcomes.set(outcome, (outcomes.get(outcome) || 0) + 1);
    if (streak && streak.outcome === outcome) streak.count += 1;
    else {
      endStreak();
      streak = { outcome, at: Date.now(), count: 1 };
    }
  }
  endStreak();
  for (const [outcome, count] of outcomes) say(`burst ${id} ${outcome} ${count}`);
  say(`burst ${id} done ${Date.now() - started}`);
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const b = line.match(/^burst (\S+) (\d+) (\S+) (\S+) (.*)$/);
  if (b) return void burst(b[1], Number(b[2]), b[3], b[4], JSON.parse(b[5]));
  const m = line.match(/^call (\S+) (\S+) (.*)$/);
  if (!m) return say(`error unreadable line: ${JSON.stringify(line)}`);
  const [, id, method, params] = m;
  client
    .request(method, JSON.parse(params))
    .then((payload) => say(`result ${id} ${JSON.stringify({ ok: true, payload: payload ?? null })}`))
    .catch((err) => say(`result ${id} ${JSON.stringify({ ok: false, error: { code: err.gatewayCode ?? "CLIENT", message: err.message, details: err.details ?? null } })}`));
}).on("close", () => process.exit(0));
