"""The agent's canvas through the bridge (PROTOCOL.md §9.7): where to load it, and a fetch that
checks the bridge's certificate against the pin that came inside the Noise session."""
import hashlib, hmac, http.client, ssl
from dataclasses import dataclass
from typing import Dict, Optional, Tuple
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Canvas:
    """`welcome.canvas`: `url` is https://HOST:PORT/__openclaw__/cap/CAPABILITY (a secret while it
    lasts: do not log it), `tls_sha256` the relay certificate's SHA-256 (hex) to pin."""
    url: str
    tls_sha256: str
    expires_at_ms: int

    @staticmethod
    def from_json(value: Optional[dict]) -> Optional["Canvas"]:
        if not isinstance(value, dict) or not isinstance(value.get("url"), str) or not isinstance(value.get("tlsSha256"), str):
            return None
        return Canvas(value["url"], value["tlsSha256"].lower(), int(value.get("expiresAtMs") or 0))

    def page(self, path: str = "/__openclaw__/a2ui/") -> str:
        """The URL of a page under the relay: `/__openclaw__/a2ui/` or `/__openclaw__/canvas/…`."""
        return self.url + path


class PinMismatch(ssl.SSLError):
    """The server's certificate is not the one the bridge named."""


def pinned_connection(url: str, tls_sha256: str, timeout: float = 10.0) -> Tuple[http.client.HTTPSConnection, str]:
    """An HTTPS connection to the canvas relay, connected and checked: the certificate's SHA-256
    must equal `tls_sha256` (no CA, no host name: the pin is the trust). Returns it and the request
    target (path and query) for `url`."""
    parts = urlsplit(url)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the pin below replaces CA checks
    connection = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=timeout, context=context)
    connection.connect()
    der = connection.sock.getpeercert(binary_form=True) or b""
    if not hmac.compare_digest(hashlib.sha256(der).hexdigest(), tls_sha256.lower()):
        connection.close()
        raise PinMismatch("the canvas relay's certificate is not the pinned one")
    target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    return connection, target


def fetch(url: str, tls_sha256: str, method: str = "GET", timeout: float = 10.0) -> Tuple[int, Dict[str, str], bytes]:
    """GET (or HEAD) one canvas URL with the pin checked first; returns status, headers, body."""
    connection, target = pinned_connection(url, tls_sha256, timeout)
    try:
        connection.request(method, target)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()
