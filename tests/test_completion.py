"""`lore completion SHELL` prints code each shell loads; bash, running it, completes
lore's commands, subcommands and options from what `lore` itself says."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lore.cli import main

BIN = Path(sys.executable).parent


def _complete(line: str, tmp_path: Path) -> list[str]:
    """What bash offers after `line` (the cursor at its end), through the printed script."""
    if shutil.which("bash") is None or not (BIN / "lore").exists():
        pytest.skip("needs bash and the installed lore command")
    words = line.split(" ")
    script = tmp_path / "lore.bash"
    script.write_text(
        subprocess.run(
            [str(BIN / "lore"), "completion", "bash"], capture_output=True, text=True, check=True
        ).stdout
    )
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {script}\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        f"COMP_LINE='{line}'; COMP_POINT={len(line)}; COMP_TYPE=9\n"
        "_python_argcomplete lore\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "-c", program],
        capture_output=True,
        text=True,
        env={"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LORE_HOME": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return sorted(w.strip() for w in done.stdout.splitlines() if w.strip())


def test_bash_completes_a_command_from_its_first_letters(tmp_path: Path) -> None:
    assert _complete("lore rem", tmp_path) == ["remind"]
    assert _complete("lore s", tmp_path) == ["serve", "service", "sessions", "skills"]


def test_bash_completes_a_subcommand_and_an_option(tmp_path: Path) -> None:
    assert "add" in _complete("lore remind ", tmp_path)
    assert _complete("lore serve --sh", tmp_path) == ["--show-token"]


def test_bash_completes_the_shells_of_completion_itself(tmp_path: Path) -> None:
    offered = _complete("lore completion ", tmp_path)
    assert [w for w in offered if not w.startswith("-")] == ["bash", "fish", "zsh"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_code_that_names_lore(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    code = capsys.readouterr().out
    assert "lore" in code and "_ARGCOMPLETE" in code


def test_an_unknown_shell_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["completion", "powershell"])
    assert stopped.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
