"""Checks over HTTP: a real ``pykueue serve --no-controllers`` and clients of it.

* the SDK and the built-in ProvisioningRequest controller + local provisioner running in the test
  process on an :class:`~pykueue.client.http.HTTPClient`;
* the example check (``examples/checks/business_hours.py``) running as its own process.

Kueue's scheduler and workload controller are played by the test through the HTTP client.
"""

from __future__ import annotations

import importlib.util
import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from pykueue.checks import AdmissionCheckController, CheckResult
from pykueue.checks import states as st
from pykueue.checks import testing as t
from pykueue.client import resources as r
from pykueue.client.http import HTTPClient
from pykueue.controllers.admissionchecks.provisioning import CONTROLLER_NAME, ProvisioningRequestController
from pykueue.controllers.provisioner import LocalProvisioner
from pykueue.runtime.clock import system_clock

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "checks" / "business_hours.py"
NS = "default"


def _load_e2e() -> ModuleType:
    # Same module name as tests/client/conftest.py uses, so the file is loaded once.
    name = "pykueue_e2e_conftest"
    if name in sys.modules:
        return sys.modules[name]
    path = ROOT / "tests" / "apiserver" / "e2e" / "conftest.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


start_server: Callable[..., Any] = _load_e2e().start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    srv = start_server(tmp_path_factory.mktemp("serve"), ("--no-controllers",))
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Any) -> Iterator[HTTPClient]:
    c = HTTPClient.from_kubeconfig(server.kubeconfig)
    yield c
    c.close()


def _state(client: HTTPClient, wl: str, check: str, want: str) -> dict[str, Any] | None:
    entry = st.find_check(client.get(r.WORKLOADS, wl, NS), check)
    return entry if entry is not None and entry["state"] == want else None


def _active(client: HTTPClient, check: str) -> dict[str, Any] | None:
    return st.find_condition(client.get(r.ADMISSION_CHECKS, check), st.ACTIVE)


def test_sdk_over_http(client: HTTPClient) -> None:
    client.create(r.ADMISSION_CHECKS, t.admission_check("http-toy", "example.com/http-toy"))
    ctl = AdmissionCheckController(
        client,
        "example.com/http-toy",
        lambda req: CheckResult.ready(f"{req.workload.spec.pod_sets[0].count} pods ok"),
        poll_interval=0.05,
    )
    ctl.start()
    try:
        assert ctl.wait_synced(10)
        t.wait_for(lambda: (_active(client, "http-toy") or {}).get("status") == "True")
        client.create(r.WORKLOADS, t.workload("http-toy-wl", NS, [t.pod_set(count=3, requests={"cpu": "1"})]))
        t.reserve_quota(client, NS, "http-toy-wl", ["http-toy"], system_clock())
        entry = t.wait_for(lambda: _state(client, "http-toy-wl", "http-toy", "Ready"))
        assert entry["message"] == "3 pods ok"
    finally:
        ctl.stop()


def test_provisioning_controller_and_provisioner_over_http(client: HTTPClient, tmp_path: Path) -> None:
    clock = t.FakeClock(datetime.now(UTC).replace(microsecond=0))
    cls = "http.local.example.com"
    client.create(
        r.RESOURCE_FLAVORS,
        {
            "apiVersion": t.KUEUE_API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": {"name": "default"},
            "spec": {},
        },
    )
    client.create(
        r.PROVISIONING_REQUEST_CONFIGS,
        {
            "apiVersion": t.KUEUE_API_VERSION,
            "kind": "ProvisioningRequestConfig",
            "metadata": {"name": "http-cfg"},
            "spec": {"provisioningClassName": cls},
        },
    )
    client.create(
        r.ADMISSION_CHECKS,
        t.admission_check(
            "http-prov",
            CONTROLLER_NAME,
            {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "http-cfg"},
        ),
    )
    capacity = tmp_path / "capacity.yaml"
    capacity.write_text(yaml.safe_dump({"classes": {cls: {"delaySeconds": 20, "capacity": {"cpu": "4"}}}}))
    ctl = ProvisioningRequestController(client, clock, poll_interval=0.05)
    prov = LocalProvisioner(client, capacity, clock, poll_interval=0.05)
    ctl.start()
    prov.start()
    try:
        assert ctl.wait_synced(10) and prov.wait_synced(10)
        t.wait_for(lambda: (_active(client, "http-prov") or {}).get("status") == "True")
        client.create(
            r.WORKLOADS, t.workload("http-prov-wl", NS, [t.pod_set(count=2, requests={"cpu": "1"})])
        )
        t.reserve_quota(client, NS, "http-prov-wl", ["http-prov"], clock())
        eta = t.wait_for(
            lambda: (lambda e: e if e and e["message"].startswith("Provisioning; ETA") else None)(
                st.find_check(client.get(r.WORKLOADS, "http-prov-wl", NS), "http-prov")
            )
        )
        assert eta["state"] == "Pending"
        clock.advance(20)
        entry = t.wait_for(lambda: _state(client, "http-prov-wl", "http-prov", "Ready"))
        annotations = entry["podSetUpdates"][0]["annotations"]
        assert annotations["autoscaling.x-k8s.io/consume-provisioning-request"] == "http-prov-wl-http-prov-1"
    finally:
        prov.stop()
        ctl.stop()


