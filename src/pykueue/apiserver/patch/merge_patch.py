"""RFC 7386 JSON merge patch, and the inverse: computing a merge patch between two documents."""

from __future__ import annotations

from pykueue.apiserver.patch._values import JSON, JSONDict, deep_copy, json_equal
from pykueue.apiserver.patch.errors import bad_request


def merge_patch_value(target: JSON, patch: JSON) -> JSON:
    """RFC 7386 ``MergePatch(Target, Patch)`` for any JSON values (inputs are not modified).

    Objects merge member-wise, ``null`` members delete, everything else (arrays included)
    replaces the target.
    """
    if not isinstance(patch, dict):
        return deep_copy(patch)
    result: JSONDict = deep_copy(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch_value(result.get(name), value)
    return result


def merge_patch(obj: JSONDict, patch: JSONDict) -> JSONDict:
    """Apply a JSON merge patch (``application/merge-patch+json``) to an object.

    A patch that is not an object would replace the whole document, which can never decode as
    an object: 400 ``BadRequest`` like the real server.
    """
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal non-object into Go value of type map[string]interface {}")
    result = merge_patch_value(obj, patch)
    assert isinstance(result, dict)
    return result


def create_merge_patch(original: JSON, modified: JSON) -> JSON:
    """The smallest merge patch turning ``original`` into ``modified`` (``{}`` when equal).

    ``merge_patch_value(original, create_merge_patch(original, modified)) == modified`` holds
    whenever ``modified`` has no ``null`` object members (merge patches cannot express them).
    Non-object values are replaced as a whole, so the result is ``modified`` itself then.
    """
    if not isinstance(original, dict) or not isinstance(modified, dict):
        return deep_copy(modified)
    patch: JSONDict = {}
    for name in original:
        if name not in modified:
            patch[name] = None
    for name, value in modified.items():
        if name not in original:
            patch[name] = deep_copy(value)
            continue
        old = original[name]
        if json_equal(old, value):
            continue
        if isinstance(old, dict) and isinstance(value, dict):
            patch[name] = create_merge_patch(old, value)
        else:
            patch[name] = deep_copy(value)
    return patch
