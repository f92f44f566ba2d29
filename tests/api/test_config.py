"""Kueue Configuration (upstream ``apis/config/v1beta2``) and feature gates
(``pkg/features/kube_features.go``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykueue.api.config import (
    ConfigError,
    Duration,
    encode_config,
    format_duration,
    load_config,
    parse_duration,
)
from pykueue.api.feature_gates import DEFAULT_FEATURE_GATES, FeatureGateError, FeatureGates, parse_go_bool

V2_HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
V1_HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
NO_FILE = "/nonexistent/namespace"


def load(body: str, header: str = V2_HEADER, flag: str | None = None):  # type: ignore[no-untyped-def]
    return load_config(header + body, feature_gates_flag=flag, namespace_file=NO_FILE)


# --- durations ------------------------------------------------------------------------------------------

DURATIONS = [
    ("minutes", "30m", 1800.0, "30m0s"),
    ("hours and minutes", "1h30m", 5400.0, "1h30m0s"),
    ("seconds", "5s", 5.0, "5s"),
    ("fractional hours", "1.5h", 5400.0, "1h30m0s"),
    ("milliseconds", "300ms", 0.3, "300ms"),
    ("micro sign", "2µs", 0.000002, "2µs"),
    ("nanoseconds", "7ns", 0.000000007, "7ns"),
    ("fractional seconds", "1.5s", 1.5, "1.5s"),
    ("zero", "0", 0.0, "0s"),
    ("negative", "-1m30s", -90.0, "-1m30s"),
    ("mixed units", "2h3m4s5ms", 7384.005, "2h3m4.005s"),
]


@pytest.mark.parametrize(
    ("text", "seconds", "formatted"), [c[1:] for c in DURATIONS], ids=[c[0] for c in DURATIONS]
)
def test_durations(text: str, seconds: float, formatted: str) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert format_duration(Duration.parse(text).nanoseconds) == formatted


DURATION_ERRORS = [
    ("missing unit", "5", 'time: missing unit in duration "5"'),
    ("unknown unit", "5d", 'time: unknown unit "d" in duration "5d"'),
    ("empty", "", 'time: invalid duration ""'),
    ("garbage", "abc", 'time: invalid duration "abc"'),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in DURATION_ERRORS], ids=[c[0] for c in DURATION_ERRORS]
)
def test_duration_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert str(info.value) == message


# --- feature gates ----------------------------------------------------------------------------------------


def test_default_gates_from_the_reference_tables() -> None:
    gates = FeatureGates()
    assert gates.enabled("PartialAdmission") and gates.enabled("FairSharingPrioritizeNonBorrowing")
    assert not gates.enabled("UnadmittedWorkloadsExplicitStatus") and not gates.enabled(
        "PrioritizePreemptorWorkloads"
    )
    assert len(gates) == len(DEFAULT_FEATURE_GATES)


def test_every_upstream_gate_is_registered_with_its_default() -> None:
    """All 80 gates of upstream's ``defaultVersionedFeatureGates`` at ff69552e79 load, so a Kueue
    ``--feature-gates`` value or ``featureGates`` map is never refused for naming one; gates of
    what pykueue does not implement keep upstream's defaults (TLSOptions is GA, locked on)."""
    assert len(DEFAULT_FEATURE_GATES) == 80
    gates = FeatureGates.parse("FailureRecoveryPolicy=true,TASProfileMixed=false,SchedulerLibraryIntegration=true")
    assert gates.overrides() == {"FailureRecoveryPolicy": True, "TASProfileMixed": False, "SchedulerLibraryIntegration": True}
    assert FeatureGates().enabled("TASMultiLayerTopology") and not FeatureGates().enabled("SparkApplicationIntegration")
    with pytest.raises(FeatureGateError, match="cannot set feature gate TLSOptions to false, feature is locked to true"):
        FeatureGates.parse("TLSOptions=false")


