"""Rate limits per identity and operation class (``CHATQL_RATE_LIMITS``).

The setting lists classes and their limits, separated by ``;``::

    pushes=200/second;writes=30/second;reads=100/second;shares=300/minute;subscriptions=20

- ``reads`` (queries), ``writes`` (mutations other than ``pushChunks``), ``pushes``
  (``pushChunks``) and ``shares`` (reads of share links, ``sharedChat``) take a rate in
  the `limits` library's notation — ``N/second``, ``N/minute``, ``N per 10 seconds`` …
  — counted in fixed windows per identity (tenant and user) and class; a share read
  over HTTP by a caller who names no one is counted per client address;
- ``subscriptions`` takes a number: how many subscriptions one identity may hold open
  at once (over WebSocket and Server-Sent Events together).

A class left out is not limited, except ``shares``, which is
:data:`DEFAULT_SHARE_RATE` unless the setting names it: share links are read without
signing in, so guessing tokens is always slowed down. The counts live where the
streams do: with ``CHATQL_BROKER_URL=redis://…`` in Redis, so
every instance shares them; with ``memory://`` in the process. Beyond a limit the
operation is refused with ``RATE_LIMITED`` and ``extensions.retryAfter`` (whole
seconds); a plain HTTP request gets status 429 and ``Retry-After``. If the Redis
holding the counts cannot be reached, requests are let through (and a warning logged):
the limits protect the service, they must not take it down.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter

from chatql.gql.auth import ConfigurationError
from chatql.store.records import Identity

__all__ = [
    "DEFAULT_SHARE_RATE",
    "RATE_CLASSES",
    "RateLimitRules",
    "RateLimited",
    "RateLimiter",
    "parse_rate_limits",
]

logger = logging.getLogger("chatql")

#: The classes counted by rate (the fifth, ``subscriptions``, counts open ones).
RATE_CLASSES = ("reads", "writes", "pushes", "shares")
#: Share-link reads per caller (or client address) when the setting does not name
#: ``shares``.
DEFAULT_SHARE_RATE = "300/minute"
#: Seconds an identity's open-subscription count is kept without a change (so a count
#: left behind by an instance that died does not refuse the identity for ever).
_OPEN_COUNT_TTL = 24 * 3600


class RateLimited(Exception):
    """An identity went past its limit; try again after ``retry_after`` seconds."""

    def __init__(self, limit_class: str, retry_after: int) -> None:
        self.limit_class = limit_class
        self.retry_after = retry_after
        if limit_class == "subscriptions":
            message = ("too many open subscriptions for this identity; close one, or try "
                       f"again in {retry_after} s")
        else:
            message = (f"rate limit for {limit_class} exceeded; try again in "
                       f"{retry_after} s")
        super().__init__(message)

    def error(self) -> dict[str, Any]:
        """The GraphQL error of the refused operation."""
        return {"message": str(self),
                "extensions": {"code": "RATE_LIMITED", "retryAfter": self.retry_after}}


@dataclass(frozen=True)
class RateLimitRules:
    """The parsed ``CHATQL_RATE_LIMITS``."""

    rates: dict[str, RateLimitItem] = field(default_factory=dict)
    subscriptions: int | None = None

    @property
    def empty(self) -> bool:
        return not self.rates and self.subscriptions is None


def parse_rate_limits(text: str) -> RateLimitRules:
    """``pushes=200/second;…``; anything else stops the server at start."""
    rates: dict[str, RateLimitItem] = {}
    subscriptions: int | None = None
    for part in text.split(";"):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not value:
            raise ConfigurationError(
                f"CHATQL_RATE_LIMITS: {part.strip()!r} is not class=limit "
                "(e.g. pushes=200/second;subscriptions=20)")
        if name == "subscriptions":
            if not value.isdigit():
                raise ConfigurationError(
                    "CHATQL_RATE_LIMITS: subscriptions takes a whole number of open "
                    f"subscriptions, got {value!r}")
            subscriptions = int(value)
        elif name in RATE_CLASSES:
            try:
                rates[name] = parse(value)
            except ValueError:
                raise ConfigurationError(
                    f"CHATQL_RATE_LIMITS: {name}={value!r} is not a rate such as "
                    "100/second or 1000/minute") from None
        else:
            raise ConfigurationError(
                f"CHATQL_RATE_LIMITS: unknown class {name!r}; the classes are reads, "
                "writes, pushes, shares and subscriptions")
    rates.setdefault("shares", parse(DEFAULT_SHARE_RATE))
    return RateLimitRules(rates, subscriptions)


def _storage(broker_url: str) -> tuple[Storage, Any]:
    """The counts' storage, and the connection pool the app closes (None in memory)."""
    scheme = broker_url.split(":", 1)[0].lower()
    if scheme in ("redis", "rediss"):
        from redis.asyncio import ConnectionPool

        from chatql.store.streams.backends.redis import split_prefix

        url, prefix = split_prefix(broker_url)
        pool = ConnectionPool.from_url(url)
        options: dict[str, Any] = {"connection_pool": pool}
        return RedisStorage(f"async+{url}", implementation="redispy",
                            key_prefix=f"{prefix}limits", **options), pool
    return MemoryStorage(), None


def _who(identity: Identity, address: str | None = None) -> str:
    if address is not None:
        return f"\x1faddress\x1f{address}"
    return f"{identity.tenant_id}\x1f{identity.user_id}"


class RateLimiter:
    """The limits of one app, over the storage its broker implies."""

    def __init__(self, rules: RateLimitRules, broker_url: str) -> None:
        self.rules = rules
        self._storage, self._pool = _storage(broker_url)
        self._windows = FixedWindowRateLimiter(self._storage)

    async def close(self) -> None:
        """Release the connections to the counts' Redis (they reopen when used)."""
        if self._pool is not None:
            await self._pool.disconnect()

    async def check(self, identity: Identity, limit_class: str, *,
                    address: str | None = None) -> None:
        """Count one operation of ``limit_class``; :class:`RateLimited` beyond the limit.
        With ``address`` (a caller who names no one) it is counted for that client
        address instead of the identity."""
        item = self.rules.rates.get(limit_class)
        if item is None:
            return
        who = _who(identity, address)
        try:
            if await self._windows.hit(item, limit_class, who):
                return
            stats = await self._windows.get_window_stats(item, limit_class, who)
        except Exception as error:  # the counts' store is away: let the request through
            logger.warning("rate limits unavailable: %s", error)
            return
        raise RateLimited(limit_class, max(1, math.ceil(stats.reset_time - time.time())))

    def _open_key(self, identity: Identity) -> str:
        return f"open-subscriptions/{_who(identity)}"

    async def open_subscription(self, identity: Identity) -> bool:
        """Count one more open subscription (:class:`RateLimited` beyond the limit);
        True when counted, so :meth:`close_subscription` must follow."""
        limit = self.rules.subscriptions
        if limit is None:
            return False
        key = self._open_key(identity)
        try:
            count = await self._storage.incr(key, _OPEN_COUNT_TTL)
            if count > limit:
                await self._storage.incr(key, _OPEN_COUNT_TTL, -1)
        except Exception as error:
            logger.warning("rate limits unavailable: %s", error)
            return False
        if count > limit:
            raise RateLimited("subscriptions", 1)
        return True

    async def close_subscription(self, identity: Identity) -> None:
        try:
            await self._storage.incr(self._open_key(identity), _OPEN_COUNT_TTL, -1)
        except Exception as error:
            logger.warning("rate limits unavailable: %s", error)
