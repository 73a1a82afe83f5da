"""Search results are relevant or absent: with four memories, "coffee" finds the coffee
one only, and a question about nothing stored finds nothing, in English, Chinese and
Russian (the floor is measured per query against neutral anchor sentences)."""

from __future__ import annotations

import json

import pytest

from lore.cli import main

# These judge what search finds: they embed with the real model.
pytestmark = pytest.mark.search_quality

MEMORIES = {
    "en": [
        "John drinks black coffee every morning",
        "John's sister is Amy",
        "John lives in Hualien",
        "John is allergic to peanuts",
    ],
    "zh": ["约翰每天早上喝黑咖啡", "约翰的姐姐叫艾米", "约翰住在花莲", "约翰对花生过敏"],
    "ru": [
        "Джон каждое утро пьёт чёрный кофе",
        "Сестру Джона зовут Эми",
        "Джон живёт в Хуалене",
        "У Джона аллергия на арахис",
    ],
}
CASES = [
    ("en", "coffee", [0]),
    ("en", "sister", [1]),
    ("en", "what is he allergic to", [3]),
    ("en", "favourite football team", []),
    ("en", "weather tomorrow", []),
    ("zh", "咖啡", [0]),
    ("zh", "姐姐", [1]),
    ("zh", "他对什么过敏", [3]),
    ("zh", "明天天气", []),
    ("ru", "кофе", [0]),
    ("ru", "сестра", [1]),
    ("ru", "на что аллергия", [3]),
    ("ru", "любимая футбольная команда", []),
    ("ru", "погода завтра", []),
]


@pytest.fixture(autouse=True)
def _user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_USER", "john")


@pytest.mark.parametrize(("language", "query", "expected"), CASES)
def test_search_returns_what_is_relevant_and_nothing_else(
    capsys: pytest.CaptureFixture[str], language: str, query: str, expected: list[int]
) -> None:
    for text in MEMORIES[language]:
        assert main(["memory", "add", text]) == 0
    capsys.readouterr()
    assert main(["memory", "search", query, "--json"]) == 0
    found = [hit["text"] for hit in json.loads(capsys.readouterr().out)]
    assert found == [MEMORIES[language][i] for i in expected]


def test_nothing_relevant_says_nothing_found(capsys: pytest.CaptureFixture[str]) -> None:
    for text in MEMORIES["en"]:
        main(["memory", "add", text])
    capsys.readouterr()
    assert main(["memory", "search", "favourite football team"]) == 0
    assert (
        capsys.readouterr().out == "Nothing found for 'favourite football team' in cli:default.\n"
    )
