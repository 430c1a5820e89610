// The browser node (issue 64): this page is a lanbridge node. It keeps its X25519 key in
// IndexedDB (a non-extractable CryptoKey where the browser has WebCrypto's X25519), runs the same
// Noise handshake as every node over wss://<this origin>/node, pairs by the code it shows, and
// answers the bridge as PROTOCOL.md §9 says. Every string from the bridge is set as text.

import { Initiator, fromHex, toHex, fingerprint, parseFingerprint, commitment, verificationCode, inviteKeys } from "./noise.js";
import { detect, fallback, webCrypto } from "./x25519.js";
import { available, run } from "./capabilities.js";
import { canvasCommands } from "./canvas.js";

/** What this page runs: the browser's capabilities, and the canvas where the bridge has a relay. */
let commands = available();

// An invite (`lanbridge invite --browser`) arrives in the fragment: it is taken, and removed from
// the address before anything else runs, so it stays out of history, bookmarks and a Home Screen
// icon (and no browser sends a fragment to any server).
const invite = takeInvite();

function takeInvite() {
  const fragment = location.hash.slice(1);
  if (!fragment) return null;
  history.replaceState(null, "", location.pathname + location.search);
  const params = new URLSearchParams(fragment);
  const secret = params.get("i") || "", fp = parseFingerprint(params.get("fp") || "");
  if (!/^[0-9a-f]{32}$/.test(secret) || !fp) return { error: "This link's invite is malformed" };
  return { secret: fromHex(secret), fingerprint: fp };
}

const $ = (id) => document.getElementById(id);
const APP_VERSION = "lanbridge-shell/1";

function say(text, bad = false) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("bad", bad);
}

// ---- Storage: one IndexedDB store of small records ----

function database() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open("lanbridge", 1);
    request.onupgradeneeded = () => request.result.createObjectStore("records");
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function record(name, value) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const tx = db.transaction("records", value === undefined ? "readonly" : "readwrite");
    const store = tx.objectStore("records");
    const request = value === undefined ? store.get(name) : value === null ? store.delete(name) : store.put(value, name);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** The node's key pair, made once: with WebCrypto's X25519 its private half can never be read out. */
async function nodeKey() {
  const kept = await record("key");
  if (kept) return { pair: kept, backend: kept.backend === "webcrypto" ? webCrypto : fallback };
  const backend = await detect();
  const made = await backend.generate();
  const pair = { publicKey: made.publicKey, private: made.private, extractable: made.extractable, backend: backend.name };
  await record("key", pair);
  if (navigator.storage && navigator.storage.persist) await navigator.storage.persist().catch(() => false);
  return { pair, backend };
}

// ---- The connection ----

class Connection {
  constructor(onMessage, onClose) {
    this.socket = new WebSocket(`wss://${location.host}/node`);
    this.socket.binaryType = "arraybuffer";
    this.inbox = [];
    this.waiting = null;
    this.socket.onmessage = (event) => this.arrive(new Uint8Array(event.data));
    this.socket.onclose = () => { this.closed = true; this.arrive(null); onClose(this); };
    this.onMessage = onMessage;
    this.opened = new Promise((resolve, reject) => {
      this.socket.onopen = resolve;
      this.socket.onerror = () => reject(new Error("the bridge could not be reached"));
    });
  }

  arrive(frame) {
    if (this.transport && frame) {
      let message;
      try { message = this.transport.open(frame); } catch (error) { return this.fail(error); }
      if (message !== null) this.deliver(message);
      return;
    }
    if (this.waiting) { const resolve = this.waiting; this.waiting = null; resolve(frame); } else this.inbox.push(frame);
  }

  deliver(bytes) {
    let message;
    try { message = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)); } catch { return this.fail(new Error("the bridge sent a message that is not JSON")); }
    if (message === null || typeof message !== "object" || typeof message.type !== "string") return this.fail(new Error("the bridge sent a message without a type"));
    this.onMessage(this, message);
  }

  next() {
    if (this.inbox.length) return Promise.resolve(this.inbox.shift());
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => { this.waiting = resolve; });
  }

  /** The handshake (§4-§5): the bridge's static key must be the one this page was served with. */
  async handshake(key, backend, bridgeKey, invited) {
    await this.opened;
    const keys = invited ? await inviteKeys(invited.secret) : null;
    const noise = await Initiator.start({ x25519: backend, staticKey: key, psk: keys && keys.psk, inviteId: keys && keys.id });
    this.socket.send(noise.preamble);
    this.socket.send(await noise.first());
    const second = await this.next();
    if (!second) throw new Error(invited ? "The invite did not pair this device: the bridge refused it (used, expired or revoked)" : "the bridge closed the connection during the handshake");
    await noise.second(second);
    if (toHex(noise.remoteStatic) !== bridgeKey) throw new Error("the bridge presented another key than this page's: refusing it");
    // Before the secret leaves this page: the bridge must be the one the link names.
    if (invited && (await fingerprint(noise.remoteStatic)) !== invited.fingerprint) {
      throw new Error("This invite is for another bridge: refused, nothing was sent");
    }
    this.socket.send(await noise.third());
    this.bridgeKey = noise.remoteStatic;
    this.handshakeHash = noise.handshakeHash;
    this.transport = noise.transport;
    for (const frame of this.inbox.splice(0)) if (frame) this.arrive(frame);
  }

  send(message) {
    if (this.closed) return;
    for (const frame of this.transport.seal(new TextEncoder().encode(JSON.stringify(message)))) this.socket.send(frame);
  }

  fail(error) {
    say(error.message, true);
    this.close();
  }

  close() {
    this.closed = true;
    try { this.socket.close(); } catch { /* already closed */ }
  }
}

