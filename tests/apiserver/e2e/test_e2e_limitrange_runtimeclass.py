"""core/v1 LimitRange and node.k8s.io/v1 RuntimeClass through the real kubectl against ``pykueue serve``.

kubectl used to answer ``no matches for kind "LimitRange" in version "v1"``: discovery, apply,
get (table, yaml), describe, explain, invalid objects and delete for both kinds.
"""

from __future__ import annotations

import re

import yaml
from conftest import ServerProcess

LIMIT_RANGE = """\
apiVersion: v1
kind: LimitRange
metadata:
  name: cpu-mem
  namespace: default
spec:
  limits:
  - type: Container
    max:
      cpu: "2"
      memory: 1Gi
    min:
      cpu: 100m
    defaultRequest:
      cpu: 500m
  - type: Pod
    max:
      cpu: "4"
"""

RUNTIME_CLASS = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
overhead:
  podFixed:
    cpu: 250m
    memory: 120Mi
scheduling:
  nodeSelector:
    runtime: gvisor
  tolerations:
  - key: runtime
    operator: Equal
    value: gvisor
    effect: NoSchedule
"""


def _rows(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_discovery_lists_both_kinds(server: ServerProcess) -> None:
    core = _rows(server.kubectl("api-resources", "--api-group=").stdout)
    assert ["limitranges", "limits", "v1", "true", "LimitRange"] in core
    node = _rows(server.kubectl("api-resources", "--api-group=node.k8s.io").stdout)
    assert ["runtimeclasses", "node.k8s.io/v1", "false", "RuntimeClass"] in node
    assert "node.k8s.io/v1" in server.kubectl("api-versions").stdout.split()


def test_limit_range_apply_get_describe_delete(server: ServerProcess) -> None:
    out = server.kubectl("apply", "-f", "-", stdin=LIMIT_RANGE).stdout
    assert out == "limitrange/cpu-mem created\n"
    table = _rows(server.kubectl("get", "limits").stdout)
    assert table[0] == ["NAME", "CREATED AT"]
    assert table[1][0] == "cpu-mem" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", table[1][1])
    obj = yaml.safe_load(server.kubectl("get", "limitrange", "cpu-mem", "-o", "yaml").stdout)
    container, pod = obj["spec"]["limits"]
    # SetDefaults_LimitRangeItem: default from max, defaultRequest kept (cpu) or from default (memory)
    assert container == {
        "type": "Container",
        "max": {"cpu": "2", "memory": "1Gi"},
        "min": {"cpu": "100m"},
        "default": {"cpu": "2", "memory": "1Gi"},
        "defaultRequest": {"cpu": "500m", "memory": "1Gi"},
    }
    assert pod == {"type": "Pod", "max": {"cpu": "4"}}
    described = server.kubectl("describe", "limitrange", "cpu-mem").stdout
    assert "Name:       cpu-mem" in described and "Container" in described
    # spec.limits is an atomic list and the live one carries the defaults: kubectl's three-way patch
    # replaces it again, as against kube-apiserver
    assert server.kubectl("apply", "-f", "-", stdin=LIMIT_RANGE).stdout == "limitrange/cpu-mem configured\n"
    assert server.kubectl("delete", "limits", "cpu-mem").stdout == 'limitrange "cpu-mem" deleted\n'
    assert server.kubectl("get", "limitranges", "-o", "name").stdout == ""


def test_invalid_limit_range_is_rejected(server: ServerProcess) -> None:
    bad = LIMIT_RANGE.replace("name: cpu-mem", "name: bad").replace(
        "min:\n      cpu: 100m", 'min:\n      cpu: "3"'
    )
    result = server.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode == 1
    quantity = (
        "resource.Quantity{i:resource.int64Amount{value:3, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, "
        's:"3", Format:"DecimalSI"}'
    )
    assert (
        f'The LimitRange "bad" is invalid: \n* spec.limits[0].min[cpu]: Invalid value: {quantity}: '
        "min value 3 is greater than max value 2\n"
    ) in result.stderr
    assert "min value 3 is greater than default request value 500m" in result.stderr
    pod_default = LIMIT_RANGE.replace("name: cpu-mem", "name: bad").replace(
        "  - type: Pod\n", '  - type: Pod\n    default:\n      cpu: "1"\n'
    )
    result = server.kubectl("apply", "-f", "-", stdin=pod_default, check=False)
    assert result.returncode == 1
    assert (
        'The LimitRange "bad" is invalid: spec.limits[1].default: Forbidden: '
        "may not be specified when `type` is 'Pod'\n"
    ) in result.stderr
    assert server.kubectl("get", "limitranges", "-o", "name").stdout == ""


def test_runtime_class_apply_get_describe_delete(server: ServerProcess) -> None:
    out = server.kubectl("apply", "-f", "-", stdin=RUNTIME_CLASS).stdout
    assert out == "runtimeclass.node.k8s.io/gvisor created\n"
    table = _rows(server.kubectl("get", "runtimeclasses").stdout)
    assert table[0] == ["NAME", "HANDLER", "AGE"]
    assert table[1][:2] == ["gvisor", "runsc"]
    obj = yaml.safe_load(server.kubectl("get", "runtimeclass", "gvisor", "-o", "yaml").stdout)
    assert obj["handler"] == "runsc"
    assert obj["overhead"] == {"podFixed": {"cpu": "250m", "memory": "120Mi"}}
    assert obj["scheduling"]["nodeSelector"] == {"runtime": "gvisor"}
    assert "namespace" not in obj["metadata"]
    described = server.kubectl("describe", "runtimeclass", "gvisor").stdout
    assert "gvisor" in described and "runsc" in described
    changed = RUNTIME_CLASS.replace("handler: runsc", "handler: kata")
    result = server.kubectl("apply", "-f", "-", stdin=changed, check=False)
    assert result.returncode == 1
    assert (
        'The RuntimeClass "gvisor" is invalid: handler: Invalid value: "kata": field is immutable'
        in result.stderr
    )
    out = server.kubectl("delete", "runtimeclass", "gvisor").stdout
    assert out == 'runtimeclass.node.k8s.io "gvisor" deleted\n'


def test_invalid_runtime_class_is_rejected(server: ServerProcess) -> None:
    bad = RUNTIME_CLASS.replace("name: gvisor", "name: bad").replace("handler: runsc", "handler: Run_SC")
    bad = bad.replace("cpu: 250m", "cpu: -250m")
    result = server.kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'The RuntimeClass "bad" is invalid: \n* handler: Invalid value: "Run_SC": '
    )
    assert (
        '* overhead.limits[cpu]: Invalid value: "-250m": must be greater than or equal to 0\n'
        in result.stderr
    )
    assert server.kubectl("get", "runtimeclasses", "-o", "name").stdout == ""


def test_explain_both_kinds(server: ServerProcess) -> None:
    out = server.kubectl("explain", "limitrange.spec.limits").stdout
    assert "KIND:       LimitRange" in out and "maxLimitRequestRatio" in out
    out = server.kubectl("explain", "runtimeclass.overhead", "--api-version=node.k8s.io/v1").stdout
    assert "GROUP:      node.k8s.io" in out and "podFixed" in out


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: limited
spec:
  containers:
  - name: main
    image: busybox:1
{resources}"""


def test_limit_ranger_defaults_and_forbids_pods(server: ServerProcess) -> None:
    server.kubectl("create", "namespace", "limited")
    limits = LIMIT_RANGE.replace("namespace: default", "namespace: limited")
    server.kubectl("apply", "-f", "-", stdin=limits)
    out = server.kubectl("apply", "-f", "-", stdin=POD.format(name="plain", resources="")).stdout
    assert out == "pod/plain created\n"
    pod = yaml.safe_load(server.kubectl("get", "pod", "plain", "-n", "limited", "-o", "yaml").stdout)
    assert pod["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "2", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "1Gi"},
    }
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container main; cpu, memory limit for container main"
    )
    big = POD.format(name="big", resources='    resources:\n      limits:\n        cpu: "3"\n')
    result = server.kubectl("apply", "-f", "-", stdin=big, check=False)
    assert result.returncode == 1
    assert result.stderr == (
        'Error from server (Forbidden): error when creating "STDIN": pods "big" is forbidden: '
        "maximum cpu usage per Container is 2, but limit is 3\n"
    )
    server.kubectl("delete", "namespace", "limited", "--wait=false")
