"""Fuzz the URL host parser: the source allowlist and the web guard never disagree, and a URL
either is refused or has the host that ``urlsplit`` (the fetcher) and httpx read too."""

from __future__ import annotations

import httpx
from fuzzkit import FUZZ
from hypothesis import given
from hypothesis import strategies as st

from affidavit.core.hosts import UnsafeUrl, normalize_host, parse_web_url
from affidavit.core.settings import AuditSettings
from affidavit.core.types import Chunk
from affidavit.correct.web.guard import domain_allowed
from affidavit.policy.sources import check_source

LABELS = [
    "allowed", "com", "www", "evil", "a", "A", "0", "1", "255", "0x7f", "007", "a-b", "-", "_",
    "xn--bcher-kva", "b\u00fccher", "xn--llowed-2nf", "\u0430llowed", "stra\u00dfe", "\u03c2",
    "\uff41\uff4c\uff4c\uff4f\uff57\uff45\uff44", "k\u212a", "\u0130", "\ufb01", "\u00ad",
    "\u200b", "\u200d", "%2e", "%", "x\u0301", "\t", "\n", " ", "\x00", "\\", "@", ":", "",
]  # fmt: skip
DOTS = [".", ".", ".", "\u3002", "\uff0e", "\u2024", ""]
hosts = st.one_of(
    st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(DOTS)), min_size=1, max_size=4).map(
        lambda parts: "".join(a + b for a, b in parts) + "com"
    ),
    st.sampled_from(
        ["[::1]", "[2606:4700::1111]", "[fe80::1%25x]", "[1.2.3.4]", "[::1", "2130706433"]
    ),
)
urls = st.builds(
    lambda scheme, user, host, port, rest: scheme + user + host + port + rest,
    st.sampled_from(["https://", "http://", "HTTP://", "https:\\\\", "https:/", "ftp://", "//"]),
    st.sampled_from(["", "", "", "u@", "u:p@", "\\@", "@"]),
    hosts,
    st.sampled_from(["", "", ":80", ":0", ":", ":65535", ":65536", ":\u0668", ": 1"]),
    st.sampled_from(["", "/", "/p?q#f", "\\x", "#@evil.com", "?@evil.com", "/\t"]),
)


@FUZZ
@given(url=urls)
def test_the_allowlist_and_the_guard_read_one_host(url: str) -> None:
    for allowlist in (["allowed.com"], ["www.allowed.com", "b\u00fccher.com"], None):
        kept = check_source(Chunk(text="a", url=url), AuditSettings(allowlist=allowlist)) is None
        # the policy trims a chunk's URL (metadata); the guard refuses a space at an end
        assert kept == domain_allowed(url.strip(), allowlist), (url, allowlist)
    try:
        parsed = parse_web_url(url)
    except UnsafeUrl:
        return
    try:
        other = httpx.URL(url).host
    except httpx.InvalidURL:
        return  # httpx refuses it: nothing is fetched
    assert normalize_host(other) == parsed.host, url