// ---- The node ----

const node = {
  connection: null,
  codesShown: 0,
  canvas: null,
  grants: 0,
  waitingGrants: new Map(),
  invite: invite && !invite.error ? invite : null,
  wantPairing: false,
  nonce: null,
  retry: 1000,
};

function details() {
  const name = ($("name").value || "").trim() || "Browser";
  return {
    displayName: name.slice(0, 64),
    platform: "web",
    osVersion: (navigator.userAgentData && navigator.userAgentData.platform) || "",
    appVersion: APP_VERSION,
    caps: [...new Set(Object.keys(commands).map((c) => c.split(".")[0]))],
    commands: Object.keys(commands),
    flags: { requiresForeground: true, supportsInputInjection: false },
    keyStorage: node.keyStorage,
  };
}

/** A fresh canvas capability: the one `welcome` gave while it lasts, else a `canvas.refresh`. */
function canvasGrant() {
  const now = Date.now();
  if (node.canvas && (!node.canvas.expiresAtMs || node.canvas.expiresAtMs - now > 5000)) return Promise.resolve(node.canvas);
  const connection = node.connection;
  if (!connection || !connection.transport) return Promise.reject(new Error("not connected"));
  const id = `v${++node.grants}`;
  connection.send({ type: "canvas.refresh", id });
  return new Promise((resolve, reject) => {
    node.waitingGrants.set(id, { resolve, reject });
    setTimeout(() => { if (node.waitingGrants.delete(id)) reject(new Error("the bridge gave no canvas in time")); }, 10000);
  });
}

// PROTOCOL.md §7: a man in the middle can re-roll this page's code by making it reconnect, so one
// attempt shows at most three codes; the bridge gives one request no more challenges either.
const MAX_CODES = 3;

async function askToPair(connection) {
  if (node.codesShown >= MAX_CODES) {
    node.wantPairing = false;
    connection.close();
    $("code-box").hidden = true;
    $("pair").hidden = false;
    $("ask").disabled = false;
    node.stopped = `This page showed ${MAX_CODES} codes for one request and asks no more: if the operator saw none of them, ask again (the request may need rejecting first)`;
    say(node.stopped, true);
    return;
  }
  node.nonce = crypto.getRandomValues(new Uint8Array(32));
  const c = await commitment(connection.handshakeHash, node.nonce);
  connection.send({ type: "pair.request", details: details(), commitment: toHex(c) });
  say("Asking the bridge…");
}

async function handle(connection, message) {
  switch (message.type) {
    case "welcome":
      $("bridge").textContent = String(message.bridgeName || "lanbridge");
      if (message.paired) {
        node.canvas = message.canvas && typeof message.canvas === "object" ? message.canvas : null;
        $("pair").hidden = true;
        $("code-box").hidden = true;
        say("Connected");
        node.retry = 1000;
        connection.paired = true;
        connection.send({ type: "state", foreground: document.visibilityState === "visible" });
      } else if (node.invite) {
        connection.send({ type: "invite.redeem", secret: toHex(node.invite.secret), details: details() });
        say("Pairing with the invite…");
      } else if (node.wantPairing) {
        await askToPair(connection);
      } else {
        // Paired once, but no longer: the operator removed it meanwhile.
        await record("paired", null);
        connection.close();
        $("pair").hidden = false;
        say("This device is not paired (any more)", true);
      }
      break;
    case "pair.challenge": {
      const bridgeNonce = fromHex(String(message.nonce));
      connection.send({ type: "pair.reveal", nonce: toHex(node.nonce) });
      $("code").textContent = await verificationCode(connection.handshakeHash, node.nonce, bridgeNonce);
      node.codesShown++;
      $("request").textContent = String(message.requestId || "");
      $("pair").hidden = true;
      $("code-box").hidden = false;
      say("Waiting for the operator");
      break;
    }
    case "pair.pending":
      say("Waiting for the operator");
      break;
    case "pair.resolved":
      if (message.outcome === "approved") {
        node.wantPairing = false;
        node.invite = null;
        await record("paired", toHex(connection.bridgeKey));
        $("code-box").hidden = true;
        say("Connected");
        connection.paired = true;
        connection.send({ type: "state", foreground: document.visibilityState === "visible" });
      } else {
        say(message.outcome === "rejected" ? "The operator refused this device" : "The request ran out; ask again", true);
      }
      break;
    case "canvas.grant": {
      const waiting = node.waitingGrants.get(message.id);
      if (!waiting) break;
      node.waitingGrants.delete(message.id);
      if (message.canvas && typeof message.canvas === "object") {
        node.canvas = message.canvas;
        waiting.resolve(message.canvas);
      } else {
        waiting.reject(new Error(String((message.error && message.error.message) || "no canvas")));
      }
      break;
    }
    case "ping":
      connection.send({ type: "pong", id: message.id });
      break;
    case "invoke":
      // Each answer goes on the connection its invoke came on, never a later one.
      run(commands, message).then((result) => connection.send(result));
      break;
    case "revoked":
      await record("paired", null);
      say("The operator removed this device", true);
      break;
    case "error":
      say(`${String(message.code)}: ${String(message.message || "")}`, true);
      if (message.code === "PAIRING_FAILED" || message.code === "PAIRING_REJECTED") {
        node.wantPairing = false;
        if (node.invite) say(`The invite did not pair this device: ${String(message.message || "used, expired or revoked")}`, true);
        node.invite = null;
      }
      break;
    default:
      break;
  }
}

