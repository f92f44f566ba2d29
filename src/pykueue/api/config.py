"""The Kueue ``Configuration`` file (upstream ``apis/config/v1beta2``, ``pkg/config``).

``config.kueue.x-k8s.io/v1beta2`` and ``v1beta1`` are accepted; decoding is strict (unknown
fields are errors), v1beta1 is converted to v1beta2 (``waitForPodsReady.enable`` /
``fairSharing.enable`` become presence), v1beta2 defaults are applied, then the configuration is
validated like ``pkg/config/validation.go``. Sections the scheduler reads (waitForPodsReady,
fairSharing, admissionFairSharing, resources, featureGates, objectRetentionPolicies) are typed
in depth; other sections are kept as written.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from pykueue.api.conversion import describe_validation_error
from pykueue.api.feature_gates import FeatureGateError, FeatureGates, parse_feature_gates_flag
from pykueue.api.meta import LabelSelector, LabelSelectorRequirement, label_selector_matches
from pykueue.api.validation import (
    IS_NEGATIVE_MSG,
    FieldError,
    aggregate,
    duplicate,
    invalid,
    not_supported,
    required,
    validate_label_selector,
)
from pykueue.kube.validation import is_dns1123_subdomain, is_valid_label_value

CONFIG_GROUP = "config.kueue.x-k8s.io"
CONFIG_V1BETA1 = f"{CONFIG_GROUP}/v1beta1"
CONFIG_V1BETA2 = f"{CONFIG_GROUP}/v1beta2"
CONFIG_KIND = "Configuration"
SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
DEFAULT_NAMESPACE = "kueue-system"

# --- durations ------------------------------------------------------------------------------------------

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.]*)")
_MAX_DURATION_NS = 2**63 - 1


class Duration:
    """A Go ``time.Duration`` (``metav1.Duration`` in YAML: ``"30m"``, ``"1h30m"``, ``"5s"``)."""

    __slots__ = ("nanoseconds",)

    def __init__(self, nanoseconds: int) -> None:
        self.nanoseconds = nanoseconds

    @classmethod
    def parse(cls, text: str) -> Duration:
        """Parse like Go ``time.ParseDuration``."""
        return cls(parse_duration_ns(text))

    @classmethod
    def of_seconds(cls, seconds: float) -> Duration:
        """A duration of ``seconds`` (rounded to whole nanoseconds)."""
        return cls(round(seconds * 1_000_000_000))

    @property
    def seconds(self) -> float:
        """The duration in seconds."""
        return self.nanoseconds / 1_000_000_000

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.nanoseconds == self.nanoseconds

    def __hash__(self) -> int:
        return hash(self.nanoseconds)

    def __repr__(self) -> str:
        return f"Duration({self})"

    def __str__(self) -> str:
        return format_duration(self.nanoseconds)


def parse_duration(text: str) -> float:
    """Parse a Go duration string (``30m``, ``1h30m``, ``5s``, ``1.5h``, ``300ms``) into seconds."""
    return parse_duration_ns(text) / 1_000_000_000


def parse_duration_ns(text: str) -> int:
    """Go ``time.ParseDuration`` returning nanoseconds; raises ``ValueError`` like Go's errors."""
    original, rest = text, text
    negative = rest[:1] == "-"
    rest = rest[1:] if rest[:1] in "+-" else rest
    if rest == "0":
        return 0
    if not rest:
        raise ValueError(f'time: invalid duration "{original}"')
    total = 0
    while rest:
        match = _DURATION_PART.match(rest)
        number, unit = (match.group(1), match.group(2)) if match else ("", "")
        if not number or number == ".":
            raise ValueError(f'time: invalid duration "{original}"')
        if not unit:
            raise ValueError(f'time: missing unit in duration "{original}"')
        if unit not in _NS_PER_UNIT:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        total += _scaled(number, _NS_PER_UNIT[unit], original)
        rest = rest[len(number) + len(unit) :]
    if total > _MAX_DURATION_NS:
        raise ValueError(f'time: invalid duration "{original}"')
    return -total if negative else total


