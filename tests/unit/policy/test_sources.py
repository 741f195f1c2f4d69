"""Source policy: allowlist, URL validity and freshness."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from affidavit.core.settings import AuditSettings
from affidavit.core.types import Chunk
from affidavit.policy.sources import (
    apply_allowlist,
    assess_freshness,
    parse_source_date,
    url_domain,
)

UTC14 = timezone(timedelta(hours=14))


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://www.Example.org/a", "example.org"),
        ("http://docs.example.org:8080/x?y=1", "docs.example.org"),
        ("https://localhost/x", "localhost"),
        ("htp:/broken", None),
        ("https://", None),
        ("https://exa mple.org/", None),
        ("https://example.org:notaport/", None),
        ("ftp://example.org/file", None),
        ("not a url", None),
    ],
)
def test_url_domain(url: str, domain: str | None) -> None:
    assert url_domain(url) == domain


def test_allowlist_suffix_match_on_label_boundaries() -> None:
    s = AuditSettings(allowlist=["example.org"], require_url=True)
    chunks = [
        Chunk(text="a", url="https://docs.example.org/1"),
        Chunk(text="b", url="https://badexample.org/2"),
        Chunk(text="c", url="https://example.org/3"),
        Chunk(text="d", url="htp:/oops"),
        Chunk(text="e"),
    ]
    kept, blocked = apply_allowlist(chunks, s)
    assert [c.text for c in kept] == ["a", "c"]
    assert [(b.url, b.reason) for b in blocked] == [
        ("https://badexample.org/2", "not_allowlisted"),
        ("htp:/oops", "malformed_url"),
        (None, "missing_url"),
    ]


def test_empty_allowlist_keeps_local_paths_but_blocks_malformed_web_urls() -> None:
    s = AuditSettings()
    kept, blocked = apply_allowlist(
        [Chunk(text="a", url="docs/a.pdf"), Chunk(text="b", url="https:/x y"), Chunk(text="c")], s
    )
    assert [c.text for c in kept] == ["a", "c"]
    assert [b.reason for b in blocked] == ["malformed_url"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024", date(2024, 1, 1)),
        (2024, date(2024, 1, 1)),
        ("2024-05-06", date(2024, 5, 6)),
        ("2024-05-06T10:00:00Z", date(2024, 5, 6)),
        ("May 6, 2024", date(2024, 5, 6)),
        ("6th May 2024", date(2024, 5, 6)),
        ("2024-05", date(2024, 5, 1)),
        ("Mon, 06 May 2024 10:00:00 GMT", date(2024, 5, 6)),
        (1714989600, date(2024, 5, 6)),
        ("next Tuesday", None),
        ("", None),
        (None, None),
        (True, None),
        ("2024-13-45", None),
        ([2024], None),
        # hostile metadata (a JSON NaN, 1e400, a year 0): an unusable date, never a crash
        (float("nan"), None),
        (float("inf"), None),
        (float("-inf"), None),
        ("0000", None),
        ("0000-01", None),
        (0, None),
    ],
)
def test_parse_source_date_never_raises(value: object, expected: date | None) -> None:
    got, _note = parse_source_date(value)
    assert got == expected


def test_freshness_verdicts() -> None:
    s = AuditSettings(max_age_days=365, date_key="updated")
    today = date(2026, 1, 1)
    fresh = assess_freshness(Chunk(text="a", metadata={"updated": "2025-06-01"}), s, today)
    stale = assess_freshness(Chunk(text="b", metadata={"year": 2020}), s, today)
    odd = assess_freshness(Chunk(text="c", metadata={"date": "sometime"}), s, today)
    none = assess_freshness(Chunk(text="d"), s, today)
    assert (fresh.status, fresh.age_days, fresh.metadata_key) == ("fresh", 214, "updated")
    assert (stale.status, stale.source_date) == ("stale", "2020-01-01")
    assert odd.status == "unknown" and odd.note.startswith("unparseable")
    assert none.status == "unknown"
    off = assess_freshness(Chunk(text="e", metadata={"year": 2020}), AuditSettings(), today)
    assert off.status == "not_applicable"


def test_a_source_dated_in_the_future_has_no_established_age() -> None:
    """A date past tomorrow cannot be a publication date: it made any source "fresh" (age 0),
    so a stale source passed ``stale_action = "fail"`` by claiming a future date. Its age is
    unknown, which counts as stale; a day ahead is allowed for time zones."""
    s = AuditSettings(max_age_days=30)
    today = date(2026, 1, 1)
    far = assess_freshness(Chunk(text="a", metadata={"date": "2999-01-01"}), s, today)
    assert far.status == "unknown" and "future" in far.note
    tomorrow = assess_freshness(Chunk(text="b", metadata={"date": "2026-01-02"}), s, today)
    assert (tomorrow.status, tomorrow.age_days) == ("fresh", 0)


def test_a_date_read_two_ways_takes_the_older_reading() -> None:
    """A date such as 01/02/2025 is 1 February (day first) or 2 January (month first); it was
    read day first whichever came out later, so a source 150 days old passed a 140-day limit
    as 120 days old. The older reading is taken and said, as a bare year is 1 January."""
    s = AuditSettings(max_age_days=140)
    today = date(2025, 6, 1)
    for written in ("01/02/2025", "02/01/2025"):
        got, note = parse_source_date(written)
        assert got == date(2025, 1, 2) and "ambiguous" in note
        f = assess_freshness(Chunk(text="a", metadata={"date": written}), s, today)
        assert (f.status, f.age_days) == ("stale", 150)
    assert parse_source_date("13/02/2025") == (date(2025, 2, 13), "")  # one reading only
    assert parse_source_date("02/13/2025") == (date(2025, 2, 13), "")


def test_a_time_zone_ahead_of_utc_does_not_make_a_source_younger() -> None:
    """Today is a UTC date, so a source's date is the UTC date of its time: 00:30 on 2 May at
    UTC+14 is 10:30 on 1 May in UTC, 31 days before 1 June. The local date made it 30 days
    old, fresh under a 30-day limit."""
    s = AuditSettings(max_age_days=30)
    today = date(2025, 6, 1)
    for written in ("2025-05-02T00:30:00+14:00", datetime(2025, 5, 2, 0, 30, tzinfo=UTC14)):
        got, _note = parse_source_date(written)
        assert got == date(2025, 5, 1)
        f = assess_freshness(Chunk(text="a", metadata={"date": written}), s, today)
        assert (f.status, f.age_days) == ("stale", 31)
    assert parse_source_date("2025-05-02T00:30:00")[0] == date(2025, 5, 2)  # no zone: as written


def test_an_allowlist_names_local_sources_as_file_paths() -> None:
    """Issue 28: with an allowlist set, every local file was dropped as a malformed URL, so an
    allowlist could not name local sources at all."""
    from affidavit.policy.sources import local_allowed

    s = AuditSettings(allowlist=["example.org", "file:docs", "file:///srv/corpus"])
    chunks = [
        Chunk(text="a", url="docs/guide.md"),
        Chunk(text="b", url="docs2/guide.md"),  # not under docs/: whole segments only
        Chunk(text="c", url="file:///srv/corpus/a%20b.txt"),
        Chunk(text="d", url="/srv/corpus/sub/c.txt"),
        Chunk(text="e", url="docs/../secret/x.md"),  # resolves outside docs/
        Chunk(text="f", url="notes/x.md"),
        Chunk(text="g", url="https://www.example.org/x"),
    ]
    kept, blocked = apply_allowlist(chunks, s)
    assert [c.text for c in kept] == ["a", "c", "d", "g"]
    assert {b.reason for b in blocked} == {"not_allowlisted"}
    assert "file:PATH" in blocked[0].detail
    # fail closed: an empty allowlist, one without file: entries, or a bare "file:" names none
    for allowlist in ([], ["example.org"], ["file:"], ["file: "]):
        assert not local_allowed("docs/guide.md", allowlist), allowlist
    assert local_allowed("anything/at/all.txt", ["file:*"])


@pytest.mark.parametrize(
    "url",
    [
        "https://good.org:99999/",
        "https://good.org:65536/x",
        "http://www.good.org:99999",
        "https://good.org:99999/a b",  # the urlsplit path, not the fast one
    ],
)
def test_a_port_past_65535_is_a_malformed_url_not_an_allowlisted_one(url: str) -> None:
    """``https://good.org:99999/`` was read as good.org and passed an allowlist naming it; no
    client can reach such a port, so it is malformed like any other broken URL."""
    assert url_domain(url) is None
    for allowlist in (["good.org"], None):
        kept, blocked = apply_allowlist(
            [Chunk(text="a", url=url)], AuditSettings(allowlist=allowlist)
        )
        assert kept == [] and [b.reason for b in blocked] == ["malformed_url"]
    assert url_domain("https://good.org:65535/") == "good.org"  # the largest port still counts


@pytest.mark.parametrize(
    ("url", "allowlist"),
    [
        # Python reads the host after the backslash; browsers end the host at it (evil.com)
        ("https://evil.com\\@allowed.com", ["allowed.com"]),
        ("https://evil.com\\@allowed.com/x", None),
        # tabs and newlines in the host, dropped by urlsplit: refused, not joined up
        ("https://evil.com\t.allowed.com/", ["allowed.com"]),
        ("https://allo\nwed.com/", None),
        # a port in Arabic-Indic digits passed the fast path's \d (browsers refuse it)
        ("https://allowed.com:\u0668\u0660/", ["allowed.com"]),
        ("https://allowed.com:0/", ["allowed.com"]),  # no client connects to port 0
        ("https://allowed.com:/", ["allowed.com"]),  # an empty port
        ("https://allowed.com../", ["allowed.com"]),  # an empty label
        ("http://0x7f.1/", None),  # 127.0.0.1 to browsers, a "domain" here
        ("http://127.1/", None),
        ("https://allowed.com@evil.com/", None),  # user information
        ("https://xn--zz.allowed.com/", ["allowed.com"]),  # not valid Punycode
    ],
)
def test_ambiguous_urls_are_malformed_never_a_domain(url: str, allowlist: list[str] | None) -> None:
    """Each of these was read as a domain (and kept) by ``url_domain``, though a browser or
    the web fallback's guard reads another host or none: ambiguous is malformed."""
    assert url_domain(url) is None
    kept, blocked = apply_allowlist([Chunk(text="a", url=url)], AuditSettings(allowlist=allowlist))
    assert kept == [] and [b.reason for b in blocked] == ["malformed_url"]


