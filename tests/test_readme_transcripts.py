"""The README's transcripts, replayed: every block with a `$ ` command runs, command by
command, in a fresh home (or the one an earlier block left, when its marker says so),
with the clock pinned where the README's times need it and the model scripted at its
boundary, and must print what the README shows. What truly varies from run to run
(wall-clock stamps, random ids, tokens, paths) is normalised in one place, `VARIES`."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pexpect
import pytest

import lore.clock
import lore.runtime
from lore.cli import main
from lore.clock import FixedClock
from lore.config import load_config
from lore.llm.base import ChatRequest
from lore.llm.scripted import ScriptedProvider
from lore.llm.scripted import Step as ModelStep
from lore.memory.extraction import EXTRACTION_PROMPT
from lore.memory.session_summary import SUMMARY_PROMPT
from tests.gateway_server import running_gateway
from tests.openai_server import FakeOpenAI
from tests.postgres_server import PostgresUnavailable, shared_server
from tests.readme_transcripts import Step, Transcript, docs_text, read_transcripts
from tests.test_damaged_database import _corrupt_memories_page, _fill
from tests.test_forget_everywhere import _plant

TRANSCRIPTS = read_transcripts()

# The moment every replayed transcript happens (the README's reminder times count from it).
NOW = datetime(2026, 11, 30, 19, 15, tzinfo=ZoneInfo("Asia/Taipei"))
# Where the README's transcripts say Lore lives; the replay's real paths are shown as these.
README_HOME = "/home/john"
README_LORE_HOME = "/home/john/.local/share/lore"

# What changes from run to run, and only that: each pattern is replaced by its label in
# both the README's text and what Lore printed before they are compared.
VARIES: list[tuple[re.Pattern[str], str]] = [
    # Message and archive times come from the wall clock, not the pinned one.
    (re.compile(r"\d{8}T\d{6}"), "<stamp>"),
    # Session ids are random.
    (re.compile(r"\b[0-9a-f]{32}\b"), "<session id>"),
    (re.compile(r"(?<=session )[0-9a-f]{8}\b|(?<=--)[0-9a-f]{8}\b"), "<short id>"),
    # The gateway's token is random.
    (re.compile(r"^[A-Za-z0-9_-]{43}$", re.M), "<token>"),
    # A table's digest covers the random session ids in it (`lore migrate`).
    (re.compile(r"sha256 [0-9a-f]{16}"), "sha256 <digest>"),
    # A compressed archive's size depends on the times inside it.
    (re.compile(r"\d[\d,]* bytes"), "<size> bytes"),
]
_SESSION_ID = VARIES[1][0]

# What the scripted model says beyond the replies the README shows: the kind of each
# note extraction makes, and the summary of each closed session, by transcript.
KINDS = {
    "John lives in Hualien": "profile",
    "John lives in Taipei (moved from Hualien)": "profile",
    "John drinks an americano every morning": "preference",
    "Alice lives in Hualien": "profile",
}
# Notes extraction makes in a conversation whose transcript cannot show them (HTTP).
NOTED = {"openai-client": ["Alice lives in Hualien"]}
# What the OpenAI-compatible server of `setup=openai-server` answers a program, in order.
SERVED = {
    "agents-session": ["Hualien, by the sea — noted.", "You live in Hualien."],
    "pydantic-history": ["Американо.", "Every morning."],
}
SUMMARIES = {
    "sessions": {
        "slug": "redis-cache-for-api",
        "summary": "Redis in front of Postgres for the API: 5 minute TTL, invalidate on writes.",
        "key_messages": ["Let's do it with a 5 minute TTL and invalidate on writes."],
    },
}


def normalise(text: str) -> str:
    """`text` with what varies written as `VARIES` labels it."""
    for pattern, label in VARIES:
        text = pattern.sub(label, text)
    return text


class ReadmeModel:
    """The model of the README's transcripts. Its chat replies are the ones the README
    shows for the command being replayed: the whole reply of a `lore chat -m`, one line
    per request for a program that asks several times. Extraction notes what the
    command's `· noted` and `· updated` lines say (or `NOTED` for a conversation whose
    notes are not shown); a closed session is summarised as `SUMMARIES` says."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.replies: list[str] = []
        self.notes: list[str] = []
        self.extra_notes = list(NOTED.get(transcript.name, []))

    def expect(self, step: Step) -> None:
        rows = step.expected.splitlines()
        self.notes = [row for row in rows if row.startswith("· ")]
        replies = [row for row in rows if not row.startswith("· ")]
        self.replies = ["\n".join(replies)] if step.command.startswith("lore chat") else replies

    def provider(self) -> ScriptedProvider:
        provider = ScriptedProvider(name="openai")
        provider.default = self.answer
        return provider

    def answer(self, request: ChatRequest) -> ModelStep:
        if request.system == EXTRACTION_PROMPT:
            return ModelStep(text=json.dumps(self.extracted(), ensure_ascii=False))
        if request.system == SUMMARY_PROMPT:
            return ModelStep(text=json.dumps(SUMMARIES[self.transcript.name]))
        assert self.replies, f"{self.transcript.where}: no reply left for the model"
        return ModelStep(text=self.replies.pop(0))

    def extracted(self) -> list[dict[str, Any]]:
        """The operations extraction answers with, once per command."""
        ops: list[dict[str, Any]] = []
        for row in self.notes:
            if noted := re.fullmatch(r"· noted #\d+ (.*)", row):
                ops.append(_note(noted.group(1)))
            elif updated := re.fullmatch(r"· updated #(\d+) → #\d+ (.*)", row):
                ops.append(_note(updated.group(2)) | {"op": "update", "id": int(updated.group(1))})
        if self.extra_notes:
            ops.append(_note(self.extra_notes.pop(0)))
        self.notes = []
        return ops


