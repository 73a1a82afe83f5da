"""read_file, write_file, edit_file, list_dir, glob and grep on a real folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from lore.config import Config
from lore.core.approval import Action, Approval, ScriptedApprover
from tests.tooling import call, context, registry, with_tools


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "notes.md").write_text("".join(f"line {n}\n" for n in range(1, 11)), encoding="utf-8")
    (root / "src" / "app.py").write_text("print('здравствуй')\n# TODO: 测试\n", encoding="utf-8")
    return root


async def test_read_file_takes_a_line_range(config: Config, project: Path) -> None:
    result = await call(
        registry(config),
        "read_file",
        {"path": "notes.md", "start_line": 3, "end_line": 4},
        context(project),
    )
    assert result.content == "notes.md · lines 3-4 of 10\nline 3\nline 4"


async def test_read_file_cuts_long_output_and_says_where_to_go_on(
    config: Config, project: Path
) -> None:
    small = with_tools(config, output_cap=20)
    result = await call(registry(small), "read_file", {"path": "notes.md"}, context(project))
    assert result.content.startswith(
        "notes.md · lines 1-2 of 10 · cut; read on with start_line=3\nline 1\nline 2"
    )


async def test_read_file_refuses_binary_and_non_utf8(config: Config, project: Path) -> None:
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (project / "old.txt").write_bytes("привет".encode("cp1251"))
    tools = registry(config)
    png = await call(tools, "read_file", {"path": "logo.png"}, context(project))
    assert png.is_error and "binary file" in png.content
    cp = await call(tools, "read_file", {"path": "old.txt"}, context(project))
    assert cp.is_error and "not UTF-8" in cp.content


async def test_read_file_of_a_missing_file_or_folder_is_clear(
    config: Config, project: Path
) -> None:
    tools = registry(config)
    missing = await call(tools, "read_file", {"path": "nope.md"}, context(project))
    assert missing.content == "Error: nope.md does not exist"
    folder = await call(tools, "read_file", {"path": "src"}, context(project))
    assert folder.content == "Error: src is a folder, not a file"


async def test_edit_file_with_no_match_changes_nothing(config: Config, project: Path) -> None:
    approver = ScriptedApprover("y")
    result = await call(
        registry(config),
        "edit_file",
        {"path": "notes.md", "old_text": "line 99", "new_text": "x"},
        context(project, approver=approver),
    )
    assert result.is_error and "old_text was not found in notes.md; nothing changed" in (
        result.content
    )
    assert approver.actions == []


async def test_edit_file_with_several_matches_names_their_lines(
    config: Config, project: Path
) -> None:
    result = await call(
        registry(config),
        "edit_file",
        {"path": "notes.md", "old_text": "line 1", "new_text": "x"},
        context(project, approver=ScriptedApprover("y")),
    )
    assert result.is_error
    assert "old_text occurs 2 times in notes.md (lines 1, 10); nothing changed" in result.content
    assert (project / "notes.md").read_text().startswith("line 1\n")


async def test_edit_file_replaces_exactly_one_match(config: Config, project: Path) -> None:
    result = await call(
        registry(config),
        "edit_file",
        {"path": "src/app.py", "old_text": "# TODO: 测试", "new_text": "# DONE: 测试"},
        context(project, approver=ScriptedApprover("y")),
    )
    assert result.content == "Edited src/app.py: replaced 1 passage."
    assert (project / "src" / "app.py").read_text() == "print('здравствуй')\n# DONE: 测试\n"


async def test_write_file_creates_folders_and_shows_a_new_file_diff(
    config: Config, project: Path
) -> None:
    approver = ScriptedApprover("y")
    result = await call(
        registry(config),
        "write_file",
        {"path": "docs/plan.md", "content": "# План\n"},
        context(project, approver=approver),
    )
    assert result.content == "Created docs/plan.md (1 lines)."
    assert (project / "docs" / "plan.md").read_text() == "# План\n"
    assert approver.actions[0].detail.startswith("--- /dev/null\n+++ b/docs/plan.md\n")


async def test_write_file_keeps_the_files_mode(config: Config, project: Path) -> None:
    script = project / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    await call(
        registry(config),
        "write_file",
        {"path": "run.sh", "content": "echo 2\n"},
        context(project, approver=ScriptedApprover("y")),
    )
    assert script.read_text() == "echo 2\n" and script.stat().st_mode & 0o777 == 0o755


async def test_a_file_changed_while_waiting_for_approval_is_left_alone(
    config: Config, project: Path
) -> None:
    class EditsMeanwhile(ScriptedApprover):
        async def approve(self, action: Action) -> Approval:
            (project / "notes.md").write_text("someone else's edit\n")
            return await super().approve(action)

    result = await call(
        registry(config),
        "edit_file",
        {"path": "notes.md", "old_text": "line 5\n", "new_text": "five\n"},
        context(project, approver=EditsMeanwhile("y")),
    )
    assert result.is_error and "changed while waiting for approval" in result.content
    assert (project / "notes.md").read_text() == "someone else's edit\n"


async def test_list_dir_glob_and_grep(config: Config, project: Path) -> None:
    tools = registry(config)
    ctx = context(project)
    listed = await call(tools, "list_dir", {}, ctx)
    assert listed.content == "./\nsrc/\nnotes.md  71"
    glob = await call(tools, "glob", {"pattern": "**/*.py"}, ctx)
    assert glob.content == "src/app.py"
    grep = await call(tools, "grep", {"pattern": "测试|здравствуй"}, ctx)
    assert grep.content == "src/app.py:1: print('здравствуй')\nsrc/app.py:2: # TODO: 测试"
    only_md = await call(tools, "grep", {"pattern": "line 7", "glob": "*.md"}, ctx)
    assert only_md.content == "notes.md:7: line 7"
    bad = await call(tools, "grep", {"pattern": "("}, ctx)
    assert bad.is_error and "not a valid regular expression" in bad.content


async def test_globs_keep_hidden_folders_and_stay_relative(config: Config, project: Path) -> None:
    (project / ".github").mkdir()
    (project / ".github" / "ci.yml").write_text("on: push\n")
    tools = registry(config)
    ctx = context(project)
    found = await call(tools, "glob", {"pattern": "./.github/*.yml"}, ctx)
    assert found.content == ".github/ci.yml"
    for pattern in ("../*", "/etc/*"):
        refused = await call(tools, "glob", {"pattern": pattern}, ctx)
        assert refused.is_error and "relative to the project folder" in refused.content


async def test_reading_an_empty_file_says_so(config: Config, project: Path) -> None:
    (project / "empty.md").write_text("")
    result = await call(registry(config), "read_file", {"path": "empty.md"}, context(project))
    assert result.content == "empty.md is empty."
