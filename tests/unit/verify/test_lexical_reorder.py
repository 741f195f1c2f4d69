"""move_time_adverbial: a date moved front <-> end only where the meaning cannot change."""

from __future__ import annotations

import doctest

import pytest

from affidavit.verify import lexical
from affidavit.verify.lexical import move_time_adverbial


def test_doctests() -> None:
    assert doctest.testmod(lexical).failed == 0


@pytest.mark.parametrize(
    ("sentence", "moved", "how"),
    [
        (
            "Marie Curie discovered polonium and radium in 1898.",
            "In 1898, Marie Curie discovered polonium and radium.",
            "to_front",
        ),
        (
            "The tower was completed in March 1889.",
            "In March 1889, the tower was completed.",
            "to_front",
        ),
        (
            "On 20 July 1969, Apollo 11 landed on the Moon.",
            "Apollo 11 landed on the Moon on 20 July 1969.",
            "to_end",
        ),
        (
            "In 1889, the tower opened to visitors.",
            "The tower opened to visitors in 1889.",
            "to_end",
        ),
    ],
)
def test_moves_a_plain_statement(sentence: str, moved: str, how: str) -> None:
    assert move_time_adverbial(sentence) == (moved, how)


def test_moving_twice_gives_the_sentence_back() -> None:
    s = "The Yardbirds disbanded in 1968."
    once = move_time_adverbial(s)
    assert once is not None
    twice = move_time_adverbial(once[0])
    assert twice == (s, "to_end")


@pytest.mark.parametrize(
    "sentence",
    [
        "Yes, it was released in 1969.",  # a dialogue turn
        "That is correct. It was released in 2016.",  # more than one statement
        "He was a coach, being appointed in 2014.",  # the date may belong to the inner clause
        "Necropolis is a novel by Anthony Horowitz, born on 15 May 1962.",
        "The film was set in 1942.",  # the date completes the verb
        "Newcastle has not won at Anfield since 1995.",  # "since" across a negation
        "The movie was directed by Nolan and it was released in 2012.",  # a second clause
        "She was born in 1867 and died in 1934.",  # two dates
        "The tower is 330 metres tall.",  # no date at all
    ],
)
def test_leaves_alone_what_it_cannot_move_safely(sentence: str) -> None:
    assert move_time_adverbial(sentence) is None