def test_parse_feature_gates_flag() -> None:
    gates = FeatureGates.parse("PriorityBoost=true, PartialAdmission=f,,")
    assert gates.enabled("PriorityBoost") and not gates.enabled("PartialAdmission")
    assert gates.overrides() == {"PriorityBoost": True, "PartialAdmission": False}


GATE_ERRORS = [
    ("unknown gate", "NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("missing value", "PriorityBoost", "missing bool value for PriorityBoost"),
    (
        "bad bool",
        "PriorityBoost=yes",
        'invalid value of PriorityBoost=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
    ),
    (
        "locked gate",
        "ManagedJobsNamespaceSelectorAlwaysRespected=false",
        "cannot set feature gate ManagedJobsNamespaceSelectorAlwaysRespected to false, feature is locked to true",
    ),
]


@pytest.mark.parametrize(("spec", "message"), [c[1:] for c in GATE_ERRORS], ids=[c[0] for c in GATE_ERRORS])
def test_feature_gate_errors(spec: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as info:
        FeatureGates.parse(spec)
    assert str(info.value) == message


def test_enabled_unknown_gate_is_an_error() -> None:
    with pytest.raises(FeatureGateError, match="'Nope'"):
        FeatureGates().enabled("Nope")


@pytest.mark.parametrize(
    ("text", "value"), [("1", True), ("T", True), ("True", True), ("0", False), ("FALSE", False)]
)
def test_go_bool_spellings(text: str, value: bool) -> None:
    assert parse_go_bool(text) is value


def test_gate_dependencies() -> None:
    gates = FeatureGates(
        {"UnadmittedWorkloadsExplicitStatus": True, "UnadmittedWorkloadsObservability": False}
    )
    assert gates.dependency_errors() == [
        "UnadmittedWorkloadsExplicitStatus requires UnadmittedWorkloadsObservability to be enabled"
    ]


# --- loading and defaults ---------------------------------------------------------------------------------


def test_no_file_gives_v1beta2_defaults() -> None:
    loaded = load_config(None, namespace_file=NO_FILE)
    cfg = loaded.configuration
    assert loaded.source_version == "config.kueue.x-k8s.io/v1beta2"
    assert cfg.namespace == "kueue-system"
    wait = cfg.wait_for_pods_ready
    assert (
        wait is not None
        and wait.timeout == Duration.parse("30m")
        and wait.recovery_timeout == Duration.parse("30m")
    )
    assert wait.block_admission is False
    assert wait.requeuing_strategy is not None
    assert (wait.requeuing_strategy.timestamp, wait.requeuing_strategy.backoff_base_seconds) == (
        "Eviction",
        60,
    )
    assert (wait.requeuing_strategy.backoff_max_seconds, wait.requeuing_strategy.backoff_limit_count) == (
        3600,
        None,
    )
    assert cfg.fair_sharing is None and cfg.admission_fair_sharing is None
    assert cfg.integrations is not None and cfg.integrations.frameworks == ["batch/job"]
    assert cfg.client_connection is not None and (cfg.client_connection.qps, cfg.client_connection.burst) == (
        300.0,
        500,
    )
    assert encode_config(cfg)["managedJobsNamespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", "kueue-system"],
            }
        ]
    }


def test_namespace_read_from_service_account_file(tmp_path: Path) -> None:
    path = tmp_path / "namespace"
    path.write_text("custom-ns\n")
    cfg = load_config(None, namespace_file=str(path)).configuration
    assert cfg.namespace == "custom-ns"


def test_v1beta2_recovery_timeout_and_blocking() -> None:
    wait = load(
        "waitForPodsReady: {timeout: 5m, blockAdmission: true, recoveryTimeout: 0s}\n"
    ).configuration.wait_for_pods_ready
    assert wait is not None
    assert (wait.timeout, wait.recovery_timeout, wait.block_admission) == (
        Duration.parse("5m"),
        Duration(0),
        True,
    )


