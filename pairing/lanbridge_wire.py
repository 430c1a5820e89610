"""Reference implementation of the lanbridge wire format (pairing/PROTOCOL.md, sections 3-5),
written from the specification on top of the independent `noiseprotocol` package.

Used by the interop tests and the vector generator; also a worked example for client authors.
"""
import hashlib
import hmac
import json
import os
import struct

from noise.connection import Keypair, NoiseConnection

MAGIC = b"LNBR"
XX = "Noise_XX_25519_ChaChaPoly_SHA256"
XX_PSK3 = "Noise_XXpsk3_25519_ChaChaPoly_SHA256"
MAX_NOISE_MESSAGE = 65535
TAG = 16
MAX_CHUNK_DATA = MAX_NOISE_MESSAGE - TAG - 1
PRE_AUTH_LIMIT = 8 * 1024
CHUNK_MORE, CHUNK_FINAL = 0x00, 0x01


class ProtocolError(Exception):
    pass


def preamble(vmin=1, vmax=1, invite_id=None):
    if invite_id is None:
        return MAGIC + bytes([vmin, vmax, 1])
    assert len(invite_id) == 16
    return MAGIC + bytes([vmin, vmax, 2]) + invite_id


def parse_preamble(data):
    if len(data) < 7 or data[:4] != MAGIC:
        raise ProtocolError("bad preamble")
    vmin, vmax, kind = data[4], data[5], data[6]
    if kind == 1 and len(data) == 7:
        return vmin, vmax, None
    if kind == 2 and len(data) == 23:
        return vmin, vmax, data[7:]
    raise ProtocolError("unknown handshake")


def protocol_name(pre):
    return XX_PSK3 if pre[6] == 2 else XX


def prologue(pre):
    return b"lanbridge-prologue-v1\x00" + protocol_name(pre).encode() + b"\x00" + pre


def frame(body):
    if not 0 < len(body) <= MAX_NOISE_MESSAGE:
        raise ProtocolError("frame body out of range")
    return struct.pack(">H", len(body)) + body


def fingerprint(public_key):
    digest = hashlib.sha256(b"lanbridge-fingerprint-v1" + public_key).digest()[:10]
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    n = int.from_bytes(digest, "big")
    chars = "".join(alphabet[(n >> (75 - 5 * i)) & 31] for i in range(16))
    return "-".join(chars[i:i + 4] for i in range(0, 16, 4))


def invite_id(secret):
    return hashlib.sha256(b"lanbridge-invite-id-v1" + secret).digest()[:16]


def invite_psk(secret):
    return hashlib.sha256(b"lanbridge-invite-psk-v1" + secret).digest()


def commitment(h, node_nonce):
    return hashlib.sha256(b"lanbridge-pairing-commit-v1" + h + node_nonce).digest()


def verification_code(h, node_nonce, bridge_nonce):
    mac = hmac.new(h, b"lanbridge-pairing-code-v1" + node_nonce + bridge_nonce, hashlib.sha256).digest()
    return "%06d" % (int.from_bytes(mac[:8], "big") % 1_000_000)


class Stream:
    """Blocking frame reader over a socket."""

    def __init__(self, sock):
        self.sock = sock

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            part = self.sock.recv(n - len(buf))
            if not part:
                raise ProtocolError("connection closed mid-frame")
            buf += part
        return buf

    def read_frame(self, limit=MAX_NOISE_MESSAGE):
        (length,) = struct.unpack(">H", self._exact(2))
        if length == 0 or length > limit:
            raise ProtocolError("frame length %d out of range" % length)
        return self._exact(length)

    def write(self, data):
        self.sock.sendall(data)


class Session:
    """One established lanbridge session (after the handshake)."""

    def __init__(self, stream, noise, version, remote_static):
        self.stream, self.noise, self.version = stream, noise, version
        self.handshake_hash = noise.get_handshake_hash()
        self.remote_static = remote_static

    def send(self, message):
        chunks = [message[i:i + MAX_CHUNK_DATA] for i in range(0, len(message), MAX_CHUNK_DATA)] or [b""]
        out = b""
        for i, chunk in enumerate(chunks):
            flag = CHUNK_FINAL if i == len(chunks) - 1 else CHUNK_MORE
            out += frame(self.noise.encrypt(bytes([flag]) + chunk))
        self.stream.write(out)

    def recv(self, limit=16 * 1024 * 1024):
        message = b""
        while True:
            plaintext = self.noise.decrypt(self.stream.read_frame())
            if not plaintext or plaintext[0] not in (CHUNK_MORE, CHUNK_FINAL):
                raise ProtocolError("bad chunk flag")
            message += plaintext[1:]
            if len(message) > limit:
                raise ProtocolError("message too large")
            if plaintext[0] == CHUNK_FINAL:
                return message