async function connect() {
  if (node.connection || node.starting || document.visibilityState !== "visible") return;
  node.starting = true;
  try { node.paired = Boolean(await record("paired")); } finally { node.starting = false; }
  if (node.connection) return;
  if (node.paired) node.invite = null;
  if (!node.paired && !node.wantPairing && !node.invite) {
    $("pair").hidden = false;
    say(node.stopped || "Not paired yet", Boolean(node.stopped));
    return;
  }
  say("Connecting…");
  const connection = new Connection(
    (c, message) => handle(c, message).catch((error) => c.fail(error)),
    (c) => {
      if (node.connection !== c) return;
      node.connection = null;
      if (document.visibilityState === "visible" && (node.paired || node.wantPairing || node.invite)) {
        setTimeout(connect, node.retry);
        node.retry = Math.min(node.retry * 2, 30000);
      }
    },
  );
  node.connection = connection;
  try {
    const { pair, backend } = await nodeKey();
    $("node-id").textContent = await fingerprint(pair.publicKey);
    $("key-storage").textContent = pair.extractable ? "is kept by this page (this browser has no WebCrypto X25519)" : "cannot leave this browser";
    node.keyStorage = pair.extractable ? "extractable" : "non-extractable";
    const bridge = await (await fetch("/bridge.json", { cache: "no-store" })).json();
    if (bridge.canvasPort) {
      commands = {
        ...available(),
        ...canvasCommands({ frame: $("canvas"), box: $("canvas-box"), port: Number(bridge.canvasPort), grant: () => canvasGrant() }),
      };
    }
    if (bridge.tier === "browser-unverified") {
      $("unverified").hidden = false;
      // Whoever could have served this page could read an invite's secret from the link.
      if (node.invite) {
        node.invite = null;
        throw new Error("Invites are refused on an unverified page: pair by code");
      }
    }
    await connection.handshake(pair, backend, String(bridge.publicKey), node.invite);
  } catch (error) {
    node.invite = null;  // an invite gets one try: a refused or foreign one is not retried
    connection.fail(error);
  }
}

// A page that is hidden or about to be frozen can do nothing (and iOS stops it): it says so, and
// goes. Shown or resumed, it connects again, and a held invoke runs.
function away() {
  const connection = node.connection;
  if (connection && connection.paired) connection.send({ type: "state", foreground: false });
  node.connection = null;
  if (connection) connection.close();
}
document.addEventListener("freeze", away);
document.addEventListener("resume", () => connect());
document.addEventListener("visibilitychange", () => {
  const connection = node.connection;
  if (document.visibilityState === "hidden") {
    // A page in the background can do nothing (and iOS stops it): say so, and go.
    if (connection && connection.paired) connection.send({ type: "state", foreground: false });
    node.connection = null;
    if (connection) connection.close();
  } else {
    connect();
  }
});

$("ask").addEventListener("click", () => {
  node.wantPairing = true;
  node.codesShown = 0;
  node.stopped = null;
  $("ask").disabled = true;
  if (node.connection && node.connection.transport) askToPair(node.connection).catch((error) => node.connection.fail(error));
  else connect();
});

// A link opened in a tab that already shows the page changes only the fragment.
window.addEventListener("hashchange", () => {
  const next = takeInvite();
  if (!next) return;
  if (next.error) return say(next.error, true);
  if (node.paired) return;
  node.invite = next;
  const previous = node.connection;
  node.connection = null;
  if (previous) previous.close();
  connect();
});

if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});
if ("Notification" in window && Notification.permission === "default") {
  $("notify").hidden = false;
  $("notify").addEventListener("click", () => Notification.requestPermission().then(() => { $("notify").hidden = true; }));
}

$("name").value = `Browser ${Math.random().toString(36).slice(2, 6)}`;
if (invite && invite.error) say(invite.error, true);
connect();
