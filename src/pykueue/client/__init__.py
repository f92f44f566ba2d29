"""One API client interface for the controllers: in-process (embedded) and HTTP (real clusters)."""

from pykueue.client.interface import (
    AlreadyExists,
    APIError,
    Client,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Resource,
    Watch,
    WatchEvent,
)

__all__ = [
    "APIError",
    "AlreadyExists",
    "Client",
    "Conflict",
    "Gone",
    "Invalid",
    "NotFound",
    "Resource",
    "Watch",
    "WatchEvent",
]