def test_v1beta1_without_wait_for_pods_ready_disables_it() -> None:
    loaded = load("manageJobsWithoutQueueName: true\n", header=V1_HEADER)
    assert loaded.source_version == "config.kueue.x-k8s.io/v1beta1"
    assert loaded.configuration.wait_for_pods_ready is None
    assert loaded.wait_for_pods_ready is None


def test_v1beta1_enabled_sections_convert() -> None:
    cfg = load(
        "waitForPodsReady: {enable: true}\nfairSharing: {enable: true}\nqueueVisibility: {updateIntervalSeconds: 5}\n"
        "integrations: {frameworks: [batch/job], podOptions: {namespaceSelector: {}}}\n",
        header=V1_HEADER,
    ).configuration
    assert cfg.wait_for_pods_ready is not None
    assert (cfg.wait_for_pods_ready.timeout, cfg.wait_for_pods_ready.block_admission) == (
        Duration.parse("5m"),
        True,
    )
    assert cfg.wait_for_pods_ready.recovery_timeout == Duration.parse("5m")
    assert cfg.fair_sharing is not None
    assert cfg.fair_sharing.preemption_strategies == ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]


def test_v1beta1_disabled_sections_are_dropped() -> None:
    cfg = load(
        "waitForPodsReady: {enable: false, timeout: 3m}\nfairSharing: {enable: false}\n", header=V1_HEADER
    ).configuration
    assert cfg.wait_for_pods_ready is None and cfg.fair_sharing is None


def test_typed_sections_in_depth() -> None:
    cfg = load(
        "fairSharing: {preemptionStrategies: [LessThanInitialShare]}\n"
        "admissionFairSharing: {usageHalfLifeTime: 10m, resourceWeights: {cpu: 2.5}}\n"
        "resources:\n  excludeResourcePrefixes: [example.com/]\n  transformations:\n"
        "  - {input: nvidia.com/mig-1g.5gb, strategy: Replace, outputs: {example.com/credits: 10}}\n"
        "  - {input: nvidia.com/gpu, multiplyBy: x}\n"
        "objectRetentionPolicies: {workloads: {afterFinished: 1h}}\n"
    ).configuration
    assert cfg.fair_sharing is not None and cfg.fair_sharing.preemption_strategies == ["LessThanInitialShare"]
    afs = cfg.admission_fair_sharing
    assert (
        afs is not None
        and afs.usage_sampling_interval == Duration.parse("5m")
        and afs.resource_weights == {"cpu": 2.5}
    )
    assert afs.usage_half_life_time is not None and afs.usage_half_life_time.seconds == 600
    assert cfg.resources is not None
    assert [t.strategy for t in cfg.resources.transformations] == ["Replace", "Retain"]
    assert cfg.object_retention_policies is not None and cfg.object_retention_policies.workloads is not None
    assert cfg.object_retention_policies.workloads.after_finished == Duration.parse("1h")


def test_other_sections_are_kept() -> None:
    cfg = load(
        "visibilityServer: {bindPort: 9000}\ncontroller: {groupKindConcurrency: {Workload.kueue.x-k8s.io: 5}}\n"
    ).configuration
    encoded = encode_config(cfg)
    assert encoded["visibilityServer"] == {"bindPort": 9000}
    assert encoded["controller"] == {"groupKindConcurrency": {"Workload.kueue.x-k8s.io": 5}}
    assert list(encoded)[:2] == ["apiVersion", "kind"]


def test_gate_interactions() -> None:
    loaded = load(
        "admissionFairSharing: {usageHalfLifeTime: 1m}\n",
        flag="DisableWaitForPodsReady=true,AdmissionFairSharing=false",
    )
    assert loaded.configuration.wait_for_pods_ready is not None
    assert loaded.wait_for_pods_ready is None
    assert loaded.admission_fair_sharing is None
    assert load("featureGates: {PriorityBoost: true}\n").feature_gates.enabled("PriorityBoost")


