"""The dashboard in a real browser: headless Chromium (Debian's, installed with apt-get when
missing) driven by Selenium against ``pykueue serve`` with Kueue's controllers.

The page loads with the read-only token in the URL fragment (then stripped), shows a
ClusterQueue created with kubectl, shows a Job's Workload pending with the position the
visibility API gives and the QuotaReserved reason, and moves it to admitted when quota grows —
all without a reload (a marker set in the page survives). Screenshots are saved under the test's
tmp dir and, when ``PYKUEUE_ARTIFACTS`` is set, there too.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import ensure_chromium, new_driver, spki_pin, start_dashboard, support

from pykueue.apiserver.server import SERVING_CERT

TIMEOUT = 30.0

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: dash-cq}
spec:
  cohortName: dash-cohort
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: memory, nominalQuota: 4Gi}
"""

GROW = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: dash-cq}
spec:
  cohortName: dash-cohort
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 2}
      - {name: memory, nominalQuota: 4Gi}
"""


@pytest.fixture(scope="module")
def chromium() -> None:
    reason = ensure_chromium()
    if reason is not None:
        print(f"SKIP dashboard browser tests: {reason}", file=sys.stderr)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # No job runner: admitted Jobs stay admitted (nothing finishes under the test's feet).
    k = support.start_kueue(tmp_path_factory.mktemp("kueue"), "embedded", ["--no-job-runner"])
    yield k
    k.stop()


@pytest.fixture
def driver(chromium: None, kueue: Any, tmp_path: Path) -> Iterator[Any]:
    pin = spki_pin((kueue.server.data_dir / SERVING_CERT).read_bytes())
    d = new_driver(tmp_path / "profile", [f"--ignore-certificate-errors-spki-list={pin}"])
    yield d
    d.quit()


def save_artifact(driver: Any, tmp_path: Path, name: str) -> Path:
    """A full-page screenshot under tmp_path (and ``$PYKUEUE_ARTIFACTS``)."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1500, max(1000, min(int(height) + 40, 4000)))
    path = tmp_path / name
    assert driver.save_screenshot(str(path)), "screenshot failed"
    artifacts = os.environ.get("PYKUEUE_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(artifacts) / name)
    return path


def wait(driver: Any, predicate: Callable[[Any], Any], what: str, timeout: float = TIMEOUT) -> Any:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(predicate)
    except TimeoutException:
        body = driver.execute_script("return document.body.innerText")
        state = driver.execute_script(
            "return typeof S === 'undefined' ? '' : JSON.stringify({live: S.informers.map((i) => [i.name, i.state, i.rv]), error: S.error})"
        )
        raise AssertionError(f"timed out waiting for {what} ({state}); the page shows:\n{body}") from None


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def text_of(driver: Any, selector: str) -> str:
    """The text of the first match, read in one step (the page redraws as events arrive)."""
    text = driver.execute_script(
        "const el = document.querySelector(arguments[0]); return el ? el.innerText : ''", selector
    )
    return str(text)


def click(driver: Any, selector: str) -> None:
    driver.execute_script("document.querySelector(arguments[0]).click()", selector)


def severe_console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_live_dashboard(driver: Any, kueue: Any, tmp_path: Path) -> None:
    server = kueue.server
    ui = server.url + "/ui/"

    # A wrong token: the sign-in form says so (no stack trace, no data).
    driver.get(ui + "#token=not-the-token")
    wait(driver, lambda d: css(d, "form.login"), "the sign-in form")
    assert "401" in text_of(driver, "form.login")
    # Pasting the read-only token signs in.
    css(driver, "#token")[0].send_keys(server.readonly_token)
    click(driver, "form.login button")
    wait(driver, lambda d: "No ClusterQueues yet" in d.execute_script("return document.body.innerText"), "the empty overview")
    driver.get("about:blank")
    driver.get_log("browser")  # drains the wrong token's expected 401

    # The fragment token: taken, kept in this tab only, and removed from the address.
    driver.get(ui + "#token=" + server.readonly_token)
    wait(driver, lambda d: text_of(d, "#conn") == "live", "the watches to open")
    assert "token" not in driver.current_url
    assert driver.execute_script("return sessionStorage.getItem('pykueue.dashboard.token')") == server.readonly_token
    driver.execute_script("window.__noReload = 'still here'")

    kueue.apply(SETUP)
    wait(driver, lambda d: css(d, '[data-cq="dash-cq"]'), "the ClusterQueue card")
    assert "dash-cq" in text_of(driver, '[data-cq="dash-cq"]')
    assert "dash-cohort" in text_of(driver, ".cohort-head")

    kueue.apply(support.local_queue("dash-lq", "dash-cq"))
    kueue.apply(support.job("dash-a", "dash-lq", command="sleep 600", cpu="1"))
    wl_a = support.wait_for(lambda: kueue.workload_of("dash-a"), what="workload of dash-a")["metadata"]["name"]
    wait(driver, lambda d: "Admitted" in text_of(d, f'#workloads [data-workload="default/{wl_a}"]'), "dash-a admitted")

    kueue.apply(support.job("dash-b", "dash-lq", command="sleep 600", cpu="1"))
    kueue.apply(support.job("dash-c", "dash-lq", command="sleep 600", cpu="1"))
    wl_b = support.wait_for(lambda: kueue.workload_of("dash-b"), what="workload of dash-b")["metadata"]["name"]
    wl_c = support.wait_for(lambda: kueue.workload_of("dash-c"), what="workload of dash-c")["metadata"]["name"]

    def positions() -> dict[str, int]:
        raw = server.kubectl("get", "--raw", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/dash-cq/pendingworkloads")
        return {i["metadata"]["name"]: i["positionInClusterQueue"] for i in json.loads(raw.stdout)["items"]}

    api_positions = support.wait_for(lambda: (p := positions()) and len(p) == 2 and p, what="two pending workloads")
    row_b = f'#pending [data-workload="default/{wl_b}"]'
    row_c = f'#pending [data-workload="default/{wl_c}"]'
    for row, wl in ((row_b, wl_b), (row_c, wl_c)):
        shown = str(api_positions[wl] + 1)  # the page counts from 1 ("1" = next)
        wait(driver, lambda d, row=row, shown=shown: text_of(d, row + " .position") == shown, f"{wl} at position {shown}")
    # A Workload is listed pending once it is queued; the scheduler's reason is written after its
    # evaluation (PendingEvaluation may come first): wait for the page to show that reason.
    wait(driver, lambda d: "insufficient unused quota for cpu" in text_of(d, row_b + " .why"), f"why {wl_b} waits")
    reason = support.condition(kueue.get("workload", wl_b), "QuotaReserved")
    assert reason is not None and reason["status"] == "False"
    assert reason["reason"] in text_of(driver, row_b + " .why")
    save_artifact(driver, tmp_path, "dashboard-pending.png")

    # More quota: the first in line is admitted, the page follows without a reload.
    first, second = sorted((wl_b, wl_c), key=lambda w: api_positions[w])
    kueue.apply(GROW)
    wait(driver, lambda d: "Admitted" in text_of(d, f'#workloads [data-workload="default/{first}"]'), f"{first} admitted")
    assert not css(driver, f'#pending [data-workload="default/{first}"]')
    wait(driver, lambda d: text_of(d, f'#pending [data-workload="default/{second}"] .position') == "1", f"{second} next in line")
    wait(driver, lambda d: "2 / 2" in text_of(d, '[data-cq="dash-cq"]'), "dash-cq's cpu bar at 2 / 2")
    assert driver.execute_script("return window.__noReload") == "still here"
    shot = save_artifact(driver, tmp_path, "dashboard.png")
    assert shot.stat().st_size > 10_000

    # The workload page: conditions, admission and events of the admitted workload.
    click(driver, f'#workloads [data-workload="default/{first}"] a')
    wait(driver, lambda d: first in text_of(d, ".page-head"), "the workload page")
    page = wait(driver, lambda d: (t := d.execute_script("return document.body.innerText")) and "Admitted by ClusterQueue dash-cq" in t and t, "the Admitted event")
    assert "QuotaReserved" in page and "default-flavor" in page
    assert driver.execute_script("return window.__noReload") == "still here"
    save_artifact(driver, tmp_path, "dashboard-workload.png")
    assert severe_console_errors(driver) == []


def test_dashboard_command_in_a_browser(chromium: None, kueue: Any, tmp_path: Path) -> None:
    """``pykueue dashboard`` serves the same live page for a cluster reached by kubeconfig."""
    dash = start_dashboard(kueue.server.readonly_kubeconfig)
    driver = new_driver(tmp_path / "profile")
    try:
        driver.get(dash.url + "#token=" + dash.token)
        wait(driver, lambda d: text_of(d, "#conn") == "live", "the watches to open")
        kueue.apply(SETUP.replace("dash-cq", "proxied-cq").replace("dash-cohort", "proxied-cohort"))
        wait(driver, lambda d: css(d, '[data-cq="proxied-cq"]'), "the ClusterQueue card through the proxy")
        save_artifact(driver, tmp_path, "dashboard-proxy.png")
        assert severe_console_errors(driver) == []
    finally:
        driver.quit()
        dash.stop()