def _note(content: str) -> dict[str, Any]:
    return {"op": "add", "content": content, "kind": KINDS.get(content, "fact")}


@dataclass
class Homes:
    """The homes the replay made, by name, and the paths shown in their place."""

    root: Path
    fake_home: Path

    def lore_home(self, name: str) -> Path:
        return self.root / "homes" / name

    def shown(self, text: str, lore_home: Path) -> str:
        """`text` with the replay's real paths written as the README writes them."""
        for real, shown in (
            (str(lore_home), README_LORE_HOME),
            (str(self.fake_home), README_HOME),
            (str(self.root / "tmp"), "/tmp"),
        ):
            text = text.replace(real, shown)
        return text

    def real(self, text: str, lore_home: Path) -> str:
        """`text` with the README's paths written as the replay's real ones."""
        text = text.replace(README_LORE_HOME, str(lore_home))
        return text.replace(README_HOME, str(self.fake_home))

    def command(self, command: str) -> list[str]:
        """The command's arguments as a shell would pass them (`~`, and /tmp kept apart)."""
        words = shlex.split(command)
        return [
            str(self.fake_home) + word[1:]
            if word.startswith("~/")
            else str(self.root / "tmp") + word[4:]
            if word.startswith("/tmp/")
            else word
            for word in words
        ]


def _damaged_database(replay: Replay) -> None:
    """400 memories, then a page of their table and the pages of two of its indexes
    overwritten."""
    config = load_config()
    _fill(config)
    _corrupt_memories_page(config.db_path)


def _copies_everywhere(replay: Replay) -> None:
    """A fact with copies in every place a real Lore puts them: an archived session and
    its summary, a daily note, the history, USER.md and its git history, reminders, the
    log, the search index."""
    from lore.logs import configure_logging

    config = load_config()
    configure_logging(config.home)
    _plant(config)
    assert main(["index", "rebuild"]) == 0


def _postgres(replay: Replay) -> None:
    """An empty PostgreSQL database, which the README calls postgresql://lore@db.internal/lore."""
    try:
        url = shared_server().create_database()
    except PostgresUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")
    replay.aliases["postgresql://lore@db.internal/lore"] = url


def _garden(replay: Replay) -> None:
    """A project folder, ~/garden, with a README and a to-do list."""
    garden = replay.homes.fake_home / "garden"
    garden.mkdir()
    (garden / "README.md").write_text("# Garden\n\nWater the tomatoes daily.\n")
    (garden / "TODO.md").write_text("- buy seeds\n")


