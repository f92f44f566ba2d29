"""An example admission check: admit Workloads only during business hours.

Run it as its own process against any Kubernetes API server running Kueue (or ``pykueue serve``)::

    python examples/checks/business_hours.py --kubeconfig ~/.kube/config \\
        --open 09:00 --close 17:00 --days mon-fri --utc-offset 1

then point an AdmissionCheck at it and list the check in a ClusterQueue::

    apiVersion: kueue.x-k8s.io/v1beta2
    kind: AdmissionCheck
    metadata: {name: business-hours}
    spec: {controllerName: example.com/business-hours}

Inside the window the check is ``Ready``. Outside it is ``Retry`` with ``requeueAfterSeconds``
set to the time until the next window opens, so Kueue releases the quota and requeues the
Workload for then. The check takes no parameters: an AdmissionCheck that sets
``spec.parameters`` is marked inactive.

Everything else — watching, the AdmissionCheck ``Active`` condition, writing check states with
Kueue's semantics, conflicts, events — is done by :class:`pykueue.checks.AdmissionCheckController`.
"""

from __future__ import annotations

import argparse
import logging
import math
import signal
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, timezone
from pathlib import Path

from pykueue.api.kueue import AdmissionCheck
from pykueue.checks import AdmissionCheckController, CheckFunction, CheckRequest, CheckResult
from pykueue.runtime.clock import clock_from

DEFAULT_CONTROLLER_NAME = "example.com/business-hours"
DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class Window:
    """Opening hours: ``[open, close)`` local time on ``days`` (0 = Monday)."""

    open: time
    close: time | None  # None: until midnight
    days: frozenset[int]
    tz: timezone

    def describe(self) -> str:
        """E.g. ``mon,tue,wed,thu,fri 09:00-17:00 UTC+01:00``."""
        days = ",".join(DAY_NAMES[d] for d in sorted(self.days))
        close = self.close.strftime("%H:%M") if self.close is not None else "24:00"
        return f"{days} {self.open.strftime('%H:%M')}-{close} {self.tz.tzname(None)}"

    def is_open(self, now: datetime) -> bool:
        """Whether ``now`` falls inside the window."""
        local = now.astimezone(self.tz)
        if local.weekday() not in self.days:
            return False
        t = local.time().replace(tzinfo=None)
        return self.open <= t and (self.close is None or t < self.close)

    def next_open(self, now: datetime) -> datetime:
        """The next time the window opens after ``now``."""
        local = now.astimezone(self.tz)
        for offset in range(8):
            day = local.date() + timedelta(days=offset)
            start = datetime.combine(day, self.open, tzinfo=self.tz)
            if start > local and day.weekday() in self.days:
                return start
        raise ValueError("the window never opens")  # no days configured


def parse_days(text: str) -> frozenset[int]:
    """``mon-fri``, ``sat,sun``, ``all``."""
    if text == "all":
        return frozenset(range(7))
    days: set[int] = set()
    for part in text.lower().split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            i, j = DAY_NAMES.index(a), DAY_NAMES.index(b)
            days.update(range(i, j + 1) if i <= j else [*range(i, 7), *range(0, j + 1)])
        else:
            days.add(DAY_NAMES.index(part))
    return frozenset(days)


def parse_clock_time(text: str) -> time | None:
    """``HH:MM``; ``24:00`` is None (end of day)."""
    if text == "24:00":
        return None
    return time.fromisoformat(text)


def make_check(window: Window) -> CheckFunction:
    """The decision function for ``window``."""

    def check(req: CheckRequest) -> CheckResult:
        if window.is_open(req.now):
            return CheckResult.ready(f"Within business hours ({window.describe()})")
        opens = window.next_open(req.now)
        wait = math.ceil((opens - req.now).total_seconds())
        return CheckResult.retry(
            f"Outside business hours ({window.describe()}); the next window opens at "
            f"{opens.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}",
            requeue_after_seconds=wait,
        )

    return check


def validate_parameters(ac: AdmissionCheck) -> str | None:
    """This check takes no parameters."""
    if ac.spec.parameters is not None:
        return "the business-hours check takes no parameters"
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the check until SIGINT/SIGTERM."""
    p = argparse.ArgumentParser(description="Admit Kueue Workloads only during business hours.")
    p.add_argument("--kubeconfig", type=Path, help="kubeconfig of the cluster (default: $KUBECONFIG)")
    p.add_argument("--context", help="kubeconfig context")
    p.add_argument("--controller-name", default=DEFAULT_CONTROLLER_NAME)
    p.add_argument("--open", default="09:00", help="opening time HH:MM (default 09:00)")
    p.add_argument("--close", default="17:00", help="closing time HH:MM, 24:00 for midnight (default 17:00)")
    p.add_argument("--days", default="mon-fri", help="days, e.g. mon-fri, sat,sun, all (default mon-fri)")
    p.add_argument("--utc-offset", type=float, default=0.0, help="the window's time zone as hours from UTC")
    p.add_argument("--time-offset-file", type=Path, help="testing: clock = wall time + seconds in this file")
    p.add_argument("--log-level", default="warning")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )

    window = Window(
        open=parse_clock_time(args.open) or time(0, 0),
        close=parse_clock_time(args.close),
        days=parse_days(args.days),
        tz=timezone(timedelta(hours=args.utc_offset)),
    )
    # Imported here so the module can be read (and its decision tested) without an HTTP stack.
    from pykueue.client.http import HTTPClient

    client = HTTPClient.from_kubeconfig(args.kubeconfig, args.context)
    controller = AdmissionCheckController(
        client,
        args.controller_name,
        make_check(window),
        clock=clock_from(args.time_offset_file),
        validate_parameters=validate_parameters,
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    controller.start()
    try:
        if not controller.wait_synced(30):
            print("error: could not list AdmissionChecks and Workloads", file=sys.stderr, flush=True)
            return 1
        print(f"business-hours check {args.controller_name} running ({window.describe()})", flush=True)
        stop.wait()
    finally:
        controller.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
