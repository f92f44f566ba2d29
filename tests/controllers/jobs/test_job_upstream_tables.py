"""Upstream's pure tables of ``pkg/controller/jobs/job/job_controller_test.go`` beside
``TestReconciler``: ``TestPodSetsInfo``, ``TestPodSets``, ``TestCleanLabels``,
``TestTerminalIndexesCount`` and ``TestReclaimablePods``, ported under upstream's case names on
pykueue's functions of :mod:`pykueue.controllers.jobs.batch_job` (``start_job`` is
``RunWithPodSetsInfo``, ``stop_job`` restores what ``RestorePodSetsInfo`` restores, from the
Workload the Job was admitted with).

``TestPodSets`` cases already in tests/controllers/jobs/test_batch_job.py (``test_pod_sets``) are
not repeated here.

Not ported:
- TestPodSetsInfo "replace stale workload slice annotation" — elastic jobs / workload slices.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from reconcile_harness import base_job

from pykueue.controllers.jobs import batch_job as bj


def _job(
    parallelism: int = 1, annotations: dict[str, str] | None = None, **template_spec: Any
) -> dict[str, Any]:
    """Upstream's ``MakeJob("job", "ns")`` (suspended, queue-less) with the given parallelism."""
    job = base_job(queue=None, parallelism=parallelism)
    job["metadata"].update(uid="job-uid", annotations=dict(annotations or {}))
    job["spec"]["template"]["spec"].update(template_spec)
    return job


_ORIG_T = {"key": "orig-t-key", "operator": "Equal", "value": "orig-t-val", "effect": "NoSchedule"}
_NEW_T = {"key": "new-t-key", "operator": "Equal", "value": "new-t-val", "effect": "NoSchedule"}


def _info(count: int = 1, **fields: Any) -> bj.PodSetInjection:
    return bj.PodSetInjection(name="main", count=count, **fields)


@pytest.mark.parametrize(
    ("job", "run_info", "want_spec", "want_error"),
    [
        pytest.param(
            _job(1, nodeSelector={"orig-key": "orig-val"}, tolerations=[_ORIG_T]),
            [_info(node_selector={"new-key": "new-val"}, tolerations=[_NEW_T])],
            {
                "nodeSelector": {"orig-key": "orig-val", "new-key": "new-val"},
                "tolerations": [_ORIG_T, _NEW_T],
            },
            None,
            id="append",
        ),
        pytest.param(
            _job(1, nodeSelector={"orig-key": "orig-val"}),
            [_info(node_selector={"orig-key": "new-val"})],
            None,
            "invalid admission check PodSetUpdate: conflict for nodeSelector: "
            "conflict for key=orig-key, value1=orig-val, value2=new-val",
            id="update",
        ),
        pytest.param(
            _job(5, {bj.JOB_MIN_PARALLELISM_ANNOTATION: "2"}),
            [_info(count=2)],
            {"parallelism": 2},
            None,
            id="parallelism",
        ),
        pytest.param(
            _job(5, {bj.JOB_MIN_PARALLELISM_ANNOTATION: "2"}),
            [],
            None,
            "invalid podset infos: expecting 1 podset, got 0",
            id="noInfoOnRun",
        ),
    ],
)
def test_pod_sets_info(
    job: dict[str, Any],
    run_info: list[bj.PodSetInjection],
    want_spec: dict[str, Any] | None,
    want_error: str | None,
) -> None:
    """``TestPodSetsInfo``: run with the infos, then restore the original from the Workload the
    original Job makes, and suspend: the spec is the original's again."""
    original = copy.deepcopy(job)
    wl = bj.construct_workload(original, bj.PriorityInfo(None, 0))
    if want_error is not None:
        with pytest.raises(bj.StartJobError) as err:
            bj.start_job(job, wl, run_info)
        assert str(err.value) == want_error
        assert job == original  # nothing was written
        return
    started = bj.start_job(job, wl, run_info)
    assert started["spec"]["suspend"] is False
    assert want_spec is not None
    for key, value in want_spec.items():
        where = started["spec"] if key == "parallelism" else started["spec"]["template"]["spec"]
        assert where[key] == value
    restored = bj.stop_job(started, wl).job
    assert restored["spec"] == original["spec"]


# --- TestPodSets (cases not in test_batch_job.test_pod_sets) -------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "tas", "want_topology"),
    [
        pytest.param(
            {
                bj.PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: "cloud.com/block",
                bj.PODSET_SLICE_SIZE_ANNOTATION: "1",
            },
            False,
            None,
            id="with slice-only topology if TAS is disabled",
        ),
        pytest.param(
            {bj.PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION: "cloud.com/block"},
            True,
            {"podIndexLabel": bj.JOB_COMPLETION_INDEX_ANNOTATION},
            id="with slice-only topology – only podset slice required topology annotation",
        ),
        pytest.param(
            {bj.PODSET_PREFERRED_TOPOLOGY_ANNOTATION: "cloud.com/block"},
            False,
            None,
            id="without preferred topology annotation if TAS is disabled",
        ),
    ],
)
def test_pod_sets(annotations: dict[str, str], tas: bool, want_topology: dict[str, Any] | None) -> None:
    job = _job(3)
    job["spec"]["template"]["metadata"]["annotations"] = annotations
    [ps] = bj.job_pod_sets(job, tas_enabled=tas)
    assert (ps.name, ps.count, ps.min_count) == ("main", 3, None)
    assert ps.topology_request == want_topology
    assert ps.template.metadata.get("annotations") == annotations
    assert ps.template.spec == job["spec"]["template"]["spec"]


