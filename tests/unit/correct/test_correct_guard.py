"""The SSRF guard and the domain allowlist (no network: resolvers are injected)."""

from __future__ import annotations

import pytest

from affidavit.core.errors import WebSearchError
from affidavit.correct.web.fetch import SafeFetcher
from affidavit.correct.web.guard import UrlGuard, address_refusal, domain_allowed, url_host


def _resolver(mapping: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def resolve(host: str, port: int) -> list[str]:
        if host not in mapping:
            raise OSError("no such host")
        return mapping[host]

    return resolve


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1.2.3:8080/x",
        "http://10.0.0.5/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped loopback
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[fec0::1]/",  # deprecated site-local: still routed inside some networks
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://100.64.0.1/",  # carrier-grade NAT: not global
    ],
)
def test_refuses_non_public_addresses(url: str) -> None:
    with pytest.raises(WebSearchError) as err:
        UrlGuard().check(url)
    assert err.value.context.get("reason")


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.org/x",
        "gopher://example.org/",
        "javascript:alert(1)",
        "http://user:pw@example.org/",
        "http:///nohost",
        "http://[::1/",
    ],
)
def test_refuses_bad_schemes_and_malformed(url: str) -> None:
    resolver = _resolver({"example.org": ["93.184.216.34"]})
    with pytest.raises(WebSearchError):
        UrlGuard(resolver=resolver).check(url)


def test_hostname_resolving_to_private_is_refused() -> None:
    # DNS that points a public-looking name at the metadata service
    resolver = _resolver({"innocent.example": ["93.184.216.34", "169.254.169.254"]})
    with pytest.raises(WebSearchError, match="link-local"):
        UrlGuard(resolver=resolver).check("https://innocent.example/")


def test_public_host_passes_and_returns_checked_addresses() -> None:
    resolver = _resolver({"example.org": ["93.184.216.34"]})
    assert UrlGuard(resolver=resolver).check("https://example.org/a?b") == ["93.184.216.34"]


def test_unresolvable_host_is_refused() -> None:
    with pytest.raises(WebSearchError, match="cannot resolve"):
        UrlGuard(resolver=_resolver({})).check("https://nowhere.example/")


def test_allow_private_addresses_lets_loopback_through() -> None:
    assert UrlGuard(allow_private_addresses=True).check("http://127.0.0.1:8000/") == ["127.0.0.1"]
    # but never other schemes
    with pytest.raises(WebSearchError):
        UrlGuard(allow_private_addresses=True).check("file:///etc/passwd")


def test_allowlist_suffix_match() -> None:
    allow = ["wikipedia.org", ".nih.gov"]
    assert domain_allowed("https://en.wikipedia.org/wiki/X", allow)
    assert domain_allowed("https://wikipedia.org/", allow)
    assert domain_allowed("https://pubmed.ncbi.nih.gov/1", allow)
    assert not domain_allowed("https://evil-wikipedia.org/", allow)
    assert not domain_allowed("https://wikipedia.org.evil.com/", allow)
    assert not domain_allowed("not a url", allow)
    # no allowlist set: any well-formed URL (the SSRF guard still applies)
    assert domain_allowed("https://anything.example/", None)


def test_an_empty_allowlist_allows_nothing() -> None:
    # a guard never opens by itself: an allowlist set but empty (or only blank entries)
    # narrows to nothing, unlike one not set at all
    assert not domain_allowed("https://anything.example/", [])
    assert not domain_allowed("https://anything.example/", ["", "  "])
    guard = UrlGuard(allowlist=[], resolver=_resolver({"good.org": ["93.184.216.34"]}))
    with pytest.raises(WebSearchError, match="not in the allowlist"):
        guard.check("https://good.org/")
    assert UrlGuard(resolver=_resolver({"good.org": ["93.184.216.34"]})).check(
        "https://good.org/"
    ) == ["93.184.216.34"]


