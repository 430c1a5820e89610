"""A local HTTP server standing in for a push service (ntfy, APNs) in the wake hook tests. Prints
"listening PORT", then one JSON line per request: method, path, headers (lowercased names), body.
A GET is recorded too (a page trying to reach the LAN, in the canvas tests) and answered "ok".
With --es256-key KEY.p8 it also checks the request's `authorization: bearer JWT` as APNs would
(ES256, with the `cryptography` package, an implementation we did not write) and adds
"jwt": "valid" or the reason it is not, with the JWT's header and claims. Answers 200 `{}`.

    http_sink.py [--es256-key KEY.p8]
"""
import base64
import http.server
import json
import sys

key = None
if "--es256-key" in sys.argv:
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    with open(sys.argv[sys.argv.index("--es256-key") + 1], "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None).public_key()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_jwt(authorization):
    if not authorization.startswith("bearer "):
        return {"jwt": "missing"}
    try:
        header, claims, signature = authorization[len("bearer "):].split(".")
        raw = unb64(signature)
        if len(raw) != 64:
            return {"jwt": f"signature is {len(raw)} bytes"}
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        key.verify(der, f"{header}.{claims}".encode("ascii"), ec.ECDSA(hashes.SHA256()))
        return {"jwt": "valid", "jwtHeader": json.loads(unb64(header)), "jwtClaims": json.loads(unb64(claims))}
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        return {"jwt": f"invalid: {e!r}"}


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        record = {"method": "POST", "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                  "body": body.decode("utf-8", "replace")}
        if key is not None:
            record.update(check_jwt(self.headers.get("authorization", "")))
        print(json.dumps(record), flush=True)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def do_GET(self):
        print(json.dumps({"method": "GET", "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}), flush=True)
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)  # a browser holds connections open
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
