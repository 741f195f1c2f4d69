"""URL safety: the domain allowlist and the SSRF guard used before every fetch (and redirect).

Examples:
    >>> domain_allowed("https://en.wikipedia.org/wiki/X", ["wikipedia.org"])
    True
    >>> domain_allowed("https://evil-wikipedia.org/", ["wikipedia.org"])
    False
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from affidavit.core.errors import WebSearchError
from affidavit.core.hosts import (
    WEB_SCHEMES,
    UnsafeUrl,
    host_allowed,
    normalize_host,
    parse_web_url,
    web_host,
)

Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the host resolves to (IPv4 and IPv6)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def ascii_domain(name: str) -> str | None:
    """``name`` as DNS sees it: IDNA (ASCII, ``xn--`` labels), lower-cased, without a trailing
    dot; None when it is not a host name or address as `affidavit.core.hosts.normalize_host`
    reads it (an empty or over-long label, a NUL: ``evil.example\\x00.good.org`` would pass a
    ``good.org`` allowlist and the C resolver would look up ``evil.example``; a ``%``, an
    underscore, a name IDNA 2003 and browsers read differently...).

    The allowlist, the resolver, the ``Host`` header and TLS SNI all use this one form, so the
    name that is checked is the name that is connected to.

    Examples:
        >>> ascii_domain("BÜCHER.example.")
        'xn--bcher-kva.example'
    """
    return normalize_host(name.strip())


def url_host(url: str) -> str | None:
    """The host of an ``http(s)`` URL in its `ascii_domain` form (IPv6 without brackets), or
    None when malformed or ambiguous (`affidavit.core.hosts.parse_web_url`, which the audit's
    source allowlist uses too)."""
    return web_host(url)


def domain_allowed(url: str, allowlist: Sequence[str] | None) -> bool:
    """True when the URL is a well-formed ``http(s)`` URL whose host is an allowlisted domain or
    a subdomain of one (`affidavit.core.hosts.host_allowed`: ``www.X`` and ``X`` are one site).

    ``None`` (no allowlist set) allows every well-formed URL. An allowlist that is set but
    empty, or holds only blank entries, allows none: a guard never opens by itself.
    """
    host = url_host(url)
    if host is None:
        return False
    if allowlist is None:
        return True
    return host_allowed(host, allowlist)


def address_refusal(ip: str) -> str | None:
    """Why an IP address may not be fetched (private, loopback...), or None when it is public."""
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address):
        mapped = addr.ipv4_mapped or addr.sixtofour
        if mapped is not None:
            addr = mapped
    checks = (
        ("loopback", addr.is_loopback),
        ("link-local", addr.is_link_local),
        ("site-local", isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local),
        ("multicast", addr.is_multicast),
        ("unspecified", addr.is_unspecified),
        ("reserved", addr.is_reserved),
        ("private", addr.is_private),
    )
    for name, hit in checks:
        if hit:
            return f"{name} address {addr}"
    if not addr.is_global:
        return f"non-global address {addr}"
    return None


class UrlGuard:
    """Checks URLs before they are fetched.

    Refuses non-http(s) schemes, URLs with credentials, hosts outside the allowlist and (unless
    ``allow_private_addresses``) hosts that resolve to any private, loopback, link-local,
    multicast, reserved or otherwise non-global address. `check` returns the addresses so
    that the caller connects to exactly the address that was checked (no DNS rebinding window).

    Examples:
        >>> UrlGuard().check("file:///etc/passwd")
        Traceback (most recent call last):
        ...
        affidavit.core.errors.WebSearchError: refused file:///etc/passwd: scheme 'file' is not http(s) (stage=correct, source=file:///etc/passwd)
    """  # noqa: E501

    def __init__(
        self,
        *,
        allowlist: Sequence[str] | None = None,
        allow_private_addresses: bool = False,
        resolver: Resolver = system_resolver,
    ) -> None:
        self.allowlist = None if allowlist is None else list(allowlist)
        self.allow_private_addresses = allow_private_addresses
        self.resolver = resolver

    def _refuse(self, url: str, why: str) -> WebSearchError:
        return WebSearchError(f"refused {url}: {why}", source=url, reason=why)

    def check(self, url: str) -> list[str]:
        """Return the host's checked addresses; raise `WebSearchError` when refused."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise self._refuse(url, f"malformed URL ({exc})") from None
        scheme = parts.scheme.lower()
        if scheme not in WEB_SCHEMES:
            raise self._refuse(url, f"scheme {scheme!r} is not http(s)")
        if parts.username is not None or parts.password is not None:
            raise self._refuse(url, "credentials in URL")
        if not parts.hostname:
            raise self._refuse(url, "no host")
        try:
            host = parse_web_url(url).host
        except UnsafeUrl as exc:
            raise self._refuse(url, f"malformed or ambiguous URL ({exc})") from None
        if not domain_allowed(url, self.allowlist):
            raise self._refuse(url, f"host {host} is not in the allowlist")
        try:
            addrs = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                addrs = self.resolver(host, port or (443 if scheme == "https" else 80))
            except (OSError, UnicodeError) as exc:
                raise self._refuse(url, f"cannot resolve {host} ({exc})") from None
        if not addrs:
            raise self._refuse(url, f"{host} resolves to no address")
        if not self.allow_private_addresses:
            for a in addrs:
                why = address_refusal(a)
                if why is not None:
                    raise self._refuse(url, f"{host} resolves to a {why}")
        return addrs
