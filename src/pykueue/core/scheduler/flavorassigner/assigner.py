"""Flavor assignment: choosing a ResourceFlavor for every requested resource (upstream ``flavorassigner.go``).

``FlavorAssigner`` turns a pending workload's requests into an ``Assignment`` for one ClusterQueue:
per pod set and resource group it scans the group's flavors (``findFlavorForPodSets``), filters
out flavors the pods cannot run on (``checkFlavorForPodSets``), checks quota for every (flavor,
resource) of the group (``fitsResourceQuota``, asking the injected preemption oracle when
preemption could help), ranks the outcomes (``isPreferred``) and records every examined flavor
for the NoFit reason (``resolveNoFitReason``) and the "flavors considered" event text
(``FormatFlavorAssignmentAttemptsForEvents``).

The assigner never mutates the workload, the ClusterQueue or the snapshot. Dropping outdated
remembered scan progress (``lastAssignmentOutdated``) is the caller's job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import msgspec

from pykueue.api import podspec
from pykueue.api.kueue import PREEMPTION_OVER_BORROWING, PodSet, Toleration
from pykueue.api.quantity import PODS, format_amount, resource_quantity_string, sat_add, sat_mul, sat_sub
from pykueue.core.cache.cache import ClusterQueueState
from pykueue.core.cache.snapshot import Snapshot
from pykueue.core.options import SchedulerOptions
from pykueue.core.quota.tree import UNLIMITED, CohortNode, FlavorResource, quota_views
from pykueue.core.scheduler.flavorassigner.assignment import (
    EXCEEDS_MAX_QUOTA,
    NO_FIT_SEVERITY,
    NO_MATCHING_FLAVOR,
    WAITING_FOR_QUOTA,
    Assignment,
    FlavorAssignment,
    FlavorAttempt,
    GranularMode,
    PodSetAssignmentResult,
    PreemptionMode,
)
from pykueue.core.workload.info import LastAssignment, PodSetInfo, WorkloadInfo, allowed_flavors_annotation

Oracle = Callable[[ClusterQueueState, WorkloadInfo, FlavorResource, int], tuple[PreemptionMode, int]]
"""Preemption oracle (``PreemptionOracle.SimulatePreemption``): ``(cq, wl, fr, quantity) ->
(NO_CANDIDATES|PREEMPT|RECLAIM, borrowing level)``."""

NominationPin = Mapping[str, Mapping[str, str]]
"""Flavors chosen at nomination: pod set name -> resource -> flavor (``Scheduler.processEntry``)."""

_NO_FIT = PreemptionMode.NO_FIT
_NO_CANDIDATES = PreemptionMode.NO_CANDIDATES
_FIT = PreemptionMode.FIT
_SIMULATED_MODES = frozenset((PreemptionMode.NO_CANDIDATES, PreemptionMode.PREEMPT, PreemptionMode.RECLAIM))
_WORST_LEVEL = 2**63 - 1

# A granular mode (``granularMode``) as a plain tuple in the hot loop: (preemption mode, borrowing level).
_Granular = tuple[PreemptionMode, int]


# --- resource iteration order (upstream ``pkg/resources/slice_requests.go``) ---------------------

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_U64 = (1 << 64) - 1


def fnv1a_64(name: str) -> int:
    """64-bit FNV-1a hash of ``name``'s UTF-8 bytes (Go ``hash/fnv.New64a``)."""
    h = _FNV_OFFSET
    for byte in name.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _U64
    return h


@lru_cache(maxsize=4096)
def _hash_key(name: str) -> tuple[int, str]:
    return fnv1a_64(name), name


@lru_cache(maxsize=4096)
def resource_order(names: tuple[str, ...]) -> tuple[str, ...]:
    """Resource names in upstream's vectorised order: ascending FNV-1a hash, ties by name."""
    return tuple(sorted(names, key=_hash_key))


# --- upstream ``lastAssignmentOutdated`` -----------------------------------------------------------


