// lanbridge's connection from the node's side, as pairing/PROTOCOL.md §3-§7 has it:
// Noise_XX_25519_ChaChaPoly_SHA256 and Noise_XXpsk3 (revision 34) with lanbridge's prologue, the
// chunked transport messages, fingerprints, the pairing commitment and code, and an invite's ID
// and PSK. SHA-256 and HMAC are WebCrypto's (every browser has them in a secure context); the
// cipher is chachapoly.js, X25519 is x25519.js. Over a WebSocket one binary message is one frame,
// so the frames' two length bytes are not sent.

import { open, seal } from "./chachapoly.js";

const text = (s) => new TextEncoder().encode(s);
export const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
};
export const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
export function fromHex(s) {
  if (typeof s !== "string" || !/^([0-9a-f]{2})*$/.test(s)) throw new Error("not lowercase hex");
  return Uint8Array.from(s.match(/../g) || [], (b) => parseInt(b, 16));
}

export async function sha256(data) { return new Uint8Array(await crypto.subtle.digest("SHA-256", data)); }
export async function hmac(key, data) {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}
async function hkdf(chainingKey, input, count) {
  const temp = await hmac(chainingKey, input);
  const outputs = [];
  let previous = new Uint8Array(0);
  for (let i = 1; i <= count; i++) {
    previous = await hmac(temp, concat(previous, Uint8Array.of(i)));
    outputs.push(previous);
  }
  return outputs;
}

export const MAX_FRAME = 65535;
export const MAX_CHUNK_DATA = MAX_FRAME - 16 - 1;
export const PROTOCOL_VERSION = 1;

/** Noise's nonce for ChaChaPoly: 4 zero bytes, then the counter, 64-bit little-endian. */
function nonceBytes(n) {
  const nonce = new Uint8Array(12);
  new DataView(nonce.buffer).setBigUint64(4, BigInt(n), true);
  return nonce;
}

export class CipherState {
  constructor(key = null) { this.key = key; this.n = 0; }
  get hasKey() { return this.key !== null; }
  encrypt(ad, plaintext) {
    if (!this.key) return plaintext;
    if (this.n >= Number.MAX_SAFE_INTEGER) throw new Error("nonce exhausted");
    return seal(this.key, nonceBytes(this.n++), plaintext, ad);
  }
  decrypt(ad, ciphertext) {
    if (!this.key) return ciphertext;
    if (this.n >= Number.MAX_SAFE_INTEGER) throw new Error("nonce exhausted");
    const plain = open(this.key, nonceBytes(this.n), ciphertext, ad);
    if (plain === null) throw new Error("decryption failed");
    this.n++;
    return plain;
  }
}

class SymmetricState {
  static async start(protocolName) {
    const s = new SymmetricState();
    const name = text(protocolName);
    s.h = name.length <= 32 ? concat(name, new Uint8Array(32 - name.length)) : await sha256(name);
    s.ck = s.h;
    s.cipher = new CipherState();
    return s;
  }
  async mixHash(data) { this.h = await sha256(concat(this.h, data)); }
  async mixKey(input) {
    const [ck, key] = await hkdf(this.ck, input, 2);
    this.ck = ck;
    this.cipher = new CipherState(key);
  }
  async mixKeyAndHash(input) {
    const [ck, h, key] = await hkdf(this.ck, input, 3);
    this.ck = ck;
    await this.mixHash(h);
    this.cipher = new CipherState(key);
  }
  async encryptAndHash(plaintext) {
    const out = this.cipher.encrypt(this.h, plaintext);
    await this.mixHash(out);
    return out;
  }
  async decryptAndHash(ciphertext) {
    const out = this.cipher.decrypt(this.h, ciphertext);
    await this.mixHash(ciphertext);
    return out;
  }
  async split() {
    const [a, b] = await hkdf(this.ck, new Uint8Array(0), 2);
    return [new CipherState(a), new CipherState(b)];
  }
}

/** The preamble (§4): 7 bytes, or 23 with an invite ID. */
export function preamble(inviteId = null) {
  const head = Uint8Array.of(0x4c, 0x4e, 0x42, 0x52, PROTOCOL_VERSION, PROTOCOL_VERSION, inviteId ? 2 : 1);
  return inviteId ? concat(head, inviteId) : head;
}

export function protocolName(invite) {
  return invite ? "Noise_XXpsk3_25519_ChaChaPoly_SHA256" : "Noise_XX_25519_ChaChaPoly_SHA256";
}

/**
 * The node's side of one handshake. `x25519` is a backend of x25519.js, `staticKey` its key pair,
 * `psk` the invite's (or null). `ephemeral` is for test vectors only.
 */
export class Initiator {
  static async start({ x25519, staticKey, psk = null, inviteId = null, ephemeral = null }) {
    const i = new Initiator();
    Object.assign(i, { x25519, staticKey, psk, preamble: preamble(inviteId) });
    i.symmetric = await SymmetricState.start(protocolName(psk !== null));
    await i.symmetric.mixHash(concat(text("lanbridge-prologue-v1"), Uint8Array.of(0), text(protocolName(psk !== null)), Uint8Array.of(0), i.preamble));
    i.ephemeral = ephemeral ?? (await x25519.generate());
    return i;
  }

