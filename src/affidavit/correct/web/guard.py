"""URL safety: the domain allowlist and the SSRF guard used before every fetch (and redirect).

Examples:
    >>> domain_allowed("https://en.wikipedia.org/wiki/X", ["wikipedia.org"])
    True
    >>> domain_allowed("https://evil-wikipedia.org/", ["wikipedia.org"])
    False
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from affidavit.core.errors import WebSearchError

Resolver = Callable[[str, int], list[str]]
_HOST_CHARS = re.compile(r"[a-z0-9._:%-]+")


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the host resolves to (IPv4 and IPv6)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def ascii_domain(name: str) -> str | None:
    """``name`` as DNS sees it: IDNA (ASCII, ``xn--`` labels), lower-cased, without a trailing
    dot; None when IDNA cannot encode it (an empty or over-long label) or it holds a character
    no host name has (a NUL ends the name the C resolver reads: ``evil.example\\x00.good.org``
    would pass a ``good.org`` allowlist and resolve ``evil.example``).

    The allowlist, the resolver, the ``Host`` header and TLS SNI all use this one form, so the
    name that is checked is the name that is connected to.

    Examples:
        >>> ascii_domain("BÜCHER.example.")
        'xn--bcher-kva.example'
    """
    name = name.strip().rstrip(".")
    if not name:
        return None
    try:
        ascii_name = name.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    # letters, digits, hyphens, dots, underscores; colons and a zone (%) for IPv6 literals
    return ascii_name if _HOST_CHARS.fullmatch(ascii_name) else None


def url_host(url: str) -> str | None:
    """The host of a URL in its `ascii_domain` form (IPv6 without brackets), or None when
    malformed."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  raises ValueError past 65535: malformed, not the host's
    except ValueError:
        return None
    return ascii_domain(host) if host else None


def domain_allowed(url: str, allowlist: Sequence[str] | None) -> bool:
    """True when the URL's host is an allowlisted domain or a subdomain of one.

    ``None`` (no allowlist set) allows every well-formed URL. An allowlist that is set but
    empty, or holds only blank entries, allows none: a guard never opens by itself.
    """
    host = url_host(url)
    if host is None:
        return False
    if allowlist is None:
        return True
    for entry in allowlist:
        d = ascii_domain(entry.strip().lstrip("."))
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


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
        if scheme not in ("http", "https"):
            raise self._refuse(url, f"scheme {scheme!r} is not http(s)")
        if parts.username is not None or parts.password is not None:
            raise self._refuse(url, "credentials in URL")
        if not parts.hostname:
            raise self._refuse(url, "no host")
        host = url_host(url)
        if not host:
            raise self._refuse(url, f"host {parts.hostname!r} is not a valid domain name")
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