def _noise(name, role, pre, static_private, psk=None, ephemeral_private=None):
    noise = NoiseConnection.from_name(name.encode())
    getattr(noise, "set_as_" + role)()
    noise.set_prologue(prologue(pre))
    noise.set_keypair_from_private_bytes(Keypair.STATIC, static_private)
    if ephemeral_private is not None:
        noise.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral_private)
    if psk is not None:
        noise.set_psks(psk=psk)
    noise.start_handshake()
    return noise


def connect(sock, static_private, vmin=1, vmax=1, invite_secret=None, ephemeral_private=None, transcript=None):
    """Node side. `transcript`, if a list, collects every byte string written or read."""
    stream = Stream(sock)
    pre = preamble(vmin, vmax, invite_id(invite_secret) if invite_secret else None)
    psk = invite_psk(invite_secret) if invite_secret else None
    noise = _noise(protocol_name(pre), "initiator", pre, static_private, psk, ephemeral_private)
    opening = frame(pre) + frame(noise.write_message(b""))
    stream.write(opening)
    message2 = stream.read_frame(PRE_AUTH_LIMIT)
    payload = noise.read_message(message2)
    remote_static = noise.noise_protocol.handshake_state.rs.public_bytes
    if len(payload) != 1 or not vmin <= payload[0] <= vmax:
        raise ProtocolError("bad version in message 2")
    message3 = frame(noise.write_message(b""))
    stream.write(message3)
    if transcript is not None:
        transcript += [opening, frame(message2), message3]
    return Session(stream, noise, payload[0], remote_static)


def accept(sock, static_private, versions=(1, 1), invites=None, ephemeral_private=None):
    """Bridge side. `invites` maps invite ID -> PSK (what a bridge stores)."""
    stream = Stream(sock)
    pre = stream.read_frame(PRE_AUTH_LIMIT)
    vmin, vmax, inv = parse_preamble(pre)
    version = min(vmax, versions[1])
    if version < max(vmin, versions[0]):
        raise ProtocolError("no common version")
    psk = None
    if inv is not None:
        psk = (invites or {}).get(inv)
        if psk is None:
            raise ProtocolError("unknown invite")
    noise = _noise(protocol_name(pre), "responder", pre, static_private, psk, ephemeral_private)
    if noise.read_message(stream.read_frame(PRE_AUTH_LIMIT)) != b"":
        raise ProtocolError("message 1 payload must be empty")
    stream.write(frame(noise.write_message(bytes([version]))))
    handshake = noise.noise_protocol.handshake_state  # noiseprotocol drops it, and rs, once complete
    if noise.read_message(stream.read_frame(PRE_AUTH_LIMIT)) != b"":
        raise ProtocolError("message 3 payload must be empty")
    return Session(stream, noise, version, handshake.rs.public_bytes)


# --- The session messages (PROTOCOL.md §9) ---------------------------------------------------



def send_message(session, message):
    session.send(json.dumps(message).encode())


def recv_message(session):
    return json.loads(session.recv())


def pair_by_code(session, details, show_code):
    """Runs §9.2 after the bridge's welcome: commit, challenge, reveal, then waits for the operator.
    Calls show_code(code, request_id) when the code is known. Returns the final pair.resolved."""
    node_nonce = os.urandom(32)
    h = session.handshake_hash
    send_message(session, {"type": "pair.request", "details": details, "commitment": commitment(h, node_nonce).hex()})
    while True:
        message = recv_message(session)
        kind = message["type"]
        if kind == "pair.challenge":
            send_message(session, {"type": "pair.reveal", "nonce": node_nonce.hex()})
            show_code(verification_code(h, node_nonce, bytes.fromhex(message["nonce"])), message["requestId"])
        elif kind == "ping":
            send_message(session, {"type": "pong", "id": message["id"]})
        elif kind == "pair.resolved":
            return message
        elif kind == "error":
            raise ProtocolError("%s: %s" % (message["code"], message["message"]))

