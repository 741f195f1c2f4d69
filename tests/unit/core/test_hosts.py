"""One URL host parser for both security decisions: the audit's source allowlist
(`affidavit.policy.sources`) and the web fallback's guard (`affidavit.correct.web.guard`).

Every case here is checked against BOTH callers: two parsers that disagree on a URL's host are
a bypass (the one that checks reads one host, the one that connects, or the reader's browser,
another). Anything ambiguous or malformed is refused by both: never allowed, never fetched.
"""

from __future__ import annotations

import pytest

from affidavit.core.errors import WebSearchError
from affidavit.core.settings import AuditSettings
from affidavit.core.types import Chunk
from affidavit.correct.web.guard import UrlGuard
from affidavit.correct.web.guard import domain_allowed as guard_allows
from affidavit.policy.sources import check_source

ALLOW = ["allowed.com"]

# well-formed and on the allowlist: (url, the host both callers read)
ALLOWED = [
    ("https://allowed.com/", "allowed.com"),
    ("HTTPS://ALLOWED.COM/", "allowed.com"),
    ("https://ALLOWED.COM./x", "allowed.com"),  # one trailing dot: the same name
    ("https://sub.allowed.com/", "sub.allowed.com"),  # subdomains match (documented)
    ("https://www.allowed.com/", "www.allowed.com"),
    ("https://allowed.com:443/", "allowed.com"),
    ("http://allowed.com:8080/x?y=1", "allowed.com"),
    ("https://allowed.com#@evil.com", "allowed.com"),  # '@' after the host is not userinfo
    ("https://allowed.com?@evil.com", "allowed.com"),
    ("https://allowed.com/a\\b", "allowed.com"),  # a backslash past the host: path only
    ("https://allowed.com/a b", "allowed.com"),  # a space in the path: still that host
    # IDNA maps these to the ASCII name, as browsers and the resolver do
    ("https://allowed\u3002com/", "allowed.com"),  # ideographic full stop
    ("https://\uff41\uff4c\uff4c\uff4f\uff57\uff45\uff44\uff0e\uff43\uff4f\uff4d/", "allowed.com"),
]

# well-formed, not on the allowlist: (url, host); with no allowlist both callers allow it
NOT_ALLOWED = [
    ("https://evilallowed.com/", "evilallowed.com"),  # a suffix on a label boundary only
    ("https://allowed.com.evil.com/", "allowed.com.evil.com"),
    ("https://evil.com#@allowed.com", "evil.com"),
    ("https://\u0430llowed.com/", "xn--llowed-2nf.com"),  # Cyrillic a: a homoglyph
    ("https://xn--llowed-2nf.com/", "xn--llowed-2nf.com"),
    ("https://b\u00fccher.example/", "xn--bcher-kva.example"),
    ("https://xn--strae-oqa.example/", "xn--strae-oqa.example"),  # an A-label is one name
    ("http://93.184.216.34/", "93.184.216.34"),
    ("http://[2606:4700:4700::1111]:8080/", "2606:4700:4700::1111"),
    ("http://[2606:4700:4700:0:0:0:0:1111]/", "2606:4700:4700::1111"),  # one written form
]

