"""What the built-in channels' conversation keys look like, registered with `lore.scope`
when the package loads, so every key is read the same way in every process:

    cli:<name>                     the terminal ("cli:default"), and `--session` names
    api:<user>                     the HTTP API and the web page
    telegram:<chat id>             a group's id is negative, a 1:1 chat's the person's id
    line:<user|group|room>:<id>    a 1:1 chat, a group, a multi-person room
    discord:<channel id>           a server's text channel or thread (each thread its own)
    discord:dm:<user id>           a direct message with that person
"""

from __future__ import annotations

from typing import Literal, get_args

from lore.scope import ChannelKeys, Scope, register

__all__ = ["LINE_KINDS", "LineKind"]

LineKind = Literal["user", "group", "room"]
LINE_KINDS: tuple[LineKind, ...] = get_args(LineKind)


def _telegram_group(scope: Scope) -> bool:
    return scope.id.startswith("-")


def _telegram_direct(scope: Scope) -> bool:
    return not scope.id.startswith("-")


def _line_group(scope: Scope) -> bool:
    return scope.kind in ("group", "room")


def _line_direct(scope: Scope) -> bool:
    return scope.kind == "user"


def _discord_group(scope: Scope) -> bool:
    return scope.kind != "dm"


def _discord_direct(scope: Scope) -> bool:
    return scope.kind == "dm"


register(ChannelKeys("cli"))
register(ChannelKeys("api"))
register(ChannelKeys("telegram", group=_telegram_group, direct=_telegram_direct))
register(ChannelKeys("line", kinds=LINE_KINDS, group=_line_group, direct=_line_direct))
register(ChannelKeys("discord", kinds=("dm",), group=_discord_group, direct=_discord_direct))
