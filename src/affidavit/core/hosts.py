"""The host of a web URL, read one way for every security decision.

The audit's source allowlist (`affidavit.policy.sources`) and the web fallback's guard
(`affidavit.correct.web.guard`) both decide by a URL's host. Two parsers for one decision can
disagree, and a disagreement is a bypass: the host that is checked must be the host that is
connected to, and the host a reader's browser opens. So both use `parse_web_url`, which reads
only what Python's ``urlsplit`` (used to connect), browsers (the WHATWG URL standard) and the
resolver agree on, and refuses everything else (fail closed):

- the scheme is ``http`` or ``https`` (any case), followed by ``//``;
- no user information (``https://allowed.com@evil.com/``), no backslash before the path
  (``https://evil.com\\@allowed.com`` is evil.com to a browser, allowed.com to ``urlsplit``), no
  control character anywhere (``urlsplit`` and browsers silently drop tabs and newlines), no
  space or control character at either end;
- a host name is letters, digits and hyphens in dot-separated labels of 1-63 characters (253 in
  all), at least two labels or ``localhost``, lower-cased, one trailing dot dropped; no ``%``
  (browsers decode percent-encoded hosts, ``urlsplit`` does not), no ``_``, no empty label;
- a non-ASCII name is taken in its IDNA (``xn--``) form only when Python's codec (IDNA 2003)
  and UTS 46 (browsers) give the same name: ``straße`` is ``strasse`` to one and
  ``xn--strae-oqa`` to the other, so it is refused; an ``xn--`` label must be valid Punycode;
- a name whose last label is a number is an IPv4 address, and only dotted decimal counts
  (``2130706433``, ``0x7f.1``, ``0177.0.0.1`` and ``127.1`` are 127.0.0.1 to browsers);
- an IPv6 address is in brackets, without a zone id, and is given in its compressed form;
- a port is ASCII digits, 1 to 65535 (an empty port is refused).

`host_allowed` is the allowlist match both callers share: an entry allows its host and its
subdomains (on label boundaries), ``www.X`` and ``X`` are one site, an address allows only
itself, and an entry that is not a host name (or a URL with one) allows nothing.

Examples:
    >>> web_host("https://Docs.Example.ORG.:8443/a?b")
    'docs.example.org'
    >>> web_host("https://evil.com\\\\@allowed.com/") is None
    True
    >>> host_allowed("docs.example.org", ["example.org"]), host_allowed("badexample.org", ["example.org"])
    (True, False)
"""  # noqa: E501

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

import idna

__all__ = [
    "WEB_SCHEMES",
    "UnsafeUrl",
    "WebUrl",
    "allowlist_host",
    "host_allowed",
    "is_ip",
    "normalize_host",
    "parse_web_url",
    "web_host",
]

WEB_SCHEMES = frozenset({"http", "https"})
_MAX_PORT = 65535
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# the last label of a name browsers read as an IPv4 address (decimal, or hex after 0x)
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_IPV4 = re.compile(r"(?:0|[1-9][0-9]{0,2})(?:\.(?:0|[1-9][0-9]{0,2})){3}")


class UnsafeUrl(ValueError):
    """A URL (or host) that is malformed or that parsers could read two ways; the message
    says why."""


@dataclass(frozen=True)
class WebUrl:
    """A web URL as `parse_web_url` reads it.

    Attributes:
        scheme: ``http`` or ``https``.
        host: the ASCII host: lower case, IDNA ``xn--`` labels, no trailing dot; an IPv4
            address in dotted decimal, an IPv6 one compressed and without brackets.
        port: the port written in the URL, or None.
        is_ip: whether the host is an IP address.
    """

    scheme: str
    host: str
    port: int | None
    is_ip: bool


