"""The terminal channel: renders events, reads input with prompt_toolkit, runs one-shots.

Interactive: Enter sends, Alt+Enter (Esc Enter) inserts a new line, Tab completes slash
commands, Ctrl+C cancels a reply (or exits at an empty prompt), Ctrl+D or /exit exits,
SIGTERM stops cleanly (a reply cut short keeps what was shown). Anything printed while
the prompt is up (a reminder) appears above it without breaking the line. While a chat
runs it delivers its own conversation's reminders; `lore serve` leaves them to it.
One-shot (`lore chat -m`): the reply alone on stdout, everything else on stderr.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING, TextIO

from lore.events import (
    CommandOutput,
    Event,
    Notice,
    ReminderDue,
    ReplyFailed,
    ReplyFinished,
    TextDelta,
    ToolCallEvent,
)

if TYPE_CHECKING:
    from pathlib import Path

    from prompt_toolkit import PromptSession

    from lore.bus import Conversation
    from lore.channels.terminal_approval import TerminalApprover
    from lore.reminders.scheduler import Scheduler
    from lore.runtime import Runtime

__all__ = ["Renderer", "run_interactive", "run_once"]


class Renderer:
    """Turns events into terminal output. `out` gets the reply; `err` everything else."""

    def __init__(self, out: TextIO, err: TextIO, *, interactive: bool) -> None:
        self.out = out
        self.err = err
        self.interactive = interactive
        self.color = interactive and out.isatty()
        self.failed: ReplyFailed | None = None
        self._midline = False

    def _style(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def emit(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self._midline = not event.text.endswith("\n")
        elif isinstance(event, ReplyFinished):
            self.end_line()
        elif isinstance(event, ToolCallEvent):
            if self.interactive:
                self.end_line()
                mark = "✗" if event.is_error else "↳"
                detail = _short(event.result if event.is_error else event.arguments)
                self.out.write(self._style("2", f"  {mark} {event.name} {detail}") + "\n")
                self.out.flush()
        elif isinstance(event, Notice):
            stream = self.out if self.interactive else self.err
            self.end_line()
            code = "33" if event.level == "warning" else "2"
            stream.write(self._style(code, f"· {event.text}") + "\n")
            stream.flush()
        elif isinstance(event, ReplyFailed):
            self.failed = event
            self.end_line()
            text = "(cancelled)" if event.cancelled else f"lore: {event.message}"
            stream = self.out if self.interactive and event.cancelled else self.err
            stream.write(self._style("31" if not event.cancelled else "2", text) + "\n")
            stream.flush()
        elif isinstance(event, CommandOutput):
            stream = self.out if event.ok or self.interactive else self.err
            if event.text:
                prefix = "" if event.ok or self.interactive else "lore: "
                stream.write(prefix + event.text.rstrip("\n") + "\n")
                stream.flush()
        elif isinstance(event, ReminderDue):
            stream = self.out if self.interactive else self.err
            self.end_line()
            stream.write(self._style("1;36", f"{event.mark} {event.text}") + "\n")
            stream.flush()

    def end_line(self) -> None:
        """Finish a half-written reply line before printing anything else."""
        if self._midline:
            self.out.write("\n")
            self.out.flush()
            self._midline = False


def _short(text: str, limit: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# The terminal's own commands and words: /exit, and the keys.
EXIT = "/exit"
KEYS = "Enter sends; Alt+Enter (Esc Enter) inserts a new line; Ctrl+D or /exit exits."


async def run_once(
    lore: Runtime, key: str, text: str, *, out: TextIO, err: TextIO, project: Path | None = None
) -> int:
    """One message or slash command; the reply on `out`; exit code 0 on success."""
    renderer = Renderer(out, err, interactive=False)
    lore.background.one_shot = True
    # Asking needs a person at the keyboard; a script's `ask` tools are refused instead.
    approver = _approver(lore, err, renderer) if sys.stdin.isatty() and err.isatty() else None
    conversation = lore.conversation(key, emit=renderer.emit, approver=approver, project=project)
    _local_notice(lore, err)
    await _close_if_idle(lore, key, renderer)
    if text.strip() == EXIT:
        return 0
    try:
        outcome = await conversation.send(text)
    finally:
        await lore.background.drain()
    if text.strip() == "/help":
        out.write(KEYS + "\n")
    return 0 if outcome.ok else 1


async def run_interactive(lore: Runtime, key: str, *, project: Path | None = None) -> int:
    from prompt_toolkit.patch_stdout import patch_stdout

    prompt = _prompt_session(lore)
    _local_notice(lore, sys.stdout)
    where = f" · project {project}" if project is not None else ""
    print(f"Lore · {lore.config.model_spec()} · {key}{where} · /help for commands, Ctrl+D to exit")
    with patch_stdout(raw=True), lore.sessions.attach(key) as attached:
        # Created inside patch_stdout: whatever is printed while the prompt is up (a
        # reminder, a background notice) goes above it without breaking the typed line.
        renderer = Renderer(sys.stdout, sys.stderr, interactive=True)
        await _close_if_idle(lore, key, renderer)
        conversation = lore.conversation(
            key, emit=renderer.emit, approver=_approver(lore, sys.stdout, renderer), project=project
        )
        with lore.bus.attach(key, renderer.emit):
            # Only one terminal delivers a conversation's reminders: the first to show it.
            scheduler = _start_scheduler(lore, key) if attached else None
            stop = _on_sigterm(lore, prompt)
            try:
                while not stop.is_set():
                    try:
                        text = await prompt.prompt_async("› ")
                    except (EOFError, KeyboardInterrupt):
                        break
                    if not text.strip():
                        continue
                    if text.strip() == EXIT:
                        break
                    await _dispatch(conversation, text, stop)
            finally:
                if scheduler is not None:
                    scheduler.stop()
                await lore.background.drain()
    return 0


async def _close_if_idle(lore: Runtime, key: str, renderer: Renderer) -> None:
    """A conversation left idle too long starts fresh; the old one is archived, not lost."""
    from lore.sessions.closing import close_if_idle

    entry = await close_if_idle(lore, key, emit=renderer.emit)
    if entry is not None:
        renderer.emit(
            Notice(f"the previous session was idle, so it was archived ({entry.transcript_path})")
        )


def _start_scheduler(lore: Runtime, key: str) -> Scheduler:
    from lore.channels.owner import terminal_delivers
    from lore.reminders.delivery import session_delivery
    from lore.reminders.scheduler import Scheduler

    # Only this conversation's reminders: other conversations' are `lore serve`'s (and
    # so are the owner's, when they go to another channel).
    deliver = session_delivery(lore.sessions, lore.bus.route)
    poll = lore.config.reminders.poll_seconds
    scheduler = Scheduler(
        lore.reminders,
        lore.clock,
        deliver,
        scope=key,
        accepts=lambda scope: terminal_delivers(lore, scope),
        max_sleep=poll,
        holder=lore.lease_holder,
    )
    lore.background.spawn(scheduler.run_forever, name="reminders")
    return scheduler


def _on_sigterm(lore: Runtime, prompt: PromptSession[str]) -> asyncio.Event:
    """SIGTERM: stop reading, and let a reply cut short keep what was shown."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping() -> None:
        lore.bus.stop()
        stop.set()
        for task in asyncio.all_tasks(loop):
            if task.get_name() == "lore-turn":
                task.cancel()
        if prompt.app.is_running:
            prompt.app.exit(exception=EOFError())

    try:
        loop.add_signal_handler(signal.SIGTERM, stopping)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
        pass
    return stop


