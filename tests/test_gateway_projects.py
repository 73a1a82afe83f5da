"""The web page's project picker: only folders config lists, recorded in the session."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from lore.clock import FixedClock
from lore.config import ApiClientConfig, Config
from lore.errors import InvalidInputError
from lore.llm.scripted import ScriptedProvider
from lore.runtime import Runtime, build
from lore.tools.project import choose_project, project_choices
from tests.gateway_server import Gateway, running_gateway

SCOPE = "api:default"
GUEST = "guest-token-for-tests"


@pytest.fixture
def code(tmp_path: Path) -> Path:
    """~/code with two projects, a hidden folder and a file."""
    root = tmp_path / "code"
    for name in ("garden", "商店", ".cache"):
        (root / name).mkdir(parents=True)
    (root / "notes.txt").write_text("not a folder\n", encoding="utf-8")
    shop = root / "商店"
    (shop / "AGENTS.md").write_text("Пиши коротко. Run make test first.\n", encoding="utf-8")
    (shop / "README.md").write_text("# 商店\n\nSells seeds.\n", encoding="utf-8")
    return root


def _with_projects(config: Config, *projects: str) -> Config:
    guest = ApiClientConfig(token=GUEST, scopes=("api:*",))
    return replace(
        config,
        owner_scopes=(SCOPE,),
        tools=replace(config.tools, projects=projects),
        api=replace(config.api, clients={"webui": guest}),
    )


@pytest.fixture
def gateway(
    config: Config, model: ScriptedProvider, clock: FixedClock, code: Path
) -> Iterator[Gateway]:
    lore = build(_with_projects(config, f"{code}/*"), provider=model, clock=clock)
    with running_gateway(lore) as running:
        yield running
    lore.db.close()


def _page(gateway: Gateway) -> httpx.Client:
    """The web page's requests: the log-in cookie and CSRF token, no Authorization header."""
    return gateway.page()


def _send(http: httpx.Client, text: str, project: str | None, scope: str = SCOPE) -> httpx.Response:
    return http.post(
        "/v1/chat/completions",
        headers={"X-Lore-Session": scope},
        json={"model": "lore", "messages": [{"role": "user", "content": text}], "project": project},
    )


def test_a_folder_of_projects_lists_each_visible_folder_in_it(config: Config, code: Path) -> None:
    choices = project_choices(_with_projects(config, f"{code}/*"))
    assert choices == [code / "garden", code / "商店"]


def test_listed_folders_that_are_missing_or_lores_home_are_left_out(
    config: Config, code: Path
) -> None:
    config.home.mkdir(parents=True, exist_ok=True)
    listed = _with_projects(
        config, str(code / "garden"), str(code / "gone"), str(config.home), "~/nowhere/*"
    )
    assert project_choices(listed) == [code / "garden"]


def test_only_a_listed_folder_can_be_chosen_whatever_the_path_trick(
    config: Config, code: Path, tmp_path: Path
) -> None:
    listed = _with_projects(config, str(code / "garden"))
    assert choose_project(listed, f"{code}/商店/../garden") == code / "garden"
    (tmp_path / "link").symlink_to(code / "商店")
    for attempt in (str(code / "商店"), "/etc", str(tmp_path / "link"), "../商店", ""):
        with pytest.raises(InvalidInputError, match="not one of the project folders"):
            choose_project(listed, attempt)


def test_the_page_offers_the_allowed_projects_and_keeps_the_chosen_one(
    gateway: Gateway, model: ScriptedProvider, code: Path
) -> None:
    with _page(gateway) as page:
        before = page.get("/", params={"scope": SCOPE}).text
        model.reply("Готово.")
        assert _send(page, "hi", str(code / "商店")).status_code == 200
        after = page.get("/", params={"scope": SCOPE}).text
    assert '<select id="chat-project"' in before
    assert f'<option value="{code / "garden"}">' in before
    assert f'<option value="{code / "商店"}">' in before and ".cache" not in before
    assert f'<option value="{code / "商店"}" selected>' in after


