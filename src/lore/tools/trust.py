"""Trust: whether a tool may act by itself (allow), must ask the owner first (ask), or never.

Levels come per tool, per command pattern for `exec`, and per path pattern for the tools
that change files; `[tools]` in config.toml overrides the defaults here key by key. A
tool set to `never` is never used. Otherwise the rules that match decide, and where
several match the strictest wins, so no rule is sidestepped by the order it is listed in;
when none matches, the tool's own level applies:

- a write is judged by the file rules matching its path (relative to the root, and to
  the agent workspace when it lies inside it);
- a command is cut at `;`, `&&`, `||`, `|`, `&` and newlines; each part is judged by the
  rules matching it, the command takes the strictest of its parts. A command with `$(…)`,
  backticks or redirections is never allowed by itself, nor is one that names Lore's
  home. Patterns guard against mistakes; the sandbox (`lore.tools.sandbox`) is what
  keeps a command away from Lore's home, the owner's files and the network, and
  `exec_network` names the commands that may reach the network from it.

`authorize` applies the level: allow runs, never refuses with an error the model reads,
ask shows the action to the approver on the `ToolContext` and waits; no answer within
the timeout is a no. Every outcome is written to `ctx.decision`, which lands in the
transcript beside the tool's result.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from lore.config import ToolsConfig
from lore.core.approval import Action
from lore.core.tools import ToolContext
from lore.errors import ToolError
from lore.messages import TrustLevel

__all__ = [
    "DEFAULT_EXEC_RULES",
    "DEFAULT_FILE_RULES",
    "DEFAULT_TRUST",
    "Level",
    "TrustPolicy",
    "Verdict",
    "authorize",
    "command_parts",
]

Level = TrustLevel
_ORDER: dict[str, int] = {"allow": 0, "ask": 1, "never": 2}
_LEVELS: dict[str, Level] = {"allow": "allow", "ask": "ask", "never": "never"}

DEFAULT_TRUST: dict[str, Level] = {
    "read_file": "allow",
    "list_dir": "allow",
    "glob": "allow",
    "grep": "allow",
    "load_skill": "allow",
    "write_file": "ask",
    "edit_file": "ask",
    "exec": "ask",
    # Each page fetched and each query searched leaves the machine: the owner says yes.
    "web_fetch": "ask",
    "web_search": "ask",
}
# The curated files are Dream's and the person's; AGENTS.md is the person's alone.
DEFAULT_FILE_RULES: dict[str, Level] = {
    "SOUL.md": "never",
    "USER.md": "never",
    "MEMORY.md": "never",
    "AGENTS.md": "ask",
}
DEFAULT_EXEC_RULES: dict[str, Level] = {}

_CONTROL = {";", "&", "&&", "|", "||", "(", ")", ";;", "|&"}
_REDIRECT = re.compile(r"^\d*[<>]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Verdict:
    level: Level
    reason: str  # which rule decided, for the record and the model


class TrustPolicy:
    def __init__(self, config: ToolsConfig, *, home: str = "") -> None:
        self.trust: dict[str, str] = {**DEFAULT_TRUST, **config.trust}
        self.exec_rules: dict[str, str] = {**DEFAULT_EXEC_RULES, **config.exec_rules}
        self.file_rules: dict[str, str] = {**DEFAULT_FILE_RULES, **config.file_rules}
        self.home = home.rstrip("/")
        self.network = config.exec_network

    def for_tool(self, tool: str) -> Verdict:
        level = self.trust.get(tool, "ask")
        return Verdict(_level(level), f"{tool} is {level}")

    def for_write(self, tool: str, paths: Iterable[PurePosixPath]) -> Verdict:
        """A change to a file known by `paths` (relative to the root, to the workspace)."""
        default = self.for_tool(tool)
        if default.level == "never":
            return default
        names = [str(path) for path in paths]
        matched = [
            Verdict(_level(level), f"file rule {pattern!r}")
            for pattern, level in self.file_rules.items()
            if any(fnmatch.fnmatchcase(name, pattern) for name in names)
        ]
        return _strictest(matched) if matched else default

    def for_command(self, command: str) -> Verdict:
        default = self.for_tool("exec")
        if default.level == "never":
            return default
        parts, plain = command_parts(command)
        verdict = Verdict("allow", "every part allowed")
        for part in parts or [command.strip()]:
            matched = [
                Verdict(_level(level), f"rule {pattern!r}")
                for pattern, level in self.exec_rules.items()
                if fnmatch.fnmatchcase(part, pattern)
            ]
            verdict = _stricter(verdict, _strictest(matched) if matched else default)
        if verdict.level == "allow" and not plain:
            verdict = Verdict("ask", "substitution or redirection in the command")
        if verdict.level == "allow" and self.home and self.home in command:
            verdict = Verdict("ask", "the command names Lore's home")
        return verdict

    def allows_network(self, command: str) -> bool:
        """Whether `command` may reach the network from the sandbox: every part of it
        matches one of the `exec_network` patterns, and it has no substitution."""
        parts, plain = command_parts(command)
        return (
            plain
            and bool(parts)
            and all(any(fnmatch.fnmatchcase(part, p) for p in self.network) for part in parts)
        )


def command_parts(command: str) -> tuple[list[str], bool]:
    """The simple commands in a command line, and whether it is plain (nothing but words
    and the separators above). Leading `NAME=value` assignments are dropped."""
    plain = "$(" not in command and "`" not in command and "<(" not in command
    text = command.replace("$(", " ; ").replace("`", " ; ").replace("<(", " ; ")
    parts: list[str] = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # unbalanced quotes: judge the raw text, never allow it
            parts.append(line.strip())
            plain = False
            continue
        words: list[str] = []
        for token in [*tokens, ";"]:
            if token in _CONTROL:
                while words and _ASSIGNMENT.match(words[0]):
                    words.pop(0)
                if words:
                    parts.append(" ".join(words))
                words = []
            elif _REDIRECT.match(token):
                plain = False
                words.append(token)
            else:
                words.append(token)
    return parts, plain


async def authorize(ctx: ToolContext, action: Action, verdict: Verdict, *, patience: float) -> None:
    """Let the action go ahead, or raise `ToolError`; the outcome goes to `ctx.decision`."""
    if verdict.level == "allow":
        ctx.decision = {"trust": "allow", "outcome": "allowed"}
        return
    if verdict.level == "never":
        _refuse(ctx, "never", verdict.reason)
        raise ToolError(
            f"{action.summary} is never allowed ({verdict.reason}). Do not try another way "
            "round; tell the user, who can change it in config.toml [tools]."
        )
    if ctx.approver is None:
        _refuse(ctx, "ask", "no one here can approve it")
        raise ToolError(
            f"{action.summary} needs the owner's approval, and no one can approve it in "
            "this conversation. Tell the user what you wanted to do."
        )
    try:
        approval = await asyncio.wait_for(ctx.approver.approve(action), patience)
    except TimeoutError:
        _refuse(ctx, "ask", f"no answer within {patience:g} s")
        raise ToolError(
            f"{action.summary} was not approved: no answer within {patience:g} s. "
            "Nothing was changed."
        ) from None
    if not approval.approved:
        _refuse(ctx, "ask", f"declined by {approval.by}")
        raise ToolError(
            f"{action.summary} was declined by {approval.by}. Nothing was changed; "
            "ask the user what they want instead."
        )
    ctx.decision = {"trust": "ask", "outcome": "approved", "by": approval.by}


def _refuse(ctx: ToolContext, trust: Level, reason: str) -> None:
    ctx.decision = {"trust": trust, "outcome": "refused", "reason": reason}


def _strictest(verdicts: list[Verdict]) -> Verdict:
    found = verdicts[0]
    for other in verdicts[1:]:
        found = _stricter(found, other)
    return found


def _stricter(a: Verdict, b: Verdict) -> Verdict:
    return b if _ORDER[b.level] > _ORDER[a.level] else a


def _level(text: str) -> Level:
    return _LEVELS.get(text, "ask")