def test_idn_hosts_are_checked_and_resolved_in_their_ascii_form() -> None:
    # the allowlist sees the name that is resolved and connected to (IDNA), whichever way the
    # URL or the allowlist spells it
    assert domain_allowed("https://de.bücher.example/", ["xn--bcher-kva.example"])
    assert domain_allowed("https://xn--bcher-kva.example/", ["BÜCHER.example"])
    assert not domain_allowed("https://bucher.example/", ["bücher.example"])
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    guard = UrlGuard(allowlist=["bücher.example"], resolver=resolver)
    assert guard.check("https://BÜCHER.example./x") == ["93.184.216.34"]
    assert asked == ["xn--bcher-kva.example"]
    # a host IDNA cannot encode (an empty or over-long label) is refused, not resolved
    with pytest.raises(WebSearchError, match="refused"):
        UrlGuard(resolver=resolver).check("https://" + "a" * 64 + ".example/")
    assert asked == ["xn--bcher-kva.example"]


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example\x00.good.org/",  # the C resolver reads "evil.example"
        "http://evil example.good.org/",
        "http://evil.example\\.good.org/",
    ],
)
def test_hosts_with_characters_no_host_name_has_are_refused_unresolved(url: str) -> None:
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    assert not domain_allowed(url, ["good.org"])
    with pytest.raises(WebSearchError, match="refused"):
        UrlGuard(allowlist=["good.org"], resolver=resolver).check(url)
    with pytest.raises(WebSearchError, match="refused"):
        UrlGuard(resolver=resolver).check(url)
    assert asked == []


def test_guard_applies_allowlist() -> None:
    guard = UrlGuard(allowlist=["good.org"], resolver=_resolver({"bad.org": ["93.184.216.34"]}))
    with pytest.raises(WebSearchError, match="allowlist"):
        guard.check("https://bad.org/")


def test_address_refusal_public_is_none() -> None:
    assert address_refusal("8.8.8.8") is None
    assert address_refusal("2606:4700:4700::1111") is None
    assert address_refusal("::1") is not None


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1/", "http://10.1.2.3/", "http://[::1]:1/", "file:///etc/hosts"]
)
def test_fetcher_refuses_before_connecting(url: str) -> None:
    with pytest.raises(WebSearchError, match="refused"):
        SafeFetcher(timeout_s=0.5).fetch(url)


@pytest.mark.parametrize(
    "url", ["https://good.org:99999/", "https://good.org:65536/x", "http://a.good.org:123456/"]
)
def test_a_port_past_65535_is_a_malformed_url_never_an_allowlisted_host(url: str) -> None:
    """``domain_allowed`` read only the host, so "https://good.org:99999/" passed a good.org
    allowlist (the fetcher refused it later; the allowlist itself must not pass it)."""
    assert url_host(url) is None
    assert not domain_allowed(url, ["good.org"]) and not domain_allowed(url, None)
    assert domain_allowed("https://good.org:65535/", ["good.org"])


@pytest.mark.parametrize(
    "url",
    [
        # other schemes: domain_allowed read their host (the pipeline's filter of web results)
        "javascript://good.org/%0aalert(1)",
        "ftp://good.org/",
        "//good.org/",
        "file://good.org/etc/passwd",
        # Python reads good.org after the backslash; browsers end the host at it (evil.com)
        "https://evil.com\\@good.org/",
        # IDNA 2003 reads strasse.org; browsers (UTS 46) xn--strae-oqa.org
        "https://stra\u00dfe.good.org.evil/",
        # a percent-encoded host: no host name has '%'
        "https://evil.com%2F.good.org/",
        # tabs and newlines dropped by urlsplit: refused, not joined up
        "https://evil.com\t.good.org/",
        # not host names: an underscore, one label (the search list picks the real name)
        "https://a_b.good.org/",
        "https://good/",
        # empty labels, port 0, an empty port, not Punycode
        "https://good.org../",
        "https://good.org:0/",
        "https://good.org:/",
        "https://xn--zz.good.org/",
    ],
)
def test_ambiguous_urls_are_neither_allowed_nor_resolved(url: str) -> None:
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    assert url_host(url) is None
    assert not domain_allowed(url, ["good.org", "strasse.org"]) and not domain_allowed(url, None)
    for allowlist in (["good.org"], None):
        with pytest.raises(WebSearchError, match="refused"):
            UrlGuard(allowlist=allowlist, resolver=resolver).check(url)
    assert asked == []


@pytest.mark.parametrize(
    "url",
    ["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://[fe80::1%25eth0]/"],
)
def test_addresses_not_in_their_one_written_form_are_refused_not_resolved(url: str) -> None:
    """``0x7f.1`` went to the resolver as a name (the C library's inet_aton made it 127.0.0.1;
    another resolver need not): an address is written one way, or it is malformed."""
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    with pytest.raises(WebSearchError, match="refused"):
        UrlGuard(resolver=resolver, allow_private_addresses=True).check(url)
    assert asked == [] and url_host(url) is None


def test_a_www_entry_also_allows_the_bare_name_as_the_policy_does() -> None:
    assert domain_allowed("https://good.org/", ["www.good.org"])
    assert not domain_allowed("https://evil.good.org/", ["www.good.org"])
    assert domain_allowed("https://sub.good.org/", ["https://good.org/"])  # an entry as a URL
