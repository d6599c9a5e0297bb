"""How a chat is kept beyond its conversation: expiry, the trash and purge
(:mod:`~chatql.store.keeping.retention`), the cold archive
(:mod:`~chatql.store.keeping.archive`), export and import
(:mod:`~chatql.store.keeping.export`, :mod:`~chatql.store.keeping.imports`) and share
links (:mod:`~chatql.store.keeping.shares`). Each works on a whole chat with its messages
and files, so this package sits above :mod:`chatql.store.messages`."""