# malformed or ambiguous: refused by both callers with any allowlist, or none
MALFORMED = [
    # user information: what a reader takes for the host is not the host
    "https://allowed.com@evil.com/",
    "https://evil.com\\@allowed.com",  # Python: host allowed.com; browsers: host evil.com
    "https://evil.com\\@allowed.com/x",
    "https://allowed.com\\@evil.com/",
    "https://user@allowed.com/",
    "https://user:pw@allowed.com/",
    "https://@allowed.com/",
    "https://allowed.com:443@evil.com/",
    # backslashes in the authority
    "https://allowed.com\\.evil.com",
    "https:\\\\evil.com",
    "https:\\\\allowed.com",
    "https:/\\allowed.com",
    # percent-encoded hosts (browsers decode them, Python does not)
    "https://allowed%2Ecom/",
    "https://allowed%2ecom/",
    "https://evil.com%2F.allowed.com/",
    "https://%61llowed.com/",
    "https://allowed.com%00.evil.com/",
    # empty labels
    "https://allowed.com../",
    "https://.allowed.com/",
    "https://allowed..com/",
    "https://./",
    # IDNA: names IDNA 2003 (Python's codec) and UTS 46 (browsers) read differently, and
    # A-labels that are not valid Punycode
    "https://stra\u00dfe.example/",  # 'strasse.example' or 'xn--strae-oqa.example'
    "https://\u03c2.example/",  # final sigma
    "https://a\u200db.example/",  # zero-width joiner
    "https://allowed.com\u2024evil/",  # one-dot leader: a dot to Python's codec only
    "https://xn--zz.allowed.com/",
    "https://xn--allowed-.com/",
    "https://allowed.com\u3000/",  # ideographic space
    # IPv4 written any way but dotted decimal (browsers read them all as addresses)
    "http://2130706433/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://127.1/",
    "http://0x7f000001/",
    "http://1572395042/",
    "http://093.184.216.34/",
    "https://256.1.1.1/",
    "https://1.2.3/",
    "https://allowed.123/",
    "https://allowed.0x1f/",
    # IPv6: zone ids, bad brackets
    "http://[fe80::1%25eth0]/",
    "http://[fe80::1%eth0]/",
    "http://[::1/",
    "http://::1/",
    "http://[allowed.com]/",
    "http://[v1.x]/",
    # ports
    "https://allowed.com:99999/",
    "https://allowed.com:65536/",
    "https://allowed.com:0/",
    "https://allowed.com:/",
    "https://allowed.com:-1/",
    "https://allowed.com:+80/",
    "https://allowed.com: 80/",
    "https://allowed.com:8\u0660/",  # an Arabic-Indic digit
    "https://allowed.com:\u0668\u0660/",
    "https://allowed.com:80:80/",
    "https://allowed.com:0x50/",
    # control characters and whitespace (Python and browsers drop tabs and newlines; we refuse)
    "https://allo\twed.com/",
    "https://evil.com\t.allowed.com/",
    "https://evil.com\n.allowed.com/",
    "https://allowed.com/\r\nX-Injected: 1",
    "https://allowed.com\x00.evil.com/",
    "https://allowed.com /x",
    "https://allowed.com\x7f/",
    "https://allowed.com/a\tb",
    # schemes other than http(s), no scheme
    "javascript://allowed.com/%0aalert(1)",
    "javascript:alert(1)",
    "data:text/html,allowed.com",
    "ftp://allowed.com/",
    "ws://allowed.com/",
    "//allowed.com/",
    "//evil.com",
    # no host
    "https://",
    "https:///x",
    "https://:443/",
    "https:allowed.com",
    "https:/allowed.com",
    "https://?x",
    "https://#x",
    # not a host name
    "https://a_b.allowed.com/",
    "https://-allowed.com/",
    "https://allowed-.com/",
    "https://intranet/",  # one label: the resolver's search list picks the real name
    "https://" + "a" * 64 + ".allowed.com/",
]


def _public(asked: list[str]):  # type: ignore[no-untyped-def]
    def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34"]

    return resolve


def _policy(url: str, allowlist: list[str] | None) -> str:
    blocked = check_source(Chunk(text="a", url=url), AuditSettings(allowlist=allowlist))
    return "kept" if blocked is None else blocked.reason


def _fetches(url: str, allowlist: list[str] | None) -> tuple[bool, list[str]]:
    asked: list[str] = []
    try:
        UrlGuard(allowlist=allowlist, resolver=_public(asked)).check(url)
    except WebSearchError:
        return False, asked
    return True, asked


