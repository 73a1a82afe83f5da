"""A tool that asks first, over HTTP: the page's Approve / Deny, the timeout, API clients.

A real gateway on 127.0.0.1 (uvicorn in a thread), the scripted model asking for a write,
and the question answered the way the page answers it: a POST with the login cookie.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import Config
from lore.llm.scripted import ScriptedProvider
from lore.messages import Message, content_text
from lore.runtime import Runtime, build
from tests.gateway_server import Gateway, running_gateway

SCOPE = "api:default"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "code" / "garden"
    root.mkdir(parents=True)
    (root / "TODO.md").write_text("- купить семена\n", encoding="utf-8")
    return root


def _owned(config: Config, project: Path, **tools: Any) -> Config:
    """The page's default conversation is the owner's, and `project` may be opened."""
    settings = {"projects": (str(project),), **tools}
    return replace(config, owner_scopes=(SCOPE,), tools=replace(config.tools, **settings))


@pytest.fixture
def gateway(
    config: Config, model: ScriptedProvider, clock: FixedClock, project: Path
) -> Iterator[Gateway]:
    lore = build(_owned(config, project), provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _page(gateway: Gateway) -> httpx.Client:
    """The web page's requests: the log-in cookie and CSRF token, no Authorization header."""
    return gateway.page()


def _chat(
    http: httpx.Client, text: str, *, project: Path | None, asks: bool = True
) -> Iterator[dict[str, Any]]:
    """Each server-sent event of a streamed chat, as the page sends it."""
    headers = {"X-Lore-Session": SCOPE}
    if asks:
        headers["X-Lore-Approvals"] = "stream"
    body = {
        "model": "lore",
        "stream": True,
        "messages": [{"role": "user", "content": text}],
        "project": str(project) if project else None,
    }
    with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                yield json.loads(line[6:])


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["choices"][0]["delta"].get("content") or "" for e in events if "choices" in e)


def _tool_messages(lore: Runtime) -> list[Message]:
    return [m for m in lore.session(SCOPE).messages if m["role"] == "tool"]


def _ask_for_a_write(model: ScriptedProvider, reply: str) -> None:
    model.tool_call(
        "write_file", {"path": "TODO.md", "content": "- купить семена\n- 澆水\n"}
    ).reply(reply)