def _scaled(number: str, scale: int, original: str) -> int:
    whole, _, frac = number.partition(".")
    value = int(whole or "0") * scale
    if frac:
        value += int(frac) * scale // 10 ** len(frac)
    if value > _MAX_DURATION_NS:
        raise ValueError(f'time: invalid duration "{original}"')
    return value


def format_duration(nanoseconds: int) -> str:
    """Go ``Duration.String()``: ``1h30m0s``, ``5m0s``, ``1.5s``, ``300ms``, ``0s``."""
    if nanoseconds == 0:
        return "0s"
    sign, u = ("-" if nanoseconds < 0 else ""), abs(nanoseconds)
    if u < 1_000_000_000:
        for unit, scale in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if u < scale * 1000:
                return f"{sign}{_fraction(u, scale)}{unit}"
    hours, rem = divmod(u, 3_600_000_000_000)
    minutes, rem = divmod(rem, 60_000_000_000)
    text = f"{hours}h" if hours else ""
    text += f"{minutes}m" if hours or minutes else ""
    return f"{sign}{text}{_fraction(rem, 1_000_000_000)}s"


def _fraction(value: int, scale: int) -> str:
    whole, frac = divmod(value, scale)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _dec_hook(typ: type[Any], obj: Any) -> Any:
    if typ is Duration:
        if not isinstance(obj, str):
            raise ValueError(f'a duration must be a string such as "30m", got {type(obj).__name__}')
        return Duration.parse(obj)
    raise NotImplementedError(f"unsupported type {typ!r}")


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Duration):
        return str(obj)
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


# --- typed model (v1beta2) ----------------------------------------------------------------------------------


class _Cfg(msgspec.Struct, rename="camel", omit_defaults=True, forbid_unknown_fields=True):
    pass


class RequeuingStrategy(_Cfg):
    """``waitForPodsReady.requeuingStrategy`` (backoff after a PodsReady eviction)."""

    timestamp: str | None = None
    backoff_limit_count: int | None = None
    backoff_base_seconds: int | None = None
    backoff_max_seconds: int | None = None


class WaitForPodsReady(_Cfg):
    """``waitForPodsReady``; present means enabled."""

    timeout: Duration | None = None
    block_admission: bool | None = None
    requeuing_strategy: RequeuingStrategy | None = None
    recovery_timeout: Duration | None = None


class FairSharingConfig(_Cfg):
    """``fairSharing``; present means fair sharing is on."""

    preemption_strategies: list[str] = []


class AdmissionFairSharingConfig(_Cfg):
    """``admissionFairSharing`` (usage-based admission fair sharing)."""

    usage_half_life_time: Duration | None = None
    usage_sampling_interval: Duration | None = None
    resource_weights: dict[str, float] = {}


class ResourceTransformation(_Cfg):
    """One ``resources.transformations`` entry (``apis/config`` ``ResourceTransformation``)."""

    input: str
    strategy: str | None = None
    multiply_by: str = ""
    outputs: dict[str, str | int | float] = {}


class ResourcesConfig(_Cfg):
    """``resources``: excluded prefixes, transformations, quota check strategy."""

    exclude_resource_prefixes: list[str] = []
    transformations: list[ResourceTransformation] = []
    quota_check_strategy: str | None = None
    device_class_mappings: list[dict[str, Any]] = []


class WorkloadRetentionPolicy(_Cfg):
    """``objectRetentionPolicies.workloads``."""

    after_finished: Duration | None = None
    after_deactivated_by_kueue: Duration | None = None


class ObjectRetentionPolicies(_Cfg):
    """``objectRetentionPolicies``."""

    workloads: WorkloadRetentionPolicy | None = None


class Integrations(_Cfg):
    """``integrations`` (job frameworks)."""

    frameworks: list[str] = []
    external_frameworks: list[str] = []
    label_keys_to_copy: list[str] = []


class InternalCertManagement(_Cfg):
    """``internalCertManagement``."""

    enable: bool | None = None
    webhook_service_name: str | None = None
    webhook_secret_name: str | None = None


