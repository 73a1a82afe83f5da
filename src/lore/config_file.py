"""The commented `config.toml` Lore writes on first run: every setting, its default and one
line on what it does, all commented out, so a user sees what can be changed.

It is generated from the `Config` schema (a test fails when a setting has no line here),
so it cannot drift from what `load_config` accepts.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from lore.config import Config

__all__ = ["DESCRIPTIONS", "render_template", "write_if_missing"]

DESCRIPTIONS: dict[str, str] = {
    "model": 'provider/model: "openai/gpt-4o-mini", "anthropic/…", "ollama/qwen2.5", "local";'
    " empty: OpenAI if its key is set, else Anthropic, else local (env: LORE_MODEL)",
    "openai_api_key": "key for OpenAI or any OpenAI-compatible API (env: OPENAI_API_KEY)",
    "openai_base_url": "that API's address (env: OPENAI_BASE_URL or OPENAI_API_BASE)",
    "anthropic_api_key": "key for the Anthropic API (env: ANTHROPIC_API_KEY)",
    "anthropic_base_url": "the Anthropic API's address (env: ANTHROPIC_BASE_URL)",
    "ollama_host": "where Ollama listens (env: OLLAMA_HOST)",
    "context_window": "the model's window in tokens; 0: the known value for the model"
    " (env: LORE_CONTEXT_WINDOW)",
    "max_tool_rounds": "most rounds of tool calls in one reply (env: LORE_MAX_TOOL_ROUNDS)",
    "max_output_tokens": "most tokens one reply may use",
    "max_message_chars": "the longest message Lore takes, on every channel; a longer one"
    " is refused and nothing of it is kept",
    "request_timeout": "seconds to wait for the model before giving up",
    "max_retries": "retries of a request that failed for a passing reason (429, 5xx)",
    "timezone": 'IANA zone such as "Asia/Taipei"; empty: the system\'s (env: LORE_TIMEZONE, TZ)',
    "user_name": "your name in the prompt and on what you note; empty: the login name"
    " (env: LORE_USER, else USER)",
    "owner_scopes": 'conversations besides cli:* that are yours, e.g. ["telegram:42"]: they'
    " see the curated files and feed Dream",
    "database_url": "postgresql://user:password@host/db: memories, reminders and the search"
    " index in PostgreSQL; empty: lore.db (env: LORE_DATABASE_URL)",
    "memory.budget_chars": "characters of the memory block sent with every turn",
    "extraction.enabled": "after each turn, note what the user said that is worth keeping",
    "extraction.model": "model for that; empty: the chat model",
    "consolidation.threshold": "share of the history budget that starts consolidation",
    "consolidation.idle_minutes": "close a session idle this long, as /new does (0: never)",
    "consolidation.target": "share of the budget the window keeps after a pass",
    "consolidation.max_chunk_tokens": "most tokens one pass summarises",
    "consolidation.max_failures": "failed passes in a row before raw messages are archived",
    "memory_flush.enabled": "before consolidating, save durable facts to memory/YYYY-MM-DD.md",
    "session_memory.enabled": "summarise a closed session into memory/",
    "session_memory.min_user_messages": "fewest user messages a session needs for a summary",
    "dream.interval_hours": "how often `lore serve` runs Dream (0: never)",
    "dream.max_rounds": "most tool rounds of one Dream run",
    "dream.max_tokens": "most tokens (in and out) one Dream run may use",
    "dream.max_entries": "history entries one Dream run reads; the rest wait for the next",
    "telegram.token": "the bot's token from BotFather (env: TELEGRAM_BOT_TOKEN); empty: off",
    "telegram.base_url": "the Telegram Bot API's address (or a local Bot API server)",
    "telegram.owner_ids": "the owner's Telegram user ids",
    "telegram.allow": "user ids besides the owner's that may talk 1:1 (as guests)",
    "telegram.poll_seconds": "how long one getUpdates call waits for news",
    "telegram.webhook_url": "webhook instead of long polling: the public https:// address of"
    " the gateway's /telegram/webhook; empty: long polling",
    "telegram.webhook_secret": "the secret Telegram sends with each webhook update"
    " (env: TELEGRAM_WEBHOOK_SECRET)",
    "channels.unified_owner_session": "one conversation (scope `owner`) for your 1:1 chats on"
    " every channel and the terminal's default",
    "channels.reminder_channel": "where that conversation's reminders go (telegram, line,"
    " discord, slack, whatsapp, cli); empty: the channel you last wrote on",
    "channels.plugins": "channels from other packages keep their settings in tables of"
    " their own: [channels.NAME]",
    "line.channel_secret": "the Messaging API channel's secret (env: LINE_CHANNEL_SECRET);"
    " with the token set, `lore serve` answers LINE at /line/webhook",
    "line.access_token": "its long-lived channel access token (env: LINE_CHANNEL_ACCESS_TOKEN)",
    "line.api_base_url": "the LINE Messaging API's address",
    "line.owner_ids": "the owner's LINE user ids (U…)",
    "line.allow": "user ids besides the owner's that may talk 1:1 (as guests)",
    "line.names": 'names that address Lore in a group, e.g. ["Lore", "小助手"]; empty: the'
    " bot's display name",
    "whatsapp.access_token": "the WhatsApp Cloud API token (env: WHATSAPP_ACCESS_TOKEN);"
    " with the phone number id set, `lore serve` answers WhatsApp at /whatsapp/webhook",
    "whatsapp.phone_number_id": "the business number's Phone number ID (API Setup page)",
    "whatsapp.app_secret": "the Meta app's secret, which signs each webhook call"
    " (env: WHATSAPP_APP_SECRET)",
    "whatsapp.verify_token": "the verify token given to Meta for the webhook"
    " (env: WHATSAPP_VERIFY_TOKEN)",
    "whatsapp.api_base_url": "the Graph API's address, with its version",
    "whatsapp.owner_ids": "the owner's WhatsApp numbers",
    "whatsapp.allow": "numbers besides the owner's that may talk (as guests)",
    "discord.token": "the bot's token from the Discord Developer Portal (env: DISCORD_BOT_TOKEN);"
    " empty: off",
    "discord.api_base_url": "Discord's REST API; the gateway's address is asked of it",
    "discord.owner_ids": "the owner's Discord user ids",
    "discord.allow": "user ids besides the owner's that may talk in a DM (as guests)",
    "slack.bot_token": "the Slack app's bot token, xoxb-… (env: SLACK_BOT_TOKEN); with an app"
    " token or a signing secret, `lore serve` answers on Slack",
    "slack.app_token": "the app-level token, xapp-…, for Socket Mode: no public address"
    " needed (env: SLACK_APP_TOKEN)",
    "slack.signing_secret": "the app's signing secret, for the Events API at /slack/events"
    " (env: SLACK_SIGNING_SECRET)",
    "slack.api_base_url": "the Slack Web API's address",
    "slack.owner_ids": "the owner's Slack member ids (U…)",
    "slack.allow": "member ids besides the owner's that may DM Lore (as guests)",
    "api.host": "where `lore serve` listens for the API and the web page",
    "api.port": "its port",
    "api.token": "the owner's API token; empty: the api_token file in Lore's home",
    "api.clients": "other programs' tokens and scopes, one table each: [api.clients.NAME]",
    "api.trusted_proxies": 'reverse proxies (addresses or networks, e.g. ["127.0.0.1"]) whose'
    " X-Forwarded-Proto/-Host are believed: https there makes the login cookie Secure",
    "api.login_days": "how long a log-in to the web page lasts (`lore serve --logout-all`"
    " ends every one)",
    "api.max_body_kb": "the largest request body in KB (JSON, forms, webhooks)",
    "api.max_upload_mb": "the largest file upload (multipart body) in MB",
    "api.requests_per_minute": "requests a minute each token or log-in may make (0: no"
    " limit); more get 429 with Retry-After",
    "api.header_seconds": "seconds a client may take to send a request's headers",
    "api.keep_alive_seconds": "seconds an idle connection is kept open",
    "tools.trust": "per tool (read_file, write_file, exec, ...): allow, ask or never",
    "tools.exec_rules": 'per command pattern such as "git status*": allow, ask or never',
    "tools.file_rules": 'per path pattern such as "docs/*", for writes: allow, ask or never',
    "tools.exec_timeout": "seconds before a command the exec tool runs is stopped",
    "tools.exec_sandbox": "run exec's commands in a bubblewrap sandbox (the project writable,"
    " Lore's home and your other files invisible, no network); false runs them unsandboxed",
    "tools.exec_network": 'command patterns such as "git fetch*" whose commands may reach the'
    " network inside the sandbox",
    "tools.output_cap": "characters of a tool's output the model gets",
    "tools.approval_timeout": "seconds to wait for the owner's yes; no answer means no",
    "tools.projects": 'folders the web page may open as a project; "DIR/*": each folder in DIR',
    "mcp.timeout": "seconds an MCP server may take to answer a call; it is stopped after",
    "mcp.start_timeout": "seconds an MCP server may take to start and list its tools",
    "mcp.servers": "MCP servers whose tools you get as NAME__tool, one table each:"
    " [mcp.servers.NAME] with command/args/env or url/headers, trust, tools, timeout",
    "web.fetch": "offer web_fetch (a page's readable text) in the owner's conversations",
    "web.allow_private": "let web_fetch reach loopback, private and link-local addresses",
    "web.allow_networks": 'or only these addresses or networks, e.g. ["192.168.1.10"]',
    "web.timeout": "seconds one fetch or search may take, redirects and all",
    "web.max_bytes": "bytes of a page web_fetch reads; the rest is left unread",
    "web.max_chars": "characters of a page's text the model gets",
    "web.max_redirects": "redirects web_fetch follows, each checked like the first address",
    "web.search": "web_search's backend: searxng, brave or ddgs; empty: whichever of"
    " searxng_url and brave_api_key is set, else web_search is off",
    "web.searxng_url": "a SearXNG instance for web_search (its json format enabled)",
    "web.brave_api_key": "a Brave Search API key for web_search (env: BRAVE_API_KEY)",
    "web.brave_url": "the Brave Search API's address",
    "web.max_results": "most results one web_search returns",
    "backup.every": '`lore serve` writes a verified backup of the home "hourly", "daily" or'
    ' "weekly"; empty: never (a home on SQLite; PostgreSQL has pg_dump)',
    "backup.keep": "how many scheduled backups are kept (the newest; older ones are deleted)",
    "backup.dir": "where scheduled backups go; empty: backups/ in the home",
    "reminders.poll_seconds": "how often a running chat or `lore serve` looks for reminders"
    " another process added",
    "reminders.lease_seconds": "how long a worker holds a delivery it took; one killed"
    " mid-delivery leaves it to the others after this long",
    "tasks.max_rounds": "each run of a scheduled task may use this many tool rounds (fixed"
    " when the task is set)",
    "tasks.max_seconds": "each run of a scheduled task is stopped after this many seconds and"
    " shown as failed",
    "heartbeat.every": '`lore serve` runs a turn over HEARTBEAT.md this often ("30m", "2h")'
    " and tells the owner only what needs attention; empty: never",
    "log.max_kb": "lore.log is rotated when it reaches this size (KB)",
    "log.backups": "how many rotated logs (lore.log.1, .2, …) are kept; older ones are deleted",
}


def render_template() -> str:
    """Every setting of the schema, commented out at its default, in sections."""
    lines = [
        "# Lore's settings. Every line is commented out at its default: remove the '#' to",
        "# change one. Precedence: command-line flag > environment > this file > default.",
        "# `lore config show` prints what is in effect.",
        "",
    ]
    sections: list[str] = []
    for f in fields(Config):
        if f.name == "home":
            continue
        default = _default(f)
        if is_dataclass(default):
            sections.append(f.name)
            continue
        lines += _setting(f.name, f.name, default)
    for section in sections:
        lines += ["", f"# [{section}]"]
        for f in fields(_default(next(x for x in fields(Config) if x.name == section))):
            lines += _setting(f"{section}.{f.name}", f.name, _default(f))
    return "\n".join(lines) + "\n"


def write_if_missing(path: Path) -> bool:
    """Write the template to `path` unless a file is there; True when written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # may hold keys later
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(render_template())
    return True


def _setting(dotted: str, name: str, default: Any) -> list[str]:
    # A setting without its line still gets written (a test insists on the line).
    about = DESCRIPTIONS.get(dotted, "see Configuration in docs/reference.md")
    return [f"# {about}", f"# {name} = {_toml(default)}"]


def _default(f: Any) -> Any:
    from dataclasses import MISSING

    return f.default if f.default is not MISSING else f.default_factory()


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, dict):
        return "{}"  # a table of tables, empty by default
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)
