"""The controllers' end-to-end suite (tests/controllers/e2e/test_e2e_kueue.py) against a real
kube-apiserver: the same test functions, with ``kueue`` built from a real cluster and a separate
``pykueue controller --kubeconfig`` process instead of ``pykueue serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import support
import test_e2e_kueue as suite
import test_e2e_pipelined_writes as pipelined
import yaml
from realcluster import CONTROLLER_USER, start_real_kueue

# Collected here, in the suite's order, with this module's ``kueue`` fixture.
test_job_is_admitted_runs_completes_and_frees_quota = suite.test_job_is_admitted_runs_completes_and_frees_quota
test_borrowing_then_reclaim_preempts_and_readmits = suite.test_borrowing_then_reclaim_preempts_and_readmits
test_external_admission_check_pending_ready_retry_rejected = suite.test_external_admission_check_pending_ready_retry_rejected
test_seed_cluster_queues_get_status = suite.test_seed_cluster_queues_get_status
test_readme_quickstart_example_runs_to_completion = suite.test_readme_quickstart_example_runs_to_completion
test_conflicting_admissions_never_over_commit_nor_admit_twice = (
    pipelined.test_conflicting_admissions_never_over_commit_nor_admit_twice
)


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[support.Kueue]:
    k = start_real_kueue(tmp_path_factory.mktemp("kueue-real"))
    yield k
    k.stop()


def test_restart_during_admission_storm_keeps_quota_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kill -9 of the controller during an admission storm: no Workload reserved twice, quota exact.

    The suite's storm starts its own control plane through ``start_kueue``; here that is a fresh
    real cluster (the storm counts every Workload of the namespace).
    """
    monkeypatch.setattr(
        suite, "start_kueue", lambda base, mode, extra=None, *, run_jobs=True: start_real_kueue(base, extra, run_jobs=run_jobs)
    )
    suite._storm(tmp_path / "real", "cluster")


def test_seed_v1beta1_cluster_queues_keep_their_cohort(kueue: support.Kueue) -> None:
    """The seeds' v1beta1 ClusterQueues, applied verbatim, keep ``cohort`` (served back as v1beta2
    ``cohortName`` and as v1beta1 ``cohort``) through the controller's conversion webhook."""
    checked = 0
    for block in suite._seed_blocks():
        doc = yaml.safe_load(block)
        if doc["kind"] != "ClusterQueue" or doc["apiVersion"] != "kueue.x-k8s.io/v1beta1":
            continue
        result = kueue.kubectl("apply", "-f", "-", stdin=block, check=False)
        if result.returncode != 0:
            assert "flavors must have the same number of resources" in result.stderr  # invalid upstream too
            continue
        name = doc["metadata"]["name"]
        v1beta2 = kueue.get("clusterqueues.v1beta2.kueue.x-k8s.io", name, None)
        v1beta1 = kueue.get("clusterqueues.v1beta1.kueue.x-k8s.io", name, None)
        assert v1beta2["spec"].get("cohortName") == doc["spec"].get("cohort"), name
        assert v1beta1["spec"].get("cohort") == doc["spec"].get("cohort"), name
        checked += bool(doc["spec"].get("cohort"))
    assert checked >= 2


def test_job_webhook_reads_from_its_cache(kueue: support.Kueue) -> None:
    """The Job webhook's lookups (the ``default`` WorkloadPriorityClass and LocalQueue) come from
    informers, not a GET per Job create."""
    kueue.apply(support.local_queue("default", "life-cq"))  # a namespace default queue exists
    kueue.apply("---".join(support.job(f"cached-{i}", "life-lq", command="true") for i in range(5)))
    unlabelled = support.job("cached-default", "x").replace("  labels:\n    kueue.x-k8s.io/queue-name: x\n", "")
    kueue.apply(unlabelled)
    job = kueue.get("job", "cached-default")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"  # defaulted by mjob
    gets = [
        e
        for e in kueue.server.audit_events()
        if (e.get("user") or {}).get("username") == CONTROLLER_USER
        and e.get("verb") == "get"
        and (e.get("objectRef") or {}).get("resource") in ("workloadpriorityclasses", "localqueues")
    ]
    assert gets == [], [(e["objectRef"]["resource"], e["objectRef"].get("name")) for e in gets]