def last_assignment_outdated(
    wl: WorkloadInfo, cq: ClusterQueueState, cycle: int, options: SchedulerOptions
) -> bool:
    """Whether ``wl``'s remembered flavor-scan progress must be dropped before assigning
    (``lastAssignmentOutdated``)."""
    last = wl.last_assignment
    if last is None:
        return False
    generation_moved = cq.generation > last.cluster_queue_generation
    if not options.gate_preserve_scan_progress:
        return generation_moved
    recorded, current = last.scheduling_hash, wl.scheduling_hash
    if recorded != current and "unknown" not in (recorded, current):
        return True
    if last.scheduling_cycle >= cycle - 1:
        return False
    return generation_moved


# --- upstream ``isPreferred`` ----------------------------------------------------------------------


def _preferred(a: _Granular, b: _Granular, preemption_over_borrowing: bool) -> bool:
    a_mode, a_level = a
    b_mode, b_level = b
    if a_mode is _NO_FIT:
        return False
    if b_mode is _NO_FIT:
        return True
    a_none = a_mode is _NO_CANDIDATES
    if a_none != (b_mode is _NO_CANDIDATES):
        return not a_none
    if preemption_over_borrowing:
        if a_level != b_level:
            return a_level < b_level
        return a_mode > b_mode
    if a_mode != b_mode:
        return a_mode > b_mode
    return a_level < b_level


def is_preferred(a: GranularMode, b: GranularMode, preference: str = "") -> bool:
    """``isPreferred(a, b)``: is outcome ``a`` strictly better than ``b`` under ``preference``?"""
    return _preferred(
        (a.preemption_mode, a.borrowing_level),
        (b.preemption_mode, b.borrowing_level),
        preference == PREEMPTION_OVER_BORROWING,
    )


def _most_severe(a: str, b: str) -> str:
    return a if NO_FIT_SEVERITY.get(a, 0) >= NO_FIT_SEVERITY.get(b, 0) else b


# --- internal results ------------------------------------------------------------------------------


_QuotaCheck = tuple[PreemptionMode, int, str | None, str]
"""Outcome of ``fitsResourceQuota`` for one (flavor, resource): (mode, borrowing level, reason,
NoFit reason); a plain tuple, built four times per head."""

_PUBLIC_MODE = {m: m.public() for m in PreemptionMode}


class _Scan(msgspec.Struct, gc=False):
    """Outcome of scanning one resource group's flavors for a pod set (``findFlavorForPodSets``).

    msgspec Structs, these two (built in C, one each per head; no cycles through them)."""

    flavors: dict[str, FlavorAssignment]
    reasons: list[str]
    attempts: list[FlavorAttempt]
    error: str | None = None


class _PodSetRequests(msgspec.Struct, gc=False):
    info: PodSetInfo
    count: int
    requests: dict[str, int]
    order: tuple[str, ...]
    tolerations: list[Toleration] | None = None
    members: list[_PodSetRequests] | None = None
    """The pod sets of a PodSet group whose summed requests these are (None: one pod set)."""


def _group_keys(specs: Sequence[PodSet]) -> list[str] | None:
    """Each pod set's group key (upstream ``assignFlavors``): its ``topologyRequest.podSetGroupName``,
    else its index as a string. None when no pod set names a group (each is its own group)."""
    keys: list[str] | None = None
    for i, ps in enumerate(specs):
        tr = ps.topology_request
        group = tr.get("podSetGroupName") if tr else None
        if group is not None:
            if keys is None:
                keys = [str(j) for j in range(len(specs))]
            keys[i] = str(group)
    return keys


# --- the assigner ----------------------------------------------------------------------------------


