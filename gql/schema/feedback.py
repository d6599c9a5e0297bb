"""Feedback: rating a message, and the listing an evaluation starts from."""

from __future__ import annotations

from datetime import datetime

import strawberry

from chatql.gql.context import Info
from chatql.gql.schema.types import Feedback, PageInfo, Rating
from chatql.store.messages import feedback as store_feedback

__all__ = ["FeedbackMutation", "FeedbackQuery"]


@strawberry.input(description="Narrows the feedback listing; every field given must match."
                  " since and until bound when the rating was last set (since included,"
                  " until not).")
class FeedbackFilter:
    assistant_id: str | None = None
    rating: Rating | None = None
    since: datetime | None = None
    until: datetime | None = None
    chat_id: strawberry.ID | None = None

    def to_store(self) -> store_feedback.FeedbackFilter:
        return store_feedback.FeedbackFilter(
            assistant_id=self.assistant_id,
            rating=None if self.rating is None else self.rating.value,
            since=self.since, until=self.until,
            chat_id=None if self.chat_id is None else str(self.chat_id))


@strawberry.type
class FeedbackEdge:
    cursor: str
    node: Feedback


@strawberry.type(description="A page of feedback, newest first.")
class FeedbackConnection:
    edges: list[FeedbackEdge]
    page_info: PageInfo


@strawberry.type
class FeedbackQuery:
    @strawberry.field(description="Feedback on the chats the caller may change (its own, its"
                      " team's shared ones; the whole tenant for admin), newest first (by"
                      " when the rating was last set); keyset pages (first: default 20, at"
                      " most 100) with signed cursors. Each node has the rated message, the"
                      " question it answered and the stream's request and model.")
    async def feedback(self, info: Info, filter: FeedbackFilter | None = None,
                       first: int | None = None,
                       after: str | None = None) -> FeedbackConnection:
        who = info.context.identity
        feedback_filter = (filter or FeedbackFilter()).to_store()
        feedback_filter.check()
        signer = info.context.services.cursors
        bound = store_feedback.cursor_scope(who, feedback_filter)
        position = None if after is None else store_feedback.position_from(
            signer.decode(bound, after))
        page = await store_feedback.list_feedback(info.context.db, who, feedback_filter,
                                                  first=first, after=position)
        edges = [FeedbackEdge(cursor=signer.encode(bound, store_feedback.position_of(item)),
                              node=item)  # type: ignore[arg-type]
                 for item in page.items]
        return FeedbackConnection(
            edges=edges, page_info=PageInfo.of([edge.cursor for edge in edges],
                                               has_next=page.has_next,
                                               has_previous=after is not None))


@strawberry.type
class FeedbackMutation:
    @strawberry.mutation(description=(
        "Rate an assistant's message: whoever may read it may, once per person (rating"
        " again replaces the rating, comment and tags; a comment or tags left out are"
        " cleared). A null rating clears the caller's feedback and returns null. A"
        " comment is at most 4,000 characters; at most 10 tags, each 1-64 characters."
        " A message the caller may not read is NOT_FOUND."))
    async def rate_message(self, info: Info, message_id: strawberry.ID,
                           rating: Rating | None = None, comment: str | None = None,
                           tags: list[str] | None = None) -> Feedback | None:
        rated = await store_feedback.rate_message(
            info.context.db, info.context.identity, str(message_id),
            None if rating is None else rating.value, comment=comment, tags=tags)
        return rated  # type: ignore[return-value]
