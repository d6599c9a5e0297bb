"""A chat as a record: creating, reading, changing, deleting and restoring it
(:mod:`~chatql.store.chats.chat`), its automatic title (:mod:`~chatql.store.chats.titles`)
and the usage recorded against it (:mod:`~chatql.store.chats.usage`). Everything here
sits below messages: what works on a chat's messages as a whole — its lists, keeping,
export — lives in :mod:`chatql.store.lists` and :mod:`chatql.store.keeping`."""
