// Checks of the browser shell's crypto against pairing/vectors/, run in headless Chromium by
// python/browser_crypto.py (and under Node while developing). Each check throws with what differed.
import { Initiator, fromHex, toHex, concat, sha256, fingerprint, commitment, verificationCode, inviteKeys, Transport } from "./shell/noise.js";
import { fallback, webCrypto, detect } from "./shell/x25519.js";
import { seal, open } from "./shell/chachapoly.js";

function equal(what, got, want) {
  if (got !== want) throw new Error(`${what}: got ${got}, want ${want}`);
}

/** Frames "length || body" of a vector's hex, as bodies. */
function frames(hex) {
  const bytes = fromHex(hex);
  const out = [];
  for (let at = 0; at < bytes.length; ) {
    const n = (bytes[at] << 8) | bytes[at + 1];
    out.push(bytes.subarray(at + 2, at + 2 + n));
    at += 2 + n;
  }
  return out;
}

const framed = (body) => concat(Uint8Array.of(body.length >> 8, body.length & 0xff), body);

/** Both connections of handshake.json, byte for byte, with the X25519 backend named. */
export async function handshakeVectors(vectors, backendName) {
  const x25519 = backendName === "webcrypto" ? webCrypto : fallback;
  for (const v of vectors.vectors) {
    const invite = v.inviteSecret ? await inviteKeys(fromHex(v.inviteSecret)) : null;
    if (invite) {
      equal("invite ID", toHex(invite.id), v.inviteID);
      equal("invite PSK", toHex(invite.psk), v.invitePSK);
    }
    const node = await Initiator.start({
      x25519, staticKey: await x25519.fromPrivate(fromHex(v.nodeStaticPrivate)),
      psk: invite ? invite.psk : null, inviteId: invite ? invite.id : null,
      ephemeral: await x25519.fromPrivate(fromHex(v.nodeEphemeralPrivate)),
    });
    equal(`${v.protocolName} preamble`, toHex(node.preamble), v.preamble);
    const [m1, m2, m3] = v.handshakeWire.map((w) => w.bytes);
    equal(`${v.protocolName} message 1`, toHex(concat(framed(node.preamble), framed(await node.first()))), m1);
    equal(`${v.protocolName} version`, await node.second(frames(m2)[0]), v.chosenVersion);
    equal(`${v.protocolName} bridge key`, toHex(node.remoteStatic), v.bridgeStaticPublic);
    equal(`${v.protocolName} message 3`, toHex(framed(await node.third())), m3);
    equal(`${v.protocolName} handshake hash`, toHex(node.handshakeHash), v.handshakeHash);
    equal("node fingerprint", await fingerprint(node.staticKey.publicKey), v.nodeFingerprint);
    equal("bridge fingerprint", await fingerprint(node.remoteStatic), v.bridgeFingerprint);
    const t = node.transport;
    for (const m of v.transport) {
      if (m.from === "node") {
        const message = m.messageLength === 12 ? new TextEncoder().encode("hello bridge") : patterned(m.messageLength);
        equal(`${v.protocolName} node message sha`, toHex(await sha256(message)), m.messageSHA256);
        equal(`${v.protocolName} node message of ${m.messageLength}`, toHex(concat(...t.seal(message).map(framed))), m.bytes);
      } else {
        let whole = null;
        for (const f of frames(m.bytes)) whole = t.open(f);
        equal(`${v.protocolName} bridge message`, toHex(await sha256(whole)), m.messageSHA256);
      }
    }
  }
  return vectors.vectors.length;
}

/** bytes(range(256)) * 256 + bytes(range(255)), as generate.py makes the long message. */
function patterned(length) {
  return Uint8Array.from({ length }, (_, i) => i % 256);
}

export async function codeVectors(vectors) {
  for (const c of vectors.cases) {
    const h = fromHex(c.handshakeHash), nn = fromHex(c.nodeNonce);
    equal("commitment", toHex(await commitment(h, nn)), c.commitment);
    equal("code", await verificationCode(h, nn, fromHex(c.bridgeNonce)), c.code);
  }
  return vectors.cases.length;
}

export async function fingerprintVectors(vectors) {
  for (const c of vectors.cases) equal("fingerprint", await fingerprint(fromHex(c.publicKey)), c.fingerprint);
  return vectors.cases.length;
}

/** Cases of {key, nonce, aad, plaintext, sealed} in hex: each must seal and open as given; a flipped tag bit must not open. */
export function aeadCases(cases) {
  let refused = 0;
  for (const [i, c] of cases.entries()) {
    const key = fromHex(c.key), nonce = fromHex(c.nonce), aad = fromHex(c.aad), plain = fromHex(c.plaintext);
    const sealed = seal(key, nonce, plain, aad);
    if (toHex(sealed) !== c.sealed) throw new Error(`case ${i} (${plain.length} bytes): sealed differs`);
    const opened = open(key, nonce, fromHex(c.sealed), aad);
    if (opened === null || toHex(opened) !== c.plaintext) throw new Error(`case ${i}: did not open`);
    const tampered = Uint8Array.from(sealed);
    tampered[tampered.length - 1 - (i % 16)] ^= 1 << (i % 8);
    if (open(key, nonce, tampered, aad) !== null) throw new Error(`case ${i}: a tampered tag opened`);
    refused++;
  }
  return refused;
}

/** The two X25519 backends agree on `n` random exchanges, and both refuse low-order points. */
export async function x25519Agreement(n) {
  for (let i = 0; i < n; i++) {
    const a = await webCrypto.generate(), b = await fallback.generate();
    const ab = toHex(await webCrypto.dh(a, b.publicKey)), ba = toHex(await fallback.dh(b, a.publicKey));
    if (ab !== ba) throw new Error(`exchange ${i} differs`);
  }
  const zero = new Uint8Array(32), one = Uint8Array.from([1, ...new Array(31).fill(0)]);
  for (const backend of [webCrypto, fallback]) {
    const pair = await backend.generate();
    for (const low of [zero, one]) {
      let refused = false;
      try { await backend.dh(pair, low); } catch { refused = true; }
      if (!refused) throw new Error(`${backend.name} accepted a low-order point`);
    }
  }
  return n;
}

export { detect };

/** Milliseconds per node-side handshake (the XX vector, replayed), with the backend named. */
export async function handshakeMs(vectors, backendName, rounds) {
  const xx = { ...vectors, vectors: vectors.vectors.filter((v) => !v.inviteSecret) };
  await handshakeVectors(xx, backendName);  // warm
  const start = performance.now();
  for (let i = 0; i < rounds; i++) await handshakeVectors(xx, backendName);
  return (performance.now() - start) / rounds;
}

/** MB/s of sealing and opening `megabytes` MiB in 65,518-byte chunks, as the transport does. */
export function aeadMBps(megabytes) {
  const key = crypto.getRandomValues(new Uint8Array(32)), nonce = new Uint8Array(12), chunk = crypto.getRandomValues(new Uint8Array(65518));
  const chunks = Math.ceil((megabytes << 20) / chunk.length);
  const start = performance.now();
  for (let i = 0; i < chunks; i++) {
    if (open(key, nonce, seal(key, nonce, chunk)) === null) throw new Error("did not open");
  }
  return (chunks * chunk.length) / (1 << 20) / ((performance.now() - start) / 1000);
}