class ClientConnection(_Cfg):
    """``clientConnection`` (API client rate limits)."""

    qps: float | None = None
    burst: int | None = None


class ControllerWebhook(_Cfg):
    """``webhook`` server settings."""

    port: int | None = None
    host: str = ""
    cert_dir: str = ""


class ControllerMetrics(_Cfg):
    """``metrics`` server settings."""

    bind_address: str = ""
    enable_cluster_queue_resources: bool = False
    local_queue_metrics: dict[str, Any] | None = None
    custom_labels: list[dict[str, Any]] = []


class ControllerHealth(_Cfg):
    """``health`` probe settings."""

    health_probe_bind_address: str = ""
    readiness_endpoint_name: str = ""
    liveness_endpoint_name: str = ""


class LeaderElection(_Cfg):
    """``leaderElection`` (component-base LeaderElectionConfiguration)."""

    leader_elect: bool | None = None
    lease_duration: Duration | None = None
    renew_deadline: Duration | None = None
    retry_period: Duration | None = None
    resource_lock: str = ""
    resource_name: str = ""
    resource_namespace: str = ""


class MultiKueueConfig(_Cfg):
    """``multiKueue`` controller settings."""

    gc_interval: Duration | None = None
    origin: str | None = None
    worker_lost_timeout: Duration | None = None
    dispatcher_name: str | None = None
    incremental_dispatcher_config: dict[str, Any] | None = None
    external_frameworks: list[dict[str, Any]] = []
    cluster_profile: dict[str, Any] | None = None


class Configuration(_Cfg):
    """``config.kueue.x-k8s.io/v1beta2`` ``Configuration``."""

    api_version: str = CONFIG_V1BETA2
    kind: str = CONFIG_KIND
    namespace: str | None = None
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: LabelSelector | None = None
    webhook: ControllerWebhook = msgspec.field(default_factory=ControllerWebhook)
    leader_election: LeaderElection | None = None
    metrics: ControllerMetrics = msgspec.field(default_factory=ControllerMetrics)
    health: ControllerHealth = msgspec.field(default_factory=ControllerHealth)
    pprof_bind_address: str = ""
    controller: dict[str, Any] | None = None
    tls: dict[str, Any] | None = None
    internal_cert_management: InternalCertManagement | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    client_connection: ClientConnection | None = None
    integrations: Integrations | None = None
    multi_kueue: MultiKueueConfig | None = None
    fair_sharing: FairSharingConfig | None = None
    admission_fair_sharing: AdmissionFairSharingConfig | None = None
    resources: ResourcesConfig | None = None
    feature_gates: dict[str, bool] | None = None
    object_retention_policies: ObjectRetentionPolicies | None = None
    visibility_server: dict[str, Any] | None = None


