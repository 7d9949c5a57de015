#!/usr/bin/env python3
"""SessionKeeper step plugin: sign the next request with an HMAC over its method, path and a timestamp.

Many APIs authenticate a call by a keyed hash of what is being asked and when (AWS-style request
signing, webhook-style signatures): the server recomputes the HMAC with the shared key and refuses a
wrong or stale one. This plugin computes

    HMAC-SHA256(key, METHOD + "\\n" + PATH + "\\n" + TIMESTAMP)    (lower-case hex)

and returns it, with the timestamp (Unix seconds), as headers that the following requests of the flow
carry (docs/PLUGINS.md). The demo site's `GET /api/signed` checks exactly this.

with:
  key:              the shared secret (a template: "{{ credentials.signing_key }}"); required
  method:           the method being signed (default GET)
  path:             the path being signed, e.g. /api/signed (required; a query is not signed)
  algorithm:        sha256 (default), sha384, sha512 or sha1
  key_encoding:     text (default: the key's UTF-8 bytes), hex or base64
  timestamp_header: default X-Signature-Timestamp
  signature_header: default X-Signature

answer: {"headers": {TIMESTAMP_HEADER: "1764000000", SIGNATURE_HEADER: "hex..."}, "vars": {"signed_at": ...}}
"""
import base64
import binascii
import hashlib
import hmac
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ written into the plugins folder
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "lib"))
import sessionkeeper_plugin as sk  # noqa: E402

ALGORITHMS = {"sha1": hashlib.sha1, "sha256": hashlib.sha256, "sha384": hashlib.sha384, "sha512": hashlib.sha512}
PUBLIC_OPTIONS = ("method", "path", "algorithm", "key_encoding", "timestamp_header", "signature_header")


def string_to_sign(method, path, timestamp):
    """What the signature covers: the method, the path without its query, the timestamp."""
    return f"{method.upper()}\n{path}\n{timestamp}"


def decode_key(key, encoding):
    if encoding == "text":
        return key.encode("utf-8")
    try:
        if encoding == "hex":
            return bytes.fromhex(key)
        if encoding == "base64":
            return base64.b64decode(key, validate=True)
    except (ValueError, binascii.Error):
        sk.fail(f"with.key is not valid {encoding}")
    sk.fail("with.key_encoding must be text, hex or base64")


def main(request):
    key = request.option("key", required=True, kind=str)
    method = request.option("method", "GET", kind=str)
    path = request.option("path", required=True, kind=str).split("?", 1)[0]
    if not path.startswith("/"):
        sk.fail("with.path must start with / (the path of the request being signed)")
    algorithm = request.option("algorithm", "sha256", kind=str).lower()
    if algorithm not in ALGORITHMS:
        sk.fail("with.algorithm must be one of " + ", ".join(sorted(ALGORITHMS)))
    secret = decode_key(key, request.option("key_encoding", "text", kind=str))
    if not secret:
        sk.fail("with.key is empty")
    timestamp = str(int(time.time()))
    signature = hmac.new(secret, string_to_sign(method, path, timestamp).encode("utf-8"), ALGORITHMS[algorithm]).hexdigest()
    request.add_secret(signature)
    request.log(f"signed {method.upper()} {path} at {timestamp} with HMAC-{algorithm.upper()}")
    return sk.answer(
        headers={
            request.option("timestamp_header", "X-Signature-Timestamp", kind=str): timestamp,
            request.option("signature_header", "X-Signature", kind=str): signature,
        },
        vars={"signed_at": timestamp},
    )


if __name__ == "__main__":
    sk.run(main, public_options=PUBLIC_OPTIONS)
