"""A node's state directory, in the same formats as the Swift library (PROTOCOL.md §2.1):
`identity.key` ("LBK1" and the 32-byte X25519 private key, mode 0600) and `bridge.json` (the pin)."""
import base64
import datetime
import json
import os
import stat
from dataclasses import dataclass
from typing import Optional, Tuple

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import lanbridge_wire as wire

MAGIC = b"LBK1"


@dataclass(frozen=True)
class BridgePin:
    """The bridge this node paired with. A bridge that presents any other key is refused."""

    public_key: bytes
    host: str  # where the node last reached the bridge
    port: int
    bridge_name: Optional[str] = None
    paired_at: Optional[str] = None
    addresses: Tuple[str, ...] = ()  # the bridge's own list (welcome.addresses), "host:port", best first

    @property
    def fingerprint(self) -> str:
        return wire.fingerprint(self.public_key)

    def to_json(self) -> dict:
        out = {"publicKey": base64.b64encode(self.public_key).decode(), "fingerprint": self.fingerprint,
               "host": self.host, "port": self.port, "bridgeName": self.bridge_name, "pairedAt": self.paired_at}
        if self.addresses:
            out["addresses"] = list(self.addresses)
        return out

    @classmethod
    def from_json(cls, value: dict) -> "BridgePin":
        key = base64.b64decode(value["publicKey"], validate=True)
        if len(key) != 32:
            raise ValueError("bridge.json: publicKey is not 32 bytes")
        addresses = value.get("addresses") or []
        return cls(key, str(value["host"]), int(value["port"]), value.get("bridgeName"), value.get("pairedAt"),
                   tuple(str(a) for a in addresses[:4]) if isinstance(addresses, list) else ())


def public_key(private_key: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(private_key).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


class NodeStore:
    """identity.key and bridge.json in one directory (created 0700)."""

    def __init__(self, directory: str):
        self.directory = directory

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _write(self, name: str, data: bytes) -> None:
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        temporary = self._path(".%s.tmp.%d" % (name, os.getpid()))
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, self._path(name))

    def identity(self) -> bytes:
        """The node's private key, created on first use. Refused if others can read it."""
        path = self._path("identity.key")
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            private = os.urandom(32)  # any 32 bytes are an X25519 private key (clamped when used)
            self._write("identity.key", MAGIC + private)
            return private
        try:
            info = os.fstat(fd)
            if info.st_mode & 0o077:
                raise PermissionError("%s has mode %03o; it must be readable by its owner only" % (path, stat.S_IMODE(info.st_mode)))
            data = os.read(fd, 64)
        finally:
            os.close(fd)
        if len(data) != 36 or data[:4] != MAGIC:
            raise ValueError("%s is not a lanbridge identity" % path)
        return data[4:]

    def pin(self) -> Optional[BridgePin]:
        try:
            with open(self._path("bridge.json"), "rb") as file:
                return BridgePin.from_json(json.load(file))
        except FileNotFoundError:
            return None

    def save_pin(self, pin: BridgePin) -> None:
        self._write("bridge.json", json.dumps(pin.to_json(), indent=2).encode())

    def forget_pin(self) -> None:
        try:
            os.unlink(self._path("bridge.json"))
        except FileNotFoundError:
            pass


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
