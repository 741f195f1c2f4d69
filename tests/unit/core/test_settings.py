from pathlib import Path

import pytest

from affidavit.core.errors import ConfigError
from affidavit.core.settings import load_settings


def test_defaults_load() -> None:
    s = load_settings()
    assert s.correct.upper_threshold == 8.0
    assert s.retrieve.rrf_k == 60


def test_precedence_toml_env_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "affidavit.toml"
    cfg.write_text("[policy]\ntau_entail = 0.6\ntau_contradict = 0.4\n[retrieve]\ntop_k = 3\n")
    s = load_settings(cfg)
    assert (s.policy.tau_entail, s.policy.tau_contradict, s.retrieve.top_k) == (0.6, 0.4, 3)
    monkeypatch.setenv("AFFIDAVIT_POLICY__TAU_ENTAIL", "0.7")
    s = load_settings(cfg)
    assert s.policy.tau_entail == 0.7
    assert s.policy.tau_contradict == 0.4  # TOML value kept for the other key
    s = load_settings(cfg, overrides={"policy": {"tau_entail": 0.9}})
    assert s.policy.tau_entail == 0.9


def test_config_found_beside_input(tmp_path: Path) -> None:
    (tmp_path / "affidavit.toml").write_text('[audit]\nmode = "enforce"\n')
    inp = tmp_path / "in.json"
    inp.write_text("{}")
    assert load_settings(beside=inp).audit.mode == "enforce"


def test_legacy_crag_env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFFIDAVIT_UPPER_THRESHOLD", "7.5")
    monkeypatch.setenv("AFFIDAVIT_TOP_K_DOCUMENTS", "9")
    s = load_settings()
    assert s.correct.upper_threshold == 7.5
    assert s.correct.top_k_documents == 9


def test_invalid_literal_lists_valid_values() -> None:
    with pytest.raises(ConfigError) as exc:
        load_settings(overrides={"policy": {"display": "loud"}})
    msg = str(exc.value)
    assert "'strict'" in msg and "'mixed'" in msg and "'debug'" in msg


def test_unknown_key_in_toml_is_an_error(tmp_path: Path) -> None:
    cfg = tmp_path / "affidavit.toml"
    cfg.write_text("[audit]\nmod = 'audit'\n")
    with pytest.raises(ConfigError) as exc:
        load_settings(cfg)
    assert "audit.mod" in str(exc.value) and "unknown setting" in str(exc.value)


def test_broken_toml_is_a_config_error(tmp_path: Path) -> None:
    cfg = tmp_path / "affidavit.toml"
    cfg.write_text("[audit\n")
    with pytest.raises(ConfigError):
        load_settings(cfg)


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_settings(tmp_path / "nope.toml")


def test_threshold_order_checked() -> None:
    with pytest.raises(ConfigError):
        load_settings(overrides={"correct": {"upper_threshold": 2.0, "lower_threshold": 5.0}})


def test_an_upper_threshold_under_the_default_lower_one_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # only upper set: the order was checked when lower_threshold was given, never against its
    # default (3.0), so upper 2 loaded and the corrective stage refused it later, or never
    with pytest.raises(ConfigError, match="lower_threshold"):
        load_settings(overrides={"correct": {"upper_threshold": 2.0}})
    monkeypatch.setenv("AFFIDAVIT_CORRECT__UPPER_THRESHOLD", "2")
    with pytest.raises(ConfigError, match=r"correct.upper_threshold \(2.0\)"):
        load_settings()


def test_effective_masks_secrets() -> None:
    s = load_settings(overrides={"generate": {"api_key": "sk-secret"}})
    assert "sk-secret" not in str(s.effective())


# -- issue 13 defect 4: environment variables never crash, unknown names are errors -----------


def test_store_variable_is_the_store_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFFIDAVIT_STORE", "/x")
    assert load_settings().store.path == Path("/x")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("wikipedia.org", ["wikipedia.org"]),
        ("a.org, b.org", ["a.org", "b.org"]),
        ('["a.org", "b.org"]', ["a.org", "b.org"]),
        ("", []),
    ],
)
def test_list_settings_take_json_or_commas(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: list[str]
) -> None:
    monkeypatch.setenv("AFFIDAVIT_AUDIT__ALLOWLIST", value)
    assert load_settings().audit.allowlist == expected


