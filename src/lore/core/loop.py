"""The tool loop of one turn: call the model, run its tool calls, repeat, up to N rounds.

It works on a copy of the messages and returns what the turn added; the caller decides
whether to persist it (a cancelled turn persists nothing). Each finished round (the
model's calls and all their results) also goes to `on_round`, so a turn that fails
later can still keep the record of what its tools did.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lore.core.tools import ToolContext, ToolRegistry
from lore.events import Emit, ReplyFinished, TextDelta, ToolCallEvent
from lore.llm.base import ChatRequest, Completion, Message, Provider, TextChunk, Usage

__all__ = ["TurnResult", "run_tool_loop"]

ROUNDS_EXHAUSTED = (
    "You have used all tool rounds for this turn. Answer the user now with what you have, "
    "and say what is left undone."
)


@dataclass
class TurnResult:
    messages: list[Message]  # the assistant and tool messages this turn added
    text: str
    usage: Usage = field(default_factory=Usage)
    rounds: int = 0
    seconds: float = 0.0
    first_prompt_tokens: int = 0  # what the provider counted for the first request


async def run_tool_loop(
    provider: Provider,
    *,
    system: str,
    history: list[Message],
    tools: ToolRegistry | None,
    ctx: ToolContext,
    emit: Emit,
    max_rounds: int,
    max_tokens: int,
    now_iso: str,
    on_round: Callable[[list[Message]], None] | None = None,
    keep_going: Callable[[int, Usage, list[Message]], bool] | None = None,
    final_answer: bool = True,
    temperature: float | None = None,
) -> TurnResult:
    """Call the model, run its tool calls, repeat. After `max_rounds` tool rounds the
    model must answer without tools (`final_answer`), or the loop just stops; after each
    round `keep_going(rounds, usage, added)` may stop it early (Dream's budgets)."""
    started = time.monotonic()
    added: list[Message] = []
    input_tokens = output_tokens = first_prompt_tokens = 0
    specs = tools.specs(ctx) if tools is not None and provider.supports_tools else []
    rounds = 0
    while True:
        final_round = rounds >= max_rounds
        if final_round and not final_answer:
            break
        request = ChatRequest(
            system=system if not final_round else f"{system}\n\n{ROUNDS_EXHAUSTED}",
            messages=[*history, *added],
            tools=[] if final_round else specs,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        completion = await _stream_one(provider, request, emit)
        if completion.usage:
            first_prompt_tokens = first_prompt_tokens or completion.usage.input_tokens
            input_tokens += completion.usage.input_tokens
            output_tokens += completion.usage.output_tokens
        message: Message = {"role": "assistant", "content": completion.text, "timestamp": now_iso}
        calls = completion.tool_calls if not final_round else []
        if calls:
            message["tool_calls"] = [call.to_dict() for call in calls]
        added.append(message)
        if not calls or tools is None:
            break
        rounds += 1
        round_start = len(added) - 1
        for call in calls:
            result = await tools.call(call, ctx)
            emit(ToolCallEvent(call.name, call.arguments, result.content, result.is_error))
            tool_message: Message = {
                "role": "tool",
                "tool_call_id": call.id,
                "name": call.name,
                "content": result.content,
            }
            if result.decision is not None:
                tool_message["decision"] = result.decision  # kept in the transcript
            added.append(tool_message)
        if on_round is not None:
            on_round(added[round_start:])
        so_far = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        if keep_going is not None and not keep_going(rounds, so_far, added):
            break
    text = next((m.get("content") or "" for m in reversed(added) if m["role"] == "assistant"), "")
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    emit(ReplyFinished(text, input_tokens, output_tokens))
    return TurnResult(added, text, usage, rounds, time.monotonic() - started, first_prompt_tokens)


async def _stream_one(provider: Provider, request: ChatRequest, emit: Emit) -> Completion:
    async for event in provider.stream(request):
        if isinstance(event, TextChunk):
            if event.text:
                emit(TextDelta(event.text))
        else:
            return event
    from lore.errors import ProviderResponseError

    raise ProviderResponseError(f"{provider.name} ended the stream without a final message")