def test_a_chosen_project_gives_its_bootstrap_files_and_its_folder_to_the_tools(
    gateway: Gateway, model: ScriptedProvider, code: Path
) -> None:
    model.tool_call("read_file", {"path": "README.md"}).reply("It sells seeds.")
    with _page(gateway) as page:
        answer = _send(page, "what does README.md say?", str(code / "商店"))
    assert answer.json()["choices"][0]["message"]["content"] == "It sells seeds."
    system = model.requests[0].system
    assert "Пиши коротко. Run make test first." in system
    assert f"You are working in the project folder {code / '商店'}." in system
    assert "Sells seeds." in model.requests[1].messages[-1]["content"]
    meta = gateway.lore.session(SCOPE).meta
    assert meta.extra["project"] == str(code / "商店")


def test_choosing_no_project_again_records_the_workspace(
    gateway: Gateway, model: ScriptedProvider, code: Path
) -> None:
    model.reply("in the project").reply("back home")
    with _page(gateway) as page:
        _send(page, "one", str(code / "garden"))
        _send(page, "two", None)
    assert gateway.lore.session(SCOPE).meta.extra["project"] is None
    assert "# Project" not in model.requests[1].system


def test_a_path_outside_the_list_is_one_clear_error_and_no_turn(
    gateway: Gateway, model: ScriptedProvider
) -> None:
    with _page(gateway) as page:
        answer = _send(page, "hi", "/etc")
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == (
        "'/etc' is not one of the project folders in config.toml [tools] projects"
    )
    assert model.requests == []


def test_a_guest_or_a_conversation_without_tools_cannot_choose_a_project(
    gateway: Gateway, model: ScriptedProvider, code: Path
) -> None:
    with gateway.client(GUEST) as guest:
        refused = _send(guest, "hi", str(code / "garden"))
    with _page(gateway) as page:
        elsewhere = _send(page, "hi", str(code / "garden"), scope="api:alice")
        picker = page.get("/", params={"scope": "api:alice"}).text
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "only the owner's token may choose a project"
    assert elsewhere.status_code == 400
    assert "not one of the owner's conversations" in elsewhere.json()["error"]["message"]
    assert "chat-project" not in picker
    assert "File tools and projects work in your own conversations" in picker
    assert model.requests == []


def test_lore_chat_without_a_project_after_one_records_the_workspace(
    lore: Runtime, model: ScriptedProvider, code: Path
) -> None:
    import asyncio

    async def turns() -> None:
        model.reply("a").reply("b")
        await lore.conversation("cli:default", emit=lambda e: None, project=code / "garden").send(
            "in"
        )
        await lore.conversation("cli:default", emit=lambda e: None).send("out")

    asyncio.run(turns())
    assert lore.session("cli:default").meta.extra["project"] is None


def test_without_listed_folders_the_page_says_where_to_list_them(
    config: Config, model: ScriptedProvider, clock: FixedClock
) -> None:
    lore = build(_with_projects(config), provider=model, clock=clock)
    with running_gateway(lore) as gateway, _page(gateway) as page:
        html = page.get("/", params={"scope": SCOPE}).text
    lore.db.close()
    assert "chat-project" not in html
    assert "list project folders in config.toml <code>[tools] projects</code>" in html


def test_projects_are_read_from_config_toml_with_the_home_folder_expanded(home: Path) -> None:
    from lore.config import load_config

    code = Path.home() / "code"  # the tests' own empty home
    (code / "garden").mkdir(parents=True)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[tools]\nprojects = ["~/code/*"]\n', encoding="utf-8")
    config = load_config(env={"LORE_HOME": str(home), "USER": "john"})
    assert config.tools.projects == ("~/code/*",)
    assert project_choices(config) == [code.resolve() / "garden"]
