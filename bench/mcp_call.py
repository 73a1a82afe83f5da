"""What one MCP tool call costs through Lore, beside calling the same server with the SDK.

    python bench/mcp_call.py [--runs 200] [--json]

The server is tests/mcp_servers/notes_server.py over stdio, one process for each side,
both in this process, called in turn so that both share the machine's load. Lore's side
is a `ToolRegistry.call` of `notes__greet` (arguments parsed, the trust check, the call,
the result rendered, capped and marked); the SDK's side is `Client.call_tool("greet",
...)` on a `Client` of its own. p50 and p95 of each, in ms; the start (spawn, handshake,
tool list) once for each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from lore.config import McpConfig, McpServerConfig, load_config
from lore.core.tools import ToolContext, ToolRegistry
from lore.llm.base import ToolCall
from lore.tools.mcp_feature import McpTools

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_servers" / "notes_server.py"


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[max(int(len(ordered) * 0.95) - 1, 0)], 3),
    }


async def _timed(run: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await run()
    return (time.perf_counter() - started) * 1000


async def main(runs: int) -> dict[str, Any]:
    """Both sides start, then take turns call by call, so they share the machine's load."""
    from dataclasses import replace

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        config = load_config(env={"LORE_HOME": tmp, "USER": "bench"}, flags={"model": "local"})
        settings = McpServerConfig(
            command=sys.executable, args=(str(SERVER), str(home / "lore.pid")), trust="allow"
        )
        source = McpTools(replace(config, mcp=McpConfig(servers={"notes": settings})))
        registry = ToolRegistry()
        registry.add_source(source)
        ctx = ToolContext(
            scope="cli:default",
            author="bench",
            session_id="bench",
            message_index=0,
            now=datetime.now(UTC),
            timezone="UTC",
        )
        call = ToolCall("call_1", "notes__greet", json.dumps({"name": "Аня"}))
        params = StdioServerParameters(
            command=sys.executable, args=[str(SERVER), str(home / "sdk.pid")]
        )
        try:
            lore_start = await _timed(lambda: registry.prepare(ctx))
            started = time.perf_counter()
            async with Client(params) as client:
                await client.list_tools()
                sdk_start = (time.perf_counter() - started) * 1000

                async def through_lore() -> str:
                    result = await registry.call(call, ctx)
                    assert not result.is_error, result.content
                    return result.content

                async def with_the_sdk() -> str:
                    result = await client.call_tool("greet", {"name": "Аня"})
                    assert not result.is_error
                    return "\n".join(getattr(part, "text", "") for part in result.content)

                lore_sample, sdk_sample = await through_lore(), await with_the_sdk()  # warm
                lore_times: list[float] = []
                sdk_times: list[float] = []
                for i in range(runs):
                    sides = [(through_lore, lore_times), (with_the_sdk, sdk_times)]
                    for run, times in sides if i % 2 else reversed(sides):
                        times.append(await _timed(run))
        finally:
            await source.aclose()
    lore_p50, sdk_p50 = _summary(lore_times), _summary(sdk_times)
    lore: dict[str, Any] = {"start_ms": round(lore_start, 1), **lore_p50, "result": lore_sample}
    sdk: dict[str, Any] = {"start_ms": round(sdk_start, 1), **sdk_p50, "result": sdk_sample}
    lore["overhead_p50_ms"] = round(lore_p50["p50_ms"] - sdk_p50["p50_ms"], 3)
    return {"runs": runs, "lore": lore, "sdk": sdk}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = asyncio.run(main(args.runs))
    if args.json:
        print(json.dumps(figures, ensure_ascii=False, indent=2))
    else:
        lore, sdk = figures["lore"], figures["sdk"]
        print(f"one MCP tool call (greet over stdio), {args.runs} runs each")
        print(
            f"  through Lore's registry  p50 {lore['p50_ms']:.3f} ms  p95 {lore['p95_ms']:.3f} ms"
            f"  (start {lore['start_ms']:.0f} ms)"
        )
        print(
            f"  SDK Client.call_tool     p50 {sdk['p50_ms']:.3f} ms  p95 {sdk['p95_ms']:.3f} ms"
            f"  (start {sdk['start_ms']:.0f} ms)"
        )
        print(f"  overhead at p50: {lore['overhead_p50_ms']:.3f} ms")
        print("  Lore's result:", lore["result"].replace("\n", " | "))