@pytest.mark.parametrize(("url", "host"), ALLOWED)
def test_allowlisted_hosts_pass_both_callers(url: str, host: str) -> None:
    assert _policy(url, ALLOW) == "kept"
    assert guard_allows(url, ALLOW)
    assert _fetches(url, ALLOW) == (True, [host])


@pytest.mark.parametrize(("url", "host"), NOT_ALLOWED)
def test_other_hosts_are_refused_by_both_callers(url: str, host: str) -> None:
    assert _policy(url, ALLOW) == "not_allowlisted"
    assert not guard_allows(url, ALLOW)
    assert _fetches(url, ALLOW) == (False, [])
    # with no allowlist both take the URL as a well-formed web source
    assert _policy(url, None) == "kept"
    assert guard_allows(url, None)


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("allowlist", [ALLOW, None], ids=["allowlist", "no-allowlist"])
def test_malformed_or_ambiguous_urls_are_refused_by_both_callers(
    url: str, allowlist: list[str] | None
) -> None:
    assert _policy(url, allowlist) == "malformed_url"
    assert not guard_allows(url, allowlist)
    assert _fetches(url, allowlist) == (False, [])  # refused before any lookup


def test_a_deviation_character_never_matches_its_idna2003_spelling() -> None:
    """``straße`` is ``strasse`` to Python's IDNA 2003 codec and ``xn--strae-oqa`` to browsers
    (UTS 46): the guard allowed ``https://straße.example/`` for a ``strasse.example``
    allowlist, while the link leads a reader to another domain."""
    url = "https://stra\u00dfe.example/"
    assert _policy(url, ["strasse.example"]) == "malformed_url"
    assert not guard_allows(url, ["strasse.example"])
    assert not guard_allows(url, ["xn--strae-oqa.example"])
    assert _fetches(url, ["strasse.example"]) == (False, [])


def test_a_www_entry_names_that_site_not_every_sibling() -> None:
    """The policy took ``www.`` off its entries: ``www.allowed.com`` allowed
    ``evil.allowed.com`` (the guard did not). ``www.X`` and ``X`` are one site in both."""
    www = ["www.allowed.com"]
    for url in ("https://evil.allowed.com/", "https://evilallowed.com/"):
        assert _policy(url, www) == "not_allowlisted", url
        assert not guard_allows(url, www), url
    for url in ("https://allowed.com/", "https://www.allowed.com/", "https://a.www.allowed.com/"):
        assert _policy(url, www) == "kept", url
        assert guard_allows(url, www), url


@pytest.mark.parametrize(
    ("url", "entry"),
    [
        ("https://sub.allowed.com/", ".allowed.com"),  # a leading dot
        ("https://sub.allowed.com/", "https://allowed.com/"),  # an entry written as a URL
        ("https://sub.allowed.com/", "ALLOWED.COM."),
        ("https://xn--llowed-2nf.com/", "\u0430llowed.com"),  # Unicode entry, Punycode URL
        ("https://\u0430llowed.com/", "xn--llowed-2nf.com"),  # and the other way round
        ("https://b\u00fccher.example/", "B\u00dcCHER.example"),
        ("http://[2606:4700:4700::1111]/", "[2606:4700:4700:0::1111]"),
        ("http://93.184.216.34:81/", "93.184.216.34"),
    ],
)
def test_allowlist_entries_are_read_alike_by_both_callers(url: str, entry: str) -> None:
    assert _policy(url, [entry]) == "kept"
    assert guard_allows(url, [entry])