# --- loading ------------------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """An unreadable or invalid configuration file; ``errors`` holds validation errors if any."""

    def __init__(self, message: str, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


@dataclass(frozen=True)
class KueueConfig:
    """A loaded, defaulted and validated configuration plus the resulting feature gates."""

    configuration: Configuration
    feature_gates: FeatureGates
    source_version: str
    client_connection_set: bool = False
    """Whether the document itself had a ``clientConnection`` section (before defaulting)."""

    @property
    def wait_for_pods_ready(self) -> WaitForPodsReady | None:
        """The effective WaitForPodsReady section (None when disabled, incl. by gate)."""
        if self.feature_gates.enabled("DisableWaitForPodsReady"):
            return None
        return self.configuration.wait_for_pods_ready

    @property
    def fair_sharing(self) -> FairSharingConfig | None:
        """The fair-sharing section (its presence enables fair sharing)."""
        return self.configuration.fair_sharing

    @property
    def admission_fair_sharing(self) -> AdmissionFairSharingConfig | None:
        """The AFS section, when both configured and allowed by the ``AdmissionFairSharing`` gate."""
        if not self.feature_gates.enabled("AdmissionFairSharing"):
            return None
        return self.configuration.admission_fair_sharing


def load_config(
    text: str | None = None,
    *,
    source: str = "<config>",
    feature_gates_flag: str | None = None,
    namespace_file: str = SERVICE_ACCOUNT_NAMESPACE_FILE,
) -> KueueConfig:
    """Load a Configuration (``None``: no file, defaults only), resolve gates, default, validate."""
    data, version = _read_document(text, source)
    if version == CONFIG_V1BETA1:
        data = convert_v1beta1_config(data)
    cfg = decode_config(data, source)
    gates = resolve_feature_gates(cfg, feature_gates_flag)
    client_connection_set = cfg.client_connection is not None
    apply_config_defaults(
        cfg, namespace=operator_namespace(namespace_file), wait_for_pods_ready=version == CONFIG_V1BETA2
    )
    errors = validate_config(cfg, gates)
    if errors:
        raise ConfigError(f"{source}: invalid configuration: {aggregate(errors)}", errors)
    return KueueConfig(cfg, gates, version, client_connection_set)


def load_config_file(path: str, *, feature_gates_flag: str | None = None) -> KueueConfig:
    """:func:`load_config` on the contents of ``path``."""
    with open(path, encoding="utf-8") as handle:
        return load_config(handle.read(), source=path, feature_gates_flag=feature_gates_flag)


def _read_document(text: str | None, source: str) -> tuple[dict[str, Any], str]:
    from pykueue.api.manifests import ManifestError, load_yaml_documents

    if text is None:
        return {"apiVersion": CONFIG_V1BETA2, "kind": CONFIG_KIND}, CONFIG_V1BETA2
    try:
        documents = load_yaml_documents(text, source)
    except ManifestError as err:
        raise ConfigError(str(err)) from None
    if len(documents) != 1 or not isinstance(documents[0][1], dict):
        raise ConfigError(f"{source}: expected exactly one Configuration object")
    data = documents[0][1]
    version, kind = data.get("apiVersion"), data.get("kind")
    if kind != CONFIG_KIND or version not in (CONFIG_V1BETA1, CONFIG_V1BETA2):
        raise ConfigError(
            f'{source}: no kind "{kind}" is registered for version "{version}" '
            f"(expected kind {CONFIG_KIND} in {CONFIG_V1BETA1} or {CONFIG_V1BETA2})"
        )
    return data, str(version)


def decode_config(data: Mapping[str, Any], source: str = "<config>") -> Configuration:
    """Strictly decode a v1beta2 Configuration dict (unknown fields are errors)."""
    try:
        return msgspec.convert(dict(data), Configuration, dec_hook=_dec_hook)
    except msgspec.ValidationError as err:
        field, detail = describe_validation_error(str(err))
        if detail == "field not declared in schema":
            raise ConfigError(f'{source}: strict decoding error: unknown field "{field}"') from None
        raise ConfigError(f"{source}: {field}: {detail}" if field else f"{source}: {detail}") from None


def encode_config(cfg: Configuration) -> dict[str, Any]:
    """The configuration as a v1beta2 dict (durations in Go notation)."""
    encoded: dict[str, Any] = msgspec.to_builtins(cfg, enc_hook=_enc_hook)
    head = {"apiVersion": encoded.pop("apiVersion", cfg.api_version), "kind": encoded.pop("kind", cfg.kind)}
    return {**head, **encoded}


def convert_v1beta1_config(data: Mapping[str, Any]) -> dict[str, Any]:
    """v1beta1 → v1beta2 (``apis/config/v1beta1`` conversion): enable flags become presence; v1beta1-only fields dropped."""
    out = {key: value for key, value in data.items() if key != "queueVisibility"}
    out["apiVersion"] = CONFIG_V1BETA2
    wait = out.pop("waitForPodsReady", None)
    if isinstance(wait, Mapping) and wait.get("enable"):
        section = {key: value for key, value in wait.items() if key != "enable"}
        section.setdefault("timeout", "5m")
        section.setdefault("blockAdmission", True)
        out["waitForPodsReady"] = section
    fair = out.pop("fairSharing", None)
    if isinstance(fair, Mapping) and fair.get("enable"):
        strategies = fair.get("preemptionStrategies") or list(DEFAULT_V1BETA1_STRATEGIES)
        out["fairSharing"] = {"preemptionStrategies": strategies}
    integrations = out.get("integrations")
    if isinstance(integrations, Mapping):
        out["integrations"] = {key: value for key, value in integrations.items() if key != "podOptions"}
    return out


# --- feature gates ----------------------------------------------------------------------------------------


def resolve_feature_gates(cfg: Configuration, flag: str | None) -> FeatureGates:
    """Gates from ``--feature-gates`` or the ``featureGates`` map (never both)."""
    if flag and cfg.feature_gates is not None:
        raise ConfigError(
            "featureGates: Invalid value: feature gates for CLI and configuration cannot both specified"
        )
    try:
        if flag:
            return FeatureGates(parse_feature_gates_flag(flag))
        return FeatureGates(cfg.feature_gates or {})
    except FeatureGateError as err:
        raise ConfigError(f"featureGates: Invalid value: {err}") from None


# --- defaults ------------------------------------------------------------------------------------------------

DEFAULT_V1BETA1_STRATEGIES = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT = Duration.parse("30m")
DEFAULT_AFS_SAMPLING_INTERVAL = Duration.parse("5m")
MULTIKUEUE_DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
MULTIKUEUE_DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


def operator_namespace(namespace_file: str = SERVICE_ACCOUNT_NAMESPACE_FILE) -> str:
    """The in-cluster service-account namespace, else ``kueue-system``."""
    try:
        with open(namespace_file, encoding="utf-8") as handle:
            return handle.read().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


def apply_config_defaults(
    cfg: Configuration, *, namespace: str = DEFAULT_NAMESPACE, wait_for_pods_ready: bool = True
) -> None:
    """Apply the v1beta2 defaults (``apis/config/v1beta2/defaults.go``) in place.

    ``wait_for_pods_ready`` controls whether an absent ``waitForPodsReady`` section is created
    (true for v1beta2 files; a v1beta1 file that disabled it keeps it absent).
    """
    cfg.namespace = cfg.namespace or namespace
    _default_manager(cfg)
    if cfg.wait_for_pods_ready is None and wait_for_pods_ready:
        cfg.wait_for_pods_ready = WaitForPodsReady()
    if cfg.wait_for_pods_ready is not None:
        _default_wait_for_pods_ready(cfg.wait_for_pods_ready)
    cfg.integrations = cfg.integrations or Integrations()
    cfg.integrations.frameworks = cfg.integrations.frameworks or ["batch/job"]
    if cfg.managed_jobs_namespace_selector is None:
        requirement = LabelSelectorRequirement(
            "kubernetes.io/metadata.name", "NotIn", ["kube-system", cfg.namespace]
        )
        cfg.managed_jobs_namespace_selector = LabelSelector(match_expressions=[requirement])
    _default_multikueue(cfg)
    if cfg.admission_fair_sharing is not None:
        afs = cfg.admission_fair_sharing
        if afs.usage_sampling_interval is None or afs.usage_sampling_interval.nanoseconds == 0:
            afs.usage_sampling_interval = DEFAULT_AFS_SAMPLING_INTERVAL
    if cfg.resources is not None:
        for transformation in cfg.resources.transformations:
            transformation.strategy = transformation.strategy or "Retain"


def _default_manager(cfg: Configuration) -> None:
    cfg.webhook.port = cfg.webhook.port or 9443
    cfg.webhook.cert_dir = cfg.webhook.cert_dir or os.path.join(
        tempfile.gettempdir(), "k8s-webhook-server", "serving-certs"
    )
    cfg.metrics.bind_address = cfg.metrics.bind_address or ":8443"
    if cfg.metrics.local_queue_metrics is None:
        cfg.metrics.local_queue_metrics = {"enable": True}
    cfg.health.health_probe_bind_address = cfg.health.health_probe_bind_address or ":8081"
    cfg.health.readiness_endpoint_name = cfg.health.readiness_endpoint_name or "readyz"
    cfg.health.liveness_endpoint_name = cfg.health.liveness_endpoint_name or "healthz"
    election = cfg.leader_election or LeaderElection()
    election.leader_elect = True if election.leader_elect is None else election.leader_elect
    election.resource_name = election.resource_name or "c1f6bfd2.kueue.x-k8s.io"
    election.resource_lock = election.resource_lock or "leases"
    election.lease_duration = election.lease_duration or Duration.parse("15s")
    election.renew_deadline = election.renew_deadline or Duration.parse("10s")
    election.retry_period = election.retry_period or Duration.parse("2s")
    cfg.leader_election = election
    certs = cfg.internal_cert_management or InternalCertManagement()
    certs.enable = True if certs.enable is None else certs.enable
    if certs.enable:
        certs.webhook_service_name = certs.webhook_service_name or "kueue-webhook-service"
        certs.webhook_secret_name = certs.webhook_secret_name or "kueue-webhook-server-cert"
    cfg.internal_cert_management = certs
    client = cfg.client_connection or ClientConnection()
    client.qps = 300.0 if client.qps is None else client.qps
    client.burst = 500 if client.burst is None else client.burst
    cfg.client_connection = client


def _default_wait_for_pods_ready(wait: WaitForPodsReady) -> None:
    if wait.timeout is None or wait.timeout.nanoseconds == 0:
        wait.timeout = DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT
    wait.block_admission = False if wait.block_admission is None else wait.block_admission
    wait.recovery_timeout = wait.timeout if wait.recovery_timeout is None else wait.recovery_timeout
    strategy = wait.requeuing_strategy or RequeuingStrategy()
    strategy.timestamp = strategy.timestamp or "Eviction"
    strategy.backoff_base_seconds = (
        60 if strategy.backoff_base_seconds is None else strategy.backoff_base_seconds
    )
    strategy.backoff_max_seconds = (
        3600 if strategy.backoff_max_seconds is None else strategy.backoff_max_seconds
    )
    wait.requeuing_strategy = strategy


def _default_multikueue(cfg: Configuration) -> None:
    mk = cfg.multi_kueue or MultiKueueConfig()
    mk.gc_interval = mk.gc_interval if mk.gc_interval is not None else Duration.parse("1m")
    mk.origin = mk.origin or "multikueue"
    mk.worker_lost_timeout = (
        mk.worker_lost_timeout if mk.worker_lost_timeout is not None else Duration.parse("15m")
    )
    mk.dispatcher_name = mk.dispatcher_name or MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
    if mk.dispatcher_name == MULTIKUEUE_DISPATCHER_INCREMENTAL:
        dispatcher = dict(mk.incremental_dispatcher_config or {})
        dispatcher.setdefault("stepSize", 3)
        mk.incremental_dispatcher_config = dispatcher
    cfg.multi_kueue = mk


# --- validation ----------------------------------------------------------------------------------------------

KNOWN_FRAMEWORKS = (
    "batch/job",
    "deployment",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/jaxjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "pod",
    "ray.io/raycluster",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "statefulset",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
)
VALID_PREEMPTION_STRATEGY_SETS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)
QUOTA_CHECK_STRATEGIES = ("IgnoreUndeclared", "BlockUndeclared")