def parse_web_url(url: str) -> WebUrl:
    """Read an ``http(s)`` URL's scheme, host and port, refusing any ambiguity.

    Raises:
        UnsafeUrl: not an ``http(s)`` URL with a host, or one parsers could read two ways
            (see the module).

    Examples:
        >>> parse_web_url("HTTPS://b\\u00fccher.example:8443/")
        WebUrl(scheme='https', host='xn--bcher-kva.example', port=8443, is_ip=False)
    """
    if not isinstance(url, str) or not url:
        raise UnsafeUrl("empty URL")
    if url != url.strip():
        raise UnsafeUrl("space or control character at an end of the URL")
    if _CONTROL.search(url):
        raise UnsafeUrl("control character (tab, newline, NUL...) in the URL")
    m = _SCHEME.match(url)
    if m is None:
        raise UnsafeUrl("no scheme")
    scheme = m.group(1).lower()
    if scheme not in WEB_SCHEMES:
        raise UnsafeUrl(f"scheme {scheme!r} is not http(s)")
    rest = url[m.end() :]
    if not rest.startswith("//"):
        raise UnsafeUrl("no '//' after the scheme")
    # the authority as urlsplit ends it; browsers also end it at a backslash, so one in it
    # means two readings
    authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
    if "\\" in authority:
        raise UnsafeUrl("backslash in the host part")
    if "@" in authority:
        raise UnsafeUrl("user information in the URL")
    host_text, port_text = _split_port(authority)
    port: int | None = None
    if port_text is not None:
        if not re.fullmatch(r"[0-9]+", port_text):
            raise UnsafeUrl(f"port {port_text!r} is not a number")
        port = int(port_text)
        if not 1 <= port <= _MAX_PORT:
            raise UnsafeUrl(f"port {port} is out of range")
    if not host_text:
        raise UnsafeUrl("no host")
    host = _host(host_text, bracketed_only=True)
    # what the fetcher's urlsplit reads must be what was checked
    try:
        parts = urlsplit(url)
        same = (
            parts.scheme.lower() == scheme
            and parts.hostname is not None
            and (
                parts.hostname == host
                or _host(_bracketed(parts.hostname), bracketed_only=True) == host
            )
            and parts.port == port
        )
    except (ValueError, UnsafeUrl):
        same = False
    if not same:
        raise UnsafeUrl("urlsplit reads another host or port")
    return WebUrl(scheme=scheme, host=host, port=port, is_ip=is_ip(host))


def web_host(url: str) -> str | None:
    """The host of an ``http(s)`` URL as `parse_web_url` reads it, or None when refused."""
    try:
        return parse_web_url(url).host
    except UnsafeUrl:
        return None


def normalize_host(name: str) -> str | None:
    """A host as written (no scheme, no port) in the form `parse_web_url` gives, or None when
    it is not a host name or address (see the module). An IPv6 address may be in brackets.

    Examples:
        >>> normalize_host("B\\u00dcCHER.example."), normalize_host("[::1]"), normalize_host("0x7f.1")
        ('xn--bcher-kva.example', '::1', None)
    """  # noqa: E501
    try:
        return _host(name, bracketed_only=False)
    except UnsafeUrl:
        return None


def is_ip(host: str) -> bool:
    """Whether a normalised host (from `parse_web_url` or `normalize_host`) is an IP address:
    an IPv6 one has colons, an IPv4 one is dotted decimal (no host name ends in a number)."""
    return ":" in host or _IPV4.fullmatch(host) is not None


@lru_cache(maxsize=4096)  # read once per entry, not once per URL checked
def allowlist_host(entry: str) -> str | None:
    """The host an allowlist entry names: a host name or address (a leading dot, as in
    ``.nih.gov``, is dropped), or an ``http(s)`` URL's host; None when it names none (blank,
    ``file:`` entries, wildcards, host and port...), so that it allows nothing."""
    e = entry.strip()
    if "://" in e:
        return web_host(e)
    return normalize_host(e.removeprefix(".")) if e else None


def host_allowed(host: str, allowlist: Iterable[str]) -> bool:
    """Whether a normalised ``host`` (from `parse_web_url`) is on the allowlist: an entry
    allows its host and every subdomain of it, ``www.X`` and ``X`` are one site, and an IP
    address is allowed only by itself.

    Examples:
        >>> host_allowed("example.org", ["www.example.org"]), host_allowed("x.example.org", ["www.example.org"])
        (True, False)
    """  # noqa: E501
    ip = is_ip(host)
    for entry in allowlist:
        e = allowlist_host(entry)
        if e is None:
            continue
        if host == e:
            return True
        if ip or is_ip(e):
            continue
        if host.endswith("." + e) or _site(host) == _site(e):
            return True
    return False