@pytest.mark.parametrize(
    ("url", "entry"),
    [
        ("https://allowed.com/", "\u0430llowed.com"),  # a homoglyph entry names another host
        ("https://\u0430llowed.com/", "allowed.com"),
        ("https://allowed.com/", "allowed.com:443"),  # not a host name: names nothing
        ("https://allowed.com/", "*.allowed.com"),
        ("https://allowed.com/", "*"),
        ("https://allowed.com/", "allowed%2ecom"),
        ("http://93.184.216.34/", "184.216.34"),  # an address matches itself only
        ("http://93.184.216.34/", "216.34"),
        ("https://allowed.com/", "stra\u00dfe.example"),
    ],
)
def test_entries_that_name_nothing_or_another_host_allow_nothing(url: str, entry: str) -> None:
    assert _policy(url, [entry]) == "not_allowlisted"
    assert not guard_allows(url, [entry])


def test_a_local_file_url_is_never_read_as_a_web_host() -> None:
    url = "file://allowed.com/etc/passwd"
    assert _policy(url, ALLOW) == "not_allowlisted"  # a local source the allowlist does not name
    assert not guard_allows(url, ALLOW) and not guard_allows(url, None)
    assert _fetches(url, None) == (False, [])


def test_surrounding_whitespace_is_the_policys_to_trim_and_the_guards_to_refuse() -> None:
    # a chunk's URL from metadata is trimmed (it always was); a URL given to the guard is taken
    # as it is, and a space or control character at its ends is refused (fail closed)
    for url in (" https://allowed.com/", "https://allowed.com/\n", "\thttps://allowed.com/"):
        assert _policy(url, ALLOW) == "kept"
        assert not guard_allows(url, ALLOW) and not guard_allows(url, None)
        assert _fetches(url, None) == (False, [])


# ------------------------------------------------------------------ the core parser itself


@pytest.mark.parametrize(("url", "host"), ALLOWED + NOT_ALLOWED)
def test_web_host_reads_the_host_both_callers_use(url: str, host: str) -> None:
    from affidavit.core.hosts import web_host

    assert web_host(url) == host


@pytest.mark.parametrize("url", [*MALFORMED, "file:///etc/passwd", "https://allowed.com/\n"])
def test_parse_web_url_refuses_with_a_reason(url: str) -> None:
    from affidavit.core.hosts import UnsafeUrl, parse_web_url, web_host

    assert web_host(url) is None
    with pytest.raises(UnsafeUrl) as err:
        parse_web_url(url)
    assert str(err.value)


def test_parse_web_url_parts() -> None:
    from affidavit.core.hosts import parse_web_url

    u = parse_web_url("HTTP://[2606:4700:4700::1111]:8080/a?b#c")
    assert (u.scheme, u.host, u.port, u.is_ip) == ("http", "2606:4700:4700::1111", 8080, True)
    u = parse_web_url("https://Sub.B\u00fccher.Example./x")
    assert (u.scheme, u.host, u.port, u.is_ip) == (
        "https",
        "sub.xn--bcher-kva.example",
        None,
        False,
    )
    assert parse_web_url("https://localhost:65535/").port == 65535


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("BÜCHER.example.", "xn--bcher-kva.example"),
        ("[::1]", "::1"),
        ("::FFFF:127.0.0.1", "::ffff:7f00:1"),
        ("10.0.0.1", "10.0.0.1"),
        ("localhost", "localhost"),
        ("a.b-c.d", "a.b-c.d"),
        ("", None),
        (".", None),
        ("com", None),
        ("10.1", None),
        ("a b.com", None),
        ("a%2e.com", None),
        ("[fe80::1%eth0]", None),
        ("[::1", None),
    ],
)
def test_normalize_host(name: str, host: str | None) -> None:
    from affidavit.core.hosts import normalize_host

    assert normalize_host(name) == host


def test_host_allowed_matches_on_label_boundaries() -> None:
    from affidavit.core.hosts import host_allowed

    assert host_allowed("a.example.org", ["example.org"])
    assert host_allowed("example.org", ["www.example.org"])
    assert not host_allowed("badexample.org", ["example.org"])
    assert not host_allowed("x.example.org", ["www.example.org"])
    assert not host_allowed("example.org", [])
    assert not host_allowed("example.org", ["", " ", "file:docs"])
