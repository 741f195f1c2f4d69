"""Fuzz settings: any TOML file and any AFFIDAVIT_* environment give settings or a ConfigError."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fuzzkit import FUZZ, assert_clean_exit, hostile_text, invoke, json_scalars
from hypothesis import given
from hypothesis import strategies as st

from affidavit.core.errors import ConfigError
from affidavit.core.settings import Settings, load_settings

SECTIONS = [n for n in Settings.model_fields if n != "home"]
KEYS = sorted(
    {k for s in SECTIONS for k in Settings.model_fields[s].annotation.model_fields}  # type: ignore[union-attr]
)
names = st.sampled_from([*SECTIONS, *KEYS, "home", "nope", "x"]) | st.from_regex(
    r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True
)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return json.dumps(str(v))  # a TOML basic string is JSON-escaped text


toml_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text.filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)),
)
toml_docs = st.one_of(
    st.dictionaries(
        names,
        st.dictionaries(names, toml_scalars | st.lists(toml_scalars, max_size=3), max_size=4),
        max_size=4,
    ).map(
        lambda d: "\n".join(
            f"[{s}]\n" + "\n".join(f"{k} = {_toml_value(v)}" for k, v in kv.items())
            for s, kv in d.items()
        )
    ),
    st.text(max_size=200),  # not TOML at all
)


@FUZZ
@given(doc=toml_docs)
def test_any_toml_is_settings_or_config_error(fuzz_env: Path, doc: str) -> None:
    path = fuzz_env / "affidavit.toml"
    path.write_text(doc, encoding="utf-8")
    try:
        load_settings(path)
    except ConfigError as exc:
        assert exc.message


env_names = st.one_of(
    st.tuples(names, names).map(lambda t: f"AFFIDAVIT_{t[0]}__{t[1]}".upper()),
    names.map(lambda n: f"AFFIDAVIT_{n}".upper()),
    st.sampled_from(["AFFIDAVIT_STORE", "AFFIDAVIT_HOME", "AFFIDAVIT_UPPER_THRESHOLD"]),
)
env_values = st.one_of(
    json_scalars.map(lambda v: v if isinstance(v, str) else json.dumps(v)),
    st.lists(hostile_text, max_size=3).map(json.dumps),
    st.sampled_from(['["a",', "a,b", "", "[]", "{}", "null", "1e999"]),
).filter(lambda v: "\x00" not in v and not any(0xD800 <= ord(c) <= 0xDFFF for c in v))


@FUZZ
@given(env=st.dictionaries(env_names, env_values, max_size=3))
def test_any_environment_is_settings_or_config_error(
    fuzz_env: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    with monkeypatch.context() as m:
        for k, v in env.items():
            m.setenv(k, v)
        try:
            load_settings()
        except ConfigError as exc:
            assert exc.message
        r = invoke(["keys", "show"])  # every command loads settings the same way
        assert_clean_exit(r, {2})  # no key here: exit 2 either way, never a traceback
    assert not any(k in os.environ for k in env if k != "AFFIDAVIT_HOME")
