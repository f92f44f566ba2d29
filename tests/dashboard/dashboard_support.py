"""Shared by the dashboard tests: the Kueue e2e helpers, the dashboard process, and headless
Chromium (Debian's ``chromium`` and ``chromium-driver``, installed with apt-get when missing)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SUPPORT = Path(__file__).resolve().parents[1] / "controllers" / "e2e" / "support.py"
if "kueue_e2e_support" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("kueue_e2e_support", _SUPPORT)
    assert _spec is not None and _spec.loader is not None
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["kueue_e2e_support"] = _mod
    _spec.loader.exec_module(_mod)
support: Any = sys.modules["kueue_e2e_support"]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1500,1000",
)  # fmt: skip


def ensure_chromium() -> str | None:
    """Install Debian's chromium and chromium-driver when missing; the reason when that fails."""
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return None
    if shutil.which("apt-get") is None:
        return "chromium is not installed and there is no apt-get to install it"
    if os.geteuid() != 0:
        return "chromium is not installed and installing it with apt-get needs root"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"]
    last = ""
    for steps in ([install], [["apt-get", "update", "-q"], install]):
        for cmd in steps:
            result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
            last = result.stderr.strip()[-500:]
            if result.returncode != 0:
                break
        else:
            if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
                return None
    return f"apt-get install chromium chromium-driver failed: {last}"


def spki_pin(cert_pem: bytes) -> str:
    """Chromium's ``--ignore-certificate-errors-spki-list`` value for one certificate: it trusts
    exactly the test server's certificate, not any certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert = x509.load_pem_x509_certificate(cert_pem)
    der = cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def new_driver(profile: Path, extra: Sequence[str] = ()) -> Any:
    """A headless Chromium driven by Selenium through Debian's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra):
        opts.add_argument(flag)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@dataclass
class Dashboard:
    """A running ``pykueue dashboard``."""

    proc: subprocess.Popen[str]
    url: str
    token: str
    output: list[str]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_dashboard(kubeconfig: Path, *extra: str, timeout: float = 30.0) -> Dashboard:
    """Start ``pykueue dashboard --port 0`` and wait for the URL it prints."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pykueue", "dashboard", "--kubeconfig", str(kubeconfig), "--port", "0", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    output: list[str] = []
    found = threading.Event()
    opened: list[str] = []

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)
            if line.startswith("open: "):
                opened.append(line[len("open: ") :].strip())
                found.set()
        found.set()

    threading.Thread(target=pump, daemon=True).start()
    if not found.wait(timeout) or not opened:
        proc.kill()
        raise AssertionError("pykueue dashboard did not start:\n" + "".join(output))
    url, _, token = opened[0].partition("#token=")
    return Dashboard(proc, url, token, output)
