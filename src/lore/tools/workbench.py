"""What every file and shell tool shares: where it works, its limits, and the trust policy.

A tool works in the conversation's project when one was chosen, else in the agent
workspace. The workbench hands each call its `Confinement` and judges writes by the
path seen from both the root and the agent workspace, so the curated files keep their
rules even when the project folder contains Lore's home.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ParamSpec

from lore.config import Config, ToolsConfig
from lore.core.approval import Action
from lore.core.tools import ToolContext
from lore.errors import ToolError
from lore.tools.confine import Confinement, Located
from lore.tools.trust import TrustPolicy, Verdict, authorize

__all__ = ["Workbench", "os_errors_as_tool_errors"]


@dataclass(frozen=True)
class Workbench:
    settings: ToolsConfig
    home: Path
    workspace: Path
    policy: TrustPolicy

    @classmethod
    def from_config(cls, config: Config) -> Workbench:
        home = Path(os.path.realpath(config.home))
        return cls(config.tools, home, config.workspace, TrustPolicy(config.tools, home=str(home)))

    def root(self, ctx: ToolContext) -> Path:
        return ctx.project or self.workspace

    def confinement(self, ctx: ToolContext) -> Confinement:
        return Confinement(self.root(ctx), home=self.home, workspace=self.workspace)

    def write_verdict(self, tool: str, place: Confinement, located: Located) -> Verdict:
        paths = [located.rel]
        if place.workspace in located.path.parents:
            paths.append(PurePosixPath(located.path.relative_to(place.workspace).as_posix()))
        return self.policy.for_write(tool, paths)

    async def authorize(self, ctx: ToolContext, action: Action, verdict: Verdict) -> None:
        await authorize(ctx, action, verdict, patience=self.settings.approval_timeout)

    def cap(self, text: str, hint: str = "") -> str:
        """`text` cut to the output cap, saying how much was left out."""
        limit = self.settings.output_cap
        if len(text) <= limit:
            return text
        cut = text[:limit]
        rest = len(text) - limit
        return f"{cut}\n… [output cut at {limit} characters; {rest} more{hint}]"


_P = ParamSpec("_P")


def os_errors_as_tool_errors(
    run: Callable[_P, Coroutine[Any, Any, str]],
) -> Callable[_P, Coroutine[Any, Any, str]]:
    """A tool's `run` whose OSError (a path that vanished or changed mid-call) becomes a
    tool error the model reads, instead of ending the whole turn."""

    @functools.wraps(run)
    async def guarded(*args: _P.args, **kwargs: _P.kwargs) -> str:
        try:
            return await run(*args, **kwargs)
        except OSError as exc:
            where = f"{exc.filename}: " if isinstance(exc.filename, str) else ""
            reason = exc.strerror or type(exc).__name__
            raise ToolError(
                f"{where}{reason} (it changed while the tool ran); nothing more was done"
            ) from exc

    return guarded