LOAD_ERRORS = [
    ("unknown top-level field", "colour: red\n", '<config>: strict decoding error: unknown field "colour"'),
    (
        "unknown nested field",
        "waitForPodsReady: {enable: true}\n",
        '<config>: strict decoding error: unknown field "waitForPodsReady.enable"',
    ),
    (
        "bad duration",
        "waitForPodsReady: {timeout: 10}\n",
        '<config>: waitForPodsReady.timeout: Invalid value: a duration must be a string such as "30m", got int',
    ),
    ("wrong kind", "", "<config>: no kind"),
    (
        "gate flag and map together",
        "featureGates: {PriorityBoost: true}\n",
        "featureGates: Invalid value: feature gates for CLI and configuration cannot both specified",
    ),
    (
        "unknown gate in map",
        "featureGates: {Nope: true}\n",
        "featureGates: Invalid value: unrecognized feature gate: Nope",
    ),
]


@pytest.mark.parametrize(("body", "message"), [c[1:] for c in LOAD_ERRORS], ids=[c[0] for c in LOAD_ERRORS])
def test_load_errors(body: str, message: str) -> None:
    header = "apiVersion: v1\nkind: ConfigMap\n" if "no kind" in message else V2_HEADER
    flag = "PriorityBoost=false" if "cannot both" in message else None
    with pytest.raises(ConfigError) as info:
        load(body, header=header, flag=flag)
    assert str(info.value).startswith(message)


# --- validation -------------------------------------------------------------------------------------------

