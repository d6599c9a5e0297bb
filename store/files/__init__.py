"""Files kept with the record: uploads stored once per tenant by their SHA-256, referenced
by messages, read through the chats that reference them.

- :mod:`store.files.service` — :class:`~store.files.service.FileService`: uploads (one
  step, or two with a presigned address), reads, orphan expiry and removal.
- :mod:`store.files.backends` — where the bytes live (``file://``, ``s3://``).
- :mod:`store.files.links` — which messages reference which files.
- :mod:`store.files.sniff` — an image or PDF checked against its bytes; image sizes.
- :mod:`store.files.signing` — signed, short-lived file addresses.
"""