def _family_group(replay: Replay) -> None:
    """A family group on LINE where Amy noted mom's flight and David corrected it."""
    runtime = lore.runtime.build(load_config())
    scope, now = "line:group:C1…", replay.clock.now()
    flight = "Mom's flight lands Thursday 3 PM"
    said, _ = runtime.memory.remember(
        scope, flight, kind="plan", author="Amy 美美", via="tool", now=now
    )
    runtime.memory.supersede(
        scope, said.id, "Mom's flight lands Thursday 5 PM", author="David", via="tool", now=now
    )
    runtime.close()


def _chatgpt_export(replay: Replay) -> None:
    """~/Downloads/chatgpt-export.zip: a ChatGPT data export (tests/fixtures/import/)."""
    import zipfile

    fixture = Path(__file__).parent / "fixtures" / "import" / "chatgpt-conversations.json"
    downloads = replay.homes.fake_home / "Downloads"
    downloads.mkdir(exist_ok=True)
    with zipfile.ZipFile(downloads / "chatgpt-export.zip", "w") as export:
        export.writestr("chat.html", "<html></html>")
        export.writestr("conversations.json", fixture.read_text(encoding="utf-8"))


def _openai_server(replay: Replay) -> None:
    """An OpenAI-compatible server on 127.0.0.1 answering as `SERVED` says, reached by
    the programs' own OpenAI clients (an agent framework's) through OPENAI_BASE_URL."""
    assert replay.model is not None
    server = FakeOpenAI().start()
    replay.stack.callback(server.stop)
    for text in SERVED[replay.model.transcript.name]:
        server.reply(text)
    replay.monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)


def _agent_exports(replay: Replay) -> None:
    """~/Downloads/mem0-memories.json and ~/.nanobot: another agent's memory, as those
    agents write it (tests/fixtures/import/)."""
    import shutil

    fixtures = Path(__file__).parent / "fixtures" / "import"
    downloads = replay.homes.fake_home / "Downloads"
    downloads.mkdir(exist_ok=True)
    shutil.copy(fixtures / "mem0-memories.json", downloads / "mem0-memories.json")
    shutil.copytree(fixtures / "nanobot", replay.homes.fake_home / ".nanobot")


# What a block's marker can ask to have done to its home before it is replayed.
SETUPS: dict[str, Callable[[Replay], None]] = {
    "damaged-db": _damaged_database,
    "copies-everywhere": _copies_everywhere,
    "postgres": _postgres,
    "garden": _garden,
    "family-group": _family_group,
    "chatgpt-export": _chatgpt_export,
    "openai-server": _openai_server,
    "agent-exports": _agent_exports,
}


