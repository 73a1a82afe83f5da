"""Reading the memory of other agents: a nanobot workspace, an OpenClaw workspace and a
mem0 export, into the conversations, notes and facts an import brings in.

- **nanobot** (`~/.nanobot`, its `workspace/`, or a folder of session files): each
  session file (`*.jsonl`, a `{"_type": "metadata"}` line, then one message a line) is
  a conversation; `memory/MEMORY.md`, `USER.md` and `SOUL.md` are notes, and the bullet
  lines of `USER.md` and `memory/MEMORY.md` (what nanobot knows of its user) are facts;
  `memory/history.jsonl` (its consolidated summaries, one `{"cursor", "timestamp",
  "content"}` a line) is a note of dated sections.
- **OpenClaw** (`~/.openclaw/workspace`): `MEMORY.md` and the Markdown under `memory/`
  (the daily logs `memory/YYYY-MM-DD.md`, dated by their names) are notes.
- **mem0**: the JSON its API returns for `get_all` (`{"results": [...]}` or a list),
  each memory's `memory` text a fact, with its `created_at`.

Facts are checked as every memory is (the secret detector, the 500-character rule): one
that would be refused is skipped with the reason, and kept out of the archive too. The
facts of one file are one conversation of `facts=True`, so each memory made from them
links to the archived message it came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lore.errors import InvalidInputError
from lore.llm.base import Message
from lore.sessions.export_records import (
    Conversation,
    Export,
    ImportedNote,
    Skipped,
    message_at,
)

__all__ = ["read_mem0", "read_nanobot", "read_openclaw"]

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?(?P<text>\S.*?)\s*$")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_FACT_FILES = ("USER.md", "memory/MEMORY.md")
_NOTE_FILES = ("USER.md", "memory/MEMORY.md", "SOUL.md")


# -- nanobot ------------------------------------------------------------------------------


def read_nanobot(export: Export, path: Path) -> None:
    """A nanobot home, workspace or sessions folder (see the module's text)."""
    if not path.is_dir():
        raise InvalidInputError(f"{path}: a nanobot workspace is a folder (~/.nanobot)")
    workspace = path / "workspace" if (path / "workspace").is_dir() else path
    for file in sorted(_session_files(path)):
        _nanobot_session(export, file, file.relative_to(path).as_posix())
    facts: list[Message] = []
    for name in _NOTE_FILES:
        file = workspace / name
        text = _text(export, file, name)
        if text is None:
            continue
        export.notes.append(ImportedNote(f"nanobot/{name}", text, _modified(file)))
        if name in _FACT_FILES:
            moment = _modified(file)
            for number, line in enumerate(text.splitlines(), start=1):
                bullet = _BULLET.match(line)
                if bullet:
                    _fact(export, facts, bullet["text"], moment, f"{name} line {number}")
    _nanobot_history(export, workspace / "memory" / "history.jsonl")
    if facts:
        export.conversations.append(_facts("nanobot", "nanobot memory (USER.md, MEMORY.md)", facts))
    if not export.conversations and not export.notes:
        raise InvalidInputError(
            f"{path}: no nanobot sessions (*.jsonl) or memory files (USER.md, memory/MEMORY.md)"
        )


def _session_files(root: Path) -> Iterator[Path]:
    """`*.jsonl` files whose first line is a nanobot session's metadata."""
    for file in root.rglob("*.jsonl"):
        if file.name == "history.jsonl" or any(p.startswith(".") for p in file.parts[-3:-1]):
            continue
        try:
            with file.open("rb") as stream:
                first = stream.readline(65536)
            head = json.loads(first)
        except (OSError, ValueError):
            continue
        if isinstance(head, dict) and head.get("_type") == "metadata":
            yield file


def _nanobot_session(export: Export, file: Path, label: str) -> None:
    lines = file.read_bytes().decode("utf-8", errors="replace").splitlines()
    head: dict[str, Any] = {}
    messages: list[Message] = []
    damaged = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            damaged += 1
            continue
        if not isinstance(record, dict):
            damaged += 1
        elif record.get("_type") == "metadata":
            head = record
        elif record.get("_type") is None and record.get("role") in ("user", "assistant"):
            text = _content_text(record.get("content"))
            if text and not (record["role"] == "assistant" and record.get("tool_calls")):
                messages.append(message_at(record["role"], text, _local(record.get("timestamp"))))
    if damaged:
        export.skipped.append(Skipped(label, f"{damaged} damaged line(s) left out"))
    if not messages:
        export.skipped.append(Skipped(label, "no user or assistant message with text"))
        return
    meta = head.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    key = str(head.get("key") or file.stem)
    title = str(meta.get("title") or "").strip() or key
    first = _local(head.get("created_at")) or _when(messages[0])
    last = _local(head.get("updated_at")) or _when(messages[-1])
    export.conversations.append(
        Conversation("nanobot", key, title, first or _EPOCH, last or first or _EPOCH, messages)
    )


def _nanobot_history(export: Export, file: Path) -> None:
    """history.jsonl as one note: a `## timestamp` section per summary, oldest first."""
    if not file.is_file():
        return
    sections: list[str] = []
    latest: datetime | None = None
    for number, line in enumerate(file.read_bytes().decode("utf-8", "replace").splitlines()):
        try:
            entry = json.loads(line) if line.strip() else None
        except ValueError:
            entry = None
        if not isinstance(entry, dict) or not str(entry.get("content") or "").strip():
            if line.strip():
                export.skipped.append(Skipped(f"memory/history.jsonl line {number + 1}", "damaged"))
            continue
        stamp = str(entry.get("timestamp") or "").strip()
        moment = _local(stamp.replace(" ", "T")) if stamp else None
        latest = moment if moment is not None and (latest is None or moment > latest) else latest
        sections.append(f"## {stamp or 'undated'}\n\n{str(entry['content']).strip()}\n")
    if sections:
        text = "# nanobot history\n\n" + "\n".join(sections)
        export.notes.append(ImportedNote("nanobot/history.md", text, latest or _modified(file)))


# -- OpenClaw -----------------------------------------------------------------------------


def read_openclaw(export: Export, path: Path) -> None:
    """An OpenClaw workspace: MEMORY.md and the Markdown under memory/."""
    if not path.is_dir():
        raise InvalidInputError(
            f"{path}: an OpenClaw workspace is a folder (~/.openclaw/workspace)"
        )
    workspace = path / "workspace" if (path / "workspace").is_dir() else path
    files = [workspace / "MEMORY.md"] if (workspace / "MEMORY.md").is_file() else []
    memory = workspace / "memory"
    if memory.is_dir():
        files += sorted(
            f
            for f in memory.rglob("*.md")
            if f.is_file() and not any(p.startswith(".") for p in f.relative_to(memory).parts)
        )
    for file in files:
        relative = file.relative_to(workspace).as_posix()
        text = _text(export, file, relative)
        if text is not None:
            moment = _day(file.stem) or _modified(file)
            export.notes.append(ImportedNote(f"openclaw/{relative}", text, moment))
    if not files:
        raise InvalidInputError(f"{path}: no MEMORY.md or memory/*.md in this OpenClaw workspace")


# -- mem0 ---------------------------------------------------------------------------------


def read_mem0(export: Export, path: Path) -> None:
    """mem0's `get_all` answer (or a list of its memories) as facts."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
    except IsADirectoryError:
        raise InvalidInputError(f"{path}: a mem0 export is a JSON file") from None
    except (UnicodeDecodeError, ValueError):
        raise InvalidInputError(f"{path}: not JSON, not a mem0 export") from None
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InvalidInputError(f"{path}: no list of memories ('results') in this JSON")
    facts: list[Message] = []
    users: set[str] = set()
    for number, item in enumerate(items, start=1):
        text = item.get("memory") if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip():
            export.skipped.append(Skipped(f"memory {number}", "no 'memory' text"))
            continue
        users.add(str(item.get("user_id") or ""))
        moment = _local(item.get("created_at")) or _local(item.get("updated_at"))
        _fact(export, facts, text, moment, f"memory {number}")
    if not any(isinstance(i, dict) and isinstance(i.get("memory"), str) for i in items):
        raise InvalidInputError(f"{path}: no list of memories (no 'memory' texts) in this JSON")
    if facts:
        who = ", ".join(sorted(u for u in users if u)) or "mem0"
        export.conversations.append(_facts("mem0", f"mem0 memories ({who})", facts))


# -- shared -------------------------------------------------------------------------------

_EPOCH = datetime.fromtimestamp(0, UTC)


def _fact(
    export: Export, facts: list[Message], text: str, moment: datetime | None, label: str
) -> None:
    """A fact kept when a memory of it would be accepted; else skipped with the reason
    (named by its place, never its text, which may be the secret it was refused for)."""
    from lore.ports.memories import make_draft

    try:
        make_draft(text, "fact", (), "import")
    except InvalidInputError as refused:
        export.skipped.append(Skipped(label, str(refused)))
        return
    facts.append(message_at("user", text.strip(), moment))


def _facts(source: str, title: str, facts: list[Message]) -> Conversation:
    """The facts as one conversation, named by what they are, not where the file was:
    the same facts read from another folder are the same conversation."""
    times = [t for m in facts if (t := _when(m)) is not None]
    first, last = (min(times), max(times)) if times else (_EPOCH, _EPOCH)
    return Conversation(source, f"facts:{title}", title, first, last, facts, facts=True)


def _text(export: Export, file: Path, label: str) -> str | None:
    if not file.is_file():
        return None
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        export.skipped.append(Skipped(label, "not UTF-8 text"))
        return None
    if not text.strip():
        export.skipped.append(Skipped(label, "empty"))
        return None
    return text


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):  # parts: [{"type": "text", "text": ...}, images...]
        texts = [str(p.get("text") or "") for p in content if isinstance(p, dict)]
        return "\n".join(t for t in texts if t).strip()
    return ""


def _when(message: Message) -> datetime | None:
    return _local(message.get("timestamp"))


def _local(value: object) -> datetime | None:
    """An ISO time; nanobot writes its machine's local time without a zone (read as
    this machine's zone, which is most often the same machine)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.astimezone()


def _modified(file: Path) -> datetime:
    return datetime.fromtimestamp(file.stat().st_mtime, UTC)


def _day(stem: str) -> datetime | None:
    """Noon of the day a daily log is named after (`2026-03-28`), None for other names."""
    match = _DAY.fullmatch(stem)
    if match is None:
        return None
    try:
        return datetime(int(match[1]), int(match[2]), int(match[3]), 12, tzinfo=UTC)
    except ValueError:
        return None
