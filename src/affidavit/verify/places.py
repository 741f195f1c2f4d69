"""Countries and US states named in a text, for the wrong-place check of `checks`.

The gazetteer is ``pycountry`` (ISO 3166: every country's name, common and official names, and
the US states), plus the usual short forms ("US", "UK", "South Korea") and adjectives
("American", "French") so that "an American rock band" places the band in the United States.
Names that are more often something else (Jordan, Chad, Georgia, Washington, Turkey the bird is
capitalised only as the country, so it stays) are left out: a missed place only lets the model
decide, a false one would withhold a true claim.

Examples:
    >>> sorted(p.key for p in places_in("Paris is the capital of France."))
    ['FR']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# more often a person, a bird, a colour or a US state than the country
_AMBIGUOUS = frozenset(
    {"Jordan", "Chad", "Georgia", "Washington", "Guinea", "Niger", "Man", "Jersey", "Guernsey"}
)
_ALIASES = {
    "US": ("United States", "U.S.", "U.S.A.", "USA", "America", "American", "Americans"),
    "GB": (
        "United Kingdom",
        "UK",
        "U.K.",
        "Britain",
        "Great Britain",
        "British",
        "England",
        "English",
        "Scotland",
        "Scottish",
        "Wales",
        "Welsh",
        "Northern Ireland",
    ),
    "KR": ("South Korea", "Korea", "Korean", "South Korean"),
    "KP": ("North Korea", "North Korean"),
    "RU": ("Russia", "Russian", "Soviet Union", "USSR"),
    "VN": ("Vietnam", "Vietnamese"),
    "IR": ("Iran", "Iranian", "Persia"),
    "SY": ("Syria", "Syrian"),
    "LA": ("Laos",),
    "BO": ("Bolivia", "Bolivian"),
    "VE": ("Venezuela", "Venezuelan"),
    "TZ": ("Tanzania", "Tanzanian"),
    "TW": ("Taiwan", "Taiwanese"),
    "MD": ("Moldova",),
    "CZ": ("Czech Republic", "Czech"),
    "NL": ("Holland", "Dutch", "The Netherlands"),
    "CD": ("Democratic Republic of the Congo", "DR Congo"),
    "CI": ("Ivory Coast",),
    "PS": ("Palestine", "Palestinian"),
    "MK": ("Macedonia", "Macedonian"),
    "VA": ("Vatican", "Vatican City"),
}
_DEMONYMS = {
    "FR": ("French",),
    "DE": ("German", "Germans"),
    "IT": ("Italian", "Italians"),
    "ES": ("Spanish", "Spaniard"),
    "PT": ("Portuguese",),
    "CN": ("Chinese",),
    "JP": ("Japanese",),
    "IN": ("Indian",),
    "CA": ("Canadian", "Canadians"),
    "AU": ("Australian", "Australians"),
    "NZ": ("New Zealander",),
    "MX": ("Mexican", "Mexicans"),
    "BR": ("Brazilian", "Brazilians"),
    "AR": ("Argentine", "Argentinian", "Argentinean"),
    "CL": ("Chilean",),
    "CO": ("Colombian",),
    "PE": ("Peruvian",),
    "CU": ("Cuban",),
    "SE": ("Swedish", "Swede"),
    "NO": ("Norwegian",),
    "DK": ("Danish", "Dane"),
    "FI": ("Finnish",),
    "IS": ("Icelandic",),
    "IE": ("Irish",),
    "PL": ("Polish",),
    "GR": ("Greek",),
    "TR": ("Turkish",),
    "EG": ("Egyptian",),
    "IL": ("Israeli",),
    "SA": ("Saudi",),
    "IQ": ("Iraqi",),
    "AF": ("Afghan",),
    "PK": ("Pakistani",),
    "BD": ("Bangladeshi",),
    "TH": ("Thai",),
    "PH": ("Filipino", "Philippine"),
    "ID": ("Indonesian",),
    "MY": ("Malaysian",),
    "SG": ("Singaporean",),
    "NG": ("Nigerian",),
    "KE": ("Kenyan",),
    "ZA": ("South African",),
    "ET": ("Ethiopian",),
    "MA": ("Moroccan",),
    "DZ": ("Algerian",),
    "CH": ("Swiss",),
    "AT": ("Austrian",),
    "BE": ("Belgian",),
    "HU": ("Hungarian",),
    "RO": ("Romanian",),
    "BG": ("Bulgarian",),
    "RS": ("Serbian", "Serb"),
    "HR": ("Croatian", "Croat"),
    "UA": ("Ukrainian",),
    "BY": ("Belarusian",),
    "LT": ("Lithuanian",),
    "LV": ("Latvian",),
    "EE": ("Estonian",),
    "SK": ("Slovak", "Slovakian"),
    "SI": ("Slovenian", "Slovene"),
    "JM": ("Jamaican",),
    "LB": ("Lebanese",),
}


@dataclass(frozen=True)
class Place:
    """A place named in a text: ``key`` is its ISO code ("FR", "US-OH"), ``country`` the
    country it lies in ("US" for Ohio and for the United States), ``name`` as written."""

    key: str
    country: str
    name: str


@lru_cache(maxsize=1)
def _gazetteer() -> tuple[re.Pattern[str], dict[str, tuple[str, str]]]:
    import pycountry

    names: dict[str, tuple[str, str]] = {}

    def add(name: str, key: str, country: str) -> None:
        name = name.strip()
        if (name and name not in _AMBIGUOUS and len(name) > 2) or name in ("US", "UK"):
            names.setdefault(name, (key, country))

    for c in pycountry.countries:
        for attr in ("name", "common_name", "official_name"):
            value = getattr(c, attr, None)
            if value:
                add(value, c.alpha_2, c.alpha_2)
                if "," in value:
                    add(value.split(",")[0], c.alpha_2, c.alpha_2)
    for code, aliases in (*_ALIASES.items(), *_DEMONYMS.items()):
        for a in aliases:
            add(a, code, code)
    for s in pycountry.subdivisions.get(country_code="US") or ():
        if s.type == "State":
            add(s.name, s.code, "US")
    alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.])(?:{alternation})(?![\w])")
    return pattern, names


def gazetteer_names() -> tuple[str, ...]:
    """Every place name and adjective the gazetteer knows, as written ("Germany", "French")."""
    return tuple(_gazetteer()[1])


@lru_cache(maxsize=4096)
def places_in(text: str) -> tuple[Place, ...]:
    """The countries and US states ``text`` names (written with their capitals, as names are)."""
    pattern, names = _gazetteer()
    out: dict[str, Place] = {}
    for m in pattern.finditer(text):
        key, country = names[m.group(0)]
        out.setdefault(key, Place(key, country, m.group(0)))
    return tuple(out.values())


def wrong_place(claim: str, evidence: str) -> tuple[Place, tuple[Place, ...]] | None:
    """``(claim_place, evidence_places)`` when the claim names a place the evidence never names
    (nor anything inside it: Ohio counts for the United States) while the evidence names other
    places of its kind; None otherwise. "Paris is in Germany." against "Paris is the capital of
    France." is ``(Germany, (France,))``.
    """
    c_places = places_in(claim)
    if not c_places:
        return None
    e_places = places_in(evidence)
    if not e_places:
        return None
    e_keys = {p.key for p in e_places}
    e_countries = {p.country for p in e_places}
    for p in c_places:
        if p.key in e_keys:
            continue
        is_country = p.key == p.country
        if is_country and p.country in e_countries:
            continue  # the evidence names a place inside it
        # a country against the evidence's countries, a state against its states
        rivals = tuple(
            q
            for q in e_places
            if (q.key == q.country) == is_country and q.key != p.key and q.country != p.key
        )
        if rivals:
            return p, rivals
    return None


__all__ = ["Place", "places_in", "wrong_place"]
