"""Recording ``events.k8s.io/v1`` Events through the :class:`~pykueue.client.interface.Client`.

Kueue records with the ``events.k8s.io/v1`` recorder (API reference §0.3): each event has
``type``, ``reason``, ``action`` and ``note`` and names the object it is about in ``regarding``.
Recording is best effort, as in client-go: a failed write is logged and dropped, never raised
into the reconcile that emitted it.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
from collections.abc import Mapping
from typing import Any

from pykueue.api.meta import truncate_message
from pykueue.checks.states import EVENT_NOTE_LIMIT, metadata
from pykueue.client.interface import AlreadyExists, APIError, Client, Resource
from pykueue.controllers.clock import Clock, system_clock

log = logging.getLogger(__name__)

EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event", True)
NORMAL = "Normal"
WARNING = "Warning"

_NAME_LIMIT = 253
_SUFFIX_LEN = 17  # "." + 16 hex digits of the nanosecond timestamp


class EventRecorder:
    """Creates Events about objects, stamped with ``reportingController`` = ``controller``."""

    def __init__(self, client: Client, controller: str, clock: Clock = system_clock) -> None:
        self.client = client
        self.controller = controller
        self.clock = clock
        self.instance = f"{controller}-{socket.gethostname()}-{os.getpid()}"[:128]
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def event(
        self, obj: Mapping[str, Any], type_: str, reason: str, note: str, action: str | None = None
    ) -> None:
        """Record one event about ``obj`` (``action`` defaults to ``reason``)."""
        meta = metadata(obj)
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "") or "default"
        now = self.clock()
        with self._lock:
            seq = next(self._seq)
        # client-go names events "<object>.<unix nanos in hex>"; the sequence number keeps names
        # unique when an injected clock stands still.
        nanos = int(now.timestamp() * 1_000_000_000) + seq
        event_name = f"{name[: _NAME_LIMIT - _SUFFIX_LEN]}.{nanos:x}"
        regarding: dict[str, Any] = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": name,
        }
        if meta.get("namespace"):
            regarding["namespace"] = meta["namespace"]
        for key in ("uid", "resourceVersion"):
            if meta.get(key):
                regarding[key] = meta[key]
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": namespace},
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action or reason,
            "reason": reason,
            "regarding": regarding,
            "note": truncate_message(note, EVENT_NOTE_LIMIT),
            "type": type_,
        }
        try:
            self.client.create(EVENTS_V1, body)
        except AlreadyExists:
            log.debug("event %s already recorded", event_name)
        except APIError as err:
            log.warning("recording event %s %s on %s/%s failed: %s", type_, reason, namespace, name, err)
        except Exception:  # a transport failure must not break the reconcile that emitted it
            log.exception("recording event %s on %s/%s failed", reason, namespace, name)
