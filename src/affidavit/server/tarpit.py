"""The failed-auth tarpit: the outermost ASGI middleware of ``affidavit serve`` (issue 25.7).

A client address that has used up its failed token checks (``serve.auth_attempts_*``) and sends
a request to ``/v1/...`` without a key this server has already checked gets a minimal 429 with
``Retry-After``, answered here, before the framework (routing, middlewares, dependencies,
exception handlers) costs anything, and only after a delay (between half of ``delay_s`` and
all of it, at random): a flooding client that would send its next guess the moment it got an
answer now waits, so fifty of them cannot keep the one event loop busy, and flooders refused
together do not all come back in the same instant. At most ``max_held`` requests of one address
wait at once; beyond that the 429 comes at once with ``Connection: close`` (a reconnect is the
client's cost), so the delay cannot be turned into a way to hold the server's memory.

Never delayed: a request whose bearer token is a key already checked (``is_known``: a look in
the in-memory cache, no keyed hash; a revoked key still reaches the full check behind), any path
outside ``/v1/`` (``/healthz``, ``/readyz``, ``/metrics``, the page), and every address under its
limit. Only failed checks count against an address, so a flood from a shared address never
locks out a key that address has used before (see docs/security.md for the trade-off).

Examples:
    >>> from affidavit.server.limits import RateLimiter
    >>> async def app(scope, receive, send): ...
    >>> wrapped = AuthTarpit(app, attempts=RateLimiter(per_minute=60, burst=20),
    ...                      is_known=lambda token: False, delay_s=1.0, max_held=64)
"""

from __future__ import annotations

import asyncio
import json
import math
import random
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from affidavit.server.limits import RateLimiter

__all__ = ["AuthTarpit"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# the ApiError contract of every 4xx (status, error, message), written once
_BODY = json.dumps(
    {
        "status": 429,
        "error": "rate_limited",
        "message": "too many failed API key checks from this address; retry after the "
        "Retry-After seconds with a valid key",
    }
).encode()

# tokens longer than this are no affidavit key (afd_<8 hex>_<43 chars>): never looked up
_MAX_TOKEN = 256


class AuthTarpit:
    """Delay, then refuse, the unknown tokens of an address over its failed-check limit.

    Args:
        app: the ASGI app behind (the FastAPI app).
        attempts: the limiter of failed token checks per client address (only looked at here).
        is_known: whether a bearer token is a key already checked (in memory, no hashing).
        delay_s: the longest a refused request waits for its 429 (at least half of it; 0:
            answered at once).
        max_held: requests of one address allowed to wait at once; more are answered at once.
        on_refuse: called with ``auth_tarpit`` (delayed) or ``auth_tarpit_full`` (past the cap),
            for the rejection metrics.
    """

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        *,
        attempts: RateLimiter,
        is_known: Callable[[str], bool],
        delay_s: float,
        max_held: int,
        on_refuse: Callable[[str], None] | None = None,
    ) -> None:
        if delay_s < 0 or max_held < 0:
            raise ValueError("delay_s and max_held must be >= 0")
        self.app = app
        self.attempts = attempts
        self.is_known = is_known
        self.delay_s = delay_s
        self.max_held = max_held
        self.on_refuse = on_refuse
        self.held: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        host = client[0] if client else "unknown"
        wait = self.attempts.blocked(host)
        if wait is None or self._known(scope):
            await self.app(scope, receive, send)
            return
        retry = str(max(1, math.ceil(wait)))
        held = self.held.get(host, 0)
        if held >= self.max_held:
            self._count("auth_tarpit_full")
            await self._refuse(send, retry, close=True)
            return
        self.held[host] = held + 1
        try:
            self._count("auth_tarpit")
            # jittered: a burst of flooders released together would otherwise return together
            await asyncio.sleep(self.delay_s * random.uniform(0.5, 1.0))
            await self._refuse(send, retry, close=False)
        finally:
            left = self.held[host] - 1
            if left:
                self.held[host] = left
            else:
                del self.held[host]

    def _known(self, scope: Scope) -> bool:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                kind, _, token = value.decode("latin-1").partition(" ")
                token = token.strip()
                return (
                    kind.lower() == "bearer"
                    and 0 < len(token) <= _MAX_TOKEN
                    and self.is_known(token)
                )
        return False

    def _count(self, reason: str) -> None:
        if self.on_refuse is not None:
            self.on_refuse(reason)

    @staticmethod
    async def _refuse(send: Send, retry_after: str, *, close: bool) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_BODY)).encode()),
            (b"retry-after", retry_after.encode()),
        ]
        if close:
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": _BODY})