async def _dispatch(conversation: Conversation, text: str, stop: asyncio.Event) -> None:
    """Run one input; Ctrl+C cancels it."""
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(conversation.send(text), name="lore-turn")
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
        pass
    try:
        outcome = await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
        return
    finally:
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):  # pragma: no cover
            pass
    if outcome.command is not None and text.strip() == "/help":
        print(KEYS)


def _prompt_session(lore: Runtime) -> PromptSession[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.filters import completion_is_selected
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    class SlashCompleter(Completer):
        def get_completions(self, document, complete_event):  # type: ignore[no-untyped-def]
            text = document.text_before_cursor
            if not text.startswith("/") or " " in text:
                return
            for name, summary in [*((c.name, c.summary) for c in lore.commands), _EXIT_ENTRY]:
                if name.startswith(text[1:]):
                    yield Completion("/" + name, start_position=-len(text), display_meta=summary)

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event) -> None:  # type: ignore[no-untyped-def]
        event.current_buffer.insert_text("\n")

    @bindings.add("enter", filter=completion_is_selected)
    def _accept_completion(event) -> None:  # type: ignore[no-untyped-def]
        # Enter on a highlighted command completes it instead of sending "/he".
        buffer = event.current_buffer
        if buffer.complete_state and buffer.complete_state.current_completion:
            buffer.apply_completion(buffer.complete_state.current_completion)
        command = lore.commands.get(buffer.text.strip()[1:])
        if buffer.text.strip() == EXIT or (command is not None and not command.usage):
            buffer.validate_and_handle()  # nothing more to type: run it
        else:
            buffer.insert_text(" ")

    @bindings.add("c-c")
    def _interrupt(event) -> None:  # type: ignore[no-untyped-def]
        buffer = event.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=EOFError())

    lore.config.home.mkdir(parents=True, exist_ok=True)
    return PromptSession(
        history=FileHistory(str(lore.config.input_history_path)),
        key_bindings=bindings,
        completer=SlashCompleter(),
        complete_while_typing=True,
        multiline=False,
    )


def _approver(lore: Runtime, stream: TextIO, renderer: Renderer) -> TerminalApprover:
    from lore.channels.terminal_approval import TerminalApprover

    return TerminalApprover(
        lore.config.user_name, stream, color=stream.isatty(), before=renderer.end_line
    )


def _local_notice(lore: Runtime, stream: TextIO) -> None:
    """Say the small built-in model is in use, once it loads: when it cannot (the offline
    build was skipped), the first turn's one-line error (how to get a model) is all that
    is said, and commands that need no model still run."""
    if lore.config.model_spec().provider == "local":
        from lore.errors import ConfigError
        from lore.llm.local import LOCAL_NOTICE

        try:
            _ = lore.provider
        except ConfigError:
            return

        stream.write(LOCAL_NOTICE + "\n")
        stream.flush()


_EXIT_ENTRY = ("exit", "leave the chat (also Ctrl+D)")