def test_pod_sets_partial_admission() -> None:
    """``TestPodSets`` "partial admission": the min-parallelism annotation is the pod set's minCount."""
    job = _job(3, {bj.JOB_MIN_PARALLELISM_ANNOTATION: "2"})
    [ps] = bj.job_pod_sets(job, tas_enabled=False)
    assert (ps.name, ps.count, ps.min_count, ps.topology_request) == ("main", 3, 2, None)
    assert ps.template.spec == job["spec"]["template"]["spec"]


# --- TestCleanLabels -------------------------------------------------------------------------------------


def test_clean_labels_feature_enabled() -> None:
    """``TestCleanLabels`` "feature enabled": the Job controller's uid labels leave the Workload's
    template, ``batch.kubernetes.io/job-name`` stays."""
    job = _job()
    job["spec"]["template"]["metadata"]["labels"] = {
        "foo": "bar",
        "batch.kubernetes.io/job-name": "job-name",
        "controller-uid": "uid",
        "batch.kubernetes.io/controller-uid": "uid",
    }
    wl = bj.construct_workload(job, bj.PriorityInfo(None, 0))
    assert wl.spec.pod_sets[0].template.metadata["labels"] == {
        "foo": "bar",
        "batch.kubernetes.io/job-name": "job-name",
    }


# --- TestTerminalIndexesCount, through ReclaimablePods -------------------------------------------------------

_TERMINAL_INDEXES = [
    ("empty", "", "", 10, 0),
    ("zero completions", "0-9", "", 0, 0),
    ("single completed index", "0", "", 10, 1),
    ("single failed index", "", "1", 10, 1),
    ("single range", "0-4", "", 10, 5),
    ("mixed intervals", "0-4,7,9-11", "", 10, 7),
    ("completed and failed indexes", "0-2,7", "3-5,8", 10, 8),
    ("overlapping terminal indexes", "0-4", "3-7", 10, 8),
    ("contained failed indexes", "0-9", "2-3", 10, 10),
    ("surviving low indexes", "0-8", "", 10, 9),
    ("all completed within range", "0-14", "", 10, 10),
    ("range straddling the cap", "5-19", "", 10, 5),
    ("all removed (above the cap)", "10-19", "", 10, 0),
    ("failed range straddling the cap", "", "5-19", 10, 5),
    ("all failed removed (above the cap)", "", "10-19", 10, 0),
    ("stale failed index after scale-down", "", "4", 3, 0),
    ("cap applied to completed and failed", "0-1", "2-19", 5, 5),
    ("range capped tighter", "0-4", "", 3, 3),
    ("discrete indexes", "3,5,7", "", 10, 3),
    ("discrete indexes partly above", "3,5,12", "", 10, 2),
    ("malformed interval skipped", "abc,0-2", "", 10, 3),
    ("malformed range end skipped", "0-x,4", "", 10, 1),
]


@pytest.mark.parametrize(
    ("completed", "failed", "completions", "want"),
    [pytest.param(c, f, n, w, id=name) for name, c, f, n, w in _TERMINAL_INDEXES],
)
def test_terminal_indexes_count(completed: str, failed: str, completions: int, want: int) -> None:
    """``terminalIndexesCount`` is private upstream; pykueue's counterpart is read through the
    reclaimable pods of an Indexed Job whose parallelism equals its completions: with ``t`` terminal
    indexes it keeps ``completions - t`` pods, so exactly ``t`` are reclaimable."""
    job = _job(completions)
    job["spec"].update(completionMode="Indexed", completions=completions)
    job["status"] = {"completedIndexes": completed, "failedIndexes": failed}
    assert bj.reclaimable_pods(job) == ([] if want == 0 else [{"name": "main", "count": want}])


# --- TestReclaimablePods ---------------------------------------------------------------------------------------


def _indexed_job(succeeded: int, failed: int, completed: str, failed_indexes: str) -> dict[str, Any]:
    job = _job(8)
    job["spec"].update(completionMode="Indexed", completions=8)
    job["status"] = {"succeeded": succeeded, "failed": failed, "completedIndexes": completed}
    if failed_indexes:
        job["spec"]["backoffLimitPerIndex"] = 0
        job["status"]["failedIndexes"] = failed_indexes
    return job


def _retryable_failure_job() -> dict[str, Any]:
    job = _indexed_job(1, 1, "0", "")
    job["spec"]["backoffLimitPerIndex"] = 1
    return job


@pytest.mark.parametrize(
    ("job", "want"),
    [
        pytest.param(_indexed_job(4, 0, "0-3", ""), [{"name": "main", "count": 4}], id="indexed Job reclaims its completed indexes"),
        pytest.param(_retryable_failure_job(), [{"name": "main", "count": 1}], id="indexed Job holds quota for a retryable failure"),
        pytest.param(_indexed_job(1, 1, "0", "1"), [{"name": "main", "count": 2}], id="indexed Job reclaims completed and failed indexes"),
        pytest.param(_indexed_job(4, 0, "", ""), [], id="indexed Job with empty terminal indexes holds quota"),
    ],
)  # fmt: skip
def test_reclaimable_pods(job: dict[str, Any], want: list[dict[str, Any]]) -> None:
    assert bj.reclaimable_pods(job) == want
