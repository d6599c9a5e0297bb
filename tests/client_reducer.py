"""A deliberately plain client-side chunk reducer, written apart from ``store.streams.reducer``.

Tests feed it only what subscribers receive and compare the result with what the
service buffered or stored: the rule "the persisted message is exactly what
a subscriber that applied every chunk would show".
"""

from __future__ import annotations

from typing import Any

__all__ = ["client_apply"]


def client_apply(view: dict[str, dict[str, Any]], event: Any) -> None:
    """An independent client reducer: the rules as a front end would write them."""
    if event["type"] == "event":
        return
    mid = event["messageId"]
    assert mid is not None
    props = event["props"] or {}
    if not event["delta"]:
        old = view.get(mid)
        view[mid] = {"type": event["type"], "props": dict(props)} if old is None else {
            **old, "type": event["type"], "props": dict(props)}
        return
    message = view.setdefault(mid, {"type": event["type"], "props": {}})
    path = "content" if event["deltaPath"] is None else event["deltaPath"]
    action = event["deltaAction"]
    if path == "":
        if action == "merge":
            message["props"] = {**message["props"], **props}
        else:
            message["props"] = dict(props)
        return
    parts = path.split(".")
    node: Any = message["props"]
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    key: Any = int(parts[-1]) if isinstance(node, list) else parts[-1]
    value = props[parts[-1]]
    current = node[key] if isinstance(node, list) else node.get(key)
    if action == "append":
        node[key] = value if current is None else current + value
    elif action == "merge":
        node[key] = {**(current or {}), **value}
    else:
        node[key] = value