@pytest.mark.parametrize(
    ("name", "value", "needle"),
    [
        ("AFFIDAVIT_AUDIT__ALLOWLIST", '["a",', "malformed JSON list"),
        ("AFFIDAVIT_AUDIT__ALLOWLIST", '["a", 1]', "AFFIDAVIT_AUDIT__ALLOWLIST"),
        ("AFFIDAVIT_NOPE__X", "1", "no settings section 'nope'"),
        ("AFFIDAVIT_AUDIT__NOPE", "1", "has no setting 'nope'"),
        ("AFFIDAVIT_AUDIT", "1", "AFFIDAVIT_AUDIT__KEY"),
        ("AFFIDAVIT_TAU_ENTAIL", "0.8", "unknown environment variable AFFIDAVIT_TAU_ENTAIL"),
        ("AFFIDAVIT_AUDIT__MIN_COMPLIANCE", "abc", "AFFIDAVIT_AUDIT__MIN_COMPLIANCE"),
    ],
)
def test_bad_environment_is_one_config_error(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, needle: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert needle in info.value.message


def test_oversized_config_file_is_refused_unread(tmp_path: Path) -> None:
    cfg = tmp_path / "affidavit.toml"
    cfg.write_text("# " + "x" * (2 * 1024 * 1024) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than"):
        load_settings(cfg)


@pytest.mark.parametrize("off", ["off", "none", "NULL"])
def test_keep_whole_threshold_can_be_switched_off_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, off: str
) -> None:
    assert load_settings().correct.keep_whole_threshold == 5.0
    monkeypatch.setenv("AFFIDAVIT_CORRECT__KEEP_WHOLE_THRESHOLD", off)
    assert load_settings().correct.keep_whole_threshold is None
    monkeypatch.setenv("AFFIDAVIT_CORRECT__KEEP_WHOLE_THRESHOLD", "sometimes")
    with pytest.raises(ConfigError, match="keep_whole_threshold"):
        load_settings()


@pytest.mark.parametrize(
    "toml",
    [
        '[store]\npath = "store\\u0000x"\n',
        '[certify]\nkey_path = "\\u0000"\n',
        '[certify]\ntrusted_keys = ["ok.pem", "bad\\u0000.pem"]\n',
        'home = "\\u0000home"\n',
    ],
)
def test_a_path_with_a_nul_character_is_a_config_error(tmp_path: Path, toml: str) -> None:
    # TOML can spell "\u0000", no file system path can hold it: `affidavit ingest` ended in
    # "internal error: ValueError: embedded null byte" (exit 3) instead of exit 2
    cfg = tmp_path / "affidavit.toml"
    cfg.write_text(toml)
    with pytest.raises(ConfigError, match="NUL"):
        load_settings(cfg)


@pytest.mark.parametrize("kind", ["dangling link", "folder"])
def test_a_config_beside_the_input_that_cannot_be_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """An affidavit.toml beside the input (or in the working directory) that is there but not a
    readable file was skipped in silence: the audit ran on the defaults, without the allowlist,
    mode or freshness the config holds (fail open). It is refused, as an explicit one is."""
    monkeypatch.chdir(tmp_path)
    inputs = tmp_path / "in"
    inputs.mkdir()
    inp = inputs / "in.json"
    inp.write_text("{}")
    cfg = inputs / "affidavit.toml"
    if kind == "dangling link":
        cfg.symlink_to(tmp_path / "deployed" / "affidavit.toml")
    else:
        cfg.mkdir()
    with pytest.raises(ConfigError, match=r"affidavit\.toml"):
        load_settings(beside=inp)
    with pytest.raises(ConfigError, match=r"affidavit\.toml"):
        load_settings(beside=inputs)
    monkeypatch.chdir(inputs)
    with pytest.raises(ConfigError, match=r"affidavit\.toml"):
        load_settings()