def validate_config(cfg: Configuration, gates: FeatureGates) -> list[FieldError]:
    """``pkg/config/validation.go``: the errors that abort Kueue's startup."""
    errs = _validate_wait_for_pods_ready(cfg.wait_for_pods_ready)
    errs += _validate_integrations(cfg)
    errs += _validate_multikueue(cfg.multi_kueue)
    errs += _validate_fair_sharing(cfg.fair_sharing)
    errs += _validate_afs(cfg.admission_fair_sharing)
    errs += _validate_cert_management(cfg.internal_cert_management)
    errs += _validate_transformations(cfg.resources)
    errs += _validate_managed_namespace_selector(cfg)
    errs += _validate_retention(cfg.object_retention_policies)
    if gates.enabled("QuotaCheckStrategy"):
        errs += _validate_quota_check_strategy(cfg.resources)
    return errs + [invalid("featureGates", msg.split(" ")[0], msg) for msg in gates.dependency_errors()]


def _negative(path: str, value: Duration | None) -> list[FieldError]:
    return [invalid(path, str(value), IS_NEGATIVE_MSG)] if value is not None and value.nanoseconds < 0 else []


def _validate_wait_for_pods_ready(wait: WaitForPodsReady | None) -> list[FieldError]:
    if wait is None:
        return []
    path = "waitForPodsReady"
    errs: list[FieldError] = []
    if wait.timeout is None or wait.timeout.nanoseconds == 0:
        errs.append(required(f"{path}.timeout", "must be specified"))
    errs += _negative(f"{path}.timeout", wait.timeout) + _negative(
        f"{path}.recoveryTimeout", wait.recovery_timeout
    )
    strategy = wait.requeuing_strategy
    if strategy is not None:
        sp = f"{path}.requeuingStrategy"
        if strategy.timestamp is not None and strategy.timestamp not in ("Creation", "Eviction"):
            errs.append(not_supported(f"{sp}.timestamp", strategy.timestamp, ["Creation", "Eviction"]))
        for name, value in (
            ("backoffLimitCount", strategy.backoff_limit_count),
            ("backoffBaseSeconds", strategy.backoff_base_seconds),
            ("backoffMaxSeconds", strategy.backoff_max_seconds),
        ):
            if value is not None and value < 0:
                errs.append(invalid(f"{sp}.{name}", value, IS_NEGATIVE_MSG))
    return errs


