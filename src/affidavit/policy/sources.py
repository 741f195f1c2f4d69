"""Source policy: which chunks may reach a prompt (allowlist) and how old their sources are.

The allowlist matches domain suffixes ("example.org" allows "docs.example.org", not
"badexample.org"; "www.example.org" allows "example.org" but not "docs.example.org"). With no
allowlist (None) every chunk passes except one whose URL is present but malformed; an allowlist
set but empty allows no web source (it narrows, never opens). URL hosts and allowlist entries
are read by `affidavit.core.hosts`, as the web fallback's guard reads them: a URL two parsers
could read two ways is malformed.

A local source (a path such as ``docs/guide.md`` or ``/srv/docs/a.txt``, or a ``file:`` URL) is
named in the allowlist as ``file:PATH``: ``file:docs`` allows every source under ``docs/``
(whole path segments: not ``docs2/``), ``file:/srv/docs`` or ``file:///srv/docs`` everything under
``/srv/docs``, and ``file:*`` every local source. An allowlist with no ``file:`` entry allows no
local source (``not_allowlisted``); a bare ``file:`` names nothing.
Freshness reads the source date from chunk metadata (``published_at``, ``date``,
``year`` or the configured ``date_key``); a bare year counts as 1 January, a day and month that
read either way ("01/02/2025") as the older date, a time with a zone as its UTC date; a value
that cannot be parsed is reported, never a crash.

Examples:
    >>> from affidavit.core.settings import AuditSettings
    >>> from affidavit.core.types import Chunk
    >>> s = AuditSettings(allowlist=["example.org"])
    >>> kept, blocked = apply_allowlist([Chunk(text="a", url="https://evil.test/x")], s)
    >>> kept, blocked[0].reason
    ([], 'not_allowlisted')
    >>> s = AuditSettings(allowlist=["example.org", "file:docs"])
    >>> [c.url for c in apply_allowlist([Chunk(text="a", url="docs/a.md"),
    ...                                  Chunk(text="b", url="secret/b.md")], s)[0]]
    ['docs/a.md']
"""

from __future__ import annotations

import logging
import math
import posixpath
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import unquote

from affidavit.core.hosts import UnsafeUrl, host_allowed, normalize_host, parse_web_url, web_host
from affidavit.core.report import BlockedSource, SourceFreshness
from affidavit.core.settings import AuditSettings
from affidavit.core.types import Chunk

logger = logging.getLogger(__name__)

DEFAULT_DATE_KEYS: tuple[str, ...] = ("published_at", "date", "year")
FUTURE_TOLERANCE_DAYS = 1
"""A source dated up to this many days after today (UTC) is fresh (its time zone may be ahead);
a later date is unknown, not fresh."""


def url_domain(url: str) -> str | None:
    """The normalised host of a web URL (lower case, no ``www.``, no port), or None if malformed.

    Only ``http``/``https`` URLs with a valid host (a dotted name, ``localhost`` or an IP) and
    no port past 65535 count as well-formed web sources; ``file:`` and bare paths have no domain.
    The host is read by `affidavit.core.hosts.parse_web_url`, as the web fallback's guard reads
    it: anything two parsers could read two ways (user information, a backslash or a control
    character in the host, a percent-encoded host, an IPv4 address not in dotted decimal...)
    is malformed. Spaces around the URL are ignored.

    Examples:
        >>> url_domain("https://WWW.Example.org:8080/a?b=1")
        'example.org'
        >>> url_domain("htp:/broken") is None
        True
    """
    try:
        parsed = parse_web_url(url.strip())
    except UnsafeUrl:
        return None
    return parsed.host if parsed.is_ip else parsed.host.removeprefix("www.")


def domain_allowed(domain: str, allowlist: Sequence[str]) -> bool:
    """Suffix match on label boundaries: 'example.org' allows 'a.example.org'.

    ``domain`` is a host (as `url_domain` gives it); the allowlist is read as the web fallback's
    guard reads it (`affidavit.core.hosts.host_allowed`): ``www.example.org`` allows
    ``example.org`` but not ``a.example.org``, and an entry that names no host allows nothing.
    """
    host = normalize_host(domain)
    return host is not None and host_allowed(host, allowlist)


