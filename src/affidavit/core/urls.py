"""Endpoint URLs as errors, logs and certificates may name them: no password, no secret.

A model endpoint's URL (``generate.base_url``, ``embed.base_url``) may carry a password
(``https://user:pw@host/v1``) or a key in its query (``?api-key=...``). What is recorded or shown
is `shown_url`; what was sent is taken out of any text shown with `Redactor`; and
`HiddenSecretsTransport` keeps a secret query out of the URL httpx logs of each request.

httpx is imported here: import this module where a client is made, not at the top of a module
that may never make one.

Examples:
    >>> shown_url("https://svc:pw@llm.test/v1?api-key=k&v=7")
    'https://***@llm.test/v1?api-key=%2A%2A%2A&v=7'
    >>> Redactor("https://svc:pw@llm.test/v1", ["sk-1"]).redact("401 for sk-1 at pw")
    '401 for *** at ***'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, urlencode
from urllib.request import getproxies, proxy_bypass

import httpx

# an answer is read by `affidavit.core.answers` (bounded on its decoded size); named here too
from affidavit.core.answers import (
    ACCEPT_ENCODING,
    AnswerTooLarge,
    AnswerTooSlow,
    AnswerUndecodable,
    read_answer,
)

__all__ = [
    "ACCEPT_ENCODING",
    "SECRET_PARAM",
    "AnswerTooLarge",
    "AnswerTooSlow",
    "AnswerUndecodable",
    "HiddenSecretsTransport",
    "Redactor",
    "read_answer",
    "shown_url",
]

#: a query parameter whose value is a secret (by its name)
SECRET_PARAM = re.compile(r"key|token|secret|sig|auth|pass|cred", re.IGNORECASE)


def shown_url(url: str) -> str:
    """``url`` as errors, logs and certificates name it: no password, no secret parameter.

    Raises:
        httpx.InvalidURL: ``url`` is not a URL.
    """
    parsed = httpx.URL(url)
    if parsed.userinfo:
        parsed = parsed.copy_with(username=parsed.username or None, password=None)
        if parsed.username:
            parsed = parsed.copy_with(username="***")
    params = [(k, "***" if SECRET_PARAM.search(k) else v) for k, v in parsed.params.multi_items()]
    if params:
        parsed = parsed.copy_with(query=urlencode(params).encode())
    return str(parsed)


class Redactor:
    """Takes the secrets sent to an endpoint out of a text (a server's answer, an exception).

    Args:
        url: the endpoint URL as configured (its password and secret parameters are secrets,
            and the URL itself is replaced by its `shown_url`).
        secrets: other secrets sent (an API key).
    """

    def __init__(self, url: str, secrets: Iterable[str | None] = ()) -> None:
        parsed = httpx.URL(url)
        params = [v for k, v in parsed.params.multi_items() if SECRET_PARAM.search(k)]
        found = [x for x in (*secrets, parsed.password, *params) if x]
        found += [quoted(x, safe="") for x in found for quoted in (quote, quote_plus)]
        # the longest first, so a secret that holds another is replaced whole
        self.secrets = sorted(set(found), key=len, reverse=True)
        self.raw_url = str(parsed)
        self.shown_url = shown_url(url)

    def redact(self, text: str) -> str:
        """``text`` with the URL shown as `shown_url` and every secret as ``***``."""
        text = text.replace(self.raw_url, self.shown_url)
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


class HiddenSecretsTransport(httpx.BaseTransport):
    """Sends a request made to ``shown`` to ``real`` instead (the same URL, its secret query
    values in place of ``***``), so that the URL httpx logs, and keeps on the request and the
    response, is the one shown.

    Args:
        inner: the transport that sends (None: httpx's own, through the proxy the environment
            names for ``real``, as a client given no transport would).
        real: the URL with its secrets (no user information: a password goes as Basic auth).
    """

    def __init__(self, inner: httpx.BaseTransport | None, real: httpx.URL) -> None:
        self.inner = inner or _env_transport(real)
        self.real = real
        self.shown = httpx.URL(shown_url(str(real)))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``, to the real URL when it names the shown one."""
        if request.url != self.shown:
            return self.inner.handle_request(request)
        request.url = self.real
        try:
            return self.inner.handle_request(request)
        finally:
            request.url = self.shown

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


def _env_transport(url: httpx.URL) -> httpx.BaseTransport:
    """httpx's transport for ``url``, through the proxy ``HTTP(S)_PROXY`` names (unless
    ``NO_PROXY`` excludes the host): what a client given no transport of its own uses."""
    proxies = getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if proxy and proxy_bypass(url.host):
        proxy = None
    return httpx.HTTPTransport(proxy=proxy)
