"""One lanbridge session over asyncio streams: the handshake of PROTOCOL.md §4-5 and the
chunked transport of §6, using the wire module's pure functions (and `noiseprotocol`)."""
import asyncio
import json
import struct
from typing import Optional

import lanbridge_wire as wire


class AsyncSession:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, noise, remote_static: bytes):
        self.reader, self.writer, self.noise = reader, writer, noise
        self.handshake_hash = noise.get_handshake_hash()
        self.remote_static = remote_static
        self._send_lock = asyncio.Lock()

    @classmethod
    async def connect(cls, host: str, port: int, static_private: bytes, invite_secret: Optional[bytes] = None,
                      timeout: float = 10) -> "AsyncSession":
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        try:
            pre = wire.preamble(invite_id=wire.invite_id(invite_secret) if invite_secret else None)
            psk = wire.invite_psk(invite_secret) if invite_secret else None
            noise = wire._noise(wire.protocol_name(pre), "initiator", pre, static_private, psk)
            writer.write(wire.frame(pre) + wire.frame(noise.write_message(b"")))
            message2 = await asyncio.wait_for(_read_frame(reader, wire.PRE_AUTH_LIMIT), timeout)
            payload = noise.read_message(message2)
            remote_static = noise.noise_protocol.handshake_state.rs.public_bytes
            if len(payload) != 1 or payload[0] != 1:
                raise wire.ProtocolError("the bridge chose no version this node speaks")
            writer.write(wire.frame(noise.write_message(b"")))
            await writer.drain()
        except BaseException:
            writer.close()
            raise
        return cls(reader, writer, noise, remote_static)

    async def send(self, message: dict) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        chunks = [data[i:i + wire.MAX_CHUNK_DATA] for i in range(0, len(data), wire.MAX_CHUNK_DATA)] or [b""]
        async with self._send_lock:  # encryption order is the nonce order
            for i, chunk in enumerate(chunks):
                flag = wire.CHUNK_FINAL if i == len(chunks) - 1 else wire.CHUNK_MORE
                self.writer.write(wire.frame(self.noise.encrypt(bytes([flag]) + chunk)))
            await self.writer.drain()

    async def receive(self, limit: int = 16 * 1024 * 1024) -> dict:
        # A bytearray grows in place: `bytes +=` copies everything so far, quadratic in the chunks.
        message = bytearray()
        while True:
            plaintext = self.noise.decrypt(await _read_frame(self.reader, wire.MAX_NOISE_MESSAGE))
            if not plaintext or plaintext[0] not in (wire.CHUNK_MORE, wire.CHUNK_FINAL):
                raise wire.ProtocolError("bad chunk flag")
            message += memoryview(plaintext)[1:]
            if len(message) > limit:
                raise wire.ProtocolError("message too large")
            if plaintext[0] == wire.CHUNK_FINAL:
                break
        value = json.loads(message)
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            raise wire.ProtocolError("a message that is not an object with a type")
        return value

    def close(self) -> None:
        self.writer.close()


async def _read_frame(reader: asyncio.StreamReader, limit: int) -> bytes:
    try:
        (length,) = struct.unpack(">H", await reader.readexactly(2))
        if length == 0 or length > limit:
            raise wire.ProtocolError("frame length %d out of range" % length)
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise ConnectionError("the bridge closed the connection") from None