@dataclass
class Replay:
    """One home's replay: its clock, the ids the README stands for, and the gateway that
    shell commands (curl, a Python client) talk to, started when first needed."""

    homes: Homes
    lore_home: Path
    capsys: pytest.CaptureFixture[str]
    monkeypatch: pytest.MonkeyPatch
    clock: FixedClock = field(default_factory=lambda: FixedClock(NOW))
    ids: dict[str, str] = field(default_factory=dict)
    # What the README writes for a real value the replay made (a database URL).
    aliases: dict[str, str] = field(default_factory=dict)
    model: ReadmeModel | None = None
    stack: ExitStack = field(default_factory=ExitStack)
    port: int = 0

    def provider(self) -> ScriptedProvider:
        assert self.model is not None
        return self.model.provider()

    def run(self, step: Step) -> str:
        """What `step` prints, its real paths, port and ids shown as the README's."""
        command = step.command
        for shown, real in {**self.ids, **self.aliases}.items():
            command = command.replace(shown, real)
        words = shlex.split(command)
        if words == ["lore", "serve"]:
            printed = self._serve(step.expected)
        elif words[:2] == ["lore", "chat"] and "-m" not in words:
            printed = self._terminal(self.homes.command(command), step.expected)
        elif words[0] == "lore":
            main(self.homes.command(command)[1:])
            out, err = self.capsys.readouterr()
            printed = out + err
        else:
            printed = self._shell(command)
        printed = self.homes.shown(printed, self.lore_home)
        if self.port:
            printed = printed.replace(f"127.0.0.1:{self.port}", "127.0.0.1:8765")
        for shown, real in self.aliases.items():
            printed = printed.replace(real, shown)
        # A later command may name an id this one printed: the README's id stands for it.
        for shown, real in zip(
            _SESSION_ID.findall(step.expected), _SESSION_ID.findall(printed), strict=False
        ):
            self.ids[shown] = real
            self.ids[shown[:8]] = real[:8]
        return printed

    def _serve(self, expected: str) -> str:
        """`lore serve` in its own process: what it prints until the README's `^C`, then
        Ctrl+C, then what it prints as it stops."""
        before, _, after = expected.partition("^C\n")
        port = _free_port()
        config = self.lore_home / "config.toml"
        self.lore_home.mkdir(parents=True, exist_ok=True)
        with config.open("a", encoding="utf-8") as settings:  # after the commented template
            settings.write(f"\n[api]\nport = {port}\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "lore", "serve"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            for row in process.stdout or []:
                lines.put(row)

        reader = threading.Thread(target=read)
        reader.start()
        printed = ""
        try:
            for _ in before.splitlines():
                printed += lines.get(timeout=60)
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
        except queue.Empty:
            printed += "(nothing more within a minute)\n"
        finally:
            process.kill()
            process.wait()
            reader.join()
        printed += "^C\n" + "".join(lines.queue)  # what it printed as it stopped
        printed = printed.replace(f"127.0.0.1:{port}/", "127.0.0.1:8765/")
        return printed if after else printed.partition("^C\n")[0]

    def _terminal(self, args: list[str], expected: str) -> str:
        """The terminal chat in a real pty, against a local OpenAI-compatible server that
        answers as the README shows: each `› ` line is typed, each line after it must be
        drawn, in order (a `y` after `Allow? [y/N]` is typed too)."""
        server = FakeOpenAI().start()
        self.stack.callback(server.stop)
        banner, *typed = re.split(r"^› ", expected, flags=re.M)
        turns = [(turn.split("\n", 1)[0], turn.split("\n", 1)[1].splitlines()) for turn in typed]
        for text, rows in turns:
            if not text.startswith("/"):
                _script_turn(server, rows)
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "TERM": "xterm",
            "PROMPT_TOOLKIT_NO_CPR": "1",
        }
        chat = pexpect.spawn(
            sys.executable,
            ["-m", "lore", *args[1:]],
            env=env,
            encoding="utf-8",
            timeout=30,
            dimensions=(50, 250),
        )
        row = ""
        try:
            for row in banner.splitlines():
                chat.expect(_drawn(self.homes.real(row, self.lore_home)))
            for text, rows in turns:
                row = "›"
                chat.expect(row)
                chat.sendline(text)
                for row in rows:
                    if answer := row.removeprefix("Allow? [y/N] "):
                        if answer != row:
                            chat.expect(_drawn("Allow? [y/N]"))
                            chat.sendline(answer)
                            continue
                    chat.expect(_drawn(self.homes.real(row, self.lore_home)))
            chat.expect("›")
            chat.sendcontrol("d")
            chat.expect(pexpect.EOF)
        except pexpect.ExceptionPexpect:
            drawn = _ANSI.sub("", str(chat.before))
            return f"{drawn}\n(the terminal never drew {row!r})\n"
        finally:
            chat.close(force=True)
        return expected

    def _shell(self, command: str) -> str:
        """A shell command in a work folder holding the README's programs; against a
        gateway serving this home when it talks to one (on the README's port, as far as
        the command can tell). What it exports, later commands see, as in one shell."""
        talks = any(name in command and "8765" in source for name, source in PROGRAMS.items())
        if not self.port and ("8765" in command or talks):
            main(["serve", "--show-token"])
            token = self.capsys.readouterr().out.strip()
            served = lore.runtime.build(load_config())
            gateway = self.stack.enter_context(running_gateway(served, token=token))
            self.port = int(gateway.url.rsplit(":", 1)[1])
        work = self.homes.root / "work"
        work.mkdir(exist_ok=True)
        for name, source in PROGRAMS.items():
            (work / name).write_text(source.replace("8765", str(self.port)), encoding="utf-8")
        script = (
            f"{command.replace('8765', str(self.port))}\nstatus=$?; env -0 > .env; exit $status"
        )
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        for entry in (work / ".env").read_text(encoding="utf-8").split("\0"):
            name, _, value = entry.partition("=")
            if name and name not in _SHELL_OWN and os.environ.get(name) != value:
                self.monkeypatch.setenv(name, value)
        printed = done.stdout + done.stderr
        # The next prompt starts on a line of its own in the README.
        return printed if printed.endswith("\n") or not printed else printed + "\n"