class FlavorAssigner:
    """Assigns flavors to one workload's requests in one ClusterQueue (``FlavorAssigner.Assign``).

    ``counts`` gives reduced pod counts per pod set (partial admission, ``PodSetReducer``); ``nomination_pin``
    restricts each resource to the flavor chosen at nomination (``processEntry``); ``cycle`` is the
    scheduling cycle recorded in the resulting ``LastAssignment``. ``wl.last_assignment`` is used
    as the remembered scan progress as is: drop it first if ``last_assignment_outdated``.
    """

    def __init__(
        self,
        wl: WorkloadInfo,
        cq: ClusterQueueState,
        snapshot: Snapshot,
        options: SchedulerOptions,
        oracle: Oracle,
        *,
        counts: Sequence[int] | None = None,
        nomination_pin: NominationPin | None = None,
        cycle: int = 0,
    ) -> None:
        self.wl = wl
        self.cq = cq
        self.flavors = snapshot.flavors
        self.options = options
        self.oracle = oracle
        self.counts = counts
        self.cycle = cycle
        # The gates read per head, computed once per options (``SchedulerOptions.assigner_gates``).
        pin_gate, self._fungibility, self._observability, self._vectorized, self._ignore_undeclared = (
            options.assigner_gates
        )
        self._pin = nomination_pin if nomination_pin and pin_gate else None
        # ``concurrentadmission.IsFlavorAllowedForVariant``: under ``ConcurrentAdmission`` the
        # allowed-flavors annotation names the only flavors to try (``csv.Parse``; None: any).
        self._allowed: frozenset[str] | None = None
        if options.gate_concurrent_admission:
            allowed = allowed_flavors_annotation(wl.obj, options)
            if allowed is not None:
                self._allowed = frozenset(f.strip() for f in allowed.split(",")) if allowed.strip() else frozenset()
        # The ClusterQueue's fungibility and preemption comparisons, made once per spec
        # (``ClusterQueueState.assigner_flags``).
        (
            self._preemption_over_borrowing,
            self._try_next_on_preempt,
            self._try_next_on_borrow,
            borrow_may_preempt,
            reclaim_may_preempt,
        ) = cq.assigner_flags
        self._can_preempt_while_borrowing = borrow_may_preempt or (options.fair_sharing and reclaim_may_preempt)
        # An oracle may declare that, for this ClusterQueue, it answers NO_CANDIDATES at the
        # borrowing level ``quota_views`` gives, whatever the request (the Preemptor's does when
        # neither policy can yield a candidate): it is then not asked (``_fits_resource_quota``).
        probe: Callable[[ClusterQueueState], bool] | None = getattr(oracle, "no_candidates", None)
        self._oracle_no_candidates = probe is not None and probe(cq)
        # The ClusterQueue right below a root cohort (the common shape): ``_fits_resource_quota``
        # reads ``quota_views`` off the two nodes itself. None: other shapes (``quota_views``).
        parent = cq.node.parent
        self._flat_root: CohortNode | None = parent if parent is not None and parent.parent is None else None
        # Quota checks remembered per ClusterQueue (``ClusterQueueState.quota_checks``) when a check
        # reads nothing of the workload (the oracle is not asked) and only two nodes: the
        # ClusterQueue's and its root's (the flat shape). Every change of either node's quotas,
        # subtree quotas, usage or children bumps its ``version`` (``quota.tree``, ``Cache._recompute``,
        # ``ClusterQueueState.update_spec``); with the one setting of this assigner a check reads,
        # they are the validity key. Requeued heads of one ClusterQueue ask for the same
        # (flavor, resource, amount) again while its cohort's usage stands still. Not with fair
        # sharing: its order books every PreemptionNoCandidates entry's reservation at once
        # (``Scheduler._process_entry``), so the root's version moves between any two heads of a
        # cohort and a remembered check would never be read again.
        self._checks: dict[tuple[FlavorResource, int, int], _QuotaCheck] | None = None
        if self._flat_root is not None and self._oracle_no_candidates and not options.fair_sharing:
            at = (self._flat_root, cq.node.version, self._flat_root.version, self._can_preempt_while_borrowing)
            if cq.quota_checks_at != at:
                cq.quota_checks = {}
                cq.quota_checks_at = at
            self._checks = cq.quota_checks

    # --- upstream ``FlavorAssigner.assignFlavors`` -----------------------------------------------

    def _prepare(self, index: int, ps: PodSetInfo) -> _PodSetRequests:
        count, requests = ps.count, ps.total
        if self.counts is not None:
            new_count = self.counts[index]
            if ps.count != 0 and new_count != ps.count:
                requests = {r: sat_mul(v // ps.count, new_count) for r, v in requests.items()}
                count = new_count
        if self.cq.covers_pods:
            requests = {**requests, PODS: count}
        names = tuple(requests)
        order = resource_order(names) if self._vectorized else names
        return _PodSetRequests(ps, count, requests, order)

    # --- assembling (upstream ``Assignment.append``) ----------------------------------------------

    def assign(self) -> Assignment:
        """Run flavor assignment for every pod set, stopping at the first pod set that gets no flavor."""
        last_state = LastAssignment([], self.cq.generation, self.cycle, self.wl.scheduling_hash)
        assignment = Assignment(
            pod_sets=[], last_state=last_state, resolve_no_fit_reason=self._observability
        )
        specs = self.wl.obj.spec.pod_sets
        keys: list[str] | None = None
        for spec in specs:
            if spec.topology_request:
                keys = _group_keys(specs)
                break
        if keys is None:
            for index, ps in enumerate(self.wl.pod_sets):
                result, failed = self._assign_pod_set(index, self._prepare(index, ps), assignment.usage)
                _append(assignment, result)
                if failed:
                    break
        else:
            self._assign_groups(assignment, keys)
        # Nothing changes the pod sets' results from here on.
        assignment.final_mode = assignment.representative_mode()
        return assignment

    def _assign_groups(self, assignment: Assignment, keys: list[str]) -> None:
        """Pod sets grouped by ``podSetGroupName`` (upstream ``assignFlavors``' ``groupedRequests``):
        the groups in order of their first pod set; a group's summed requests get one flavor per
        resource, each member keeps the flavors of the resources it requests, and shares the group's
        status and attempts. Stops after the first group whose flavor search fails, as an ungrouped
        pod set does. Upstream also stops after a pod set whose requests were all skipped (undeclared
        resources it ignores): the pod sets after it then get no assignment, an admission the API
        refuses; pykueue goes on, grouped or not."""
        groups: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            groups.setdefault(key, []).append(index)
        pod_sets = self.wl.pod_sets
        for indexes in groups.values():
            members = [self._prepare(i, pod_sets[i]) for i in indexes]
            summed: dict[str, int] = {}
            for m in members:
                for res, v in m.requests.items():
                    summed[res] = sat_add(summed.get(res, 0), v)
            names = tuple(summed)
            combined = _PodSetRequests(
                members[0].info,
                members[0].count,
                summed,
                resource_order(names) if self._vectorized else names,
                members=members,
            )
            group, failed = self._assign_pod_set(indexes[0], combined, assignment.usage)
            for m in members:
                # ``resolvePodSetFlavors``: the group's flavors of the resources this pod set requests.
                own = {r: fa for r, fa in group.flavors.items() if r in m.requests}
                _append(
                    assignment,
                    PodSetAssignmentResult(
                        name=m.info.name,
                        flavors=own,
                        requests=m.requests,
                        count=m.count,
                        reasons=list(group.reasons),
                        error=group.error,
                        attempts=list(group.attempts),
                    ),
                )
            if failed:
                return

    def _assign_pod_set(
        self, index: int, psr: _PodSetRequests, assumed: dict[FlavorResource, int]
    ) -> tuple[PodSetAssignmentResult, bool]:
        group_of = self.cq.group_of_resource
        flavors: dict[str, FlavorAssignment] = {}
        reasons: list[str] = []
        considered: dict[str, FlavorAttempt] = {}
        failure: _Scan | None = None
        for res in psr.order:
            gi = group_of.get(res)
            if gi is None and (psr.requests[res] == 0 or self._ignore_undeclared):
                continue
            if res in flavors:
                continue
            scan = self._find_flavor(index, psr, res, gi, assumed)
            self._merge_attempts(considered, scan.attempts, res, gi)
            if scan.error is not None or not scan.flavors:
                failure = scan
                break
            flavors.update(scan.flavors)
            reasons.extend(scan.reasons)
        result = PodSetAssignmentResult(
            name=psr.info.name,
            flavors=flavors if failure is None else {},
            requests=psr.requests,
            count=psr.count,
            reasons=reasons if failure is None else failure.reasons,
            error=None if failure is None else failure.error,
            attempts=sorted(considered.values(), key=_attempt_flavor) if len(considered) > 1 else [*considered.values()],
        )
        return result, failure is not None

    # --- upstream ``FlavorAssigner.findFlavorForPodSets`` ----------------------------------------

    def _start_index(self, index: int, res: str) -> int:
        last = self.wl.last_assignment
        if not self._fungibility or last is None or index >= len(last.last_tried_flavor_idx):
            return 0
        idx = last.last_tried_flavor_idx[index].get(res)
        return 0 if idx is None else idx + 1

    def _pinned_out(self, psr: _PodSetRequests, flavor: str, res: str) -> bool:
        """``shouldSkipBasedOnNominationMapping``: no pod set of ``psr`` was nominated ``flavor`` for ``res``."""
        assert self._pin is not None
        pin = self._pin
        if psr.members is None:
            return pin.get(psr.info.name, {}).get(res) != flavor
        return all(pin.get(m.info.name, {}).get(res) != flavor for m in psr.members)

    def _find_flavor(
        self, index: int, psr: _PodSetRequests, res: str, gi: int | None, assumed: dict[FlavorResource, int]
    ) -> _Scan:
        if gi is None:
            # No reason of its own: upstream's findFlavorForPodSets returns a bare Status here.
            return _Scan({}, [f"resource {res} unavailable in ClusterQueue"], [])
        group = self.cq.resource_groups[gi]
        covered = group.covered
        group_requests = [(r, psr.requests[r]) for r in psr.order if r in covered]
        group_flavors = group.flavors
        reasons: list[str] = []
        attempts: list[FlavorAttempt] = []
        best: dict[str, FlavorAssignment] = {}
        best_mode: _Granular = (_NO_FIT, _WORST_LEVEL)
        attempted = -1
        flavors_get = self.flavors.get
        fungibility = self._fungibility
        allowed = self._allowed
        start = 0 if self.wl.last_assignment is None else self._start_index(index, res)
        for idx in range(start, len(group_flavors)):
            attempted = idx
            fname = group_flavors[idx]
            if self._pin is not None and self._pinned_out(psr, fname, res):
                reasons.append(
                    f"skipping flavor {fname} as it is not found in the nomination mapping for resource {res}"
                )
                continue
            if allowed is not None and fname not in allowed:
                # Upstream ``findFlavorForPodSetResource``.
                reasons.append(f"skipping flavor {fname} due to WorkloadAllowedResourceFlavorAnnotation annotation")
                continue
            flavor = flavors_get(fname)
            if flavor is None or flavor.spec.node_taints or flavor.spec.node_labels:
                ineligible, error = self._check_flavor(fname, psr)
            else:  # ``_check_flavor`` of a flavor without taints or node labels
                ineligible = error = None
            if ineligible is not None or error is not None:
                flavor_reasons = [] if ineligible is None else [ineligible]
                reasons.extend(flavor_reasons)
                attempts.append(self._no_fit_attempt(fname, flavor_reasons))
                if error is not None:
                    return _Scan({}, reasons, attempts, error=error)
                continue
            candidate, mode = self._evaluate_flavor(fname, group_requests, assumed, reasons, attempts)
            if fungibility:
                pm = mode[0]
                # Stop at the first flavor not to try past (upstream ``shouldTryNextFlavor``): one
                # that fits or preempts, unless the ClusterQueue's fungibility says to try the next
                # flavor on preemption or on borrowing.
                if pm is not _NO_FIT and pm is not _NO_CANDIDATES and not (
                    (pm is not _FIT and self._try_next_on_preempt) or (mode[1] > 0 and self._try_next_on_borrow)
                ):
                    best, best_mode = candidate, mode
                    break
                if _preferred(mode, best_mode, self._preemption_over_borrowing):
                    best, best_mode = candidate, mode
            elif mode[0] > best_mode[0]:
                best, best_mode = candidate, mode
                if mode[0] is _FIT:
                    return _Scan(best, [], attempts)
        if self._fungibility:
            tried = -1 if attempted == len(group_flavors) - 1 else attempted
            for fa in best.values():
                fa.tried_flavor_idx = tried
            if best_mode[0] is _FIT:
                return _Scan(best, [], attempts)
        return _Scan(best, reasons, attempts)

    def _evaluate_flavor(
        self,
        fname: str,
        group_requests: list[tuple[str, int]],
        assumed: dict[FlavorResource, int],
        reasons: list[str],
        attempts: list[FlavorAttempt],
    ) -> tuple[dict[str, FlavorAssignment], _Granular]:
        """Quota outcome of ``fname`` for every requested resource of the group; the worst one represents it."""
        representative: _Granular = (_FIT, 0)
        max_borrow = 0
        flavor_reasons: list[str] = []
        no_fit_reason = ""
        candidate: dict[str, FlavorAssignment] = {}
        over_borrowing = self._preemption_over_borrowing
        fits = self._fits_resource_quota
        for res, value in group_requests:
            fr = (fname, res)
            # ``assumed`` (earlier pod sets' usage) is empty for the first pod set.
            check_mode, borrow, reason, check_no_fit = fits(
                fr, assumed.get(fr, 0) if assumed else 0, value
            )
            if reason is not None:
                flavor_reasons.append(reason)
                if check_no_fit != no_fit_reason:  # ``_most_severe``
                    no_fit_reason = _most_severe(no_fit_reason, check_no_fit)
            if borrow > max_borrow:
                max_borrow = borrow
            mode = (check_mode, borrow)
            # ``_preferred(a, a)`` is False: an equal outcome keeps the representative.
            if representative[0] is not _NO_FIT and mode != representative and _preferred(
                representative, mode, over_borrowing
            ):
                representative = mode
            if representative[0] is _NO_FIT:
                continue
            candidate[res] = FlavorAssignment(fname, _PUBLIC_MODE[check_mode], 0, borrow)
        reasons.extend(flavor_reasons)
        flavor_reasons.sort()
        attempts.append(
            FlavorAttempt(
                flavor=fname,
                mode=GranularMode(representative[0], max_borrow),
                reasons=flavor_reasons,
                no_fit_reason=no_fit_reason if self._observability else "",
                preemption_simulated=representative[0] in _SIMULATED_MODES,
                resource_groups=self.cq.groups_of_flavor.get(fname, ()),  # ``_groups_listing``
            )
        )
        return candidate, representative

    def _no_fit_attempt(self, fname: str, reasons: list[str]) -> FlavorAttempt:
        return FlavorAttempt(
            flavor=fname,
            mode=GranularMode(_NO_FIT, 0),
            reasons=reasons,
            no_fit_reason=NO_MATCHING_FLAVOR if self._observability else "",
            resource_groups=self._groups_listing(fname),
        )

    def _groups_listing(self, fname: str) -> tuple[int, ...]:
        """``findRGIndicesByFlavor``: every resource group of the ClusterQueue that lists ``fname``."""
        return self.cq.groups_of_flavor.get(fname, ())

    # --- upstream ``FlavorAssigner.checkFlavorForPodSets`` ---------------------------------------

    def _check_flavor(self, fname: str, psr: _PodSetRequests) -> tuple[str | None, str | None]:
        """``(ineligibility reason, error)`` of flavor ``fname`` for the pod set (for a PodSet group:
        for its first member the flavor does not suit); both None when eligible."""
        flavor = self.flavors.get(fname)
        if flavor is None:
            return f"flavor {fname} not found", None
        if psr.members is not None:
            for member in psr.members:
                ineligible, error = self._check_flavor(fname, member)
                if ineligible is not None or error is not None:
                    return ineligible, error
            return None, None
        spec = flavor.spec
        if spec.node_taints:
            if psr.tolerations is None:
                psr.tolerations = podspec.pod_tolerations(psr.info.spec)
            taint = podspec.first_untolerated_taint(spec.node_taints, [*psr.tolerations, *spec.tolerations])
            if taint is not None:
                return f"untolerated taint {podspec.format_taint(taint)} in flavor {fname}", None
        if spec.node_labels:
            try:
                matches = podspec.matches_flavor_node_labels(psr.info.spec, spec.node_labels)
            except podspec.SelectorError as err:
                return None, str(err)
            if not matches:
                return f"flavor {fname} doesn't match node affinity", None
        return None, None

    # --- upstream ``FlavorAssigner.fitsResourceQuota`` -------------------------------------------

    def _fits_resource_quota(self, fr: FlavorResource, assumed: int, request: int) -> _QuotaCheck:
        checks = self._checks
        if checks is None:
            return self._check_quota(fr, assumed, request)
        key = (fr, assumed, request)
        check = checks.get(key)
        if check is None:
            check = checks[key] = self._check_quota(fr, assumed, request)
        return check

    def _check_quota(self, fr: FlavorResource, assumed: int, request: int) -> _QuotaCheck:
        node = self.cq.node
        flavor, res = fr
        value = request if assumed == 0 else sat_add(assumed, request)  # sat_add(0, r) is r
        quota = node.quotas.get(fr)
        root = self._flat_root
        used = node.usage.get(fr, 0)
        if (
            root is not None
            and (quota is None or (quota.borrowing_limit is None and quota.lending_limit is None))
            and used >= 0
        ):
            # ``quota_views``' first case (its arithmetic, read here off the two nodes: four times
            # per head). The general case below is compared with it by
            # tests/core/test_core_shortcuts.py::test_assignment_with_inline_quota_views_equals_the_general_path.
            capacity = root.subtree_quota.get(fr, 0)
            root_used = root.usage.get(fr, 0)
            if capacity != UNLIMITED and root_used != UNLIMITED:
                free = capacity - root_used
                if free < 0:
                    free = 0
                elif free > UNLIMITED:
                    free = UNLIMITED
            else:
                free = max(0, sat_sub(capacity, root_used))
            held = used + value if used != UNLIMITED and value != UNLIMITED else UNLIMITED
            if held > UNLIMITED:
                held = UNLIMITED
            if node.subtree_quota.get(fr, 0) < held:
                borrow, may_reclaim = root.height(), False
            else:
                borrow, may_reclaim = 0, True
        else:
            capacity, borrow, may_reclaim, free = quota_views(node, fr, value)
        if value > capacity:
            # Amounts go through AmountQuantityString, the request through ResourceQuantityString
            # (no "<unlimited>" for it), as upstream's fitsResourceQuota prints them.
            return (
                _NO_FIT,
                0,
                f"insufficient quota for {res} in flavor {flavor}, previously considered podsets requests "
                f"({format_amount(res, assumed)}) + current podset request ({resource_quantity_string(res, request)}) "
                f"> maximum capacity ({format_amount(res, capacity)})",
                EXCEEDS_MAX_QUOTA,
            )
        if value <= free:
            return _FIT, borrow, None, ""
        reason = (
            f"insufficient unused quota for {res} in flavor {flavor}, "
            f"{format_amount(res, sat_sub(value, free))} more needed"
        )
        nominal = quota.nominal if quota is not None else 0
        if nominal >= value or may_reclaim or self._can_preempt_while_borrowing:
            if self._oracle_no_candidates:
                return _NO_CANDIDATES, borrow, reason, ""
            mode, level = self.oracle(self.cq, self.wl, fr, value)
            return mode, level, reason, WAITING_FOR_QUOTA if mode is _NO_FIT else ""
        return _NO_FIT, borrow, reason, WAITING_FOR_QUOTA

    # --- NoFit attempts (upstream ``flavor_assigner_attempts.go``) ----------------------------------

    def _merge_attempts(
        self, considered: dict[str, FlavorAttempt], attempts: list[FlavorAttempt], res: str, gi: int | None
    ) -> None:
        """Fold one scan's attempts into the pod set's per-flavor record (``mergeFlavorAttemptsForResource``)."""
        # The pod set's first scan (the only one with a single resource group): every flavor
        # considered afterwards is one of this scan's, so none can be missing from it below.
        first = not considered
        for attempt in attempts:
            existing = considered.get(attempt.flavor)
            if existing is None:
                if len(attempt.reasons) > 1:
                    attempt.reasons = sorted(set(attempt.reasons))
                considered[attempt.flavor] = attempt
            else:
                _merge_into(existing, attempt)
        if first or not attempts or gi is None:
            return
        # Only reachable when a flavor appears in several resource groups of the ClusterQueue.
        present = {a.flavor for a in attempts}
        group_flavors = self.cq.resource_groups[gi].flavors
        for fname, attempt in considered.items():
            if fname in group_flavors and fname not in present:
                attempt.mode = GranularMode(_NO_FIT, attempt.mode.borrowing_level)
                attempt.preemption_simulated = False
                attempt.reasons = sorted(
                    {*attempt.reasons, f"flavor {fname} does not provide resource {res}"}
                )
                if self._observability:
                    attempt.no_fit_reason = NO_MATCHING_FLAVOR


def _attempt_flavor(attempt: FlavorAttempt) -> str:
    return attempt.flavor


def _merge_into(existing: FlavorAttempt, other: FlavorAttempt) -> None:
    mode = min(existing.mode.preemption_mode, other.mode.preemption_mode)
    level = max(existing.mode.borrowing_level, other.mode.borrowing_level)
    existing.mode = GranularMode(mode, level)
    existing.preemption_simulated = mode in _SIMULATED_MODES and (
        existing.preemption_simulated or other.preemption_simulated
    )
    existing.reasons = sorted({*existing.reasons, *other.reasons})
    existing.no_fit_reason = _most_severe(existing.no_fit_reason, other.no_fit_reason)


def _append(assignment: Assignment, ps: PodSetAssignmentResult) -> None:
    """Add a pod set's result: its usage, its borrowing level and its remembered scan indexes."""
    assignment.pod_sets.append(ps)
    usage = assignment.usage
    tried: dict[str, int] = {}
    for res, fa in ps.flavors.items():
        if fa.borrow > assignment.borrowing:
            assignment.borrowing = fa.borrow
        fr = (fa.name, res)
        usage[fr] = sat_add(usage.get(fr, 0), ps.requests.get(res, 0))
        tried[res] = fa.tried_flavor_idx
    assert assignment.last_state is not None
    assignment.last_state.last_tried_flavor_idx.append(tried)


def assign_flavors(
    wl: WorkloadInfo,
    cq: ClusterQueueState,
    snapshot: Snapshot,
    options: SchedulerOptions,
    oracle: Oracle,
    counts: Sequence[int] | None = None,
    pin: NominationPin | None = None,
    cycle: int = 0,
) -> Assignment:
    """Convenience wrapper: ``FlavorAssigner(...).assign()``."""
    return FlavorAssigner(
        wl, cq, snapshot, options, oracle, counts=counts, nomination_pin=pin, cycle=cycle
    ).assign()


__all__ = [
    "FlavorAssigner",
    "NominationPin",
    "Oracle",
    "assign_flavors",
    "fnv1a_64",
    "is_preferred",
    "last_assignment_outdated",
    "resource_order",
]
