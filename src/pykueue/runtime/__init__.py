"""``pykueue.runtime``: the generic controller machinery, with no Kueue knowledge.

:mod:`~pykueue.runtime.informer` (list + watch into a cache), :mod:`~pykueue.runtime.clock`
(injected time), :mod:`~pykueue.runtime.controller` (the one work queue with per-key retry and
backoff, and the worker that drives reconcilers from it) and :mod:`~pykueue.runtime.recorder` (the
one event recorder). It imports only :mod:`pykueue.client.interface` and :mod:`pykueue.api.meta`.
"""
