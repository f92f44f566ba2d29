"""Group commit: a write is acknowledged only once it is on stable storage, and one fsync of the
write-ahead log covers every write committed before it.

SQLite commits each write into the WAL with ``synchronous=NORMAL``: the frames are written to the
operating system but not flushed. That survives a killed process, not an OS crash or a power loss.
``synchronous=FULL`` flushes the WAL inside every COMMIT, one fsync per write, on the writer's
thread. Here the flush is taken out of the COMMIT and shared: :meth:`GroupCommit.sync` fsyncs the
WAL once for every write committed so far (the leader), while writers that commit during that
fsync queue on the lock and are covered by the next one (as PostgreSQL's ``XLogFlush`` and etcd's
batched WAL sync do). The result on disk is what ``FULL`` gives (the WAL synced after a commit
and before it is reported; checkpoints sync the WAL before and the database after copying, in
both modes), with many writes per fsync. Callers that cannot block long (the event loop) use
:meth:`GroupCommit.try_sync`: the background thread fsyncs while the caller waits for it a little
(without the GIL) and delivers the answers itself, so a stalled disk holds it at most that long;
otherwise they :meth:`GroupCommit.request` the background thread and wait asynchronously.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

INLINE_FSYNC_MAX = 0.005
"""Seconds: :meth:`GroupCommit.try_sync` waits at most this for the sync thread's fsync, and not at
all while the recent fsyncs of the WAL averaged more. Answered by the waiting caller (the event
loop), a write costs no hand-off back: the sync thread would wait for the GIL held by the busy loop
(up to the 5 ms switch interval) before it could deliver, which made always handing off slower
than syncing on the loop (issue 16 in bench/RESULTS.md: 234 against 339 PUTs/s with 20 clients).
Syncing on the loop's thread itself blocked it for as long as the disk took (a shared disk's
stalls of 100-800 ms froze every read and watch)."""
_FSYNC_WEIGHT = 0.25  # of the latest fsync in the running average: a stall counts at once


class SyncFailed(OSError):
    """An fsync failed: writes committed since the last good one may not be durable."""


class GroupCommit:
    """Flushes the WAL of the SQLite database at ``db_path``; see the module docstring.

    ``committed()`` returns the revision of the latest committed write; ``after_sync()`` is called
    (on the syncing thread, outside the lock) after every background sync, to deliver what became
    durable; ``on_failure(err)`` once, when an fsync fails.
    """

    def __init__(
        self,
        db_path: str,
        committed: Callable[[], int],
        after_sync: Callable[[], None],
        on_failure: Callable[[OSError], None],
    ) -> None:
        self._db = db_path
        self._wal = db_path + "-wal"
        self._dir = os.path.dirname(os.path.abspath(db_path))
        self._committed = committed
        self._after_sync = after_sync
        self._on_failure = on_failure
        self._lock = threading.Lock()  # one fsync at a time; later writers queue behind it
        self._synced_changed = threading.Condition()  # notified when `synced` or `failure` is set
        self._fd: int | None = None
        self._ino: int | None = None
        self.failure: OSError | None = None
        # What a previous process left in the page cache (killed before its fsync) becomes durable
        # before anything built on it is acknowledged.
        for path in (self._db, self._wal):
            _fsync_path(path)
        _fsync_path(self._dir)
        self.fsync_seconds = 0.0
        """Running average of the WAL fsync's duration (decides :meth:`try_sync`; learnt from the
        first syncs: a slow disk stalls the loop for one or two fsyncs)."""
        self.synced = committed()
        """Every write up to this revision is on stable storage."""
        self._wanted = threading.Event()
        self._stopping = False
        self._caller_waiting = 0  # the revision a try_sync caller waits for (under _synced_changed)
        self._fsync_since: float | None = None  # when the WAL fsync under way started
        self._thread = threading.Thread(target=self._run, name="pykueue-store-sync", daemon=True)
        self._thread.start()

    def sync(self, revision: int) -> bool:
        """Return once every write up to ``revision`` is durable (fsyncing the WAL if needed).
        True: a :meth:`try_sync` caller waiting for this fsync will deliver what it covered."""
        with self._lock:
            return self._sync_locked(revision)

    def try_sync(self, revision: int, wait: bool = True) -> bool:
        """For a caller that must not block long (the event loop): True once every write up to
        ``revision`` is durable, within :data:`INLINE_FSYNC_MAX`; False: the background thread
        syncs and calls ``after_sync`` (it is asked here). Raises :class:`SyncFailed` as ``sync``.

        The fsync runs on the sync thread while the caller waits for it, without the GIL, at most
        :data:`INLINE_FSYNC_MAX` (not at all if not ``wait``, while fsyncs are slower on average,
        or while one under way has already taken longer: a stall, which the average learns only
        once it ends). A sync under way that started before these writes committed does not cover
        them: the wait then takes in the rest of it and the next one, asked for here.
        An fsync on the caller's thread stalled it for as long as the disk did (up to 828 ms on a
        shared disk; issue 16 in bench/RESULTS.md); a plain hand-off had its answer wait for the
        sync thread to get the GIL back from the busy loop (up to the 5 ms switch interval)."""
        if self.failure is not None:
            raise SyncFailed(f"the store cannot make writes durable: {self.failure}")
        if self.synced >= revision:
            return True
        if self._stopping:  # the sync thread may have had its last round: sync here
            self.sync(revision)
            return True
        since = self._fsync_since
        # (Without the stall's check, every wait during a stall took the whole INLINE_FSYNC_MAX:
        # each mid-turn sync of a long turn, for as long as the disk stalled.)
        stalled = since is not None and time.perf_counter() - since > INLINE_FSYNC_MAX
        if not wait or self.fsync_seconds > INLINE_FSYNC_MAX or stalled:
            self.request()
            return False
        with self._synced_changed:
            # Set and cleared under the condition's lock: a sync that sees it knows this caller
            # will see its result and deliver, and skips its own (redundant) delivery.
            self._caller_waiting = revision
            self.request()
            synced = self._synced_changed.wait_for(
                lambda: self.synced >= revision or self.failure is not None, INLINE_FSYNC_MAX
            )
            self._caller_waiting = 0
        if self.failure is not None:
            raise SyncFailed(f"the store cannot make writes durable: {self.failure}")
        return synced

    def _sync_locked(self, revision: int) -> bool:
        if self.failure is not None:
            raise SyncFailed(f"the store cannot make writes durable: {self.failure}")
        if self.synced >= revision:
            return False
        target = self._committed()  # the commits already in the WAL: all covered by this fsync
        started = self._fsync_since = time.perf_counter()
        try:
            self._fsync_wal()
        except OSError as err:
            # As PostgreSQL after a failed fsync: dirty pages may be gone, nothing later may be
            # acknowledged (a retry could "succeed" without the data).
            with self._synced_changed:
                self.failure = err
                self._synced_changed.notify_all()
            log.critical("fsync of %s failed; refusing further writes: %s", self._wal, err)
            self._on_failure(err)
            raise SyncFailed(f"the store cannot make writes durable: {err}") from err
        finally:
            self._fsync_since = None
        took = time.perf_counter() - started
        self.fsync_seconds += (took - self.fsync_seconds) * _FSYNC_WEIGHT
        with self._synced_changed:
            self.synced = target
            handed = 0 < self._caller_waiting <= target
            self._synced_changed.notify_all()
        return handed

    def syncing(self) -> bool:
        """Whether an fsync is under way."""
        return self._lock.locked()

    def request(self) -> None:
        """Ask the background thread for a sync (for callers that must not block)."""
        self._wanted.set()

    def stop(self) -> None:
        """Sync and deliver what is committed, then end the background thread."""
        self._stopping = True
        self._wanted.set()
        self._thread.join()
        with self._lock:  # not under a synchronous writer's fsync
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            stopping = self._stopping  # read before the round: a stop after it gets another round
            handed = False
            try:
                handed = self.sync(self._committed())
            except OSError:  # recorded in self.failure; waiters told by on_failure
                pass
            except Exception:  # a bug must not end the thread every loop's waiter depends on
                log.exception("syncing the WAL failed")
            try:
                if not handed:  # else the waiting try_sync caller delivers (no extra loop wake-up)
                    self._after_sync()
            except Exception:  # delivery errors are the subscribers'; syncing must go on
                log.exception("delivering synced changes failed")
            if stopping:
                return

    def _fsync_wal(self) -> None:
        try:
            ino = os.stat(self._wal).st_ino
        except FileNotFoundError:  # no WAL (yet): a commit went to the database file
            _fsync_path(self._db)
            return
        if self._fd is None or ino != self._ino:
            # A new WAL file: its directory entry must be durable too (as SQLite's UNIXFILE_DIRSYNC).
            if self._fd is not None:
                os.close(self._fd)
            self._fd = os.open(self._wal, os.O_RDONLY | os.O_CLOEXEC)
            self._ino = os.fstat(self._fd).st_ino
            os.fsync(self._fd)
            _fsync_path(self._dir)
            return
        os.fsync(self._fd)


def _fsync_path(path: str) -> None:
    """fsync a file or directory if it exists."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
