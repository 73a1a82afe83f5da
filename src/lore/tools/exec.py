"""The exec tool: one shell command in the project folder, under the trust rules.

The command runs with `/bin/sh -c` in its own process group, with no input, in the
project folder (or the workspace), with an environment stripped of Lore's settings and
of every key, token, secret and password. It is stopped, with everything it started,
when it outlives the timeout; its output (stdout and stderr together) is cut to the
output cap. `exec` cannot be confined the way file tools are: a shell can reach any
path the user can. That is why it asks by default, and why a command with `$(…)` or a
redirection is never allowed without asking, whatever the rules say.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Mapping
from typing import Any

from lore.config import inherited_environment
from lore.core.approval import Action
from lore.core.tools import ToolContext, required_str
from lore.errors import ToolError
from lore.tools.workbench import Workbench

__all__ = ["ExecTool", "stripped_environment"]

_SECRET_ENDINGS = ("API_KEY", "TOKEN", "_KEY_ID", "ACCESS_KEY")
_SECRET_PARTS = ("SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def stripped_environment(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without Lore's settings and without anything that looks like a credential."""
    kept = {}
    for name, value in env.items():
        upper = name.upper()
        if upper.startswith("LORE_") or upper.endswith(_SECRET_ENDINGS):
            continue
        if any(part in upper for part in _SECRET_PARTS):
            continue
        kept[name] = value
    return kept


class ExecTool:
    name = "exec"
    description = (
        "Run one shell command in the project folder (or the workspace when no project is "
        "chosen) and get its exit code and output (stdout and stderr, cut when long). It "
        "is stopped after a timeout and gets no input, so never start anything "
        "interactive. The owner is usually asked first; some commands are never allowed. "
        "A skill's scripts run through this tool too."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The shell command line"}},
        "required": ["command"],
    }

    def __init__(self, bench: Workbench) -> None:
        self.bench = bench

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        command = required_str(args, "command")
        root = self.bench.root(ctx)
        verdict = self.bench.policy.for_command(command)
        action = Action(self.name, f"run `{_one_line(command)}`", f"cd {root}\n{command}\n")
        await self.bench.authorize(ctx, action, verdict)
        timeout = self.bench.settings.exec_timeout
        started = time.monotonic()
        output, code, timed_out = await run_command(
            command, cwd=str(root), seconds=timeout, cap=self.bench.settings.output_cap
        )
        seconds = time.monotonic() - started
        if timed_out:
            raise ToolError(
                f"`{_one_line(command)}` was stopped after {timeout:g} s (the exec timeout)."
                f" Output so far:\n{output or '(none)'}"
            )
        return f"$ {command}\nexit code {code} · {seconds:.1f} s\n{output or '(no output)'}"


async def run_command(command: str, *, cwd: str, seconds: float, cap: int) -> tuple[str, int, bool]:
    """Run `command`; its output cut to `cap` characters, exit code, and whether it was
    stopped at the timeout (then the exit code is -9)."""
    process = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        command,
        cwd=cwd,
        env=stripped_environment(inherited_environment()),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    kept = bytearray()
    dropped = 0

    async def collect() -> None:
        nonlocal dropped
        assert process.stdout is not None
        while chunk := await process.stdout.read(1 << 16):
            room = cap * 4 - len(kept)  # characters are at most 4 bytes of UTF-8
            kept.extend(chunk[: max(room, 0)])
            dropped += max(len(chunk) - max(room, 0), 0)
        await process.wait()

    timed_out = False
    try:
        await asyncio.wait_for(collect(), seconds)
    except TimeoutError:
        timed_out = True
    finally:
        if process.returncode is None or timed_out:
            _kill_group(process.pid)
            await process.wait()
    text = kept.decode("utf-8", errors="replace")
    if len(text) > cap or dropped:
        text = text[:cap] + f"\n… [output cut at {cap} characters]"
    return text, -9 if timed_out else (process.returncode or 0), timed_out


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _one_line(command: str, limit: int = 120) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
