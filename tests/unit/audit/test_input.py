"""The audit input document: hostile JSON is a one-line input error (exit 2), never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from affidavit.audit.input import parse_input
from affidavit.cli.main import app
from affidavit.core.errors import InputError

CHUNK = '{"text": "The Forth Bridge opened in 1890.", "url": "https://example.org/a"%s}'
ANSWER = '"The Forth Bridge opened in 1890."'


def test_a_number_past_the_integer_digit_limit_is_an_input_error() -> None:
    """json.loads raises a plain ValueError (not JSONDecodeError) for an integer of more than
    4300 digits: it escaped as an internal error."""
    text = '{"chunks": [], "response": "x", "query": ' + "9" * 5000 + "}"
    with pytest.raises(InputError, match=r"in\.json"):
        parse_input(text, "in.json")


@pytest.mark.parametrize(
    "text",
    [
        '{"chunks": [], "response": "Benign.", "response": "Hidden."}',
        '{"chunks": [{"text": "a", "url": "https://good.org", "url": "https://evil.test"}], '
        '"response": "x"}',
    ],
)
def test_a_duplicate_key_is_an_input_error(text: str) -> None:
    """Which of two values a reader takes is up to the reader: another tool could see the one
    the audit never checked. Ambiguous input is refused, as certificates are."""
    with pytest.raises(InputError, match="duplicate key"):
        parse_input(text, "in.json")


@pytest.mark.parametrize("date", ["NaN", "Infinity", "1e400", '"0000"', "9" * 5000])
def test_hostile_metadata_dates_do_not_crash_the_audit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, date: str
) -> None:
    monkeypatch.setenv("AFFIDAVIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "affidavit.toml").write_text("[audit]\nmax_age_days = 30\n", encoding="utf-8")
    doc = tmp_path / "in.json"
    chunk = CHUNK % f', "metadata": {{"date": {date}}}'
    doc.write_text(f'{{"chunks": [{chunk}], "response": {ANSWER}}}', encoding="utf-8")
    result = CliRunner().invoke(app, ["audit", str(doc), "--json"])
    assert not isinstance(result.exception, ValueError | OverflowError), result.exception
    assert result.exit_code in (0, 1, 2), result.output
