"""What asking on the web page costs, beside the same write allowed, in the same run.

    python bench/web_approval.py [--turns 40] [--json]

A real gateway on 127.0.0.1 (uvicorn in a thread) with the scripted provider: each turn
asks for one `write_file` in a project, then replies. Two runs over the same streamed
request the web page sends (`X-Lore-Approvals: stream`):

- baseline: `write_file` set to `allow`, so the write runs by itself;
- asked: `write_file` at its default `ask`; the client answers each question with the
  page's `POST /ui/approvals/{id}` as soon as the stream shows it.

The difference is the question's own cost: the event in the stream, the second request,
the desk, and the decision in the session. The owner's reading time is not in it.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from lore.channels.http import create_app
from lore.channels.http.auth import Clients
from lore.channels.http.server import GatewayServer
from lore.config import load_config
from lore.llm.base import ChatRequest, ToolCall
from lore.llm.scripted import ScriptedProvider, Step
from lore.runtime import build

TOKEN = "bench-token"
SCOPE = "api:bench"


def _model() -> ScriptedProvider:
    model = ScriptedProvider(context_window=128_000)
    calls = iter(range(1_000_000))

    def respond(request: ChatRequest) -> Step:
        model.requests.clear()
        if request.messages and request.messages[-1].get("role") == "tool":
            return Step(text="Written.")
        args = json.dumps({"path": "TODO.md", "content": f"- item {next(calls)} 項目\n"})
        return Step(tool_calls=[ToolCall(f"call_{next(calls)}", "write_file", args)])

    model.default = respond
    return model


def _turns(home: Path, project: Path, *, write: str, turns: int) -> list[float]:
    config = load_config(
        env={"LORE_HOME": str(home), "USER": "bench"},
        flags={"model": "scripted", "timezone": "UTC", "extraction.enabled": False},
    )
    tools = replace(config.tools, projects=(str(project),), trust={"write_file": write})
    config = replace(config, owner_scopes=(SCOPE,), tools=tools)
    lore = build(config, provider=_model())
    app = create_app(lore, clients=Clients(TOKEN, config), mcp=False)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = GatewayServer(uvicorn.Config(app, log_level="warning"), app.state.gateway.approvals)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    times: list[float] = []
    body: dict[str, Any] = {"model": "lore", "stream": True, "project": str(project)}
    headers = {"X-Lore-Session": SCOPE, "X-Lore-Approvals": "stream"}
    with httpx.Client(base_url=url, timeout=60) as page:
        # Logged in as the page is: the log-in cookie, and its CSRF token on every change.
        home_page = page.post("/login", data={"token": TOKEN}, follow_redirects=True).text
        csrf = home_page.split('name="csrf-token" content="', 1)[1].split('"', 1)[0]
        page.headers["X-CSRF-Token"] = csrf
        for n in range(turns):
            body["messages"] = [{"role": "user", "content": f"add item {n}"}]
            started = time.perf_counter()
            with page.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
                for line in r.iter_lines():
                    if not line.startswith("data: {"):
                        continue
                    event = json.loads(line[6:])
                    if event.get("object") == "lore.approval":
                        answer = {"decision": "approve"}
                        page.post(f"/ui/approvals/{event['id']}", data=answer)
            times.append((time.perf_counter() - started) * 1000)
    server.should_exit = True
    thread.join(30)
    sock.close()
    lore.db.close()
    decisions = [m.get("decision") for m in lore.session(SCOPE).messages if m["role"] == "tool"]
    outcome = "approved" if write == "ask" else "allowed"
    if len(decisions) != turns or any(d and d.get("outcome") != outcome for d in decisions):
        raise SystemExit(f"expected {turns} tool runs {outcome}, found {decisions}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        allowed = _turns(root / "home-allow", project, write="allow", turns=args.turns)
        asked = _turns(root / "home-ask", project, write="ask", turns=args.turns)
    figures = {
        "allowed_turn_ms_p50": statistics.median(allowed),
        "asked_and_approved_turn_ms_p50": statistics.median(asked),
    }
    figures["ratio"] = figures["asked_and_approved_turn_ms_p50"] / figures["allowed_turn_ms_p50"]
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"streamed turn with one write, approved on the page: "
        f"{figures['asked_and_approved_turn_ms_p50']:.1f} ms p50 beside "
        f"{figures['allowed_turn_ms_p50']:.1f} ms allowed (x{figures['ratio']:.2f}, "
        f"{args.turns} turns each)"
    )


if __name__ == "__main__":
    main()
