#!/usr/bin/python3
"""Tokens for the serve tests, made with PyJWT (Debian's python3-jwt), an independent JWT library.

Usage: jwt_tokens.py PRIVATE_PEM PUBLIC_PEM OTHER_PRIVATE_PEM ALG USER
Prints one line per case, "NAME TOKEN": good, expired, nbf-future, other-key, alg-none, hs256-public-key,
changed-payload, no-sub, edge, garbled-header; the time claims at their edges (docs/protocol.md §2), each
validly signed: exp-int64-max, exp-1e300, exp-negative, nbf-int64-max, iat-next-year, iat-string (refused),
and good-fractions, iat-within-leeway (taken).
"""
import base64
import hashlib
import hmac
import json
import sys
import time

import jwt

private_pem, public_pem, other_pem, alg, user = sys.argv[1:6]
private = open(private_pem, "rb").read()
public = open(public_pem, "rb").read()
other = open(other_pem, "rb").read()
now = int(time.time())


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(claims, key=private, algorithm=alg, headers=None):
    return jwt.encode(claims, key, algorithm=algorithm, headers=headers)


base = {"sub": user, "iat": now, "exp": now + 600}
cases = {
    "good": sign(base),
    "expired": sign({"sub": user, "iat": now - 7200, "exp": now - 3600}),
    "nbf-future": sign(dict(base, nbf=now + 3600)),
    "other-key": sign(base, key=other),
    "no-sub": sign({"iat": now, "exp": now + 600}),
    "no-exp": sign({"sub": user, "iat": now}),
    "edge": sign(dict(base, scope="sync edge")),
}
# alg none: an unsigned token (RFC 7519 §6), built by hand as PyJWT refuses to make one with a key.
header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
payload = b64(json.dumps(base).encode())
cases["alg-none"] = header + "." + payload + "."
# HS256 signed with the public key's PEM bytes as the HMAC secret (the RS/HS confusion attack).
header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
signing_input = (header + "." + payload).encode()
cases["hs256-public-key"] = header + "." + payload + "." + b64(hmac.new(public, signing_input, hashlib.sha256).digest())
# One byte of the payload changed after signing (the user: ann -> bnn).
good = cases["good"].split(".")
claims = json.loads(base64.urlsafe_b64decode(good[1] + "=" * (-len(good[1]) % 4)))
claims["sub"] = "b" + user[1:]
cases["changed-payload"] = good[0] + "." + b64(json.dumps(claims, separators=(",", ":")).encode()) + "." + good[2]
cases["garbled-header"] = "!!" + good[0][2:] + "." + good[1] + "." + good[2]
# The time claims at their edges, each validly signed (PyJWT checks no claim when it encodes).
year = 365 * 86400
cases["exp-int64-max"] = sign({"sub": user, "iat": now, "exp": 9223372036854775807})
cases["exp-1e300"] = sign({"sub": user, "iat": now, "exp": 1e300})
cases["exp-negative"] = sign({"sub": user, "exp": -1})
cases["nbf-int64-max"] = sign(dict(base, nbf=9223372036854775000))
cases["iat-next-year"] = sign({"sub": user, "iat": now + year, "exp": now + year + 600})
cases["iat-string"] = sign({"sub": user, "iat": str(now), "exp": now + 600})
cases["good-fractions"] = sign({"sub": user, "iat": now + 0.25, "nbf": now - 0.5, "exp": now + 600.75})
cases["iat-within-leeway"] = sign({"sub": user, "iat": now + 30, "exp": now + 600})
for name, token in cases.items():
    print(name, token)
