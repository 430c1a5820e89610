#!/usr/bin/env python3
"""An independent lanbridge peer for the interop tests: Python `noiseprotocol` underneath,
the wire format from pairing/lanbridge_wire.py (written from PROTOCOL.md).

    noise_peer.py connect PORT STATIC_HEX [INVITE_SECRET_HEX]   # node role (initiator)
    noise_peer.py listen STATIC_HEX [INVITE_SECRET_HEX]         # bridge role (responder)

After the handshake it prints `handshake <h hex> remote <remote static hex> version <v>`,
sends "hello from python", then echoes every message back reversed until it receives "bye".
"""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "sdk", "python"))
import lanbridge_wire as w  # noqa: E402


def main():
    role = sys.argv[1]
    if role == "connect":
        port, static = int(sys.argv[2]), bytes.fromhex(sys.argv[3])
        secret = bytes.fromhex(sys.argv[4]) if len(sys.argv) > 4 else None
        sock = socket.create_connection(("127.0.0.1", port), timeout=300)
        session = w.connect(sock, static, invite_secret=secret)
    else:
        static = bytes.fromhex(sys.argv[2])
        secret = bytes.fromhex(sys.argv[3]) if len(sys.argv) > 3 else None
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        print("listening %d" % listener.getsockname()[1], flush=True)
        sock, _ = listener.accept()
        sock.settimeout(300)  # interop, not speed: a loaded machine may be slow
        session = w.accept(sock, static, invites={w.invite_id(secret): w.invite_psk(secret)} if secret else None)
    print("handshake %s remote %s version %d" % (session.handshake_hash.hex(), session.remote_static.hex(), session.version), flush=True)
    session.send(b"hello from python")
    while True:
        message = session.recv()
        session.send(message[::-1])
        if message == b"bye":
            break
    print("done", flush=True)


if __name__ == "__main__":
    main()
