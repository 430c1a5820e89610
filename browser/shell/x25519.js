// X25519 (RFC 7748): WebCrypto's where the browser has it (Chromium 133+, Firefox 130+, Safari
// 18.x), found at run time; otherwise the field arithmetic below, TweetNaCl's (sixteen 16-bit
// limbs in a Float64Array, no branch or index on a secret). Both reproduce pairing/vectors/ and
// each other (Tests/IntegrationTests/python/browser_node.py). An all-zero result, which a
// low-order public key gives, is refused by both.

const gf = (init) => { const r = new Float64Array(16); if (init) r.set(init); return r; };
const A24 = gf([0xdb41, 1]);

function carry(o) {
  let c = 1;
  for (let i = 0; i < 16; i++) {
    const v = o[i] + c + 65535;
    c = Math.floor(v / 65536);
    o[i] = v - c * 65536;
  }
  o[0] += c - 1 + 37 * (c - 1);
}

function select(p, q, b) {
  const c = ~(b - 1);
  for (let i = 0; i < 16; i++) { const t = c & (p[i] ^ q[i]); p[i] ^= t; q[i] ^= t; }
}

function pack(o, n) {
  const m = gf(), t = gf(n);
  carry(t); carry(t); carry(t);
  for (let j = 0; j < 2; j++) {
    m[0] = t[0] - 0xffed;
    for (let i = 1; i < 15; i++) { m[i] = t[i] - 0xffff - ((m[i - 1] >> 16) & 1); m[i - 1] &= 0xffff; }
    m[15] = t[15] - 0x7fff - ((m[14] >> 16) & 1);
    const b = (m[15] >> 16) & 1;
    m[14] &= 0xffff;
    select(t, m, 1 - b);
  }
  for (let i = 0; i < 16; i++) { o[2 * i] = t[i] & 0xff; o[2 * i + 1] = t[i] >> 8; }
}

function unpack(o, n) {
  for (let i = 0; i < 16; i++) o[i] = n[2 * i] + (n[2 * i + 1] << 8);
  o[15] &= 0x7fff;
}

const add = (o, a, b) => { for (let i = 0; i < 16; i++) o[i] = a[i] + b[i]; };
const sub = (o, a, b) => { for (let i = 0; i < 16; i++) o[i] = a[i] - b[i]; };

function mul(o, a, b) {
  const t = new Float64Array(31);
  for (let i = 0; i < 16; i++) for (let j = 0; j < 16; j++) t[i + j] += a[i] * b[j];
  for (let i = 0; i < 15; i++) t[i] += 38 * t[i + 16];
  for (let i = 0; i < 16; i++) o[i] = t[i];
  carry(o); carry(o);
}

function invert(o, i) {
  const c = gf(i);
  for (let a = 253; a >= 0; a--) { mul(c, c, c); if (a !== 2 && a !== 4) mul(c, c, i); }
  o.set(c);
}

/** The scalar multiple of the point `u` (32 bytes) by `scalar` (32 bytes, clamped here). */
export function scalarMult(scalar, u) {
  const z = Uint8Array.from(scalar);
  z[31] = (z[31] & 127) | 64;
  z[0] &= 248;
  const x = gf(), a = gf(), b = gf(), c = gf(), d = gf(), e = gf(), f = gf();
  unpack(x, u);
  b.set(x);
  a[0] = d[0] = 1;
  for (let i = 254; i >= 0; --i) {
    const r = (z[i >>> 3] >>> (i & 7)) & 1;
    select(a, b, r); select(c, d, r);
    add(e, a, c); sub(a, a, c); add(c, b, d); sub(b, b, d);
    mul(d, e, e); mul(f, a, a); mul(a, c, a); mul(c, b, e);
    add(e, a, c); sub(a, a, c); mul(b, a, a); sub(c, d, f);
    mul(a, c, A24); add(a, a, d); mul(c, c, a); mul(a, d, f);
    mul(d, b, x); mul(b, e, e);
    select(a, b, r); select(c, d, r);
  }
  invert(c, c);
  mul(a, a, c);
  const out = new Uint8Array(32);
  pack(out, a);
  return out;
}

const BASE = Uint8Array.from([9, ...new Array(31).fill(0)]);
const PKCS8_PREFIX = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20]);

function refuseZero(shared) {
  if (shared.every((b) => b === 0)) throw new Error("X25519 gave all zeros: a low-order public key");
  return shared;
}

/** X25519 in the page's own code. A key pair's `private` is its 32 bytes. */
export const fallback = {
  name: "fallback",
  async generate() { return this.fromPrivate(crypto.getRandomValues(new Uint8Array(32))); },
  async fromPrivate(bytes) { return { publicKey: scalarMult(bytes, BASE), private: Uint8Array.from(bytes), extractable: true }; },
  async dh(pair, publicKey) { return refuseZero(scalarMult(pair.private, publicKey)); },
};

/** WebCrypto's X25519. A key pair's `private` is a CryptoKey, non-extractable when made here. */
export const webCrypto = {
  name: "webcrypto",
  async generate() {
    const pair = await crypto.subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]);
    return { publicKey: new Uint8Array(await crypto.subtle.exportKey("raw", pair.publicKey)), private: pair.privateKey, extractable: false };
  },
  // Test vectors only: a private key given as bytes is, by its nature, extractable.
  async fromPrivate(bytes) {
    const pkcs8 = new Uint8Array(48);
    pkcs8.set(PKCS8_PREFIX); pkcs8.set(bytes, 16);
    const key = await crypto.subtle.importKey("pkcs8", pkcs8, { name: "X25519" }, false, ["deriveBits"]);
    return { publicKey: scalarMult(bytes, BASE), private: key, extractable: true };
  },
  async dh(pair, publicKey) {
    const peer = await crypto.subtle.importKey("raw", publicKey, { name: "X25519" }, false, []);
    let bits;
    try {
      bits = await crypto.subtle.deriveBits({ name: "X25519", public: peer }, pair.private, 256);
    } catch (error) {
      throw new Error(`X25519 refused the peer's key (${error.name})`);
    }
    return refuseZero(new Uint8Array(bits));
  },
};

/** WebCrypto's X25519 when this browser has it, else the fallback. */
export async function detect() {
  try {
    await crypto.subtle.generateKey({ name: "X25519" }, false, ["deriveBits"]);
    return webCrypto;
  } catch {
    return fallback;
  }
}
