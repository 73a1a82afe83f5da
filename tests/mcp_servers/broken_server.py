"""MCP servers that fail on purpose, without the SDK, for Lore's MCP client tests.

`python broken_server.py exit`: exits before answering anything, saying why on stderr.
`python broken_server.py mute`: never answers the handshake.
`python broken_server.py malformed`: a proper handshake and tool list, but a tools/call
answer that is not an MCP tool result.
"""

from __future__ import annotations

import json
import sys
import time


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve_malformed() -> None:
    tool = {"name": "echo", "description": "Echo", "inputSchema": {"type": "object"}}
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        if method == "initialize":
            result: object = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "broken", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [tool]}
        elif method == "tools/call":
            result = {"content": "this is not a list of content blocks", "isError": 7}
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    mode = sys.argv[1]
    if mode == "exit":
        print("broken server: no database configured", file=sys.stderr, flush=True)
        sys.exit(2)
    if mode == "mute":
        time.sleep(3600)
    serve_malformed()


if __name__ == "__main__":
    main()
