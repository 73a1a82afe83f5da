"""Trust levels through a real turn: allow runs, ask waits for y/n or times out, never refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.config import ToolsConfig, load_config
from lore.core.approval import ScriptedApprover
from lore.errors import ConfigError
from lore.llm.base import Message
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.runtime import Runtime
from lore.tools.trust import TrustPolicy, command_parts
from tests.tooling import lore_with_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n\nПривет, 世界.\n", encoding="utf-8")
    (root / "TODO.md").write_text("- write tests\n", encoding="utf-8")
    return root


def _tool_messages(lore: Runtime, key: str = "cli:default") -> list[Message]:
    return [m for m in lore.session(key).messages if m["role"] == "tool"]


async def _turn(
    lore: Runtime, text: str, *, project: Path | None, approver: ScriptedApprover | None = None
) -> None:
    conversation = lore.conversation(
        "cli:default", emit=lambda e: None, approver=approver, project=project
    )
    await conversation.send(text)


async def test_allow_runs_without_asking_and_is_recorded(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    approver = ScriptedApprover()
    model.tool_call("read_file", {"path": "README.md"}).reply("It greets the world.")
    await _turn(lore, "what is in README.md?", project=project, approver=approver)
    assert approver.actions == []
    sent = model.requests[1].messages[-1]
    assert sent["role"] == "tool" and "Привет, 世界." in sent["content"]
    (message,) = _tool_messages(lore)
    assert message["decision"] == {"trust": "allow", "outcome": "allowed"}


async def test_ask_shows_the_diff_and_yes_applies_it(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    approver = ScriptedApprover("y", by="john (terminal)")
    model.tool_call(
        "edit_file",
        {"path": "TODO.md", "old_text": "- write tests\n", "new_text": "- write tests\n- ship\n"},
    ).reply("Added.")
    await _turn(lore, "add 'ship' to my todo", project=project, approver=approver)
    (action,) = approver.actions
    assert action.summary == "edit TODO.md"
    assert "+- ship" in action.detail and "--- a/TODO.md" in action.detail
    assert (project / "TODO.md").read_text() == "- write tests\n- ship\n"
    (message,) = _tool_messages(lore)
    assert message["decision"] == {"trust": "ask", "outcome": "approved", "by": "john (terminal)"}


async def test_ask_answered_no_changes_nothing_and_tells_the_model(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    approver = ScriptedApprover("n", by="john (terminal)")
    model.tool_call("write_file", {"path": "TODO.md", "content": "gone\n"}).reply("Okay.")
    await _turn(lore, "clear my todo", project=project, approver=approver)
    assert (project / "TODO.md").read_text() == "- write tests\n"
    result = content_text(model.requests[1].messages[-1]["content"])
    assert result.startswith("Error: overwrite TODO.md was declined by john (terminal)")
    (message,) = _tool_messages(lore)
    assert message["decision"] == {
        "trust": "ask",
        "outcome": "refused",
        "reason": "declined by john (terminal)",
    }


async def test_ask_without_an_answer_in_time_means_no(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    impatient = lore_with_tools(lore, approval_timeout=0.05)
    approver = ScriptedApprover(None)  # never answers
    model.tool_call("write_file", {"path": "NEW.md", "content": "hello\n"}).reply("No answer.")
    await _turn(impatient, "make NEW.md", project=project, approver=approver)
    assert len(approver.actions) == 1
    assert not (project / "NEW.md").exists()
    assert "no answer within 0.05 s" in model.requests[1].messages[-1]["content"]
    (message,) = _tool_messages(impatient)
    assert message["decision"]["outcome"] == "refused"
    await impatient.aclose()


async def test_ask_where_no_one_can_answer_is_refused(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    model.tool_call("exec", {"command": "echo hi"}).reply("Could not.")
    await _turn(lore, "say hi", project=project, approver=None)
    result = content_text(model.requests[1].messages[-1]["content"])
    assert "no one can approve it" in result


async def test_never_refuses_the_curated_files_with_a_clear_error(
    lore: Runtime, model: ScriptedProvider
) -> None:
    soul = lore.workspace.root / "SOUL.md"
    before = soul.read_text()
    approver = ScriptedApprover("y")
    model.tool_call("write_file", {"path": "SOUL.md", "content": "I am a pirate.\n"})
    model.reply("I may not.")
    await _turn(lore, "rewrite your soul", project=None, approver=approver)
    assert soul.read_text() == before and approver.actions == []
    result = content_text(model.requests[1].messages[-1]["content"])
    assert result.startswith("Error: overwrite SOUL.md is never allowed (file rule 'SOUL.md')")
    (message,) = _tool_messages(lore)
    assert message["decision"] == {
        "trust": "never",
        "outcome": "refused",
        "reason": "file rule 'SOUL.md'",
    }


async def test_agents_md_asks_even_when_writes_are_allowed(
    lore: Runtime, model: ScriptedProvider
) -> None:
    trusting = lore_with_tools(lore, trust={"write_file": "allow"})
    approver = ScriptedApprover("n")
    model.tool_call("write_file", {"path": "AGENTS.md", "content": "new rules\n"}).reply("ok")
    model.tool_call("write_file", {"path": "scratch.md", "content": "fine\n"}).reply("ok")
    await _turn(trusting, "change the rules", project=None, approver=approver)
    await _turn(trusting, "make a scratch file", project=None, approver=approver)
    assert [a.summary for a in approver.actions] == ["overwrite AGENTS.md"]
    assert (trusting.workspace.root / "scratch.md").read_text() == "fine\n"
    await trusting.aclose()


async def test_exec_rules_allow_and_never_by_pattern(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    ruled = lore_with_tools(lore, exec_rules={"echo *": "allow", "rm *": "never"})
    approver = ScriptedApprover()
    model.tool_call("exec", {"command": "echo hello"}).reply("said hello")
    model.tool_call("exec", {"command": "echo bye; rm -rf README.md"}).reply("refused")
    await _turn(ruled, "greet", project=project, approver=approver)
    await _turn(ruled, "clean up", project=project, approver=approver)
    assert approver.actions == []
    assert "hello" in model.requests[1].messages[-1]["content"]
    assert "never allowed (rule 'rm *')" in model.requests[3].messages[-1]["content"]
    assert (project / "README.md").exists()
    await ruled.aclose()


async def test_non_owner_conversations_never_see_the_tools(
    lore: Runtime, model: ScriptedProvider, project: Path
) -> None:
    model.tool_call("read_file", {"path": "README.md"}).reply("no")
    conversation = lore.conversation("telegram:555", emit=lambda e: None, author="stranger")
    await conversation.send("read the readme")
    offered = {spec.name for spec in model.requests[0].tools}
    assert "remember" in offered
    assert offered.isdisjoint({"read_file", "write_file", "edit_file", "exec", "load_skill"})
    result = content_text(model.requests[1].messages[-1]["content"])
    assert result.startswith("Error: unknown tool 'read_file'")


async def test_owner_conversations_get_the_tools(lore: Runtime, model: ScriptedProvider) -> None:
    model.reply("hi")
    await lore.conversation("cli:default", emit=lambda e: None).send("hi")
    offered = {spec.name for spec in model.requests[0].tools}
    assert {
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "glob",
        "grep",
        "exec",
        "load_skill",
    } <= offered


def test_strictest_matching_rule_wins_whatever_the_order() -> None:
    policy = TrustPolicy(
        ToolsConfig(exec_rules={"git *": "allow", "git push*": "never", "ls*": "allow"})
    )
    assert policy.for_command("git status").level == "allow"
    assert policy.for_command("git push origin main").level == "never"
    assert policy.for_command("ls && git push").level == "never"
    assert policy.for_command("ls | wc -l").level == "ask"  # wc matches no rule: exec's own
    assert policy.for_command("ls $(rm -rf ~)").level == "ask"
    assert policy.for_command("ls > listing.txt").level == "ask"


def test_commands_are_cut_at_every_separator() -> None:
    parts, plain = command_parts("A=1 rm -rf x && echo 'a;b' | tee y\nrm z")
    assert parts == ["rm -rf x", "echo a;b", "tee y", "rm z"] and plain


def test_a_command_naming_lores_home_is_never_allowed_by_itself() -> None:
    policy = TrustPolicy(ToolsConfig(exec_rules={"cat *": "allow"}), home="/home/j/.lore")
    assert policy.for_command("cat notes.txt").level == "allow"
    assert policy.for_command("cat /home/j/.lore/lore.db").level == "ask"


def test_tools_table_is_read_from_config_toml(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        '[tools]\nexec_timeout = 5\n[tools.trust]\nwrite_file = "allow"\n'
        '[tools.exec_rules]\n"git status*" = "allow"\n"rm *" = "never"\n',
        encoding="utf-8",
    )
    config = load_config(env={"LORE_HOME": str(home)})
    assert config.tools.exec_timeout == 5
    assert config.tools.trust == {"write_file": "allow"}
    assert list(config.tools.exec_rules) == ["git status*", "rm *"]


def test_a_bad_trust_level_is_one_clear_config_error(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text('[tools.trust]\nexec = "sometimes"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="use allow, ask or never"):
        load_config(env={"LORE_HOME": str(home)})


def test_a_transcript_shows_each_tool_runs_decision() -> None:
    from zoneinfo import ZoneInfo

    from lore.sessions.tools import render_message

    approved: Message = {
        "role": "tool",
        "name": "write_file",
        "content": "Wrote TODO.md (2 lines).",
        "decision": {"trust": "ask", "outcome": "approved", "by": "john (terminal)"},
    }
    refused: Message = {
        "role": "tool",
        "name": "exec",
        "content": "Error: …",
        "decision": {"trust": "never", "outcome": "refused", "reason": "rule 'rm *'"},
    }
    zone = ZoneInfo("UTC")
    assert render_message(3, approved, zone) == (
        "[3] tool write_file [approved by john (terminal)]: Wrote TODO.md (2 lines)."
    )
    assert render_message(4, refused, zone).startswith("[4] tool exec [refused: rule 'rm *']")


def test_a_matching_file_rule_decides_but_a_tool_set_to_never_is_never() -> None:
    from pathlib import PurePosixPath

    loose = TrustPolicy(ToolsConfig(file_rules={"docs/*": "allow"}))
    assert loose.for_write("write_file", [PurePosixPath("docs/a.md")]).level == "allow"
    assert loose.for_write("write_file", [PurePosixPath("src/a.py")]).level == "ask"
    assert loose.for_write("write_file", [PurePosixPath("SOUL.md")]).level == "never"
    closed = TrustPolicy(
        ToolsConfig(
            trust={"write_file": "never", "exec": "never"},
            file_rules={"docs/*": "allow"},
            exec_rules={"git status*": "allow"},
        )
    )
    assert closed.for_write("write_file", [PurePosixPath("docs/a.md")]).level == "never"
    assert closed.for_command("git status").level == "never"


async def test_a_members_turn_counts_only_the_tool_schemas_it_was_offered(
    lore: Runtime, model: ScriptedProvider
) -> None:
    import json as _json

    from lore.core.feature import CompletedTurn, Feature
    from lore.events import Emit, Inbound
    from lore.llm.tokens import TokenCounter

    seen: list[CompletedTurn] = []

    async def keep(turn: CompletedTurn, emit: Emit) -> None:
        seen.append(turn)

    lore.features.append(Feature("test", after_turn=[keep]))
    model.reply("hi")
    await lore.bus.send(Inbound("line:group:G1", "line", "Amy", "hi", trust="member"))
    await lore.background.drain()
    (turn,) = seen
    request = model.requests[0]
    offered = _json.dumps([vars(spec) for spec in request.tools], ensure_ascii=False)
    user: Message = {"role": "user", "content": "hi", "author": "Amy"}
    fresh = TokenCounter(str(lore.config.model_spec()))  # as counted before this turn
    expected = fresh.count_messages([user], request.system) + fresh.count(offered)
    assert "exec" not in offered
    assert abs(turn.fixed_tokens - expected) <= 10  # the user line's timestamp and channel


def test_a_tools_number_out_of_range_is_one_clear_config_error(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[tools]\nexec_timeout = 0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="'tools.exec_timeout' is 0.0; it must be between"):
        load_config(env={"LORE_HOME": str(home)})
