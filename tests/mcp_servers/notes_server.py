"""A small MCP server written with the SDK, for Lore's MCP client tests: run over stdio with
`python notes_server.py PIDFILE`, or over Streamable HTTP with `--http PORT PIDFILE`.

Its tools: `greet` answers in English, Chinese and Russian; `long` returns a long text;
`fail` reports a tool error; `crash` ends the process during the call; `hang` never
answers. It writes its pid to PIDFILE, so a test can check the process is gone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server: MCPServer = MCPServer("notes")


@server.tool()
def greet(name: str) -> str:
    """Greet someone by name in three languages."""
    return f"Hello, {name}! 你好，{name}！ Привет, {name}!"


@server.tool()
def long(size: int) -> str:
    """A text of `size` characters."""
    return "x" * size


@server.tool()
def fail(why: str) -> str:
    """Report a tool error."""
    raise ToolError(f"cannot do that: {why}")


@server.tool()
def crash() -> str:
    """End the server's process in the middle of the call."""
    print("notes server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    import anyio

    await anyio.sleep(3600)
    return "never"


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--http":
        port, pidfile = int(args[1]), args[2]
        Path(pidfile).write_text(str(os.getpid()))
        server.run("streamable-http", host="127.0.0.1", port=port)
        return
    Path(args[0]).write_text(str(os.getpid()))
    server.run()


if __name__ == "__main__":
    main()