def check_source(chunk: Chunk, settings: AuditSettings) -> BlockedSource | None:
    """Why a chunk is blocked by the source policy, or None when it may be used."""
    url = chunk.url.strip() if chunk.url else ""
    if not url:
        if settings.allowlist is not None and settings.require_url:
            return BlockedSource(
                chunk_id=chunk.id,
                url=chunk.url,
                reason="missing_url",
                detail="the chunk has no source URL and require_url is set",
            )
        return None
    host = web_host(url)
    if host is None:
        if not _looks_like_web(url):  # a local path, a file: URL or a doc id
            if settings.allowlist is None or local_allowed(url, settings.allowlist):
                return None
            return BlockedSource(
                chunk_id=chunk.id,
                url=chunk.url,
                reason="not_allowlisted",
                detail=f"the local source '{url[:200]}' is not on the allowlist (name local "
                "sources there as file:PATH, or file:* for all)",
            )
        return BlockedSource(
            chunk_id=chunk.id,
            url=chunk.url,
            reason="malformed_url",
            detail=f"'{url[:200]}' is not a well-formed http(s) URL",
        )
    domain = url_domain(url) or host
    if settings.allowlist is not None and not host_allowed(host, settings.allowlist):
        return BlockedSource(
            chunk_id=chunk.id,
            url=chunk.url,
            domain=domain,
            reason="not_allowlisted",
            detail=f"{domain} is not on the allowlist"
            + ("" if settings.allowlist else " (the allowlist is set and empty: nothing is)"),
        )
    return None


def local_path(source: str) -> str:
    """A local source as a normalised POSIX path: ``file:`` URLs unwrapped and unquoted,
    backslashes as slashes, ``.`` and ``..`` segments resolved.

    Examples:
        >>> local_path("file:///srv/docs/a%20b.txt"), local_path("docs/./x/../a.md")
        ('/srv/docs/a b.txt', 'docs/a.md')
    """
    p = source.strip()
    if p.lower().startswith("file:"):
        p = unquote(p[5:])
        if p.startswith("//"):
            host, _, rest = p[2:].partition("/")
            # file:///path, or file://localhost/path; another host is a remote share, kept
            # in the path so it can only match an entry naming that host
            p = "/" + rest if host.lower() in ("", "localhost") else "//" + p[2:]
    p = p.replace("\\", "/")
    return posixpath.normpath(p) if p else ""


def local_allowed(source: str, allowlist: Sequence[str]) -> bool:
    """Whether a ``file:`` entry of the allowlist names this local source (see the module).

    Examples:
        >>> local_allowed("docs/a.md", ["file:docs"]), local_allowed("docs2/a.md", ["file:docs"])
        (True, False)
    """
    path = local_path(source)
    for entry in allowlist:
        e = entry.strip()
        if not e.lower().startswith("file:"):
            continue
        if e[5:].strip() == "*":
            return True
        prefix = local_path(e)
        if not prefix or prefix == ".":
            continue  # a bare "file:" names nothing: an empty value must not open the policy
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            return True
    return False


def _looks_like_web(url: str) -> bool:
    """A string that tries to be a web address ("http...", "www.", "scheme://", "mailto:")."""
    low = url.strip().lower()
    if low.startswith("file:"):
        return False
    return (
        low.startswith(("http", "htp", "www."))
        or "//" in low
        or bool(re.match(r"^[a-z][a-z0-9+.-]*:", low))
    )


def apply_allowlist(
    chunks: Sequence[Chunk], settings: AuditSettings
) -> tuple[list[Chunk], list[BlockedSource]]:
    """Split chunks into those the policy keeps and those it blocks (with reasons)."""
    kept: list[Chunk] = []
    blocked: list[BlockedSource] = []
    for chunk in chunks:
        why = check_source(chunk, settings)
        if why is None:
            kept.append(chunk)
        else:
            logger.info("blocked source", extra={"chunk": chunk.id, "reason": why.reason})
            blocked.append(why)
    return kept, blocked


# --------------------------------------------------------------------------- freshness

_DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%d %B %Y",
    "%d %b %Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%b %d %Y",
    "%B %Y",
    "%b %Y",
    "%d/%m/%Y",
    "%m/%d/%Y",
    "%Y%m%d",
    "%a, %d %b %Y %H:%M:%S %Z",
    "%a, %d %b %Y %H:%M:%S %z",
)


