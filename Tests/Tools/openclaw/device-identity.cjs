// An OpenClaw device identity as OpenClaw's clients make one (src/infra/device-identity.ts): an
// Ed25519 key, and the device ID, hex SHA-256 of the raw public key. For the harness's clients
// (operator.cjs, Tests/IntegrationTests/js/*.js).
"use strict";
const fs = require("node:fs");
const crypto = require("node:crypto");

function create() {
  const { publicKey, privateKey } = crypto.generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  return {
    deviceId: crypto.createHash("sha256").update(raw).digest("hex"),
    publicKeyPem: publicKey.export({ format: "pem", type: "spki" }).toString(),
    privateKeyPem: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
  };
}

/** The identity kept in `file` (0600), made there the first time. */
function loadOrCreate(file) {
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, "utf8"));
  const identity = create();
  fs.writeFileSync(file, JSON.stringify(identity), { mode: 0o600 });
  return identity;
}

module.exports = { create, loadOrCreate };