# What a shell sets for itself, not exported by the command it ran.
_SHELL_OWN = {"PATH", "PWD", "OLDPWD", "SHLVL", "_"}


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


def _drawn(text: str) -> str:
    """A pattern for `text` as a terminal draws it: escape sequences (colour, cursor
    moves) may sit between any two characters, and the line may be wrapped; what
    `VARIES` names may be anything."""
    gap = r"(?:\x1b\[[0-9;?]*[A-Za-z]|\r|\n)*"
    for pattern, _ in VARIES:
        text = pattern.sub("\0", text)
    return gap.join(r"\S+" if char == "\0" else re.escape(char) for char in text)


def _script_turn(server: FakeOpenAI, rows: list[str]) -> None:
    """Queue the model's side of one typed turn: the tool calls its `↳` lines show, the
    reply (what follows the last of them), then the extraction its `· noted` lines show."""
    calls = [i for i, row in enumerate(rows) if row.startswith("  ↳ ")]
    for index in calls:
        name, _, arguments = rows[index].removeprefix("  ↳ ").partition(" ")
        server.tool_call(name, json.loads(arguments))
    after = rows[calls[-1] + 1 :] if calls else rows
    server.reply("\n".join(row for row in after if not row.startswith("· ")))
    model = ReadmeModel(Transcript("terminal", 0, "terminal"))
    model.expect(Step("lore chat", "\n".join(rows)))
    server.reply(json.dumps(model.extracted()))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _programs() -> dict[str, str]:
    """The README's Python programs a transcript runs: each block whose first line is a
    comment naming its file (`# chat.py`), by that name."""
    text = docs_text()
    return {
        name: source for name, source in re.findall(r"```python\n# (\w+\.py)\n(.*?)```", text, re.S)
    }


PROGRAMS = _programs()


def _replayable(transcript: Transcript) -> bool:
    return not transcript.skip


@pytest.fixture
def homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Homes:
    fake_home = Path(str(Path.home()))  # conftest's stand-in for $HOME
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("LORE_USER", "john")
    monkeypatch.setenv("LORE_TIMEZONE", "Asia/Taipei")
    monkeypatch.setenv("LORE_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-replay")
    return Homes(tmp_path, fake_home)


def test_every_transcript_is_read_with_its_marker() -> None:
    names = [t.name for t in TRANSCRIPTS]
    assert len(TRANSCRIPTS) >= 10
    assert len(set(names)) == len(names), "two transcripts share a name"
    for transcript in TRANSCRIPTS:
        assert transcript.steps, transcript.name
        homes = {t.name for t in TRANSCRIPTS[: TRANSCRIPTS.index(transcript) + 1]}
        assert transcript.home in homes, f"{transcript.name}: home={transcript.home} comes later"
        assert not transcript.setup or transcript.setup in SETUPS, transcript.setup


def test_the_skipped_transcripts_are_few_and_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    skipped = [t for t in TRANSCRIPTS if t.skip]
    with capsys.disabled():
        print(
            f"\nREADME transcripts: {len(TRANSCRIPTS) - len(skipped)} replayed, "
            f"{len(skipped)} skipped"
        )
        for transcript in skipped:
            print(f"  skipped {transcript.where}: {transcript.skip}")
    assert len(skipped) <= 4