  /** -> e (with psk: the ephemeral is also mixed into the key). */
  async first() {
    const s = this.symmetric;
    await s.mixHash(this.ephemeral.publicKey);
    if (this.psk) await s.mixKey(this.ephemeral.publicKey);
    return concat(this.ephemeral.publicKey, await s.encryptAndHash(new Uint8Array(0)));
  }

  /** <- e, ee, s, es: returns the chosen version, after checking the bridge's payload. */
  async second(message) {
    const s = this.symmetric;
    if (message.length !== 32 + 48 + 17) throw new Error(`handshake message 2 has ${message.length} bytes, not 97`);
    this.remoteEphemeral = message.subarray(0, 32);
    await s.mixHash(this.remoteEphemeral);
    if (this.psk) await s.mixKey(this.remoteEphemeral);
    await s.mixKey(await this.x25519.dh(this.ephemeral, this.remoteEphemeral));
    this.remoteStatic = await s.decryptAndHash(message.subarray(32, 80));
    await s.mixKey(await this.x25519.dh(this.ephemeral, this.remoteStatic));
    const payload = await s.decryptAndHash(message.subarray(80));
    if (payload.length !== 1 || payload[0] !== PROTOCOL_VERSION) throw new Error("the bridge chose no version this page speaks");
    return payload[0];
  }

  /** -> s, se (, psk): the last message, and the two transport ciphers. */
  async third() {
    const s = this.symmetric;
    const encryptedStatic = await s.encryptAndHash(this.staticKey.publicKey);
    await s.mixKey(await this.x25519.dh(this.staticKey, this.remoteEphemeral));
    if (this.psk) await s.mixKeyAndHash(this.psk);
    const payload = await s.encryptAndHash(new Uint8Array(0));
    const [send, receive] = await s.split();
    this.transport = new Transport(send, receive);
    this.handshakeHash = s.h;
    return concat(encryptedStatic, payload);
  }
}

/** Application messages over transport frames (§6), each frame one WebSocket message. */
export class Transport {
  constructor(send, receive, maxMessage = 16 << 20) {
    Object.assign(this, { send, receive, maxMessage, pending: [], pendingBytes: 0 });
  }
  /** The frames (bodies, without length bytes) that carry `message`. */
  seal(message) {
    const frames = [];
    let at = 0;
    do {
      const data = message.subarray(at, at + MAX_CHUNK_DATA);
      at += data.length;
      frames.push(this.send.encrypt(new Uint8Array(0), concat(Uint8Array.of(at >= message.length ? 1 : 0), data)));
    } while (at < message.length);
    return frames;
  }
  /** One frame in: a whole message when it was the last chunk, else null. */
  open(frame) {
    if (frame.length < 17 || frame.length > MAX_FRAME) throw new Error(`a transport frame of ${frame.length} bytes`);
    const chunk = this.receive.decrypt(new Uint8Array(0), frame);
    if (chunk[0] > 1) throw new Error(`chunk flag ${chunk[0]}`);
    this.pendingBytes += chunk.length - 1;
    if (this.pendingBytes > this.maxMessage) throw new Error("a message over the limit");
    this.pending.push(chunk.subarray(1));
    if (chunk[0] === 0) return null;
    const message = concat(...this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    return message;
  }
}

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** A public key's fingerprint (§2): XXXX-XXXX-XXXX-XXXX. */
export async function fingerprint(publicKey) {
  const digest = await sha256(concat(text("lanbridge-fingerprint-v1"), publicKey));
  let bits = 0n;
  for (const b of digest.subarray(0, 10)) bits = (bits << 8n) | BigInt(b);
  let chars = "";
  for (let i = 15; i >= 0; i--) chars += ALPHABET[Number((bits >> BigInt(5 * i)) & 31n)];
  return chars.match(/.{4}/g).join("-");
}

/** A fingerprint as typed: uppercased, `-` and spaces dropped, O read as 0, I and L as 1; or null. */
export function parseFingerprint(typed) {
  const s = String(typed).toUpperCase().replace(/[-\s]/g, "").replace(/O/g, "0").replace(/[IL]/g, "1");
  if (s.length !== 16 || [...s].some((c) => !ALPHABET.includes(c))) return null;
  return s.match(/.{4}/g).join("-");
}

/** §7: the commitment to the node's nonce. */
export async function commitment(handshakeHash, nodeNonce) {
  return sha256(concat(text("lanbridge-pairing-commit-v1"), handshakeHash, nodeNonce));
}

/** §7: the 6-digit code. */
export async function verificationCode(handshakeHash, nodeNonce, bridgeNonce) {
  const mac = await hmac(handshakeHash, concat(text("lanbridge-pairing-code-v1"), nodeNonce, bridgeNonce));
  const value = new DataView(mac.buffer).getBigUint64(0, false) % 1000000n;
  return value.toString().padStart(6, "0");
}

/** §4: an invite's ID (16 bytes) and PSK (32 bytes) from its secret. */
export async function inviteKeys(secret) {
  const id = (await sha256(concat(text("lanbridge-invite-id-v1"), secret))).subarray(0, 16);
  const psk = await sha256(concat(text("lanbridge-invite-psk-v1"), secret));
  return { id, psk };
}
