"""``GET /chats/{id}/export``: a chat as streamed JSON Lines (see ``store/export.py``).

The caller is identified exactly as on ``/graphql`` (dev headers or a bearer token)
and may export what it may read. Errors found before the body starts answer with a
GraphQL-shaped JSON body and a matching status: 401 ``UNAUTHENTICATED``, 400
``INVALID_ARGUMENT``, 404 ``NOT_FOUND`` (also for a chat the caller may not read).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from chatql.gql.auth import identity_from_credentials
from chatql.gql.context import Services
from chatql.gql.errors import code_for
from chatql.gql.transport.bodylimit import error_body
from chatql.store.chats import export as store_export
from chatql.store.errors import ChatqlError, Unauthenticated

__all__ = ["EXPORT_MEDIA_TYPE", "export_endpoint"]

EXPORT_MEDIA_TYPE = "application/x-ndjson"
_STATUS = {"UNAUTHENTICATED": 401, "INVALID_ARGUMENT": 400, "NOT_FOUND": 404}


async def export_endpoint(request: Request) -> Response:
    services: Services = request.app.state.services
    try:
        who = identity_from_credentials(services.settings, dict(request.headers))
        chat = await store_export.open_export(services.db, who, request.path_params["chat_id"])
    except Unauthenticated as error:
        return JSONResponse(error_body(str(error), "UNAUTHENTICATED"), status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})
    except ChatqlError as error:
        code = code_for(error) or "INVALID_ARGUMENT"
        return JSONResponse(error_body(str(error), code), status_code=_STATUS.get(code, 400))

    filename = f"chat-{chat.id}.jsonl"
    return StreamingResponse(
        store_export.export_chat(services.db, chat), media_type=EXPORT_MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
