// ChaCha20-Poly1305 (RFC 8439), the one cipher of lanbridge's Noise suite. WebCrypto has no
// ChaCha20-Poly1305, so it is here: small, table-free, and proven against RFC 8439's vectors and
// Python's `cryptography` (Tests/IntegrationTests/python/browser_node.py).
//
// Poly1305 keeps its accumulator in ten 13-bit limbs (the layout of poly1305-donna-16, as
// TweetNaCl-js has it), so every product and sum stays below 2^32 and exact in a JS number.

const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574];

function word(bytes, at) {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

function rotl(v, n) {
  return ((v << n) | (v >>> (32 - n))) >>> 0;
}

function quarter(x, a, b, c, d) {
  x[a] = (x[a] + x[b]) >>> 0; x[d] = rotl(x[d] ^ x[a], 16);
  x[c] = (x[c] + x[d]) >>> 0; x[b] = rotl(x[b] ^ x[c], 12);
  x[a] = (x[a] + x[b]) >>> 0; x[d] = rotl(x[d] ^ x[a], 8);
  x[c] = (x[c] + x[d]) >>> 0; x[b] = rotl(x[b] ^ x[c], 7);
}

/** One 64-byte ChaCha20 block for `key` (32 bytes), block `counter` and `nonce` (12 bytes). */
function block(key, counter, nonce, out) {
  const state = new Uint32Array(16);
  state.set(SIGMA, 0);
  for (let i = 0; i < 8; i++) state[4 + i] = word(key, 4 * i);
  state[12] = counter >>> 0;
  for (let i = 0; i < 3; i++) state[13 + i] = word(nonce, 4 * i);
  const x = Uint32Array.from(state);
  for (let round = 0; round < 10; round++) {
    quarter(x, 0, 4, 8, 12); quarter(x, 1, 5, 9, 13); quarter(x, 2, 6, 10, 14); quarter(x, 3, 7, 11, 15);
    quarter(x, 0, 5, 10, 15); quarter(x, 1, 6, 11, 12); quarter(x, 2, 7, 8, 13); quarter(x, 3, 4, 9, 14);
  }
  for (let i = 0; i < 16; i++) {
    const v = (x[i] + state[i]) >>> 0;
    out[4 * i] = v & 0xff; out[4 * i + 1] = (v >>> 8) & 0xff; out[4 * i + 2] = (v >>> 16) & 0xff; out[4 * i + 3] = v >>> 24;
  }
}

/** `input` XOR the ChaCha20 key stream from block `counter` on. */
export function chacha20(key, nonce, counter, input) {
  const output = new Uint8Array(input.length);
  const stream = new Uint8Array(64);
  for (let at = 0; at < input.length; at += 64) {
    block(key, counter++, nonce, stream);
    const n = Math.min(64, input.length - at);
    for (let i = 0; i < n; i++) output[at + i] = input[at + i] ^ stream[i];
  }
  return output;
}

/** Poly1305 of `message` under a one-time `key` (32 bytes): 16 bytes. */
export function poly1305(key, message) {
  const le16 = (b, at) => b[at] | (b[at + 1] << 8);
  const t = [];
  for (let i = 0; i < 8; i++) t.push(le16(key, 2 * i));
  const r = [
    t[0] & 0x1fff, ((t[0] >>> 13) | (t[1] << 3)) & 0x1fff, ((t[1] >>> 10) | (t[2] << 6)) & 0x1f03,
    ((t[2] >>> 7) | (t[3] << 9)) & 0x1fff, ((t[3] >>> 4) | (t[4] << 12)) & 0x00ff, (t[4] >>> 1) & 0x1ffe,
    ((t[4] >>> 14) | (t[5] << 2)) & 0x1fff, ((t[5] >>> 11) | (t[6] << 5)) & 0x1f81,
    ((t[6] >>> 8) | (t[7] << 8)) & 0x1fff, (t[7] >>> 5) & 0x007f,
  ];
  const pad = [];
  for (let i = 0; i < 8; i++) pad.push(le16(key, 16 + 2 * i));
  const h = new Array(10).fill(0);
  const d = new Array(10).fill(0);
  const m = new Uint8Array(16);
  for (let at = 0; at < message.length; at += 16) {
    const n = Math.min(16, message.length - at);
    m.fill(0);
    m.set(message.subarray(at, at + n));
    let hibit = 1 << 11;
    if (n < 16) { m[n] = 1; hibit = 0; }
    for (let i = 0; i < 8; i++) t[i] = le16(m, 2 * i);
    h[0] += t[0] & 0x1fff;
    h[1] += ((t[0] >>> 13) | (t[1] << 3)) & 0x1fff;
    h[2] += ((t[1] >>> 10) | (t[2] << 6)) & 0x1fff;
    h[3] += ((t[2] >>> 7) | (t[3] << 9)) & 0x1fff;
    h[4] += ((t[3] >>> 4) | (t[4] << 12)) & 0x1fff;
    h[5] += (t[4] >>> 1) & 0x1fff;
    h[6] += ((t[4] >>> 14) | (t[5] << 2)) & 0x1fff;
    h[7] += ((t[5] >>> 11) | (t[6] << 5)) & 0x1fff;
    h[8] += ((t[6] >>> 8) | (t[7] << 8)) & 0x1fff;
    h[9] += (t[7] >>> 5) | hibit;
    let c = 0;
    for (let i = 0; i < 10; i++) {
      let di = c;
      for (let j = 0; j < 10; j++) {
        di += h[j] * (j <= i ? r[i - j] : 5 * r[i + 10 - j]);
        if (j === 4) { c = di >>> 13; di &= 0x1fff; }
      }
      c += di >>> 13;
      d[i] = di & 0x1fff;
    }
    c = ((c << 2) + c) | 0;
    c = (c + d[0]) | 0;
    d[0] = c & 0x1fff;
    d[1] += c >>> 13;
    for (let i = 0; i < 10; i++) h[i] = d[i];
  }
  // Full carry, then h mod 2^130 - 5, chosen without a branch on the value.
  let c = h[1] >>> 13;
  h[1] &= 0x1fff;
  for (let i = 2; i < 10; i++) { h[i] += c; c = h[i] >>> 13; h[i] &= 0x1fff; }
  h[0] += c * 5; c = h[0] >>> 13; h[0] &= 0x1fff;
  h[1] += c; c = h[1] >>> 13; h[1] &= 0x1fff;
  h[2] += c;
  const g = new Array(10);
  g[0] = h[0] + 5; c = g[0] >>> 13; g[0] &= 0x1fff;
  for (let i = 1; i < 10; i++) { g[i] = h[i] + c; c = g[i] >>> 13; g[i] &= 0x1fff; }
  let mask = (c ^ 1) - 1;
  for (let i = 0; i < 10; i++) h[i] = (h[i] & ~mask) | (g[i] & mask);
  const o = [
    (h[0] | (h[1] << 13)) & 0xffff, ((h[1] >>> 3) | (h[2] << 10)) & 0xffff, ((h[2] >>> 6) | (h[3] << 7)) & 0xffff,
    ((h[3] >>> 9) | (h[4] << 4)) & 0xffff, ((h[4] >>> 12) | (h[5] << 1) | (h[6] << 14)) & 0xffff,
    ((h[6] >>> 2) | (h[7] << 11)) & 0xffff, ((h[7] >>> 5) | (h[8] << 8)) & 0xffff, ((h[8] >>> 8) | (h[9] << 5)) & 0xffff,
  ];
  const tag = new Uint8Array(16);
  let f = 0;
  for (let i = 0; i < 8; i++) {
    f = o[i] + pad[i] + (f >>> 16);
    tag[2 * i] = f & 0xff; tag[2 * i + 1] = (f >>> 8) & 0xff;
  }
  return tag;
}

function macData(aad, ciphertext) {
  const padded = (n) => (n + 15) & ~15;
  const data = new Uint8Array(padded(aad.length) + padded(ciphertext.length) + 16);
  data.set(aad, 0);
  data.set(ciphertext, padded(aad.length));
  const lengths = new DataView(data.buffer, data.length - 16);
  lengths.setUint32(0, aad.length, true);
  lengths.setUint32(8, ciphertext.length, true);
  return data;
}

function polyKey(key, nonce) {
  return chacha20(key, nonce, 0, new Uint8Array(32));
}

/** ciphertext || tag. */
export function seal(key, nonce, plaintext, aad = new Uint8Array(0)) {
  const ciphertext = chacha20(key, nonce, 1, plaintext);
  const out = new Uint8Array(ciphertext.length + 16);
  out.set(ciphertext);
  out.set(poly1305(polyKey(key, nonce), macData(aad, ciphertext)), ciphertext.length);
  return out;
}

/** The plaintext, or null when the tag does not authenticate (compared in constant time). */
export function open(key, nonce, sealed, aad = new Uint8Array(0)) {
  if (sealed.length < 16) return null;
  const ciphertext = sealed.subarray(0, sealed.length - 16);
  const tag = poly1305(polyKey(key, nonce), macData(aad, ciphertext));
  let diff = 0;
  for (let i = 0; i < 16; i++) diff |= tag[i] ^ sealed[sealed.length - 16 + i];
  if (diff !== 0) return null;
  return chacha20(key, nonce, 1, ciphertext);
}
