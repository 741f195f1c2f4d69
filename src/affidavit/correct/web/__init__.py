"""Web fallback of corrective retrieval: search clients, the safe fetcher, the offline store.

Examples:
    >>> from affidavit.correct.web import SafeFetcher, SearxngSearch
    >>> SearxngSearch("http://127.0.0.1:8888").name
    'searxng'
"""

from affidavit.correct.web.brave import BraveSearch
from affidavit.correct.web.fetch import SafeFetcher, extract_main_text
from affidavit.correct.web.guard import UrlGuard, domain_allowed
from affidavit.correct.web.searxng import SearxngSearch
from affidavit.correct.web.store_fallback import StoreFallbackSearch
from affidavit.correct.web.tavily import TavilySearch

__all__ = [
    "BraveSearch",
    "SafeFetcher",
    "SearxngSearch",
    "StoreFallbackSearch",
    "TavilySearch",
    "UrlGuard",
    "domain_allowed",
    "extract_main_text",
]
