"""Chat lists: a person's chats grouped by time and paged by keyset
(:mod:`~chatql.store.lists.chat_lists`), the prepared statements of their hottest pages
(:mod:`~chatql.store.lists.pages`), and the live list's events
(:mod:`~chatql.store.lists.events`). They read chats with their newest message, so they
sit above :mod:`chatql.store.messages`."""
