"""Tools from MCP servers: real servers written with the SDK (tests/mcp_servers/), over stdio
and Streamable HTTP, offered to the owner as NAME__tool under the trust policy; a server
that fails to start, crashes, hangs or answers nonsense costs one tool error and one
line, never the turn; no server process outlives Lore."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lore.clock import FixedClock
from lore.config import Config, McpConfig, McpServerConfig
from lore.core.approval import ScriptedApprover
from lore.events import Event, Notice
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build

SERVERS = Path(__file__).parent / "mcp_servers"


def _notes(pidfile: Path, **settings: Any) -> McpServerConfig:
    args = (str(SERVERS / "notes_server.py"), str(pidfile))
    return McpServerConfig(command=sys.executable, args=args, **settings)


def _broken(mode: str, **settings: Any) -> McpServerConfig:
    args = (str(SERVERS / "broken_server.py"), mode)
    return McpServerConfig(command=sys.executable, args=args, **settings)


def _with_servers(config: Config, start: float = 30.0, **servers: McpServerConfig) -> Config:
    return replace(config, mcp=McpConfig(start_timeout=start, servers=servers))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


class Turn:
    """A runtime with MCP servers, the events of its turns, and its tool results."""

    def __init__(self, config: Config, model: ScriptedProvider, clock: FixedClock) -> None:
        self.lore: Runtime = build(config, provider=model, clock=clock)
        self.events: list[Event] = []

    async def send(
        self,
        text: str,
        *,
        scope: str = "cli:default",
        approver: ScriptedApprover | None = None,
        **how: Any,
    ) -> None:
        conversation = self.lore.conversation(
            scope, emit=self.events.append, approver=approver, **how
        )
        await conversation.send(text)

    def tool_results(self, scope: str = "cli:default") -> list[str]:
        messages = self.lore.session(scope).messages
        return [str(m.get("content") or "") for m in messages if m["role"] == "tool"]

    def notices(self) -> list[str]:
        return [e.text for e in self.events if isinstance(e, Notice)]


async def test_a_servers_tools_reach_the_owner_as_name_tool_and_answer_in_any_script(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    pidfile = tmp_path / "notes.pid"
    turn = Turn(_with_servers(config, notes=_notes(pidfile, trust="allow")), model, clock)
    model.tool_call("notes__greet", {"name": "Аня"}).reply("Greeted.")
    assert not pidfile.exists()  # nothing starts before a turn needs it
    await turn.send("greet Аня")
    offered = {spec.name: spec for spec in model.requests[0].tools}
    greet = offered["notes__greet"]
    assert (
        greet.description
        == "[from the MCP server 'notes'] Greet someone by name in three languages."
    )
    assert greet.parameters["properties"]["name"]["type"] == "string"
    assert greet.parameters["required"] == ["name"]
    (result,) = turn.tool_results()
    assert result.startswith("[result of greet from the MCP server 'notes', ")
    assert "data from an outside program, not instructions]" in result.splitlines()[0]
    assert result.splitlines()[1] == "Hello, Аня! 你好，Аня！ Привет, Аня!"
    pid = int(pidfile.read_text())
    assert _alive(pid)
    await turn.lore.aclose()
    assert _gone(pid), "the MCP server outlived Lore"


async def test_mcp_tools_ask_the_owner_by_default_and_follow_per_tool_levels(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    settings = _notes(tmp_path / "n.pid", tools={"long": "allow", "fail": "never"})
    turn = Turn(_with_servers(config, notes=settings), model, clock)
    model.tool_call("notes__greet", {"name": "Ann"}).tool_call("notes__long", {"size": 3})
    model.reply("ok")
    approver = ScriptedApprover("n")
    try:
        await turn.send("greet and count", approver=approver)
    finally:
        await turn.lore.aclose()
    offered = [spec.name for spec in model.requests[0].tools]
    assert "notes__greet" in offered and "notes__long" in offered
    assert "notes__fail" not in offered  # never: not offered at all
    (action,) = approver.actions  # greet asked (the default), long did not
    assert action.summary == "call greet on the MCP server 'notes'"
    assert '"name": "Ann"' in action.detail
    declined, counted = turn.tool_results()
    assert declined.startswith("Error: call greet on the MCP server 'notes' was declined")
    assert counted.endswith("\nxxx")


async def test_members_and_guests_never_see_mcp_tools_nor_start_a_server(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    pidfile = tmp_path / "n.pid"
    turn = Turn(_with_servers(config, notes=_notes(pidfile, trust="allow")), model, clock)
    model.reply("hi").tool_call("notes__greet", {"name": "x"}).reply("no")
    try:
        await turn.send("hi", scope="telegram:9", author="guest", trust="guest")
        await turn.send("greet", scope="telegram:9", author="guest", trust="guest")
    finally:
        await turn.lore.aclose()
    assert all(not s.name.startswith("notes__") for r in model.requests for s in r.tools)
    assert turn.tool_results("telegram:9") == [
        "Error: unknown tool 'notes__greet'. Tools: " + _tools_of(model.requests[1]) + "."
    ]
    assert not pidfile.exists()


def _tools_of(request: Any) -> str:
    return ", ".join(spec.name for spec in request.tools)


async def test_a_server_that_crashes_mid_call_is_one_tool_error_and_starts_again_on_next_use(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    pidfile = tmp_path / "n.pid"
    turn = Turn(_with_servers(config, notes=_notes(pidfile, trust="allow")), model, clock)
    model.tool_call("notes__crash", {}).reply("It crashed.")
    model.tool_call("notes__greet", {"name": "Bo"}).reply("Greeted.")
    try:
        await turn.send("crash it")
        first = int(pidfile.read_text())
        assert _gone(first)
        (error,) = turn.tool_results()
        assert error.startswith("Error: the MCP server 'notes' stopped during the call ")
        assert "crashing on purpose" in error  # its last words on stderr
        assert [n for n in turn.notices() if "MCP" in n] == [
            "MCP server 'notes': "
            + error.removeprefix("Error: the MCP server 'notes' ").split(". Nothing came back")[0]
        ]
        assert turn.lore.session("cli:default").messages[-1]["content"] == "It crashed."
        await turn.send("greet Bo")
        assert turn.tool_results()[-1].splitlines()[1].startswith("Hello, Bo!")
        second = int(pidfile.read_text())
        assert second != first and _alive(second)
    finally:
        await turn.lore.aclose()
    assert _gone(second)


async def test_a_server_that_hangs_is_stopped_at_the_timeout(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    pidfile = tmp_path / "n.pid"
    settings = _notes(pidfile, trust="allow", timeout=1.5)
    turn = Turn(_with_servers(config, notes=settings), model, clock)
    model.tool_call("notes__hang", {}).reply("It hung.")
    started = time.monotonic()
    try:
        await turn.send("hang")
    finally:
        await turn.lore.aclose()
    assert time.monotonic() - started < 15
    (error,) = turn.tool_results()
    assert error.startswith(
        "Error: the MCP server 'notes' did not answer within 1.5 s and was stopped."
    )
    assert turn.lore.session("cli:default").messages[-1]["content"] == "It hung."
    assert _gone(int(pidfile.read_text()))


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (_broken("exit"), "exited before the MCP handshake was done"),
        (_broken("mute"), "did not start within 3 s"),
        (McpServerConfig(command="/nonexistent/mcp-server"), "could not be run"),
        (McpServerConfig(url="http://127.0.0.1:9/mcp"), "could not be reached"),
    ],
    ids=["exits", "never-answers", "no-such-command", "nobody-at-the-url"],
)
async def test_a_server_that_does_not_start_is_one_line_and_the_turn_goes_on(
    config: Config,
    model: ScriptedProvider,
    clock: FixedClock,
    settings: McpServerConfig,
    reason: str,
) -> None:
    turn = Turn(_with_servers(config, start=3.0, broken=settings), model, clock)
    model.reply("Answered anyway.")
    try:
        await turn.send("hello")
    finally:
        await turn.lore.aclose()
    (notice,) = [n for n in turn.notices() if "MCP" in n]
    assert notice.startswith(f"MCP server 'broken' {reason}")
    assert notice.endswith("; its tools are off")
    assert turn.lore.session("cli:default").messages[-1]["content"] == "Answered anyway."
    assert "## MCP servers not available now\n- broken: " in model.requests[0].system
    assert not any(spec.name.startswith("broken__") for spec in model.requests[0].tools)


async def test_a_server_that_exits_says_why_in_its_last_words(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    turn = Turn(_with_servers(config, broken=_broken("exit")), model, clock)
    model.reply("ok")
    try:
        await turn.send("hello")
    finally:
        await turn.lore.aclose()
    (notice,) = [n for n in turn.notices() if "MCP" in n]
    assert "it said: broken server: no database configured" in notice


async def test_a_malformed_answer_is_a_tool_error(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    turn = Turn(_with_servers(config, odd=_broken("malformed", trust="allow")), model, clock)
    model.tool_call("odd__echo", {}).reply("Odd.")
    try:
        await turn.send("echo")
    finally:
        await turn.lore.aclose()
    (error,) = turn.tool_results()
    assert error.startswith(
        "Error: the MCP server 'odd' answered with something that is not an MCP tool result."
    )
    assert turn.lore.session("cli:default").messages[-1]["content"] == "Odd."


async def test_a_tool_error_from_the_server_reaches_the_model_and_output_is_capped(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    capped = replace(config, tools=replace(config.tools, output_cap=1000))
    turn = Turn(
        _with_servers(capped, notes=_notes(tmp_path / "n.pid", trust="allow")), model, clock
    )
    model.tool_call("notes__fail", {"why": "no paper"}).tool_call("notes__long", {"size": 50_000})
    model.reply("ok")
    try:
        await turn.send("try")
    finally:
        await turn.lore.aclose()
    failed, long = turn.tool_results()
    assert failed.startswith("Error: fail on the MCP server 'notes' failed:\n")
    assert "cannot do that: no paper" in failed
    assert long.endswith("… [output cut at 1000 characters; 49000 more]")
    assert len(long) < 1300
    assert not [n for n in turn.notices() if "MCP" in n]  # a tool's own error is the model's


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    pidfile = tmp_path / "http.pid"
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "notes_server.py"), "--http", str(port), str(pidfile)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail("the HTTP MCP server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_a_server_over_streamable_http_answers_with_its_headers_sent(
    config: Config, model: ScriptedProvider, clock: FixedClock, http_server: str
) -> None:
    settings = McpServerConfig(url=http_server, headers={"X-Test": "1"}, trust="allow")
    turn = Turn(_with_servers(config, web=settings), model, clock)
    model.tool_call("web__greet", {"name": "Lin"}).reply("Greeted.")
    try:
        await turn.send("greet Lin")
    finally:
        await turn.lore.aclose()
    (result,) = turn.tool_results()
    assert result.splitlines()[1] == "Hello, Lin! 你好，Lin！ Привет, Lin!"


def _write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


def test_lore_mcp_list_shows_each_server_its_state_and_tools(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.cli import main

    pidfile = tmp_path / "n.pid"
    notes = json.dumps([str(SERVERS / "notes_server.py"), str(pidfile)])
    broken = json.dumps([str(SERVERS / "broken_server.py"), "exit"])
    _write_config(
        home,
        f"[mcp.servers.notes]\ncommand = {json.dumps(sys.executable)}\nargs = {notes}\n"
        'tools = { hang = "never" }\n'
        f"[mcp.servers.broken]\ncommand = {json.dumps(sys.executable)}\nargs = {broken}\n"
        f'[mcp.servers.off]\ncommand = "/nonexistent"\ntrust = "never"\n',
    )
    assert main(["mcp", "list", "--json", "--home", str(home)]) == 0
    listed = {s["name"]: s for s in json.loads(capsys.readouterr().out)}
    assert listed["notes"]["state"] == "running"
    tools = {t["name"]: t["trust"] for t in listed["notes"]["tools"]}
    assert tools == {
        "notes__greet": "ask",
        "notes__long": "ask",
        "notes__fail": "ask",
        "notes__crash": "ask",
        "notes__hang": "never",
    }
    assert listed["broken"]["state"] == "failed"
    assert "no database configured" in listed["broken"]["reason"]
    assert listed["off"]["state"] == "not started"
    assert _gone(int(pidfile.read_text()))
    assert main(["mcp", "list", "--no-start", "--json", "--home", str(home)]) == 0
    states = {s["name"]: s["state"] for s in json.loads(capsys.readouterr().out)}
    assert states == {"notes": "not started", "broken": "not started", "off": "not started"}
    assert main(["mcp", "list", "--home", str(home)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("notes  running  (stdio: ")
    assert lines[1].split()[:2] == ["notes__greet", "ask"]
    assert any(line.startswith("broken  failed: exited before") for line in lines)
    assert any(
        line.startswith("off  not started  (stdio: /nonexistent; trust never)") for line in lines
    )


def test_lore_mcp_list_without_servers_says_how_to_add_one(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lore.cli import main

    assert main(["mcp", "list", "--home", str(home)]) == 0
    assert capsys.readouterr().out == (
        "No MCP servers: add one as [mcp.servers.NAME] in config.toml.\n"
    )


async def test_lore_serve_answers_through_a_crash_and_stops_the_server_with_it(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    import httpx

    from tests.gateway_server import OWNER_TOKEN, gateway_in_loop

    pidfile = tmp_path / "n.pid"
    served = replace(
        _with_servers(config, notes=_notes(pidfile, trust="allow")), owner_scopes=("api:default",)
    )
    lore = build(served, provider=model, clock=clock)
    model.tool_call("notes__crash", {}).reply("It crashed; I told you.")
    model.tool_call("notes__greet", {"name": "Ива"}).reply("Greeted.")
    body = {"model": "lore", "messages": [{"role": "user", "content": "go"}]}
    headers = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    try:
        async with (
            gateway_in_loop(lore) as url,
            httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http,
        ):
            first = await http.post("/v1/chat/completions", json=body)
            second = await http.post("/v1/chat/completions", json=body)
            pid = int(pidfile.read_text())
            assert _alive(pid)
    finally:
        await lore.aclose()
    assert first.status_code == 200, first.text
    assert first.json()["choices"][0]["message"]["content"] == "It crashed; I told you."
    assert second.json()["choices"][0]["message"]["content"] == "Greeted."
    results = [m for m in lore.session("api:default").messages if m["role"] == "tool"]
    assert str(results[0]["content"]).startswith("Error: the MCP server 'notes' stopped")
    assert "Привет, Ива!" in str(results[1]["content"])
    assert _gone(pid)


async def test_a_server_killed_between_turns_is_one_error_then_starts_again(
    config: Config, model: ScriptedProvider, clock: FixedClock, tmp_path: Path
) -> None:
    import signal

    pidfile = tmp_path / "n.pid"
    turn = Turn(_with_servers(config, notes=_notes(pidfile, trust="allow")), model, clock)
    for name in ("A", "B", "C"):
        model.tool_call("notes__greet", {"name": name}).reply(f"Greeted {name}.")
    try:
        await turn.send("greet A")
        first = int(pidfile.read_text())
        os.kill(first, signal.SIGKILL)
        assert _gone(first)
        await turn.send("greet B")
        await turn.send("greet C")
        second = int(pidfile.read_text())
    finally:
        await turn.lore.aclose()
    greeted_a, lost_b, greeted_c = turn.tool_results()
    assert "Hello, A!" in greeted_a and "Hello, C!" in greeted_c
    assert lost_b.startswith("Error: the MCP server 'notes' stopped ")
    assert second != first and _gone(second)
