"""``pykueue.store``: a Kubernetes-compatible persistent object store on SQLite.

Objects are plain JSON dicts in their storage version; the store owns identity (uid, names,
generateName), one global revision used as every ``metadata.resourceVersion``, generation and
status-subresource rules, finalizers and deletion, ownerReference garbage collection, label
selectors, consistent pagination and watches (replay from a revision, then live).

Only the standard library (and msgspec for JSON) is used. See ``docs/design/control-plane.md`` §1.
"""

from .errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Expired,
    FieldError,
    InternalError,
    Invalid,
    NotFound,
    StoreError,
    TooLargeResourceVersion,
)
from .listing import decode_continue, encode_continue
from .store import Store
from .tx import FOREGROUND, ORPHAN
from .types import ResourceKey, WatchEvent
from .watch import Watch

__all__ = [
    "FOREGROUND",
    "ORPHAN",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Expired",
    "FieldError",
    "InternalError",
    "Invalid",
    "NotFound",
    "ResourceKey",
    "Store",
    "StoreError",
    "TooLargeResourceVersion",
    "Watch",
    "WatchEvent",
    "decode_continue",
    "encode_continue",
]
