"""cProfile of the controller process's threads, for ``bench/cp_cpu_split.py`` runs.

    CTL_CPROFILE=DIR python bench/cp_cpu_split.py --config bench/large-scale-20.yaml \
        --src bench/ctl_cprofile:SRC ...

On ``PYTHONPATH`` this module is imported by every Python process of the run; only the
``pykueue controller`` process (serve's child) profiles: the manager thread
(``ControllerManager._run``), the write loop's thread (``EventLoopThread._run``) and the informer
threads (``Informer._run``), one ``cProfile`` each, dumped to ``DIR/<thread>-<pid>.prof`` when
the thread ends (``pykueue controller`` stops its threads on SIGTERM). Read
with ``python -m pstats`` (call counts are the deterministic part; times carry cProfile's
overhead).
"""

from __future__ import annotations

import cProfile
import os
import sys
import threading

_DIR = os.environ.get("CTL_CPROFILE")


def _wrap(cls: type, method: str, label: str) -> None:
    original = getattr(cls, method)

    def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        prof = cProfile.Profile()
        name = f"{label}-{threading.current_thread().name}-{os.getpid()}-{threading.get_ident()}"
        path = os.path.join(_DIR or ".", f"{name}.prof")
        prof.enable()
        try:
            return original(*args, **kwargs) if static else original(self, *args, **kwargs)
        finally:
            prof.disable()
            prof.dump_stats(path)

    static = isinstance(cls.__dict__[method], staticmethod)
    if static:
        setattr(cls, method, staticmethod(lambda *a, **k: run(None, *a, **k)))
    else:
        setattr(cls, method, run)


if _DIR and "controller" in sys.argv:
    os.makedirs(_DIR, exist_ok=True)
    from pykueue.client.aio import EventLoopThread
    from pykueue.controllers.manager import ControllerManager
    from pykueue.runtime.informer import Informer

    _wrap(ControllerManager, "_run", "manager")
    _wrap(Informer, "_run", "informer")
    _wrap(EventLoopThread, "_run", "io")
