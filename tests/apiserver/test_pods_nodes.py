"""core/v1 Pod and Node through the request path, their tables, and the pods/log options and reads."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pykueue.apiserver import podlogs
from pykueue.apiserver.app import APIServerApp
from pykueue.apiserver.handlers import APIRequest
from pykueue.apiserver.resources import REGISTRY
from pykueue.apiserver.tables import row_cells
from pykueue.kube.status import StatusError
from pykueue.store import Store

NOW = datetime(2025, 1, 10, 12, 0, 0, tzinfo=UTC)


def _app() -> APIServerApp:
    app = APIServerApp(Store(None))
    app.bootstrap()
    return app


def _call(app: APIServerApp, method: str, resource: str, body: Any = None, **kw: Any) -> dict[str, Any]:
    req = APIRequest(method, "", "v1", resource, body=json.dumps(body).encode() if body else b"", **kw)
    resp = app.handlers.handle(req)
    assert resp.status < 300, resp.body
    result: dict[str, Any] = json.loads(resp.body)
    return result


def _pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1", "command": ["true"]}], **spec},
        "status": {"phase": "Running"},
    }


def test_pod_create_defaults_and_resets_status() -> None:
    app = _app()
    created = _call(app, "POST", "pods", _pod(), namespace="default")
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    spec = created["spec"]
    assert spec["restartPolicy"] == "Always" and spec["enableServiceLinks"] is True
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_pod_qos_class() -> None:
    app = _app()
    res = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    pod = _pod("g")
    pod["spec"]["containers"][0]["resources"] = res
    assert _call(app, "POST", "pods", pod, namespace="default")["status"]["qosClass"] == "Guaranteed"
    pod = _pod("b")
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    assert _call(app, "POST", "pods", pod, namespace="default")["status"]["qosClass"] == "Burstable"


def test_pod_validation_names_the_field() -> None:
    app = _app()
    pod = _pod()
    pod["spec"]["containers"] = []
    req = APIRequest("POST", "", "v1", "pods", namespace="default", body=json.dumps(pod).encode())
    with pytest.raises(StatusError) as err:
        app.handlers.handle(req)
    assert err.value.code == 422
    assert 'Pod "p" is invalid: spec.containers: Required value' in err.value.message


def test_pod_spec_update_forbidden_but_status_subresource_writes() -> None:
    app = _app()
    created = _call(app, "POST", "pods", _pod(), namespace="default")
    changed = json.loads(json.dumps(created))
    changed["spec"]["containers"][0]["command"] = ["false"]
    req = APIRequest(
        "PUT", "", "v1", "pods", namespace="default", name="p", body=json.dumps(changed).encode()
    )
    with pytest.raises(StatusError) as err:
        app.handlers.handle(req)
    assert "spec: Forbidden: pod updates may not change fields other than" in err.value.message
    image = json.loads(json.dumps(created))
    image["spec"]["containers"][0]["image"] = "busybox:2"
    _call(app, "PUT", "pods", image, namespace="default", name="p")
    live = _call(app, "GET", "pods", namespace="default", name="p")
    live["status"] = {"phase": "Running", "podIP": "127.0.0.1"}
    written = _call(app, "PUT", "pods", live, namespace="default", name="p", subresource="status")
    assert written["status"]["phase"] == "Running"


def test_node_is_cluster_scoped_with_capacity() -> None:
    app = _app()
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "host-1"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi"}}}  # fmt: skip
    created = _call(app, "POST", "nodes", node)
    assert "namespace" not in created["metadata"]
    created["status"] = node["status"]
    written = _call(app, "PUT", "nodes", created, name="host-1", subresource="status")
    assert written["status"]["capacity"] == {"cpu": "4", "memory": "8Gi"}
    created["status"] = {"capacity": {"cpu": "lots"}}
    req = APIRequest("PUT", "", "v1", "nodes", name="host-1", subresource="status",
                     body=json.dumps({**written, "status": created["status"]}).encode())  # fmt: skip
    with pytest.raises(StatusError, match=r"status.capacity\[cpu\]"):
        app.handlers.handle(req)


def test_discovery_lists_pods_log() -> None:
    doc = _app().discovery.api_resource_list("", "v1")
    assert doc is not None
    names = {r["name"]: r for r in json.loads(doc.body)["resources"]}
    assert names["pods/log"]["verbs"] == ["get"] and "pods/status" in names and "nodes" in names


def _cells(kind: str, plural: str, obj: dict[str, Any]) -> list[Any]:
    info = REGISTRY.get("", "v1", plural)
    assert info is not None and info.kind == kind
    return row_cells(info, obj, "v1", NOW)


def _running(ready: bool = True) -> dict[str, Any]:
    pod = _pod()
    pod["metadata"]["creationTimestamp"] = "2025-01-10T11:59:00Z"
    pod["spec"]["nodeName"] = "host-1"
    pod["status"] = {
        "phase": "Running",
        "podIP": "127.0.0.1",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "c", "ready": ready, "restartCount": 0, "image": "busybox:1",
                               "imageID": "", "state": {"running": {"startedAt": "2025-01-10T11:59:01Z"}}}],
    }  # fmt: skip
    return pod


def test_pod_row_like_kubectl() -> None:
    assert _cells("Pod", "pods", _running()) == [
        "p", "1/1", "Running", "0", "60s", "127.0.0.1", "host-1", "<none>", "<none>",
    ]  # fmt: skip
    done = _running(ready=False)
    done["status"]["phase"] = "Failed"
    done["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 3, "reason": "Error"}}
    assert _cells("Pod", "pods", done)[1:3] == ["0/1", "Error"]
    done["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 3}}
    assert _cells("Pod", "pods", done)[2] == "ExitCode:3"
    gone = _running()
    gone["metadata"]["deletionTimestamp"] = "2025-01-10T12:00:00Z"
    assert _cells("Pod", "pods", gone)[2] == "Terminating"


def test_node_row_like_kubectl() -> None:
    node = {"metadata": {"name": "h", "creationTimestamp": "2025-01-10T11:00:00Z",
                         "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                       "nodeInfo": {"kubeletVersion": "v1.31.0", "osImage": "Linux", "kernelVersion": "6",
                                    "containerRuntimeVersion": "pykueue://1"}}}  # fmt: skip
    assert _cells("Node", "nodes", node) == [
        "h", "Ready", "control-plane", "60m", "v1.31.0", "127.0.0.1", "<none>", "Linux", "6", "pykueue://1",
    ]  # fmt: skip
    node["spec"] = {"unschedulable": True}
    node["status"]["conditions"][0]["status"] = "False"
    assert _cells("Node", "nodes", node)[1] == "NotReady,SchedulingDisabled"


# --- pods/log ---------------------------------------------------------------------------------------


def test_log_options() -> None:
    options = podlogs.LogOptions({"tailLines": ["2"], "follow": ["true"], "container": ["c"]})
    assert (options.tail_lines, options.follow, options.container) == (2, True, "c")
    now = 1_736_510_400 * 10**9  # 2025-01-10T12:00:00Z
    options = podlogs.LogOptions({"sinceSeconds": ["10"], "timestamps": ["true"]}, "p", now_ns=now)
    assert options.since == b"2025-01-10T11:59:50.000000000Z" and options.timestamps
    options = podlogs.LogOptions({"sinceTime": ["2025-01-10T13:30:00.5+01:30"]})
    assert options.since == b"2025-01-10T12:00:00.500000000Z"


def _refused(query: dict[str, list[str]]) -> StatusError:
    with pytest.raises(StatusError) as err:
        podlogs.LogOptions(query, "p")
    return err.value


def test_log_options_validated_as_kube_apiserver() -> None:
    """``ValidatePodLogOptions``: 422 Invalid on kind PodLogOptions, naming the field."""
    err = _refused({"sinceSeconds": ["0"]})
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == 'PodLogOptions "p" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0'
    assert err.details["kind"] == "PodLogOptions" and err.details["name"] == "p"
    assert err.details["causes"] == [
        {"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be greater than 0", "field": "sinceSeconds"}
    ]
    assert "sinceSeconds: Invalid value: -5: must be greater than 0" in _refused({"sinceSeconds": ["-5"]}).message
    err = _refused({"sinceSeconds": ["10"], "sinceTime": ["2025-01-10T12:00:00Z"]})
    assert err.code == 422
    assert err.message == (
        'PodLogOptions "p" is invalid: : Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified'
    )
    err = _refused({"tailLines": ["-1"], "limitBytes": ["0"]})
    assert err.message == (
        'PodLogOptions "p" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, '
        "limitBytes: Invalid value: 0: must be greater than 0]"
    )
    # Decoding errors come first and are 400, as the parameter codec's.
    err = _refused({"sinceSeconds": ["ten"]})
    assert (err.code, err.message) == (400, 'strconv.ParseInt: parsing "ten": invalid syntax')
    assert _refused({"timestamps": ["yes"]}).message == 'strconv.ParseBool: parsing "yes": invalid syntax'
    err = _refused({"sinceTime": ["yesterday"]})
    assert (err.code, err.message) == (
        400, 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"',
    )  # fmt: skip
    assert _refused({"sinceTime": ["2025-01-10 12:00:00Z"]}).message.endswith('cannot parse " 12:00:00Z" as "T"')
    assert _refused({"sinceTime": ["2025-13-10T12:00:00Z"]}).message == (
        'parsing time "2025-13-10T12:00:00Z": month out of range'
    )
    assert _refused({"sinceTime": ["2025-02-29T12:00:00Z"]}).message.endswith("day out of range")


def test_container_choice_and_previous() -> None:
    pod = _running()
    assert podlogs.container_name(pod, "") == "c"
    with pytest.raises(StatusError, match="container x is not valid for pod p"):
        podlogs.container_name(pod, "x")
    pod["spec"]["containers"].append({"name": "d", "image": "i"})
    with pytest.raises(
        StatusError, match=r"a container name must be specified for pod p, choose one of: \[c d\]"
    ):
        podlogs.container_name(pod, "")
    with pytest.raises(StatusError, match='previous terminated container "c" in pod "p" not found'):
        podlogs.check_started(pod, "c", True)
    with pytest.raises(StatusError, match="is waiting to start: ContainerCreating"):
        podlogs.check_started({**_pod(), "status": {"phase": "Pending"}}, "c", False)


def test_read_all_tail_and_limit_of_an_old_record(tmp_path: Path) -> None:
    """A record directory of an older version (stdout.log / stderr.log) is still read."""
    (tmp_path / "stdout.log").write_bytes(b"one\ntwo\nthree\n")
    (tmp_path / "stderr.log").write_bytes(b"err\n")
    assert podlogs.read_all(tmp_path, podlogs.LogOptions({})) == b"one\ntwo\nthree\nerr\n"
    assert podlogs.read_all(tmp_path, podlogs.LogOptions({"tailLines": ["2"]})) == b"three\nerr\n"
    assert podlogs.read_all(tmp_path, podlogs.LogOptions({"tailLines": ["0"]})) == b""
    assert podlogs.read_all(tmp_path, podlogs.LogOptions({"limitBytes": ["5"]})) == b"one\nt"
    # No time per line: each line carries its file's modification time (when it was last written).
    mtime = 1_736_510_400 * 10**9
    os.utime(tmp_path / "stdout.log", ns=(mtime, mtime))
    os.utime(tmp_path / "stderr.log", ns=(mtime + 10**9, mtime + 10**9))
    stamped = podlogs.read_all(tmp_path, podlogs.LogOptions({"timestamps": ["true"], "tailLines": ["2"]}))
    assert stamped == b"2025-01-10T12:00:00.000000000Z three\n2025-01-10T12:00:01.000000000Z err\n"
    since = podlogs.LogOptions({"sinceTime": ["2025-01-10T12:00:01Z"]})
    assert podlogs.read_all(tmp_path, since) == b"err\n"
    assert podlogs.stream_output(tmp_path, "stderr") == b"err\n"


CRI = (
    b"2025-01-10T12:00:00.100000000Z stdout F out one\n"
    b"2025-01-10T12:00:00.200000000Z stderr F err one\n"
    b"2025-01-10T12:00:01.000000000Z stdout P long \n"
    b"2025-01-10T12:00:01.000000000Z stderr F err two\n"
    b"2025-01-10T12:00:01.500000000Z stdout F line\n"
    b"2025-01-10T12:00:02.000000000Z stdout F \n"
    b"not a record\n"
    b"2025-01-10T12:00:03.000000000Z stderr P no newline at the end\n"
)


def test_read_all_of_the_cri_log_as_the_kubelet(tmp_path: Path) -> None:
    (tmp_path / podlogs.CRI_LOG).write_bytes(CRI)

    def read(**query: str) -> bytes:
        return podlogs.read_all(tmp_path, podlogs.LogOptions({k: [v] for k, v in query.items()}))

    # Interleaved as written; a P record continues its line; a malformed line is skipped.
    assert read() == b"out one\nerr one\nlong err two\nline\n\nno newline at the end"
    assert read(timestamps="true") == (
        b"2025-01-10T12:00:00.100000000Z out one\n"
        b"2025-01-10T12:00:00.200000000Z err one\n"
        # A record continuing a line gets no time; which one that is, the kubelet decides by the
        # record before it, whatever its stream (logWriter's isNewLine).
        b"2025-01-10T12:00:01.000000000Z long "
        b"err two\n"
        b"2025-01-10T12:00:01.500000000Z line\n"
        b"2025-01-10T12:00:02.000000000Z \n"
        b"2025-01-10T12:00:03.000000000Z no newline at the end"
    )
    assert read(sinceTime="2025-01-10T12:00:01Z") == b"long err two\nline\n\nno newline at the end"
    # tailLines counts lines of the file (records, malformed ones too), as the kubelet's tail does.
    assert read(sinceTime="2025-01-10T12:00:01Z", tailLines="2") == b"no newline at the end"
    assert read(tailLines="3") == b"\nno newline at the end"
    assert read(tailLines="0") == b""
    # limitBytes counts the timestamps too.
    assert read(timestamps="true", limitBytes="34") == b"2025-01-10T12:00:00.100000000Z out"
    now = 1_736_510_403 * 10**9 + 500_000_000  # 12:00:03.5
    since = podlogs.LogOptions({"sinceSeconds": ["1"]}, "p", now_ns=now)
    assert podlogs.read_all(tmp_path, since) == b"no newline at the end"
    assert podlogs.stream_output(tmp_path, "stdout") == b"out one\nlong line\n\n"
    assert podlogs.stream_output(tmp_path, "stderr") == b"err one\nerr two\nno newline at the end"


def test_tail_reads_backwards_across_blocks(tmp_path: Path) -> None:
    lines = [b"2025-01-10T12:00:00.000000000Z stdout F %06d %s\n" % (i, b"x" * 100) for i in range(5000)]
    (tmp_path / podlogs.CRI_LOG).write_bytes(b"".join(lines) + b"2025-01-10T12:00:00.0")  # being written
    out = podlogs.read_all(tmp_path, podlogs.LogOptions({"tailLines": ["1200"]})).splitlines()
    assert len(out) == 1200 and out[0].startswith(b"003800 ") and out[-1].startswith(b"004999 ")
    assert len(podlogs.read_all(tmp_path, podlogs.LogOptions({})).splitlines()) == 5000


def test_follow_the_cri_log_with_since_and_timestamps(tmp_path: Path) -> None:
    log = tmp_path / podlogs.CRI_LOG
    log.write_bytes(
        b"2025-01-10T11:00:00.000000000Z stdout F old\n"
        b"2025-01-10T12:00:00.000000000Z stdout F a\n"
        b"2025-01-10T12:00:00.000000000Z stderr F b\n"
        b"2025-01-10T12:00:01.000000000Z stdout F half"  # being written: sent once whole
    )
    options = podlogs.LogOptions({"sinceTime": ["2025-01-10T11:30:00Z"], "timestamps": ["true"]})
    received: list[bytes] = []
    ended = False

    async def run() -> None:
        nonlocal ended

        async def send(data: bytes) -> None:
            received.append(data)

        task = asyncio.create_task(podlogs.follow(tmp_path, options, lambda: ended, send, asyncio.Event()))
        await asyncio.sleep(0.3)
        assert b"".join(received) == b"2025-01-10T12:00:00.000000000Z a\n2025-01-10T12:00:00.000000000Z b\n"
        with log.open("ab") as f:
            f.write(b" and half\n2025-01-10T12:00:02.000000000Z stderr P c\n")
        await asyncio.sleep(0.3)
        assert b"".join(received).endswith(
            b"2025-01-10T12:00:01.000000000Z half and half\n2025-01-10T12:00:02.000000000Z c"
        )
        with log.open("ab") as f:
            f.write(b"2025-01-10T12:00:03.000000000Z stderr F ontinued\n")
        ended = True
        await asyncio.wait_for(task, 5)

    asyncio.run(run())
    assert b"".join(received).endswith(b"Z c" + b"ontinued\n")


def test_follow_streams_appended_lines_until_the_pod_ends(tmp_path: Path) -> None:
    out = tmp_path / "stdout.log"
    out.write_bytes(b"a\nb\npart")
    received: list[bytes] = []
    ended = False

    async def run() -> None:
        nonlocal ended

        async def send(data: bytes) -> None:
            received.append(data)

        task = asyncio.create_task(
            podlogs.follow(
                tmp_path, podlogs.LogOptions({"tailLines": ["1"]}), lambda: ended, send, asyncio.Event()
            )
        )
        await asyncio.sleep(0.3)
        assert b"".join(received) == b"b\n"  # the unfinished line waits for its end
        with out.open("ab") as f:
            f.write(b"ial\nc\n")
        await asyncio.sleep(0.3)
        assert b"".join(received) == b"b\npartial\nc\n"
        with out.open("ab") as f:
            f.write(b"last, no newline")
        ended = True
        await asyncio.wait_for(task, 5)

    asyncio.run(run())
    assert b"".join(received) == b"b\npartial\nc\nlast, no newline\n"
