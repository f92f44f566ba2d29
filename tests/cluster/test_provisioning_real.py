"""The ProvisioningRequest check's kubectl suite
(tests/controllers/admissionchecks/test_provisioning_kubectl_e2e.py) against a real kube-apiserver
with cluster-autoscaler's ProvisioningRequest CRD: the same test functions, with ``kueue`` a real
cluster plus ``pykueue controller --kubeconfig --provisioner FILE``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import support
import yaml
from realcluster import ROOT, start_real_kueue

_SUITE = str(ROOT / "tests" / "controllers" / "admissionchecks")
if _SUITE not in sys.path:
    sys.path.insert(0, _SUITE)

import test_provisioning_kubectl_e2e as suite  # noqa: E402

# Collected here, in the suite's order (the first one expects no ProvisioningRequestConfig yet),
# with this module's ``kueue`` fixture.
test_seed_admission_check_active_once_config_exists = suite.test_seed_admission_check_active_once_config_exists
test_job_admitted_only_after_request_is_provisioned = suite.test_job_admitted_only_after_request_is_provisioned
test_failed_request_is_retried_after_backoff = suite.test_failed_request_is_retried_after_backoff
test_exhausted_retries_reject_and_deactivate = suite.test_exhausted_retries_reject_and_deactivate
test_on_flavors_check_runs_only_for_its_flavor = suite.test_on_flavors_check_runs_only_for_its_flavor


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.Kueue]:
    base: Path = tmp_path_factory.mktemp("provisioning-real")
    capacity = base / "capacity.yaml"
    capacity.write_text(yaml.safe_dump(suite.CAPACITY))
    k = start_real_kueue(base, ["--provisioner", str(capacity)], run_jobs=False)
    yield k
    k.stop()