VALIDATION_CASES = [
    (
        "fair sharing strategies required",
        "fairSharing: {}\n",
        ["fairSharing.preemptionStrategies: Required value: must be specified"],
    ),
    (
        "fair sharing strategies set",
        "fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}\n",
        [
            'fairSharing.preemptionStrategies: Unsupported value: []string{"LessThanInitialShare", "LessThanOrEqualToFinalShare"}: '
            'supported values: "LessThanOrEqualToFinalShare", "LessThanInitialShare", '
            '"LessThanOrEqualToFinalShare,LessThanInitialShare"'
        ],
    ),
    (
        "negative timeout",
        "waitForPodsReady: {timeout: -1m, recoveryTimeout: 1m}\n",
        ['waitForPodsReady.timeout: Invalid value: "-1m0s": must be greater than or equal to 0'],
    ),
    (
        "requeuing strategy",
        "waitForPodsReady: {timeout: 1m, requeuingStrategy: {timestamp: Now, backoffLimitCount: -1}}\n",
        [
            'waitForPodsReady.requeuingStrategy.timestamp: Unsupported value: "Now": supported values: "Creation", "Eviction"',
            "waitForPodsReady.requeuingStrategy.backoffLimitCount: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "unknown framework",
        "integrations: {frameworks: [batch/job, foo.io/bar, batch/job]}\n",
        [
            'integrations.frameworks[1]: Unsupported value: "foo.io/bar": supported values: "batch/job", "deployment", '
            '"jobset.x-k8s.io/jobset", "kubeflow.org/jaxjob", "kubeflow.org/mpijob", "kubeflow.org/paddlejob", '
            '"kubeflow.org/pytorchjob", "kubeflow.org/tfjob", "kubeflow.org/xgboostjob", '
            '"leaderworkerset.x-k8s.io/leaderworkerset", "pod", "ray.io/raycluster", "ray.io/rayjob", "ray.io/rayservice", '
            '"statefulset", "trainer.kubeflow.org/trainjob", "workload.codeflare.dev/appwrapper"',
            'integrations.frameworks[2]: Duplicate value: "batch/job"',
        ],
    ),
    (
        "external framework format",
        "integrations: {frameworks: [batch/job], externalFrameworks: [Foo]}\n",
        [
            "integrations.externalFrameworks[0]: Invalid value: \"Foo\": must be format, 'Kind.version.group.com'"
        ],
    ),
    (
        "afs sampling interval and weights",
        "admissionFairSharing: {usageHalfLifeTime: -1s, usageSamplingInterval: -5m, resourceWeights: {cpu: -1}}\n",
        [
            'admissionFairSharing.usageHalfLifeTime: Invalid value: "-1s": must be greater than or equal to 0',
            'admissionFairSharing.usageSamplingInterval: Invalid value: "-5m0s": must be greater than 0',
            "admissionFairSharing.resourceWeights[cpu]: Invalid value: -1: must be greater than or equal to 0",
        ],
    ),
    (
        "transformations",
        "resources: {transformations: [{input: gpu, strategy: Keep}, {input: gpu}]}\n",
        [
            'resources.transformations[0].strategy: Unsupported value: "Keep": supported values: "Retain", "Replace"',
            'resources.transformations[1].input: Duplicate value: "gpu"',
        ],
    ),
    (
        "quota check strategy forbids excluded prefixes",
        "resources: {excludeResourcePrefixes: [x/], quotaCheckStrategy: IgnoreUndeclared}\n",
        [
            'resources.quotaCheckStrategy: Invalid value: "IgnoreUndeclared": '
            "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared"
        ],
    ),
    (
        "quota check strategy enum",
        "resources: {quotaCheckStrategy: Whatever}\n",
        [
            'resources.quotaCheckStrategy: Unsupported value: "Whatever": supported values: "IgnoreUndeclared", "BlockUndeclared"'
        ],
    ),
    (
        "managed namespace selector must exclude kube-system",
        "managedJobsNamespaceSelector: {}\n",
        [
            'managedJobsNamespaceSelector: Invalid value: {}: should not match the "kube-system" namespace',
            'managedJobsNamespaceSelector: Invalid value: {}: should not match the "kueue-system" namespace',
        ],
    ),
    (
        "retention must be non-negative",
        "objectRetentionPolicies: {workloads: {afterDeactivatedByKueue: -1h}}\n",
        [
            'objectRetentionPolicies.workloads.afterDeactivatedByKueue: Invalid value: "-1h0m0s": must be greater than or equal to 0'
        ],
    ),
    (
        "multikueue origin and dispatcher config",
        "multiKueue: {origin: 'bad origin', incrementalDispatcherConfig: {stepSize: 0}}\n",
        [
            'multiKueue.origin: Invalid value: "bad origin": a valid label must be an empty string or consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            'multiKueue.incrementalDispatcherConfig: Invalid value: {"stepSize":0}: incrementalDispatcherConfig is only '
            "valid when dispatcherName is set to the incremental dispatcher",
            "multiKueue.incrementalDispatcherConfig.stepSize: Invalid value: 0: must be greater than or equal to 1",
        ],
    ),
    (
        "feature gate dependencies",
        "featureGates: {UnadmittedWorkloadsExplicitStatus: true, UnadmittedWorkloadsObservability: false}\n",
        [
            'featureGates: Invalid value: "UnadmittedWorkloadsExplicitStatus": UnadmittedWorkloadsExplicitStatus requires '
            "UnadmittedWorkloadsObservability to be enabled"
        ],
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [c[1:] for c in VALIDATION_CASES], ids=[c[0] for c in VALIDATION_CASES]
)
def test_config_validation(body: str, expected: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        load(body)
    assert [str(e) for e in info.value.errors] == expected
    assert str(info.value).startswith("<config>: invalid configuration: ")


def test_incremental_dispatcher_step_size_default() -> None:
    cfg = load(
        "multiKueue: {dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental}\n"
    ).configuration
    assert cfg.multi_kueue is not None and cfg.multi_kueue.incremental_dispatcher_config == {"stepSize": 3}


def test_load_config_file(tmp_path: Path) -> None:
    from pykueue.api.config import load_config_file

    path = tmp_path / "config.yaml"
    path.write_text(V2_HEADER + "fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}\n")
    assert load_config_file(str(path)).fair_sharing is not None