def _validate_integrations(cfg: Configuration) -> list[FieldError]:
    integrations = cfg.integrations
    if integrations is None:
        return [required("integrations", "cannot be empty")]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, framework in enumerate(integrations.frameworks):
        path = f"integrations.frameworks[{i}]"
        if framework not in KNOWN_FRAMEWORKS:
            errs.append(not_supported(path, framework, KNOWN_FRAMEWORKS))
        elif framework in seen:
            errs.append(duplicate(path, framework))
        seen.add(framework)
    for i, framework in enumerate(integrations.external_frameworks):
        path = f"integrations.externalFrameworks[{i}]"
        if len(framework.split(".", 2)) < 3 or not all(framework.split(".", 2)):
            errs.append(invalid(path, framework, "must be format, 'Kind.version.group.com'"))
        elif framework in seen:
            errs.append(duplicate(path, framework))
        seen.add(framework)
    if "pod" in integrations.frameworks and cfg.managed_jobs_namespace_selector is None:
        errs.append(
            required("managedJobsNamespaceSelector", "cannot be empty when pod integration is enabled")
        )
    return errs


def _validate_multikueue(mk: MultiKueueConfig | None) -> list[FieldError]:
    if mk is None:
        return []
    errs = _negative("multiKueue.gcInterval", mk.gc_interval) + _negative(
        "multiKueue.workerLostTimeout", mk.worker_lost_timeout
    )
    if mk.origin is not None:
        problems = is_valid_label_value(mk.origin)
        errs += [invalid("multiKueue.origin", mk.origin, ",".join(problems))] if problems else []
    if mk.incremental_dispatcher_config is not None:
        path = "multiKueue.incrementalDispatcherConfig"
        if mk.dispatcher_name != MULTIKUEUE_DISPATCHER_INCREMENTAL:
            errs.append(
                invalid(
                    path,
                    mk.incremental_dispatcher_config,
                    "incrementalDispatcherConfig is only valid when dispatcherName is set to the incremental dispatcher",
                )
            )
        step = mk.incremental_dispatcher_config.get("stepSize")
        if isinstance(step, int) and step < 1:
            errs.append(invalid(f"{path}.stepSize", step, "must be greater than or equal to 1"))
    return errs


