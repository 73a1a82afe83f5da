"""`make chat` as a new user meets it: it installs the offline model only when no model is
configured (in the environment or only in config.toml), says what the compile costs and
how to skip it before starting, shows progress, and says how to put `lore` on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(*args: str, env: dict[str, str]) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "ANTHROPIC"))}
    clean.pop("LORE_MODEL", None)
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(ROOT), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("config", "env", "needed"),
    [
        ("", {}, "yes"),
        ('openai_api_key = "sk-only-in-the-file"\n', {}, "no"),
        ('model = "ollama/qwen2.5"\n', {}, "no"),
        ("", {"ANTHROPIC_API_KEY": "k"}, "no"),
        ("", {"LORE_MODEL": "ollama/qwen2.5"}, "no"),
    ],
)
def test_the_offline_model_is_installed_only_when_no_model_is_configured(
    tmp_path: Path, config: str, env: dict[str, str], needed: str
) -> None:
    (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    venv = str(Path(sys.prefix))
    out = _make("needs-local", f"VENV={venv}", env={"LORE_HOME": str(tmp_path), **env})
    assert out.strip() == needed


def test_the_compile_is_announced_with_its_cost_and_the_way_out(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    plan = _make("-n", f"{venv}/.local", f"VENV={venv}", env={"LORE_HOME": str(tmp_path)})
    assert "minutes" in plan and "Ctrl+C" in plan and "OPENAI_API_KEY" in plan
    assert "ollama" in plan.lower()
    (install,) = [line for line in plan.splitlines() if "'.[local]'" in line]
    assert "--quiet" not in install and "-v" in install.split()


def test_the_path_line_is_printed_for_a_new_shell(tmp_path: Path) -> None:
    venv = Path(sys.prefix)
    out = _make("path", f"VENV={venv}", "-o", f"{venv}/.core", env={"LORE_HOME": str(tmp_path)})
    assert out.strip() == f'export PATH="{venv}/bin:$PATH"'