def _answer_first_question(
    gateway: Gateway, events: Iterator[dict[str, Any]], decision: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    for event in events:
        seen.append(event)
        if event.get("object") == "lore.approval":
            with _page(gateway) as page:
                answer = page.post(f"/ui/approvals/{event['id']}", data={"decision": decision})
            assert answer.status_code == 200, answer.text
            return event, seen + list(events)
    raise AssertionError("no question came")


def test_approve_on_the_page_runs_the_write_and_the_session_says_who(
    gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    _ask_for_a_write(model, "Added watering to TODO.md.")
    with _page(gateway) as page:
        events = _chat(page, "add watering to my todo", project=project)
        question, seen = _answer_first_question(gateway, events, "approve")
    assert question["tool"] == "write_file"
    assert question["summary"] == "overwrite TODO.md"
    assert "+- 澆水" in question["detail"] and "--- a/TODO.md" in question["detail"]
    assert question["seconds"] == gateway.lore.config.tools.approval_timeout
    settled = [e for e in seen if e.get("object") == "lore.approval.settled"]
    assert settled == [
        {
            "object": "lore.approval.settled",
            "id": question["id"],
            "outcome": "approved",
            "by": "john (web page)",
        }
    ]
    assert _text(seen) == "Added watering to TODO.md."
    assert (project / "TODO.md").read_text(encoding="utf-8") == "- купить семена\n- 澆水\n"
    (message,) = _tool_messages(gateway.lore)
    assert message["decision"] == {"trust": "ask", "outcome": "approved", "by": "john (web page)"}


def test_deny_on_the_page_changes_nothing_and_tells_the_model(
    gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    _ask_for_a_write(model, "Left it as it was.")
    with _page(gateway) as page:
        _, seen = _answer_first_question(
            gateway, _chat(page, "add watering", project=project), "deny"
        )
    assert [e["outcome"] for e in seen if e.get("object") == "lore.approval.settled"] == [
        "declined"
    ]
    assert (project / "TODO.md").read_text(encoding="utf-8") == "- купить семена\n"
    result = content_text(model.requests[1].messages[-1]["content"])
    assert result.startswith("Error: overwrite TODO.md was declined by john (web page)")
    (message,) = _tool_messages(gateway.lore)
    assert message["decision"] == {
        "trust": "ask",
        "outcome": "refused",
        "reason": "declined by john (web page)",
    }


def test_no_answer_in_time_refuses_and_a_late_answer_finds_nothing(
    config: Config, model: ScriptedProvider, clock: FixedClock, project: Path
) -> None:
    lore = build(_owned(config, project, approval_timeout=1.0), provider=model, clock=clock)
    _ask_for_a_write(model, "Nobody answered, so I left it.")
    with running_gateway(lore) as gateway, _page(gateway) as page:
        seen = list(_chat(page, "add watering", project=project))
        (question,) = [e for e in seen if e.get("object") == "lore.approval"]
        late = page.post(f"/ui/approvals/{question['id']}", data={"decision": "approve"})
    lore.db.close()
    assert [e["outcome"] for e in seen if e.get("object") == "lore.approval.settled"] == ["expired"]
    assert late.status_code == 404
    assert late.json()["error"]["message"] == (
        "that approval is no longer waiting (it was answered or ran out of time)"
    )
    assert (project / "TODO.md").read_text(encoding="utf-8") == "- купить семена\n"
    assert "no answer within 1 s" in model.requests[1].messages[-1]["content"]
    (message,) = _tool_messages(lore)
    assert message["decision"] == {
        "trust": "ask",
        "outcome": "refused",
        "reason": "no answer within 1 s",
    }


def test_only_the_owner_may_answer(
    config: Config, model: ScriptedProvider, clock: FixedClock, project: Path
) -> None:
    settings = replace(_owned(config, project), api=replace(config.api, clients={}))
    from lore.config import ApiClientConfig

    guest = ApiClientConfig(token="guest-token-for-tests", scopes=("api:*",))
    settings = replace(settings, api=replace(settings.api, clients={"webui": guest}))
    lore = build(settings, provider=model, clock=clock)
    with running_gateway(lore) as gateway:
        with gateway.client("guest-token-for-tests") as other:
            refused = other.post("/ui/approvals/anything", data={"decision": "approve"})
            not_listed = other.get("/ui/approvals", params={"scope": "api:x"})
        with gateway.client() as owner:
            unknown = owner.post("/ui/approvals/anything", data={"decision": "approve"})
            bad = owner.post("/ui/approvals/anything", data={"decision": "maybe"})
        with httpx.Client(base_url=gateway.url) as nobody:
            anonymous = nobody.post("/ui/approvals/anything", data={"decision": "approve"})
    lore.db.close()
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "only the owner may approve what a tool does"
    assert not_listed.status_code == 403
    assert unknown.status_code == 404
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "decision must be approve or deny"
    assert anonymous.status_code == 401


def test_an_api_client_that_did_not_opt_in_gets_a_clear_refusal_the_model_reads(
    gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    _ask_for_a_write(model, "I may not write here; shall I show you the change instead?")
    with gateway.client() as api:
        answer = api.post(
            "/v1/chat/completions",
            headers={"X-Lore-Session": SCOPE},
            json={
                "model": "lore",
                "messages": [{"role": "user", "content": "add watering"}],
                "project": str(project),
            },
        )
    assert answer.status_code == 200
    assert answer.json()["choices"][0]["message"]["content"].startswith("I may not write here")
    assert (project / "TODO.md").read_text(encoding="utf-8") == "- купить семена\n"
    result = content_text(model.requests[1].messages[-1]["content"])
    assert result.startswith("Error: overwrite TODO.md needs the owner's approval")
    assert "no one can approve it in this conversation" in result
    (message,) = _tool_messages(gateway.lore)
    assert message["decision"] == {
        "trust": "ask",
        "outcome": "refused",
        "reason": "no one here can approve it",
    }


def test_a_program_with_the_owners_token_may_opt_in_and_is_recorded_as_api(
    gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    _ask_for_a_write(model, "Done.")
    with gateway.client() as api:
        events = _chat(api, "add watering", project=project)
        for event in events:
            if event.get("object") == "lore.approval":
                decided = api.post(f"/ui/approvals/{event['id']}", data={"decision": "approve"})
                assert decided.json() == {
                    "id": event["id"],
                    "outcome": "approved",
                    "by": "john (api)",
                }
                list(events)
                break
    (message,) = _tool_messages(gateway.lore)
    assert message["decision"] == {"trust": "ask", "outcome": "approved", "by": "john (api)"}


async def test_a_stopping_gateway_refuses_what_still_waits_and_the_stream_hears_it() -> None:
    import asyncio

    from lore.channels.http.approvals import ApprovalSettled, Desk, Notice, WebApprover
    from lore.core.approval import Action

    desk = Desk()
    heard: list[Notice] = []
    approver = WebApprover(desk, SCOPE, heard.append, seconds=120)
    waiting = asyncio.create_task(approver.approve(Action("exec", "run `make test`")))
    await asyncio.sleep(0)
    assert len(desk.waiting()) == 1
    desk.refuse_all("no one (Lore was stopping)")
    approval = await waiting
    assert not approval.approved and approval.by == "no one (Lore was stopping)"
    assert desk.waiting() == []
    assert heard[-1] == ApprovalSettled(heard[0].id, "declined", "no one (Lore was stopping)")


def test_a_page_opened_again_finds_the_question_still_waiting(
    gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    _ask_for_a_write(model, "Added.")
    with _page(gateway) as page, _page(gateway) as reloaded:
        events = _chat(page, "add watering", project=project)
        question = next(e for e in events if e.get("object") == "lore.approval")
        listed = reloaded.get("/ui/approvals", params={"scope": SCOPE}).json()
        elsewhere = reloaded.get("/ui/approvals", params={"scope": "api:alice"}).json()
        (found,) = listed["approvals"]
        assert found["id"] == question["id"] and found["detail"] == question["detail"]
        assert 0 < found["seconds"] <= question["seconds"]
        assert elsewhere["approvals"] == []
        answer = reloaded.post(f"/ui/approvals/{found['id']}", data={"decision": "approve"})
        assert answer.json()["by"] == "john (web page)"
        rest = list(events)
        after = reloaded.get("/ui/approvals", params={"scope": SCOPE}).json()
    assert after["approvals"] == []
    assert _text(rest) == "Added."
    assert (project / "TODO.md").read_text(encoding="utf-8") == "- купить семена\n- 澆水\n"


def test_the_transcript_page_shows_each_tool_runs_decision(
    gateway: Gateway, model: ScriptedProvider, project: Path
) -> None:
    _ask_for_a_write(model, "Left it.")
    with _page(gateway) as page:
        _answer_first_question(gateway, _chat(page, "add watering", project=project), "deny")
        html = page.get("/ui/sessions/live", params={"scope": SCOPE}).text
    assert '<span class="decision refused">[refused: declined by john (web page)]</span>' in html


def test_stopping_the_gateway_refuses_a_waiting_question_instead_of_waiting_for_it(
    config: Config, model: ScriptedProvider, clock: FixedClock, project: Path
) -> None:
    import threading
    import time

    lore = build(_owned(config, project), provider=model, clock=clock)  # waits 120 s
    _ask_for_a_write(model, "Lore stopped before you answered; nothing changed.")
    seen: list[dict[str, Any]] = []
    with running_gateway(lore) as gateway:
        page = _page(gateway)  # closed only once the reply has ended
        events = _chat(page, "add watering", project=project)
        next(e for e in events if e.get("object") == "lore.approval")
        reader = threading.Thread(target=lambda: seen.extend(events))
        reader.start()
        started = time.monotonic()
    reader.join(30)
    stopped_after = time.monotonic() - started
    page.close()
    lore.db.close()
    assert not reader.is_alive() and stopped_after < 60  # not the 120 s of the question
    assert [e["outcome"] for e in seen if e.get("object") == "lore.approval.settled"] == [
        "declined"
    ]
    assert _text(seen) == "Lore stopped before you answered; nothing changed."
    assert (project / "TODO.md").read_text(encoding="utf-8") == "- купить семена\n"
    (message,) = _tool_messages(lore)
    assert message["decision"]["reason"] == "declined by no one (Lore was stopping)"
