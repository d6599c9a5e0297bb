"""Persisted queries: Apollo's automatic persisted queries, and a safelist.

**Automatic persisted queries** (the protocol Apollo Client's persisted-queries link and
others speak): a request may send ``extensions.persistedQuery = {"version": 1,
"sha256Hash": "<hex SHA-256 of the document>"}`` instead of the document. A hash the
service knows is answered as if the document had been sent; an unknown one gets
``{"errors": [{"message": "PersistedQueryNotFound", "extensions": {"code":
"PERSISTED_QUERY_NOT_FOUND"}}]}``, and the client sends hash and document together,
which registers the document once its hash is verified (a mismatch is
``INVALID_ARGUMENT``). Registered documents are kept per process, the most recent
first. Over HTTP POST, GET (``extensions`` as a JSON query parameter) and both
WebSocket subprotocols.

**Safelist** (``CHATQL_PERSISTED_ONLY=true`` with ``CHATQL_PERSISTED_QUERIES`` naming a
manifest): only the manifest's documents run, sent by hash or in full; anything else is
``PERSISTED_QUERY_NOT_IN_LIST`` and nothing registers. The manifest is Apollo's
persisted query manifest::

    {"format": "apollo-persisted-query-manifest", "version": 1,
     "operations": [{"id": "<sha256 of body>", "name": "Chats", "type": "query",
                     "body": "query Chats { chats { totalCount } }"}]}

A manifest without the safelist switch only pre-registers its documents.

The document is resolved before anything plans or executes the request, so the fast
plans serve persisted documents as they serve sent ones.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

from chatql.gql.auth import ConfigurationError

__all__ = ["PersistedQueries", "PersistedQueryError"]

#: Documents registered through the automatic protocol, per process.
_REGISTERED_KEPT = 2048


class PersistedQueryError(Exception):
    """A request's persisted query cannot be resolved: its GraphQL error and status."""

    def __init__(self, message: str, code: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status

    def error(self) -> dict[str, Any]:
        return {"message": str(self), "extensions": {"code": self.code}}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _load_manifest(path: str) -> dict[str, str]:
    try:
        manifest = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ConfigurationError(
            f"CHATQL_PERSISTED_QUERIES: cannot read a JSON manifest at {path!r}: {error}"
        ) from None
    if (not isinstance(manifest, dict)
            or manifest.get("format") != "apollo-persisted-query-manifest"
            or manifest.get("version") != 1 or not isinstance(manifest.get("operations"), list)):
        raise ConfigurationError(
            f"CHATQL_PERSISTED_QUERIES: {path!r} is not an Apollo persisted query manifest"
            ' ({"format": "apollo-persisted-query-manifest", "version": 1, "operations": '
            "[...]})")
    documents: dict[str, str] = {}
    for index, operation in enumerate(manifest["operations"]):
        body = operation.get("body") if isinstance(operation, dict) else None
        if not isinstance(body, str):
            raise ConfigurationError(
                f"CHATQL_PERSISTED_QUERIES: operations[{index}] has no body")
        documents[_sha256(body)] = body
        given = operation.get("id")
        if isinstance(given, str) and given:
            documents[given] = body
    return documents


class PersistedQueries:
    """One app's persisted documents: the manifest's and those registered since."""

    def __init__(self, manifest_path: str = "", persisted_only: bool = False) -> None:
        if persisted_only and not manifest_path:
            raise ConfigurationError(
                "CHATQL_PERSISTED_ONLY=true needs CHATQL_PERSISTED_QUERIES, the path of the "
                "manifest of the documents to accept")
        self.persisted_only = persisted_only
        self._manifest = _load_manifest(manifest_path) if manifest_path else {}
        self._registered: OrderedDict[str, str] = OrderedDict()

    def resolve(self, query: Any, extensions: Any) -> Any:
        """The document to run for a request's ``query`` and ``extensions``
        (``query`` itself when nothing is persisted), or :class:`PersistedQueryError`."""
        persisted = extensions.get("persistedQuery") if isinstance(extensions, dict) else None
        if persisted is None:
            if self.persisted_only and not (isinstance(query, str)
                                            and _sha256(query) in self._manifest):
                raise PersistedQueryError(
                    "only the service's persisted documents are accepted; this document is "
                    "not in its list", "PERSISTED_QUERY_NOT_IN_LIST", 400)
            return query
        if (not isinstance(persisted, dict) or persisted.get("version") != 1
                or not isinstance(persisted.get("sha256Hash"), str)):
            raise PersistedQueryError(
                "extensions.persistedQuery must be {version: 1, sha256Hash: <hex>}",
                "INVALID_ARGUMENT", 400)
        digest: str = persisted["sha256Hash"]
        if isinstance(query, str):
            if _sha256(query) != digest:
                raise PersistedQueryError("provided sha does not match query",
                                          "INVALID_ARGUMENT", 400)
            if self.persisted_only:
                if digest not in self._manifest:
                    raise PersistedQueryError(
                        "only the service's persisted documents are accepted; this "
                        "document is not in its list", "PERSISTED_QUERY_NOT_IN_LIST", 400)
                return query
            self._register(digest, query)
            return query
        known = self._manifest.get(digest)
        if known is None and not self.persisted_only:
            known = self._registered.get(digest)
            if known is not None:
                self._registered.move_to_end(digest)
        if known is None:
            if self.persisted_only:
                raise PersistedQueryError(
                    "only the service's persisted documents are accepted; this hash is not "
                    "in its list", "PERSISTED_QUERY_NOT_IN_LIST", 400)
            raise PersistedQueryError("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND", 200)
        return known

    def _register(self, digest: str, query: str) -> None:
        if digest in self._manifest:
            return
        self._registered[digest] = query
        self._registered.move_to_end(digest)
        while len(self._registered) > _REGISTERED_KEPT:
            self._registered.popitem(last=False)
