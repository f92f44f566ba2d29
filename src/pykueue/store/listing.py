"""Continue tokens, in the apiserver's format.

A token is ``base64url({"v":"meta.k8s.io/v1","rv":<list revision>,"start":"<last key>\\u0000"})``
without padding (``storage.EncodeContinue``); ``rv: -1`` means "continue from the latest state"
(the token an Expired error offers for finishing an inconsistent list).
"""

from __future__ import annotations

import base64
import binascii
import json

from .errors import BadRequest

TOKEN_VERSION = "meta.k8s.io/v1"


def encode_continue(revision: int, last_key: str) -> str:
    """A continue token resuming after ``last_key`` at ``revision``."""
    payload = json.dumps(
        {"v": TOKEN_VERSION, "rv": revision, "start": last_key + "\x00"}, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def _invalid(detail: str) -> BadRequest:
    return BadRequest(f"invalid continue token: continue key is not valid: {detail}")


def decode_continue(token: str) -> tuple[int, str]:
    """(revision, key to resume after) of a token; BadRequest when it is malformed."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError) as err:
        raise _invalid(str(err)) from None
    if not isinstance(data, dict) or data.get("v") != TOKEN_VERSION:
        raise _invalid("server does not recognize this encoded version")
    revision, start = data.get("rv"), data.get("start")
    if not isinstance(revision, int) or isinstance(revision, bool) or revision == 0:
        raise _invalid(f"incorrect encoded start resourceVersion (version {TOKEN_VERSION})")
    if not isinstance(start, str) or not start:
        raise _invalid("encoded start key empty")
    if ".." in start.split("/"):
        raise _invalid("path traversal attempt detected")
    return revision, start[:-1] if start.endswith("\x00") else start