def _site(host: str) -> str:
    return host[4:] if host.startswith("www.") and host.count(".") > 1 else host


def _bracketed(hostname: str) -> str:
    return f"[{hostname}]" if ":" in hostname else hostname


def _split_port(authority: str) -> tuple[str, str | None]:
    """``host[:port]`` or ``[v6][:port]`` into the host as written and the port text."""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise UnsafeUrl("unclosed '[' in the host")
        host, after = authority[: end + 1], authority[end + 1 :]
        if not after:
            return host, None
        if not after.startswith(":"):
            raise UnsafeUrl("text after the IPv6 address")
        return host, after[1:]
    host, sep, port = authority.partition(":")
    return host, port if sep else None


def _host(text: str, *, bracketed_only: bool) -> str:
    """The normalised host for ``text`` (see `normalize_host`); raises `UnsafeUrl`."""
    if text.startswith("[") or text.endswith("]"):
        if not (text.startswith("[") and text.endswith("]")):
            raise UnsafeUrl("unbalanced brackets in the host")
        return _ipv6(text[1:-1])
    if ":" in text:
        if bracketed_only:
            raise UnsafeUrl("an IPv6 address must be in brackets")
        return _ipv6(text)
    if not text.isascii():
        text = _idna(text)
    name = text.lower()
    if name.endswith("."):
        name = name[:-1]
    labels = name.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        if not _IPV4.fullmatch(name):
            raise UnsafeUrl(f"{text!r} is an IPv4 address not written in dotted decimal")
        try:
            return str(ipaddress.IPv4Address(name))
        except ValueError:
            raise UnsafeUrl(f"{text!r} is not an IPv4 address") from None
    if not name or len(name) > 253:
        raise UnsafeUrl("host name empty or longer than 253 characters")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise UnsafeUrl(f"{text!r} is not a host name (label {label[:70]!r})")
        if label.startswith("xn--"):
            _check_a_label(label)
    if len(labels) < 2 and name != "localhost":
        raise UnsafeUrl(f"{text!r} is one label (not a qualified host name)")
    return name


def _ipv6(text: str) -> str:
    if "%" in text:
        raise UnsafeUrl("IPv6 zone id in the host")
    if not re.fullmatch(r"[0-9A-Fa-f:.]+", text):
        raise UnsafeUrl(f"{text[:70]!r} is not an IPv6 address")
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        raise UnsafeUrl(f"{text[:70]!r} is not an IPv6 address") from None


def _idna(text: str) -> str:
    """A non-ASCII name in its ASCII form, when IDNA 2003 (Python's codec, what the resolver
    is given) and UTS 46 non-transitional (browsers) agree on it."""
    try:
        codec = text.encode("idna").decode("ascii").lower()
        uts46 = idna.encode(text, uts46=True, transitional=False).decode("ascii").lower()
    except (UnicodeError, idna.IDNAError, ValueError):
        raise UnsafeUrl(f"{text[:70]!r} cannot be encoded as an IDNA host name") from None
    if codec.rstrip(".") != uts46.rstrip("."):
        raise UnsafeUrl(f"{text[:70]!r} is {codec!r} to IDNA 2003 and {uts46!r} to browsers")
    return codec


def _check_a_label(label: str) -> None:
    """An ``xn--`` label must be the Punycode of a non-ASCII label that encodes back to it
    (``xn--strae-oqa`` is one name however its Unicode form would be re-encoded: it is sent as
    it is written)."""
    try:
        decoded = idna.decode(label)
        back = idna.encode(decoded, uts46=True, transitional=False).decode("ascii")
    except (UnicodeError, idna.IDNAError, ValueError):
        raise UnsafeUrl(f"{label!r} is not a valid IDNA label") from None
    if decoded.isascii() or back != label:
        raise UnsafeUrl(f"{label!r} is not a valid IDNA label")