@pytest.mark.parametrize(
    "transcript",
    [
        pytest.param(t, marks=[pytest.mark.postgres] if t.setup == "postgres" else [], id=t.name)
        for t in TRANSCRIPTS
        if _replayable(t)
    ],
)
def test_the_readme_transcript_prints_what_it_shows(
    transcript: Transcript,
    homes: Homes,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Replay every block up to this one that shares its home, in README order.
    chain = [
        t for t in TRANSCRIPTS[: TRANSCRIPTS.index(transcript) + 1] if t.home == transcript.home
    ]
    lore_home = homes.lore_home(transcript.home)
    monkeypatch.setenv("LORE_HOME", str(lore_home))
    replay = Replay(homes, lore_home, capsys, monkeypatch)
    real_build = lore.runtime.build
    # Every runtime a command builds gets the README's model and the pinned clock, and
    # whatever asks the system's clock gets the pinned one too.
    monkeypatch.setattr(
        lore.runtime,
        "build",
        lambda config, **_: real_build(config, provider=replay.provider(), clock=replay.clock),
    )
    monkeypatch.setattr(lore.clock.SystemClock, "now", lambda self: replay.clock.now())
    with replay.stack:
        for block in chain:
            model = replay.model = ReadmeModel(block)
            if block.setup:
                SETUPS[block.setup](replay)
                capsys.readouterr()
            for step in block.steps:
                model.expect(step)
                printed = replay.run(step)
                if block is transcript:
                    assert matches(printed, step.expected), (
                        f"{block.where}: $ {step.command}\nprinted:\n{printed}"
                    )


def matches(printed: str, expected: str) -> bool:
    """Equal once what varies is normalised. A line that is only `…` stands for lines
    left out. JSON is compared without its spacing, and where the README shows `...`
    for fields left out, the rest must appear in order."""
    printed, expected = normalise(printed), normalise(expected)
    if re.search(r"^\s*…$", expected, re.M):  # a line of its own: lines left out
        parts = re.split(r"^\s*…\n", expected, flags=re.M)
        pattern = "(?:.*\n)*?".join(re.escape(part) for part in parts)
        return re.fullmatch(pattern, printed) is not None
    if not re.search(r"[{\[]\"", expected):
        return printed == expected
    pattern = ".*?".join(re.escape(re.sub(r"\s+", "", part)) for part in expected.split("..."))
    return re.fullmatch(pattern, re.sub(r"\s+", "", printed), re.S) is not None


def test_a_marker_names_a_block_shares_a_home_or_skips_it() -> None:
    text = """
<!-- transcript: first -->
```text
$ lore memory add "x"
Noted #1: x
```

<!-- transcript: second, home=first, setup=garden -->
```console
$ curl -s -d '{"a": 1}' \\
    localhost:8765/api
{"b": 2}
```

<!-- transcript: skip (needs a real Telegram bot) -->
```text
$ lore serve
```

```sh
lore memory list     # no prompt: not a transcript
```

```text
$ lore memory list
```
"""
    first, second, skipped, unmarked = read_transcripts(text)
    assert (first.name, first.home, first.steps[0].expected) == ("first", "first", "Noted #1: x\n")
    assert (second.home, second.setup) == ("first", "garden")
    assert second.steps[0].command == """curl -s -d '{"a": 1}' localhost:8765/api"""
    assert skipped.skip == "needs a real Telegram bot"
    assert unmarked.name == unmarked.home == f"line-{unmarked.line}" and not unmarked.skip


def test_what_varies_is_all_that_is_normalised() -> None:
    assert matches("Reminder #1 set, in 13 h 45 min.\n", "Reminder #1 set, in 13 h 45 min.\n")
    assert not matches("Reminder #1 set, in 13 h 44 min.\n", "Reminder #1 set, in 13 h 45 min.\n")
    assert matches("session 0123abcd\n", "session 6fb2f8f9\n")
    assert matches('{"id":1,"text":"x","due":"y"}', '{"id": 1, ..., "due": "y"}\n')
    assert not matches('{"id":2,"text":"x"}', '{"id": 1, ...}\n')
    assert matches("a\nb\nc\nd\n", "a\n  …\nd\n") and matches("a\nd\n", "a\n…\nd\n")
    assert not matches("a\nb\nc\n", "a\n…\nd\n")
