"""`lore serve` in a child process with the scripted model (`python -m tests.scripted_serve
DELAY`, the home from LORE_HOME), for tests that kill it: the model schedules a task when
asked to, and answers the task's turn after DELAY seconds."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta

from lore.cli.serve import serve
from lore.config import load_config
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.messages import content_text
from lore.runtime import build

TASK_PROMPT = "look at the weather in Hualien; tell me if I need an umbrella"
TASK_REPLY = "Rain after 3 pm in Hualien: take an umbrella. 下午三点后有雨，带伞。"
SCHEDULED = "Scheduled: in a few seconds I'll look at the weather."


def model(delay: float) -> ScriptedProvider:
    provider = ScriptedProvider()

    def answer(request: ChatRequest) -> Step:
        last = request.messages[-1]
        said = content_text(last)
        if last["role"] == "user" and "(scheduled task #" in said:
            return Step(text=TASK_REPLY, delay=delay)
        if last["role"] == "tool":
            return Step(text=SCHEDULED)
        when = (datetime.now(UTC) + timedelta(seconds=3)).isoformat(timespec="seconds")
        call = ToolCall("c1", "schedule_task", json.dumps({"prompt": TASK_PROMPT, "when": when}))
        return Step(tool_calls=[call])

    provider.default = answer
    return provider


def main() -> None:
    lore = build(load_config(), provider=model(float(sys.argv[1])))
    asyncio.run(serve(lore))


if __name__ == "__main__":
    main()
