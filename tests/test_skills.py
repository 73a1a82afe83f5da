"""Skills: always-on ones in the prompt, the rest one line each and loaded on demand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lore.cli import main
from lore.llm.scripted import ScriptedProvider
from lore.messages import content_text
from lore.runtime import Runtime
from lore.tools.skills import load_skills, parse_front_matter


def _skill(workspace: Path, folder: str, text: str) -> None:
    path = workspace / "skills" / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def skilled(lore: Runtime) -> Runtime:
    root = lore.workspace.root
    _skill(
        root,
        "tone",
        "---\nname: tone\ndescription: How to write to John\nalways: true\n"
        "---\nAlways answer in one short paragraph.\n",
    )
    _skill(
        root,
        "release-notes",
        '---\nname: release-notes\ndescription: "Write release '
        'notes from git log"\nalways: false\n---\n'
        "Run scripts/notes.sh, then group by feature.\n",
    )
    (root / "skills" / "release-notes" / "scripts").mkdir()
    (root / "skills" / "release-notes" / "scripts" / "notes.sh").write_text("git log\n")
    _skill(root, "broken", "---\nname: broken\nalways: maybe\n---\nbody\n")
    return lore


def test_front_matter_is_parsed_without_yaml() -> None:
    meta, body = parse_front_matter(
        "---\nname: 翻译\ndescription: 'Перевод: ru <-> zh'\n# a comment\nalways: true\n---\nBody\n"
    )
    assert meta == {"name": "翻译", "description": "Перевод: ru <-> zh", "always": "true"}
    assert body == "Body"
    assert parse_front_matter("no front matter\n") == ({}, "no front matter")
    with pytest.raises(ValueError, match="no closing"):
        parse_front_matter("---\nname: x\n")


def test_bad_skills_are_reported_not_loaded(skilled: Runtime) -> None:
    skills = load_skills(skilled.workspace.root)
    assert [s.name for s in skills.found] == ["release-notes", "tone"]
    assert skills.problems == ["skills/broken/SKILL.md: the front matter needs a description"]


async def test_always_on_skills_are_in_the_prompt_and_others_one_line_each(
    skilled: Runtime, model: ScriptedProvider
) -> None:
    model.reply("ok")
    await skilled.conversation("cli:default", emit=lambda e: None).send("hi")
    system = model.requests[0].system
    assert "## Skill: tone (always on)\n\nAlways answer in one short paragraph." in system
    assert "- release-notes: Write release notes from git log" in system
    assert "Run scripts/notes.sh" not in system


async def test_load_skill_returns_the_instructions_and_its_files(
    skilled: Runtime, model: ScriptedProvider
) -> None:
    model.tool_call("load_skill", {"name": "release-notes"}).reply("Following it.")
    model.tool_call("load_skill", {"name": "nope"}).reply("No such skill.")
    conversation = skilled.conversation("cli:default", emit=lambda e: None)
    await conversation.send("write release notes")
    loaded = content_text(model.requests[1].messages[-1]["content"])
    assert loaded.startswith("# Skill: release-notes\n\nRun scripts/notes.sh")
    assert "- scripts/notes.sh" in loaded
    await conversation.send("use the nope skill")
    missing = model.requests[3].messages[-1]["content"]
    assert missing == "Error: there is no skill 'nope'. Skills: release-notes, tone."


async def test_other_peoples_conversations_get_no_skills(
    skilled: Runtime, model: ScriptedProvider
) -> None:
    model.reply("hi")
    await skilled.conversation("telegram:9", emit=lambda e: None, author="guest").send("hi")
    assert "# Skills" not in model.requests[0].system


def test_skills_list_prints_and_json(skilled: Runtime, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(skilled.config.home)
    assert main(["skills", "list", "--home", home]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "release-notes          Write release notes from git log",
        "tone           always  How to write to John",
    ]
    assert err == "lore: skipped skills/broken/SKILL.md: the front matter needs a description\n"
    assert main(["skills", "list", "--home", home, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["always"]) for s in data["skills"]] == [
        ("release-notes", False),
        ("tone", True),
    ]


def test_a_model_without_tools_gets_only_the_always_on_skills(skilled: Runtime) -> None:
    from lore.tools.skills import skills_section

    section = skills_section(load_skills(skilled.workspace.root), loadable=False)
    assert section is not None and "## Skill: tone (always on)" in section
    assert "release-notes" not in section
