"""Independent OpenClaw device signing for OpenClawSignatureInteropTests.

  sign-v2 SEED_HEX NONCE TOKEN SIGNED_AT_MS   bamboo-claw's build_and_sign_device_payload (an OpenClaw
                                              operator client), printed as JSON
  verify PUBLIC_KEY_B64URL PAYLOAD SIG_B64URL  PyNaCl's Ed25519 verification: prints ok or bad
"""
import base64
import hashlib
import json
import sys
from unittest import mock

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey
from bamboo_claw_client import device_identity


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


if sys.argv[1] == "sign-v2":
    seed, nonce, token, signed_at = bytes.fromhex(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
    public = SigningKey(seed).verify_key.encode()
    identity = device_identity.DeviceIdentity(device_id=hashlib.sha256(public).hexdigest(), public_key=public, private_key=seed)
    with mock.patch.object(device_identity.time, "time", return_value=signed_at / 1000):
        device = device_identity.build_and_sign_device_payload(
            identity, nonce=nonce, token=token, client_id="node-host", client_mode="node", role="node", scopes=[])
    print(json.dumps(device))
elif sys.argv[1] == "verify":
    try:
        VerifyKey(b64url_decode(sys.argv[2])).verify(sys.argv[3].encode(), b64url_decode(sys.argv[4]))
        print("ok")
    except BadSignatureError:
        print("bad")
