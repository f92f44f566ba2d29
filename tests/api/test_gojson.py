"""``encoding/json`` renderings of Go values (how Kueue's webhooks print a struct bad value)."""

from __future__ import annotations

from pykueue.api import gojson


def test_struct_order_zero_fields_and_sorted_maps() -> None:
    """Go's struct order; a struct-valued field always (``metadata``, ``resources``); a field
    without ``omitempty`` when zero (``name``); an ``omitempty`` one written empty dropped
    (``command: []``); map keys sorted; unknown fields gone; quantities canonical."""
    template = {
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {},
            "containers": [{"image": "i", "command": [], "bogus": 1, "resources": {"limits": {"memory": "0.5Gi"}}}],
        },
        "metadata": {"labels": {"b": "1", "a": "2"}, "creationTimestamp": None},
    }
    assert gojson.marshal(template, "PodTemplateSpec") == (
        '{"metadata":{"labels":{"a":"2","b":"1"}},"spec":{"containers":[{"name":"","image":"i","resources":'
        '{"limits":{"memory":"512Mi"}}}],"restartPolicy":"Never"}}'
    )


def test_inline_structs_pointers_and_escapes() -> None:
    """An embedded (``inline``) struct's fields sit at its parent's level; a nil pointer is
    ``null`` without ``omitempty``; ``<``, ``>`` and ``&`` are escaped as Go does."""
    probe = {"exec": {"command": ["a<b", "c&d"]}, "periodSeconds": 0, "failureThreshold": 3}
    assert gojson.marshal(probe, "Probe") == '{"exec":{"command":["a\\u003cb","c\\u0026d"]},"failureThreshold":3}'
    assert gojson.marshal(None, "*PodSetTopologyRequest") == "null"
    assert gojson.marshal({"clusterQueue": "cq"}, "Admission") == '{"clusterQueue":"cq","podSetAssignments":null}'