# --- the example check as its own process -----------------------------------------------------------


class ExampleProcess:
    def __init__(self, kubeconfig: Path, offset_file: Path, *args: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        cmd = [
            sys.executable, str(EXAMPLE), "--kubeconfig", str(kubeconfig),
            "--time-offset-file", str(offset_file), *args,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        self.output: list[str] = []
        self.ready = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            if "running" in line:
                self.ready.set()
        self.ready.set()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def test_business_hours_example_as_a_process(server: Any, client: HTTPClient, tmp_path: Path) -> None:
    now = datetime.now(UTC)
    open_h = (now.hour + 2) % 24
    close = "24:00" if open_h == 23 else f"{open_h + 1:02d}:00"
    offset_file = tmp_path / "offset"
    name = "example.com/business-hours-e2e"
    proc = ExampleProcess(
        server.kubeconfig, offset_file, "--controller-name", name, "--open", f"{open_h:02d}:00", "--close", close,
        "--days", "all",
    )  # fmt: skip
    try:
        assert proc.ready.wait(30), "".join(proc.output)
        assert proc.proc.poll() is None, "".join(proc.output)
        client.create(r.ADMISSION_CHECKS, t.admission_check("bh", name))
        client.create(
            r.ADMISSION_CHECKS,
            t.admission_check("bh-params", name, {"apiGroup": "example.com", "kind": "Config", "name": "x"}),
        )
        active = t.wait_for(lambda: _active(client, "bh"), timeout=20)
        assert (active["status"], active["reason"]) == ("True", "Active")
        bad = t.wait_for(lambda: _active(client, "bh-params"), timeout=20)
        assert (bad["status"], bad["reason"], bad["message"]) == (
            "False",
            "BadParametersRef",
            "the business-hours check takes no parameters",
        )

        # Outside the window: Retry until it opens.
        client.create(r.WORKLOADS, t.workload("bh-wl", NS))
        t.reserve_quota(client, NS, "bh-wl", ["bh"], now)
        retry = t.wait_for(lambda: _state(client, "bh-wl", "bh", "Retry"), timeout=20)
        opens = datetime.combine(now.date(), datetime.min.time(), tzinfo=UTC) + timedelta(hours=open_h)
        if opens <= now:
            opens += timedelta(days=1)
        expected = math.ceil((opens - now).total_seconds())
        assert expected - 60 <= retry["requeueAfterSeconds"] <= expected
        assert retry["message"].startswith("Outside business hours (mon,tue,wed,thu,fri,sat,sun ")

        # Move the example's clock into the window; Kueue (played here) evicts, requeues and
        # reserves quota again; now the check passes.
        offset_file.write_text(str((opens - now).total_seconds() + 60))
        clock_now = now + timedelta(seconds=(opens - now).total_seconds() + 60)
        t.evict(client, NS, "bh-wl", clock_now)
        t.release_quota(client, NS, "bh-wl", clock_now)
        t.reserve_quota(client, NS, "bh-wl", ["bh"], clock_now)
        ready = t.wait_for(lambda: _state(client, "bh-wl", "bh", "Ready"), timeout=20)
        assert ready["message"].startswith("Within business hours")
        # The example records its Event after the status write that the wait above saw.
        t.wait_for(
            lambda: any(
                e.get("reason") == "AdmissionCheckUpdated"
                and "bh updated state from Pending to Ready" in str(e.get("message"))
                for e in client.list(r.EVENTS, NS)[0]
            ),
            timeout=20,
        )
    finally:
        code = proc.stop()
    assert code == 0, "".join(proc.output)


def _example_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("business_hours_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_business_hours_window() -> None:
    ex = _example_module()
    assert ex.parse_days("mon-fri") == frozenset(range(5))
    assert ex.parse_days("sat,sun") == frozenset({5, 6})
    assert ex.parse_days("fri-mon") == frozenset({4, 5, 6, 0})
    window = ex.Window(
        ex.parse_clock_time("09:00"), ex.parse_clock_time("17:00"), ex.parse_days("mon-fri"), UTC
    )
    friday_evening = datetime(2025, 1, 3, 18, 0, tzinfo=UTC)  # a Friday
    assert not window.is_open(friday_evening)
    assert window.next_open(friday_evening) == datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    assert window.is_open(datetime(2025, 1, 6, 9, 0, tzinfo=UTC))
    assert not window.is_open(datetime(2025, 1, 6, 17, 0, tzinfo=UTC))
    assert window.describe() == "mon,tue,wed,thu,fri 09:00-17:00 UTC"
