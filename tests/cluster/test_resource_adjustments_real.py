"""LimitRanges and RuntimeClasses against a real kube-apiserver: the end-to-end functions of
tests/controllers/e2e/test_e2e_resource_adjustments.py (upstream's integration tests of
``workload.AdjustResources`` and ``ValidateLimitRange``), with ``kueue`` a real cluster and a
``pykueue controller --kubeconfig`` that config/rbac allows to read LimitRanges and RuntimeClasses
(stopping fails on any refused request)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import support
import test_e2e_resource_adjustments as suite
from realcluster import start_real_kueue

test_should_accumulate_runtime_class_overhead = suite.test_should_accumulate_runtime_class_overhead
test_should_not_accumulate_overhead_of_a_non_existent_runtime_class = (
    suite.test_should_not_accumulate_overhead_of_a_non_existent_runtime_class
)
test_should_use_the_range_defined_default_requests = suite.test_should_use_the_range_defined_default_requests
test_should_sync_the_resource_requests_with_the_new_overhead = suite.test_should_sync_the_resource_requests_with_the_new_overhead
test_should_sync_the_resource_requests_with_the_limit = suite.test_should_sync_the_resource_requests_with_the_limit
test_limit_range_constraints_block_admission = suite.test_limit_range_constraints_block_admission
test_nothing_written_into_the_stored_workload = suite.test_nothing_written_into_the_stored_workload


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.Kueue]:
    k = start_real_kueue(tmp_path_factory.mktemp("adjust-real"), run_jobs=False)
    yield k
    k.stop()