def _validate_fair_sharing(fair: FairSharingConfig | None) -> list[FieldError]:
    if fair is None:
        return []
    path = "fairSharing.preemptionStrategies"
    if not fair.preemption_strategies:
        return [required(path, "must be specified")]
    if tuple(fair.preemption_strategies) not in VALID_PREEMPTION_STRATEGY_SETS:
        return [
            not_supported(
                path, fair.preemption_strategies, [",".join(s) for s in VALID_PREEMPTION_STRATEGY_SETS]
            )
        ]
    return []


def _validate_afs(afs: AdmissionFairSharingConfig | None) -> list[FieldError]:
    if afs is None:
        return []
    errs = _negative("admissionFairSharing.usageHalfLifeTime", afs.usage_half_life_time)
    if afs.usage_sampling_interval is None or afs.usage_sampling_interval.nanoseconds <= 0:
        errs.append(
            invalid(
                "admissionFairSharing.usageSamplingInterval",
                str(afs.usage_sampling_interval),
                "must be greater than 0",
            )
        )
    for name, weight in afs.resource_weights.items():
        if weight < 0:
            errs.append(invalid(f"admissionFairSharing.resourceWeights[{name}]", weight, IS_NEGATIVE_MSG))
    return errs


def _validate_cert_management(certs: InternalCertManagement | None) -> list[FieldError]:
    if certs is None or not certs.enable:
        return []
    errs: list[FieldError] = []
    if certs.webhook_service_name is not None and (problems := is_dns1035_label(certs.webhook_service_name)):
        errs.append(
            invalid(
                "internalCertManagement.webhookServiceName", certs.webhook_service_name, ",".join(problems)
            )
        )
    if certs.webhook_secret_name is not None and (
        problems := is_dns1123_subdomain(certs.webhook_secret_name)
    ):
        errs.append(
            invalid("internalCertManagement.webhookSecretName", certs.webhook_secret_name, ",".join(problems))
        )
    return errs


_DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def is_dns1035_label(value: str) -> list[str]:
    """apimachinery ``IsDNS1035Label``."""
    errs = [] if len(value) <= 63 else ["must be no more than 63 characters"]
    if not _DNS1035_RE.match(value):
        errs.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
            "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
            "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        )
    return errs


def _validate_transformations(resources: ResourcesConfig | None) -> list[FieldError]:
    if resources is None:
        return []
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, transformation in enumerate(resources.transformations):
        path = f"resources.transformations[{i}]"
        if transformation.strategy not in ("Retain", "Replace"):
            errs.append(not_supported(f"{path}.strategy", transformation.strategy, ["Retain", "Replace"]))
        if transformation.input in seen:
            errs.append(duplicate(f"{path}.input", transformation.input))
        seen.add(transformation.input)
    return errs


def _validate_managed_namespace_selector(cfg: Configuration) -> list[FieldError]:
    selector = cfg.managed_jobs_namespace_selector
    path = "managedJobsNamespaceSelector"
    errs = validate_label_selector(selector, path)
    if selector is None or errs:
        return errs
    for namespace in ("kube-system", cfg.namespace or ""):
        if namespace and label_selector_matches(selector, {"kubernetes.io/metadata.name": namespace}):
            errs.append(invalid(path, selector, f'should not match the "{namespace}" namespace'))
    return errs


def _validate_retention(policies: ObjectRetentionPolicies | None) -> list[FieldError]:
    if policies is None or policies.workloads is None:
        return []
    path = "objectRetentionPolicies.workloads"
    workloads = policies.workloads
    return _negative(f"{path}.afterFinished", workloads.after_finished) + _negative(
        f"{path}.afterDeactivatedByKueue", workloads.after_deactivated_by_kueue
    )


def _validate_quota_check_strategy(resources: ResourcesConfig | None) -> list[FieldError]:
    if resources is None or resources.quota_check_strategy is None:
        return []
    strategy, path = resources.quota_check_strategy, "resources.quotaCheckStrategy"
    errs: list[FieldError] = []
    if resources.exclude_resource_prefixes and strategy == "IgnoreUndeclared":
        errs.append(
            invalid(
                path,
                strategy,
                "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared",
            )
        )
    if strategy not in QUOTA_CHECK_STRATEGIES:
        errs.append(not_supported(path, strategy, QUOTA_CHECK_STRATEGIES))
    return errs
