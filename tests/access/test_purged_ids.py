"""A purged chat id must not show through to other tenants."""

from __future__ import annotations

from tests.conftest import GraphQLClient

A = {"X-User-Id": "alice", "X-Tenant-Id": "tenant-a"}
B = {"X-User-Id": "bob", "X-Tenant-Id": "tenant-b"}
CREATE = 'mutation($id: ID!) { createChat(input: {id: $id, assistantId: "a"}) { id } }'
APPEND = ('mutation($id: ID!) { appendMessages(chatId: $id, appendId: "r", messages: '
          '[{role: USER, type: "text", props: {}}]) { digest } }')


def _error(body: dict[str, object]) -> tuple[str, str]:
    error = body["errors"][0]  # type: ignore[index]
    return error["extensions"]["code"], error["message"]


async def test_another_tenants_purged_id_reads_like_any_other(client: GraphQLClient) -> None:
    for chat_id in ("purged", "alive"):
        await client.data(CREATE, {"id": chat_id}, A)
    await client.data('mutation { purgeChat(id: "purged") }', None, A)

    # Tenant B: appending to the purged id answers exactly like a never-used id.
    purged = _error(await client.execute(APPEND, {"id": "purged"}, B))
    never = _error(await client.execute(APPEND, {"id": "never"}, B))
    assert purged == ("NOT_FOUND", never[1].replace("'never'", "'purged'"))
    # Creating it is CONFLICT with the same words as an id that is in use elsewhere.
    taken_purged = _error(await client.execute(CREATE, {"id": "purged"}, B))
    taken_alive = _error(await client.execute(CREATE, {"id": "alive"}, B))
    assert taken_purged == ("CONFLICT", taken_alive[1].replace("'alive'", "'purged'"))

    # Tenant A, whose chat it was, is told the truth.
    assert _error(await client.execute(APPEND, {"id": "purged"}, A))[0] == "CHAT_CLOSED"
    code, message = _error(await client.execute(CREATE, {"id": "purged"}, A))
    assert code == "CONFLICT" and "purged" in message and "never be used again" in message