def parse_source_date(value: Any) -> tuple[date | None, str]:
    """Parse a metadata date value; returns (date, note). Never raises.

    Accepts ``date``/``datetime`` objects, ints and numeric strings (a year -> 1 January, or
    a Unix timestamp), ISO 8601 with or without time and zone, and common written formats.

    Examples:
        >>> parse_source_date("2024")
        (datetime.date(2024, 1, 1), 'year only: taken as 1 January')
        >>> parse_source_date("next Tuesday")[0] is None
        True
    """
    if isinstance(value, datetime):
        return _utc_date(value), ""
    if isinstance(value, date):
        return value, ""
    if isinstance(value, bool) or value is None:
        return None, f"unusable date value {value!r}"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return None, f"number {value!r} is not a date"  # JSON NaN, or 1e400 read as inf
        n = int(value)
        if 1000 <= n <= 9999 and float(value) == n:
            return date(n, 1, 1), "year only: taken as 1 January"
        if n > 10**8:
            try:
                return datetime.fromtimestamp(n / (1000 if n > 10**11 else 1), tz=UTC).date(), (
                    "Unix timestamp"
                )
            except (OverflowError, OSError, ValueError):
                return None, f"timestamp {value!r} out of range"
        return None, f"number {value!r} is not a year or a timestamp"
    if not isinstance(value, str):
        return None, f"unusable date value of type {type(value).__name__}"
    s = value.strip()
    if not s:
        return None, "empty date"
    if re.fullmatch(r"\d{4}", s) and int(s) > 0:
        return date(int(s), 1, 1), "year only: taken as 1 January"
    if re.fullmatch(r"\d{9,13}", s):
        return parse_source_date(int(s))
    iso = s.replace("Z", "+00:00") if s.endswith("Z") else s
    try:
        return _utc_date(datetime.fromisoformat(iso)), ""
    except ValueError:
        pass
    m = re.fullmatch(r"(\d{4})-(\d{1,2})", s)
    if m and int(m.group(1)) > 0 and 1 <= int(m.group(2)) <= 12:
        return date(int(m.group(1)), int(m.group(2)), 1), "year and month only: taken as the 1st"
    cleaned = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", s)
    readings: set[date] = set()
    for fmt in _DATE_FORMATS:
        try:
            readings.add(_utc_date(datetime.strptime(cleaned, fmt)))
        except ValueError:
            continue
    if len(readings) > 1:
        # fail closed: "01/02/2025" is 1 February or 2 January; the older reading is taken, so
        # a date written either way never makes a source fresher than it may be
        return min(readings), "day and month ambiguous: the older reading taken"
    if readings:
        return readings.pop(), ""
    return None, f"cannot parse date {s[:60]!r}"


def _utc_date(when: datetime) -> date:
    """The date of ``when`` in UTC, the zone today is taken in (a time without a zone: as
    written). The local date of a zone ahead of UTC would make a source up to a day younger."""
    return when.astimezone(UTC).date() if when.utcoffset() is not None else when.date()


def source_date(
    metadata: dict[str, Any], date_key: str | None = None
) -> tuple[date | None, str | None, str]:
    """Find and parse a chunk's source date: (date, metadata key used, note)."""
    keys = ([date_key] if date_key else []) + [k for k in DEFAULT_DATE_KEYS if k != date_key]
    notes: list[str] = []
    for key in keys:
        if key not in metadata:
            continue
        parsed, note = parse_source_date(metadata[key])
        if parsed is not None:
            return parsed, key, note
        notes.append(f"{key}: {note}")
    if notes:
        return None, None, "unparseable date in metadata: " + "; ".join(notes)
    return None, None, "no date in metadata (" + ", ".join(keys) + ")"


def assess_freshness(
    chunk: Chunk, settings: AuditSettings, today: date | None = None
) -> SourceFreshness:
    """The freshness of one chunk's source under ``max_age_days``."""
    when, key, note = source_date(chunk.metadata, settings.date_key)
    if settings.max_age_days is None:
        return SourceFreshness(
            chunk_id=chunk.id,
            url=chunk.url,
            status="not_applicable",
            source_date=when.isoformat() if when else None,
            metadata_key=key,
            note=note,
        )
    if when is None:
        return SourceFreshness(
            chunk_id=chunk.id, url=chunk.url, status="unknown", metadata_key=key, note=note
        )
    now = today or datetime.now(UTC).date()
    age = (now - when).days
    if age < -FUTURE_TOLERANCE_DAYS:
        # fail closed: a publication date that has not come yet is wrong, so the source's age
        # is unknown (which counts as stale), never "fresh"
        return SourceFreshness(
            chunk_id=chunk.id,
            url=chunk.url,
            status="unknown",
            source_date=when.isoformat(),
            metadata_key=key,
            note=(note + "; " if note else "") + f"date {when.isoformat()} is in the future",
        )
    if age < 0:
        note = (note + "; " if note else "") + "date is in the future"
        age = 0
    return SourceFreshness(
        chunk_id=chunk.id,
        url=chunk.url,
        status="stale" if age > settings.max_age_days else "fresh",
        source_date=when.isoformat(),
        age_days=age,
        metadata_key=key,
        note=note,
    )
