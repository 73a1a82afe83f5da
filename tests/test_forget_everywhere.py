"""`lore forget --everywhere` leaves no byte of the forgotten text anywhere under LORE_HOME:
transcripts and their names, the session index, summaries, notes, history, curated files,
the git history (objects decompressed), the search index, the database file and the log."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import zlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from lore.backends.local.history import History
from lore.backends.local.workspace_git import WorkspaceGit
from lore.cli import main
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.ports.memories import Source
from lore.reminders.delivery import session_delivery
from lore.reminders.scheduler import Scheduler
from lore.runtime import build
from lore.sessions.closing import close_session

SAID = "I see Dr. Petrova about my anxiety every Friday"
FACT = "Anna sees Dr. Petrova for anxiety on Fridays"
OTHER = "Мы едем в Хуалянь в субботу"
KEY = "cli:default"


@pytest.fixture(autouse=True)
def _user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LORE_USER", "anna")


def _plant(config: Config) -> int:
    """Copies of the text in every place a real Lore puts them."""
    lore = build(config, provider=ScriptedProvider())
    lore.workspace.ensure()  # the templates a first chat writes
    session = lore.session(KEY)
    session.append(
        [
            {"role": "user", "content": SAID, "author": "anna"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "name": "remember", "arguments": json.dumps({"content": FACT})}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "remember", "content": "#1"},
            {"role": "assistant", "content": f"Noted: {FACT}."},
            {"role": "user", "content": OTHER, "author": "anna"},
            {"role": "assistant", "content": "Хорошо."},
        ]
    )
    memory, _ = lore.memory.remember(
        KEY,
        FACT,
        author="anna",
        via="tool",
        now=lore.clock.now(),
        source=Source(session.meta.session_id, 0),
    )
    lore.memory.remember(
        KEY, "Anna likes green tea", author="anna", via="cli", now=lore.clock.now()
    )
    entry = close_session(lore, KEY)
    assert entry is not None and "i-see-dr-petrova" in entry.transcript_path
    lore.session(KEY).append([{"role": "user", "content": f"Again: {SAID.lower()}"}])
    memory_dir = config.workspace / "memory"
    memory_dir.mkdir(parents=True, exist_ok=True)
    (memory_dir / "2026-11-30-0900-i-see-dr-petrova-about-my.md").write_text(
        f"# i-see-dr-petrova-about-my\n\n- Session Key: {KEY}\n- Transcript: "
        f"{entry.transcript_path}\n\n## Summary\n\nAnna said: {SAID}.\n",
        encoding="utf-8",
    )
    (memory_dir / "2026-11-30.md").write_text(
        f"# 2026-11-30\n\n## 09:12 · {KEY}\n\n- {FACT}\n- {OTHER}\n", encoding="utf-8"
    )
    History(memory_dir).append(KEY, f"User said: {SAID}", now=lore.clock.now())
    user_md = config.workspace / "USER.md"
    git = WorkspaceGit(config.workspace)
    user_md.write_text(f"# User\n\n- {FACT}\n", encoding="utf-8")
    git.commit(["USER.md"], f"dream: noted {FACT}")
    user_md.write_text(f"# User\n\n- {FACT}\n- {OTHER}\n", encoding="utf-8")
    git.commit(["USER.md"], "dream: travel plans")
    now = lore.clock.now()
    lore.reminders.add(KEY, "anna", f"Friday: {FACT}", now, timezone="UTC", now=now)
    lore.reminders.add(
        KEY, "anna", f"Next week: {FACT}", now + timedelta(days=7), timezone="UTC", now=now
    )
    lore.tasks.add(
        KEY, "anna", f"Look up the clinic's hours: {FACT}", now + timedelta(days=1),
        timezone="UTC", now=now,
    )  # fmt: skip
    deliver = session_delivery(lore.sessions, lambda scope: None)
    scheduler = Scheduler(lore.reminders, lore.clock, deliver)
    assert len(asyncio.run(scheduler.run_once(now + timedelta(seconds=5)))) == 1
    logging.getLogger("lore.test").warning("extraction reply was not valid JSON: %s", SAID)
    for handler in logging.getLogger().handlers:
        handler.flush()
    lore.db.close()
    return memory.id


def _every_byte(home: Path) -> Iterator[tuple[str, bytes]]:
    for path in sorted(home.rglob("*")):
        if path.is_file():
            yield path.relative_to(home).as_posix(), path.read_bytes()
            if "/objects/" in path.as_posix() and "/pack/" not in path.as_posix():
                try:
                    yield f"{path} (inflated)", zlib.decompress(path.read_bytes())
                except zlib.error:
                    pass
    git_dir = home / "workspace" / ".git"
    if git_dir.exists():
        every = subprocess.run(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
            capture_output=True,
            check=True,
        )
        yield "git objects", every.stdout


def _copies(home: Path) -> list[str]:
    needles = [t.encode() for t in (SAID, SAID.lower(), FACT, "Petrova")]
    found = [where for where, data in _every_byte(home) if any(n in data for n in needles)]
    found += [p.name for p in home.rglob("*") if "petrova" in p.name.lower()]
    return found


def test_forget_everywhere_shows_then_erases_every_copy(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.logs import configure_logging

    configure_logging(config.home)
    memory_id = _plant(config)
    assert main(["index", "rebuild"]) == 0
    capsys.readouterr()
    before = _copies(config.home)
    assert any("archive" in w for w in before) and "lore.db" in before
    assert "git objects" in before and "lore.log" in before

    snapshot = {where: data for where, data in _every_byte(config.home) if "lore.log" not in where}
    assert main(["memory", "forget", str(memory_id), "--everywhere"]) == 0
    shown = capsys.readouterr().out
    assert "Nothing was changed" in shown
    for place in ("sessions/_sessions.jsonl", "workspace/USER.md", "workspace/.git", "lore.db"):
        assert place in shown, shown
    assert "lore.db: 2 reminders" in shown and "lore.db: 1 delivery" in shown
    assert "lore.db: 1 task" in shown
    after_dry_run = {w: d for w, d in _every_byte(config.home) if "lore.log" not in w}
    assert after_dry_run == snapshot

    assert main(["memory", "forget", str(memory_id), "--everywhere", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "no copy is left" in out, out
    assert _copies(config.home) == []

    # What was not forgotten is intact, and every file keeps its structure.
    archive = build(config).sessions.archive
    (entry,) = archive.entries()
    messages, total = archive.read_messages(entry)
    assert total == 6
    assert messages[0]["content"] == "[forgotten]" and messages[4]["content"] == OTHER
    assert json.loads(messages[1]["tool_calls"][0]["arguments"]) == {"content": "[forgotten]"}
    assert OTHER in (config.workspace / "USER.md").read_text(encoding="utf-8")
    assert len(WorkspaceGit(config.workspace).log(limit=10)) == 2
    assert main(["memory", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [m["content"] for m in listed] == ["Anna likes green tea"]
    assert main(["memory", "search", "Petrova", "--json"]) == 0
    assert "petrova" not in capsys.readouterr().out.lower()
    assert main(["memory", "search", "Хуалянь", "--json"]) == 0
    assert OTHER in capsys.readouterr().out


def test_forget_a_phrase_everywhere_in_chinese(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    lore = build(config, provider=ScriptedProvider())
    lore.session(KEY).append(
        [
            {"role": "user", "content": "我的医生是王大夫，每周五见面"},
            {"role": "assistant", "content": "好的，王大夫每周五。"},
        ]
    )
    lore.db.close()
    assert main(["forget", "--everywhere", "--phrase", "王大夫", "--yes"]) == 0
    assert "no copy is left" in capsys.readouterr().out
    live = build(config).session(KEY)
    assert [m["content"] for m in live.messages] == [
        "我的医生是[forgotten]，每周五见面",
        "好的，[forgotten]每周五。",
    ]


def test_forget_needs_everywhere_and_a_long_enough_phrase(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["forget", "--phrase", "Petrova"]) == 1
    assert "--everywhere" in capsys.readouterr().err
    assert main(["forget", "--everywhere", "--phrase", "ab"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lore: ") and err.count("\n") == 1


def test_slash_forget_everywhere_shows_first_then_erases(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    lore = build(config, provider=ScriptedProvider())
    session = lore.session(KEY)
    session.append([{"role": "user", "content": "Запомни: мой врач доктор Петрова"}])
    memory, _ = lore.memory.remember(
        KEY,
        "Врач Анны — доктор Петрова",
        author="anna",
        via="tool",
        now=lore.clock.now(),
        source=Source(session.meta.session_id, 0),
    )
    lore.db.close()
    assert main(["chat", "-m", f"/forget {memory.id} everywhere"]) == 0
    out = capsys.readouterr().out
    assert "sessions/cli%3Adefault.jsonl: 1 line" in out
    assert f"/forget {memory.id} everywhere yes" in out
    assert main(["chat", "-m", f"/forget {memory.id} everywhere yes"]) == 0
    assert "no copy is left" in capsys.readouterr().out
    assert not [w for w, data in _every_byte(config.home) if "Петрова".encode() in data]


def test_forget_everywhere_prints_json_when_asked(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    # `lore memory forget ID --everywhere --json` took --json and printed prose.
    lore = build(config, provider=ScriptedProvider())
    lore.session(KEY).append(
        [
            {"role": "user", "content": "我的医生是王大夫，每周五见面"},
            {"role": "assistant", "content": "Записал: доктор Ван по пятницам."},
        ]
    )
    memory, _ = lore.memory.remember(
        KEY, "医生是王大夫", author="anna", via="cli", now=lore.clock.now()
    )
    lore.db.close()
    assert main(["memory", "forget", str(memory.id), "--everywhere", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["memory_id"] == memory.id and shown["erased"] is False
    assert {"where": "lore.db", "count": 1, "what": "memory", "note": f"#{memory.id}"} in shown[
        "found"
    ]
    assert main(["forget", "--everywhere", "--phrase", "王大夫", "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["phrase"] == "王大夫" and done["erased"] is True and done["left"] == []
    assert any(place["where"].startswith("sessions/") for place in done["found"])
    assert main(["forget", "--everywhere", "--phrase", "王大夫", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["found"] == []


def test_forget_everywhere_erases_every_argument_of_the_call_that_wrote_it(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    fact = "Marisabel is my wife, 我的妻子"
    keywords = ["жена", "wife", "Марисабель", "妻子"]
    lore = build(config, provider=ScriptedProvider())
    session = lore.session(KEY)
    arguments = {"content": fact, "kind": "relation", "keywords": keywords}
    session.append(
        [
            {"role": "user", "content": "my wife is Marisabel, remember", "author": "anna"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "name": "remember", "arguments": json.dumps(arguments)}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "remember", "content": "#1"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": OTHER, "author": "anna"},
        ]
    )
    memory, _ = lore.memory.remember(
        KEY,
        fact,
        kind="relation",
        keywords=keywords,
        author="anna",
        via="tool",
        now=lore.clock.now(),
        source=Source(session.meta.session_id, 0),
    )
    assert close_session(lore, KEY) is not None
    lore.db.close()
    assert main(["index", "rebuild"]) == 0

    assert main(["memory", "forget", str(memory.id), "--everywhere", "--yes"]) == 0
    assert "no copy is left" in capsys.readouterr().out
    words = [w.strip(",") for w in fact.split()] + keywords
    needles = [w for w in words if len(w) >= 3]
    found = [
        (where, word)
        for where, data in _every_byte(config.home)
        for word in needles
        if word.encode() in data or word.lower().encode() in data
    ]
    assert found == []
    (entry,) = build(config).sessions.archive.entries()
    messages, _ = build(config).sessions.archive.read_messages(entry)
    assert messages[4]["content"] == OTHER
