"""How text is cut into search terms for Chinese, English and Russian, and how wide it
is on a terminal. What a memory search finds, on every backend, is
tests/contract/test_memories_search_contract.py."""

from __future__ import annotations

import pytest

from lore.text import display_width, index_terms, match_expression, stem_russian


def test_index_terms_hold_words_unigrams_and_bigrams() -> None:
    terms = index_terms("喝美式咖啡 and TEA")
    assert {"美式", "咖啡", "and", "tea"} <= set(terms.words.split())
    assert {"喝", "咖", "喝美", "式咖", "咖啡"} <= set(terms.grams.split())


def test_a_query_needs_no_jieba_and_quotes_every_term() -> None:
    assert match_expression("美式咖啡") == (
        '({grams keywords}: ("美式" AND "式咖" AND "咖啡") OR words: "美式咖啡")'
    )
    assert match_expression('x"y') == '{words keywords}: "x" OR {words keywords}: "y"'
    assert match_expression("?!") is None


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("москве", "москв"),
        ("москва", "москв"),
        ("книги", "книг"),
        ("говорил", "говор"),
        ("возможность", "возможн"),
        ("важнейший", "важн"),
        ("кофе", "коф"),
    ],
)
def test_russian_stems_follow_snowball(word: str, stem: str) -> None:
    assert stem_russian(word) == stem


def test_display_width_counts_wide_characters_twice() -> None:
    assert display_width("abc") == 3
    assert display_width("咖啡") == 4
    assert display_width("コーヒー커피") == 12