def test_a_www_entry_does_not_open_its_whole_domain() -> None:
    """``www.`` was taken off allowlist entries: "www.allowed.com" allowed "evil.allowed.com"."""
    s = AuditSettings(allowlist=["www.allowed.com"])
    chunks = [
        Chunk(text="a", url="https://evil.allowed.com/"),
        Chunk(text="b", url="https://allowed.com/"),
        Chunk(text="c", url="https://www.allowed.com/"),
    ]
    kept, blocked = apply_allowlist(chunks, s)
    assert [c.text for c in kept] == ["b", "c"]
    assert [(b.domain, b.reason) for b in blocked] == [("evil.allowed.com", "not_allowlisted")]


def test_internationalised_hosts_are_read_in_their_idna_form() -> None:
    # read as the guard and the resolver read them (they were all "malformed" here)
    assert url_domain("https://B\u00fccher.example/") == "xn--bcher-kva.example"
    assert url_domain("https://allowed\u3002com/") == "allowed.com"
    assert url_domain("https://\u0430llowed.com/") == "xn--llowed-2nf.com"  # not allowed.com
    assert url_domain("https://stra\u00dfe.example/") is None  # read two ways: refused
    assert url_domain("http://[2606:4700:4700::1111]/") == "2606:4700:4700::1111"
