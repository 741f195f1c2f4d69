"""The failed-auth tarpit (issue 25.7): a client address over its limit of failed token checks is
answered 429 after a delay, outside the framework; known keys and open paths pass undelayed."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import MutableMapping
from typing import Any

import pytest

from affidavit.server.limits import RateLimiter
from affidavit.server.tarpit import AuthTarpit

GOOD = "afd_0123abcd_good"
WRONG = "afd_0123abcd_" + "x" * 43

# the tests time undelayed answers (< 0.1 s): no collection of the session's heap in between
pytestmark = pytest.mark.usefixtures("frozen_heap")


class Inner:
    """The wrapped app: records which requests reached it and answers 200."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _scope(path: str, token: str | None, host: str = "10.0.0.1") -> dict[str, Any]:
    headers = [(b"host", b"x")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    return {"type": "http", "method": "GET", "path": path, "headers": headers, "client": (host, 1)}


async def _call(app: Any, scope: dict[str, Any]) -> tuple[int, dict[bytes, bytes], bytes, float]:
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    t = time.perf_counter()
    await app(scope, receive, send)
    took = time.perf_counter() - t
    headers = {k.lower(): v for k, v in sent[0].get("headers", [])}
    return sent[0]["status"], headers, b"".join(m.get("body", b"") for m in sent[1:]), took


def _make(
    *, delay_s: float = 0.3, max_held: int = 8, burst: int = 2
) -> tuple[AuthTarpit, Inner, RateLimiter, list[str]]:
    inner = Inner()
    attempts = RateLimiter(per_minute=60, burst=burst)
    refused: list[str] = []
    app = AuthTarpit(
        inner,
        attempts=attempts,
        is_known=lambda token: token == GOOD,
        delay_s=delay_s,
        max_held=max_held,
        on_refuse=refused.append,
    )
    return app, inner, attempts, refused


def _exhaust(attempts: RateLimiter, host: str = "10.0.0.1") -> None:
    for _ in range(10):
        try:
            attempts.check(host)
        except Exception:
            return


def test_a_client_under_its_limit_reaches_the_app_undelayed() -> None:
    app, inner, _, _ = _make()
    status, _, _, took = asyncio.run(_call(app, _scope("/v1/search", WRONG)))
    assert status == 200 and inner.seen == ["/v1/search"] and took < 0.1


def test_an_address_over_its_limit_with_a_wrong_token_is_delayed_then_refused() -> None:
    app, inner, attempts, refused = _make(delay_s=0.3)
    _exhaust(attempts)
    status, headers, body, took = asyncio.run(_call(app, _scope("/v1/search", WRONG)))
    assert status == 429
    assert took >= 0.14  # between half the delay and all of it (jittered)
    assert int(headers[b"retry-after"]) >= 1
    assert json.loads(body)["error"] == "rate_limited"
    assert headers[b"content-type"] == b"application/json"
    assert inner.seen == []  # never reached the app
    assert refused == ["auth_tarpit"]
    # no token at all is no known key either
    status, _, _, _ = asyncio.run(_call(app, _scope("/v1/audit", None)))
    assert status == 429 and inner.seen == []


def test_a_known_key_from_the_same_address_passes_undelayed() -> None:
    app, inner, attempts, _ = _make(delay_s=1.0)
    _exhaust(attempts)
    status, _, _, took = asyncio.run(_call(app, _scope("/v1/audit", GOOD)))
    assert status == 200 and inner.seen == ["/v1/audit"] and took < 0.1


@pytest.mark.parametrize("path", ["/healthz", "/metrics", "/readyz", "/", "/static/app.js"])
def test_open_paths_are_never_delayed(path: str) -> None:
    app, inner, attempts, _ = _make(delay_s=1.0)
    _exhaust(attempts)
    status, _, _, took = asyncio.run(_call(app, _scope(path, WRONG)))
    assert status == 200 and inner.seen == [path] and took < 0.1


def test_other_addresses_are_not_affected() -> None:
    app, _, attempts, _ = _make(delay_s=1.0)
    _exhaust(attempts, "10.0.0.1")
    status, _, _, took = asyncio.run(_call(app, _scope("/v1/search", WRONG, host="10.0.0.2")))
    assert status == 200 and took < 0.1


def test_the_tarpit_holds_at_most_max_held_requests_of_one_address() -> None:
    app, inner, attempts, refused = _make(delay_s=0.6, max_held=3)
    _exhaust(attempts)

    async def main() -> list[tuple[int, dict[bytes, bytes], bytes, float]]:
        calls = [_call(app, _scope("/v1/search", WRONG)) for _ in range(7)]
        return list(await asyncio.gather(*calls))

    results = asyncio.run(main())
    assert all(status == 429 for status, _, _, _ in results)
    slow = [r for r in results if r[3] >= 0.28]
    fast = [r for r in results if r[3] < 0.1]
    assert len(slow) == 3 and len(fast) == 4
    # beyond the cap: answered at once, and the connection closed so it costs a reconnect
    assert all(r[1].get(b"connection") == b"close" for r in fast)
    assert all(b"retry-after" in r[1] for r in fast)
    assert inner.seen == []
    assert refused.count("auth_tarpit") == 3 and refused.count("auth_tarpit_full") == 4
    assert app.held == {}  # every place given back
    # after the delay, the places are free again
    status, _, _, took = asyncio.run(_call(app, _scope("/v1/search", WRONG)))
    assert status == 429 and took >= 0.28


def test_a_cancelled_request_gives_its_place_back() -> None:
    app, _, attempts, _ = _make(delay_s=5.0, max_held=1)
    _exhaust(attempts)

    async def main() -> None:
        task = asyncio.ensure_future(_call(app, _scope("/v1/search", WRONG)))
        await asyncio.sleep(0.05)
        assert app.held == {"10.0.0.1": 1}
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert app.held == {}

    asyncio.run(main())


def test_non_http_scopes_pass() -> None:
    attempts = RateLimiter(per_minute=60, burst=1)
    _exhaust(attempts)

    async def main() -> None:
        async def receive() -> dict[str, Any]:
            return {"type": "lifespan.startup"}

        async def send(message: Any) -> None:
            return None

        seen: list[str] = []

        async def lifespan(scope: Any, receive: Any, send: Any) -> None:
            seen.append(scope["type"])

        wrapped = AuthTarpit(
            lifespan,
            attempts=attempts,
            is_known=lambda t: False,
            delay_s=1.0,
            max_held=1,
        )
        await wrapped({"type": "lifespan"}, receive, send)
        assert seen == ["lifespan"]

    asyncio.run(main())


def test_bad_tarpit_config() -> None:
    with pytest.raises(ValueError):
        AuthTarpit(
            Inner(),
            attempts=RateLimiter(per_minute=60, burst=1),
            is_known=bool,
            delay_s=-1.0,
            max_held=1,
        )
