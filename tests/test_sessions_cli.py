"""`lore sessions list|show` and `lore dream` from the shell."""

from __future__ import annotations

import json

import pytest

from lore.backends.local.history import History
from lore.cli import main
from lore.llm.base import Message
from lore.llm.scripted import ScriptedProvider
from lore.memory.dream import run_dream
from lore.ports.sessions import ArchivedSession
from lore.runtime import Runtime
from lore.sessions.closing import close_session

KEY = "cli:default"
TURN: list[Message] = [
    {"role": "user", "content": "花莲天气？", "author": "john"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "weather", "arguments": '{"city": "Hualien"}'}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": "sunny"},
    {"role": "assistant", "content": "晴天。"},
]


def _archive(lore: Runtime, key: str = KEY) -> ArchivedSession:
    lore.session(key).append(TURN)
    entry = close_session(lore, key)
    assert entry is not None
    return entry


def test_sessions_list_shows_closed_sessions(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = _archive(lore)
    theirs = _archive(lore, "line:group:C1")
    assert main(["sessions", "list"]) == 0
    out = capsys.readouterr().out
    assert mine.session_id in out and theirs.session_id in out
    assert mine.transcript_path in out and "4 messages" in out
    assert main(["sessions", "list", "--session", "line:group:C1"]) == 0
    out = capsys.readouterr().out
    assert theirs.session_id in out and mine.session_id not in out


def test_sessions_list_shows_a_conversations_name_beside_its_key(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    _archive(lore, "line:group:C1")
    _archive(lore)
    lore.chat_ledger.name_conversation("line:group:C1", "王家 family", now=lore.clock.now())
    assert main(["sessions", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "line:group:C1 · 王家 family" in lines and "cli:default" in lines
    assert main(["sessions", "list", "--json"]) == 0
    named = {row["key"]: row["name"] for row in json.loads(capsys.readouterr().out)}
    assert named == {"line:group:C1": "王家 family", "cli:default": None}


def test_sessions_list_json(lore: Runtime, capsys: pytest.CaptureFixture[str]) -> None:
    entry = _archive(lore)
    assert main(["sessions", "list", "--json"]) == 0
    (data,) = json.loads(capsys.readouterr().out)
    assert data["session_id"] == entry.session_id
    assert data["transcript_path"] == entry.transcript_path
    assert data["memory_path"] is None


def test_sessions_list_when_there_are_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "list"]) == 0
    assert capsys.readouterr().out == "No closed sessions yet.\n"


def test_sessions_show_prints_the_exact_messages(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = _archive(lore)
    assert main(["sessions", "show", entry.session_id[:8]]) == 0
    out = capsys.readouterr().out
    assert f"Session {entry.session_id}" in out
    assert "[0] user (john)" in out and "花莲天气？" in out
    assert '→ weather({"city": "Hualien"})' in out
    assert "[2] tool" in out and "weather: sunny" in out
    assert main(["sessions", "show", entry.session_id, "--offset", "3"]) == 0
    out = capsys.readouterr().out
    assert "晴天。" in out and "花莲天气？" not in out


def test_sessions_show_json(lore: Runtime, capsys: pytest.CaptureFixture[str]) -> None:
    entry = _archive(lore)
    assert main(["sessions", "show", entry.session_id, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session"]["session_id"] == entry.session_id
    assert data["messages"] == TURN


def test_sessions_show_an_unknown_id_is_one_clear_line(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    _archive(lore)
    assert main(["sessions", "show", "ffffffff"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: no session 'ffffffff', closed or live") and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list", "--limit", "0"],
        ["sessions", "list", "--limit", "-1"],
        ["sessions", "show", "ID", "--limit", "-2"],
    ],
    ids=" ".join,
)
def test_a_count_below_what_makes_sense_is_refused_not_read_as_nothing(
    lore: Runtime, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    # It printed "No closed sessions yet." (or no message at all) beside closed sessions.
    entry = _archive(lore)
    argv = [entry.session_id[:8] if word == "ID" else word for word in argv]
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "--limit" in err


def test_lore_dream_with_nothing_new(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dream"]) == 0
    assert capsys.readouterr().out == "Nothing new for Dream since the last run.\n"


def test_lore_dream_log_and_restore(
    lore: Runtime, model: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dream", "--log"]) == 0
    assert capsys.readouterr().out == "Dream has not changed any file yet.\n"
    sha = _dream_once(lore, model)
    assert main(["dream", "--log"]) == 0
    assert "+- John lives in Hualien." in capsys.readouterr().out
    assert main(["dream", "--restore"]) == 0
    assert sha[:8] in capsys.readouterr().out
    assert main(["dream", "--restore", sha[:8]]) == 0
    assert capsys.readouterr().out.startswith(f"Undid {sha[:8]}")
    assert "John lives in Hualien" not in (lore.workspace.root / "MEMORY.md").read_text()


def test_lore_dream_prints_json_when_asked(
    lore: Runtime, model: ScriptedProvider, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    assert main(["dream", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "nothing-new"
    assert main(["dream", "--log", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"sha": None, "diff": ""}
    History(lore.workspace.memory_dir).append(KEY, "Джон живёт в 花莲.", now=lore.clock.now())
    content = "# Memory\n\n- Джон живёт в 花莲.\n"
    model.tool_call("write_file", {"path": "MEMORY.md", "content": content}).reply("готово")
    sha = asyncio.run(run_dream(lore)).sha
    assert sha is not None
    assert main(["dream", "--log", sha[:8], "--json"]) == 0
    log = json.loads(capsys.readouterr().out)
    assert log["sha"] == sha and "+- Джон живёт в 花莲." in log["diff"]
    assert main(["dream", "--restore", "--json"]) == 0
    (version,) = json.loads(capsys.readouterr().out)
    assert version["sha"] == sha and version["message"].startswith("dream:")
    assert main(["dream", "--restore", sha[:8], "--json"]) == 0
    undone = json.loads(capsys.readouterr().out)
    assert undone["reverted"] == sha and len(undone["version"]) == 40
    assert "花莲" not in (lore.workspace.root / "MEMORY.md").read_text(encoding="utf-8")
    # A run that fails (here: a model with nothing to say) is data too, and exits 1.
    History(lore.workspace.memory_dir).append(KEY, "Джон любит чай.", now=lore.clock.now())
    assert main(["dream", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "failed"


def _dream_once(lore: Runtime, model: ScriptedProvider) -> str:
    import asyncio

    History(lore.workspace.memory_dir).append(KEY, "John lives in Hualien.", now=lore.clock.now())
    content = "# Memory\n\n- John lives in Hualien.\n"
    model.tool_call("write_file", {"path": "MEMORY.md", "content": content}).reply("done")
    result = asyncio.run(run_dream(lore))
    assert result.sha is not None
    return result.sha


def test_help_lists_sessions_and_dream(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "sessions" in out and "dream" in out


def test_sessions_show_reads_the_live_session_by_its_id(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    session = lore.session(KEY)
    session.append(TURN)
    short = session.meta.session_id[:8]
    assert main(["sessions", "show", short]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Session {session.meta.session_id} · {KEY} · live · 4 messages")
    assert "花莲天气？" in out and "晴天。" in out
    assert main(["sessions", "show", short, "--json", "--offset", "-1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["session"]["live"] is True and data["messages"][0]["content"] == "晴天。"
    assert main(["sessions", "show", "ffffffff"]) == 1
    assert "no session 'ffffffff', closed or live" in capsys.readouterr().err


def test_a_session_of_one_message_is_counted_in_the_singular(
    lore: Runtime, capsys: pytest.CaptureFixture[str]
) -> None:
    lore.session("telegram:7").append([{"role": "user", "content": "Привет", "author": "anna"}])
    entry = close_session(lore, "telegram:7")
    assert entry is not None
    lore.session(KEY).append([{"role": "user", "content": "你好", "author": "john"}])
    live = lore.session(KEY).meta.session_id
    assert main(["sessions", "list"]) == 0
    listed = capsys.readouterr().out
    assert "· 1 message\n" in listed and "1 messages" not in listed
    assert main(["sessions", "show", entry.session_id[:8]]) == 0
    header = f"Session {entry.session_id} · telegram:7 · {entry.slug} · 1 message\n"
    assert capsys.readouterr().out.startswith(header)
    assert main(["sessions", "show", live[:8]]) == 0
    assert capsys.readouterr().out.startswith(f"Session {live} · {KEY} · live · 1 message\n")


@pytest.mark.parametrize(
    ("name", "key"), [("live", KEY), (KEY, KEY), ("telegram:42", "telegram:42")]
)
def test_sessions_show_reads_a_live_session_by_the_names_the_web_page_uses(
    lore: Runtime, capsys: pytest.CaptureFixture[str], name: str, key: str
) -> None:
    """`live` (the terminal's live session) and a conversation's key (its live one)."""
    session = lore.session(key)
    session.append(TURN)

    assert main(["sessions", "show", name]) == 0

    out = capsys.readouterr().out
    assert out.startswith(f"Session {session.meta.session_id} · {key} · live · 4 messages")
    assert "花莲天气？" in out


def test_sessions_show_of_a_conversation_without_a_live_session_is_one_clear_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["sessions", "show", "telegram:404"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: telegram:404 has no live session") and err.count("\n") == 1
