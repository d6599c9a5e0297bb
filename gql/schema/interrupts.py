"""A person in the loop: the inbox of interrupts, one interrupt, and deciding it."""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from chatql.gql.context import Info
from chatql.gql.schema.announce import announce
from chatql.gql.schema.interrupt_types import Interrupt, InterruptKind, InterruptState
from chatql.gql.schema.types import PageInfo
from chatql.store.errors import InvalidArgument
from chatql.store.messages import interrupts as store_interrupts

__all__ = ["InterruptMutation", "InterruptQuery"]


@strawberry.input(description="Narrows the interrupts inbox; every field given must match.")
class InterruptFilter:
    state: InterruptState | None = strawberry.field(
        default=InterruptState.PENDING, description="Default PENDING (null: every state).")
    kind: InterruptKind | None = None
    assistant_id: str | None = None
    chat_id: strawberry.ID | None = None

    def to_store(self) -> store_interrupts.InterruptFilter:
        return store_interrupts.InterruptFilter(
            state=None if self.state is None else self.state.value,
            kind=None if self.kind is None else self.kind.value,
            assistant_id=self.assistant_id,
            chat_id=None if self.chat_id is None else str(self.chat_id))


@strawberry.type
class InterruptEdge:
    cursor: str
    node: Interrupt


@strawberry.type(description="A page of interrupts, newest first.")
class InterruptConnection:
    edges: list[InterruptEdge]
    page_info: PageInfo


@strawberry.type
class InterruptQuery:
    @strawberry.field(description="The interrupts the caller may decide, across its chats,"
                      " newest first (default: the PENDING ones); keyset pages (first:"
                      " default 20, at most 100) with signed cursors.")
    async def interrupts(self, info: Info, filter: InterruptFilter | None = None,
                         first: int | None = None,
                         after: str | None = None) -> InterruptConnection:
        who = info.context.identity
        interrupt_filter = (filter or InterruptFilter()).to_store()
        interrupt_filter.check()
        signer = info.context.services.cursors
        bound = store_interrupts.cursor_scope(who, interrupt_filter)
        position = None if after is None else store_interrupts.position_from(
            signer.decode(bound, after))
        page = await store_interrupts.inbox(info.context.db, who, interrupt_filter,
                                            first=first, after=position)
        edges = [InterruptEdge(cursor=signer.encode(bound, store_interrupts.position_of(item)),
                               node=item)  # type: ignore[arg-type]
                 for item in page.interrupts]
        return InterruptConnection(
            edges=edges, page_info=PageInfo.of([edge.cursor for edge in edges],
                                               has_next=page.has_next,
                                               has_previous=after is not None))

    @strawberry.field(description="One interrupt of a chat the caller may read.")
    async def interrupt(self, info: Info, id: strawberry.ID) -> Interrupt:
        found = await store_interrupts.get_interrupt(info.context.db, info.context.identity,
                                                     str(id))
        return found  # type: ignore[return-value]


@strawberry.type
class InterruptMutation:
    @strawberry.mutation(description=(
        "Decide an interrupt, once. A tool approval takes approved (and editedArguments"
        " when approving); a question takes response, checked against its responseSchema"
        " (or approved: false to decline it). Only whoever may change the chat decides, or"
        " an identity with the approver role (the agent role alone does not): else"
        " FORBIDDEN. The same decisionId (or the same decision) again returns the"
        " interrupt as it is; a different decision on a decided one is CONFLICT; after"
        " expiresAt, EXPIRED."))
    async def resolve_interrupt(self, info: Info, id: strawberry.ID,
                                approved: bool | None = None,
                                edited_arguments: JSON | None = None,
                                response: JSON | None = None, reason: str | None = None,
                                decision_id: strawberry.ID | None = None) -> Interrupt:
        if decision_id is not None and not str(decision_id):
            raise InvalidArgument("decisionId must not be empty")
        resolved = await store_interrupts.resolve(
            info.context.db, info.context.identity, str(id), approved=approved,
            edited_arguments=edited_arguments, response=response, reason=reason,
            decision_id=None if decision_id is None else str(decision_id))
        if resolved.changed:
            await announce(info, "INTERRUPT_RESOLVED", resolved.interrupt.chat_id)
        return resolved.interrupt  # type: ignore[return-value]
