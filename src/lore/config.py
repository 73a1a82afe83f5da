"""Settings: one typed schema, loaded from defaults < config.toml < environment < flags.

This is the only module that reads `os.environ`; everything else receives a `Config`.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from lore.errors import ConfigError, InvalidInputError
from lore.scope import Scope

__all__ = [
    "ENVIRONMENT",
    "ApiClientConfig",
    "ApiConfig",
    "ChannelsConfig",
    "Config",
    "ConsolidationConfig",
    "DreamConfig",
    "ExtractionConfig",
    "MemoryConfig",
    "McpConfig",
    "McpServerConfig",
    "MemoryFlushConfig",
    "OWNER_SCOPE",
    "ModelSpec",
    "RemindersConfig",
    "DiscordConfig",
    "SlackConfig",
    "TelegramConfig",
    "LineConfig",
    "WhatsAppConfig",
    "LogConfig",
    "SessionMemoryConfig",
    "ToolsConfig",
    "WebConfig",
    "check",
    "default_home",
    "load_config",
    "lore_environment",
    "parse_model",
    "redact_url",
    "user_config_home",
]

PROVIDERS = ("openai", "anthropic", "ollama", "local", "scripted")

# The owner's one conversation across channels (channels.unified_owner_session), and the
# scopes that join it: the terminal's default, and 1:1 chats (`Scope.is_direct`) that are
# the owner's.
OWNER_SCOPE = "owner"
_OWNER_DIRECT = ("cli:default",)
REMINDER_CHANNELS = ("", "cli", "telegram", "line", "discord", "slack", "whatsapp")


@dataclass(frozen=True)
class MemoryConfig:
    budget_chars: int = 2000


@dataclass(frozen=True)
class ExtractionConfig:
    enabled: bool = True
    model: str = ""  # empty: the chat model


@dataclass(frozen=True)
class ConsolidationConfig:
    threshold: float = 0.7  # share of the history budget that triggers consolidation
    idle_minutes: int = 30  # a session idle this long is closed as by /new (0: never)
    # After a pass the window holds at most this share of the budget: a safety buffer,
    # so consolidation does not run again on the very next turn.
    target: float = 0.4
    max_chunk_tokens: int = 8000  # most a single pass summarises
    max_failures: int = 3  # failed passes in a row before raw messages go to raw-archive


@dataclass(frozen=True)
class MemoryFlushConfig:
    enabled: bool = True  # pre-compaction flush into memory/YYYY-MM-DD.md


@dataclass(frozen=True)
class SessionMemoryConfig:
    enabled: bool = True  # slug + summary of a closed session into memory/
    min_user_messages: int = 2


@dataclass(frozen=True)
class DreamConfig:
    interval_hours: float = 2.0  # how often `lore serve` dreams (0: never)
    max_rounds: int = 8
    max_tokens: int = 60_000  # input + output over the whole run
    max_entries: int = 100  # history entries one run reads; the rest wait for the next


TRUST_LEVELS = ("allow", "ask", "never")


@dataclass(frozen=True)
class ToolsConfig:
    """The file and shell tools: trust levels over the defaults in `lore.tools.trust`."""

    trust: dict[str, str] = field(default_factory=dict)  # tool name -> allow | ask | never
    exec_rules: dict[str, str] = field(default_factory=dict)  # command pattern -> level
    file_rules: dict[str, str] = field(default_factory=dict)  # path pattern -> level (writes)
    exec_timeout: float = 30.0  # seconds before a command is killed
    # Commands run under bubblewrap; false runs them without a sandbox (the owner's choice).
    exec_sandbox: bool = True
    exec_network: tuple[str, ...] = ()  # command patterns that may reach the network
    output_cap: int = 16_000  # characters of a tool's output the model gets
    approval_timeout: float = 120.0  # seconds to wait for the owner's answer; then no
    # Folders the web page and API may open as a project ("DIR/*": each folder in DIR).
    projects: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for table in ("trust", "exec_rules", "file_rules"):
            for key, level in getattr(self, table).items():
                if level not in TRUST_LEVELS:
                    raise ConfigError(
                        f"setting 'tools.{table}' gives {key!r} the level {level!r}; "
                        "use allow, ask or never"
                    )


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server whose tools the owner's conversations get as `NAME__tool`: a command
    run over stdio (`command`, `args`, `env`) or a Streamable HTTP endpoint (`url`,
    `headers`), with its trust level and per-tool levels over it."""

    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # over a small inherited set
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    trust: str = "ask"  # allow | ask | never, for every tool of the server
    tools: dict[str, str] = field(default_factory=dict)  # tool name -> level, over `trust`
    timeout: float = 0.0  # seconds the server may take to answer a call; 0: mcp.timeout


@dataclass(frozen=True)
class McpConfig:
    timeout: float = 30.0  # seconds a server may take to answer a call
    start_timeout: float = 30.0  # seconds a server may take to start and list its tools
    # [mcp.servers.NAME] tables: the MCP servers whose tools Lore uses.
    servers: dict[str, McpServerConfig] = field(
        default_factory=dict, metadata={"table_of": McpServerConfig}
    )


@dataclass(frozen=True)
class WebConfig:
    """`web_fetch` and `web_search`: limits and the search backend (trust: `tools.trust`)."""

    fetch: bool = True  # offer web_fetch to the owner (HTML needs the web extra)
    allow_private: bool = False  # web_fetch may reach loopback, private, link-local hosts
    allow_networks: tuple[str, ...] = ()  # or only these ("192.168.1.10", "10.0.0.0/8")
    timeout: float = 20.0  # seconds one fetch or search may take, redirects and all
    max_bytes: int = 2_000_000  # of a page's body read; the rest is left unread
    max_chars: int = 12_000  # of a page's text the model gets
    max_redirects: int = 5
    search: str = ""  # searxng | brave | ddgs; empty: whichever is set below, else off
    searxng_url: str = ""  # e.g. http://127.0.0.1:8888 (its JSON format enabled)
    brave_api_key: str = ""  # (env: BRAVE_API_KEY)
    brave_url: str = "https://api.search.brave.com/res/v1/web/search"
    max_results: int = 5


@dataclass(frozen=True)
class ApiClientConfig:
    """A program allowed into `lore serve`: its token and the scopes it may touch."""

    token: str = ""
    scopes: tuple[str, ...] = ()  # exact keys, or a prefix ending in "*": "api:*"


@dataclass(frozen=True)
class ApiConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str = ""  # the owner's token; empty: the `api_token` file in LORE_HOME
    # [api.clients.NAME] tables: token and scopes of each other program.
    clients: dict[str, ApiClientConfig] = field(
        default_factory=dict, metadata={"table_of": ApiClientConfig}
    )
    # Addresses (or networks, "10.0.0.0/8") of reverse proxies whose X-Forwarded-Proto and
    # X-Forwarded-Host are believed: the web page's cookie is Secure when one says "https".
    trusted_proxies: tuple[str, ...] = ()
    login_days: float = 7.0  # how long a log-in to the web page lasts
    max_body_kb: int = 2048  # the largest request body, but for uploads (multipart)
    max_upload_mb: int = 25  # the largest multipart (file upload) body
    requests_per_minute: int = 300  # each token's (or log-in's) requests a minute; 0: no limit
    header_seconds: float = 10.0  # how long a client may take to send a request's headers
    keep_alive_seconds: float = 5.0  # how long an idle connection stays open

    @property
    def proxy_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """`trusted_proxies` parsed (check() has refused what is not an address)."""
        return tuple(ipaddress.ip_network(item, strict=False) for item in self.trusted_proxies)


@dataclass(frozen=True)
class RemindersConfig:
    # How often a running chat or `lore serve` looks for reminders another process added.
    poll_seconds: float = 60.0
    # How long a worker holds a delivery it took: one killed mid-delivery leaves it to
    # the others after this long. Keep it above the slowest channel's send.
    lease_seconds: float = 60.0


@dataclass(frozen=True)
class TasksConfig:
    # The budget of each run of a scheduled task (set when the task is): tool rounds, and
    # seconds the turn may take before it is stopped and the run shown as failed.
    max_rounds: int = 4
    max_seconds: int = 120


@dataclass(frozen=True)
class HeartbeatConfig:
    # `lore serve` reads HEARTBEAT.md in the home this often ("30m", "2h") and tells
    # the owner only what needs their attention; empty: never.
    every: str = ""

    @property
    def seconds(self) -> float:
        """The period in seconds; 0 when off."""
        if not self.every.strip():
            return 0.0
        from lore.schedule import Interval, parse_schedule

        schedule = parse_schedule(f"every {self.every.strip()}")
        assert isinstance(schedule, Interval)
        return float(schedule.seconds)


# How often `lore serve` backs the home up (`[backup] every`); "" is never.
BACKUP_PERIODS = {"": 0.0, "hourly": 3600.0, "daily": 86_400.0, "weekly": 7 * 86_400.0}


@dataclass(frozen=True)
class BackupConfig:
    # `lore serve` writes a verified backup (as `lore backup` does) this often: "hourly",
    # "daily" or "weekly"; empty: never. A home on SQLite only: PostgreSQL has pg_dump.
    every: str = ""
    keep: int = 7  # the newest this many are kept; older ones are deleted
    dir: str = ""  # where they go; empty: backups/ in the home

    def directory(self, home: Path) -> Path:
        return Path(self.dir).expanduser() if self.dir else home / "backups"


@dataclass(frozen=True)
class LogConfig:
    """`lore.log` is rotated at `max_kb`; the newest `backups` old files are kept."""

    max_kb: int = 1000
    backups: int = 3


@dataclass(frozen=True)
class TelegramConfig:
    token: str = ""  # the bot's token from BotFather (env: TELEGRAM_BOT_TOKEN); empty: off
    base_url: str = "https://api.telegram.org"  # or a local Bot API server
    owner_ids: tuple[str, ...] = ()  # the owner's Telegram user ids
    allow: tuple[str, ...] = ()  # user ids besides the owner's that may talk 1:1 (as guests)
    poll_seconds: int = 30  # how long one getUpdates call waits for news
    # Webhook mode instead of long polling: the public HTTPS address of the gateway's
    # /telegram/webhook, and the secret Telegram sends back with every update
    # (env: TELEGRAM_WEBHOOK_SECRET). Empty: long polling.
    webhook_url: str = ""
    webhook_secret: str = ""


@dataclass(frozen=True)
class DiscordConfig:
    token: str = ""  # the bot's token (env: DISCORD_BOT_TOKEN); empty: Discord is off
    api_base_url: str = "https://discord.com/api/v10"  # REST; it names the gateway
    owner_ids: tuple[str, ...] = ()  # the owner's Discord user ids
    allow: tuple[str, ...] = ()  # user ids besides the owner's that may talk in a DM (as guests)


@dataclass(frozen=True)
class ChannelsConfig:
    """One owner, many channels: with `unified_owner_session` the owner's 1:1 chats on
    every channel and the terminal's default conversation are one conversation, `owner`."""

    unified_owner_session: bool = False
    # Where that conversation's reminders go: a channel ("telegram", "cli", ...), or
    # empty for the channel the owner last wrote on.
    reminder_channel: str = ""
    # `[channels.<name>]` tables: the settings of channels from other packages
    # (`lore.channels.plugin`), kept as written for the plugin to read.
    plugins: dict[str, dict[str, Any]] = field(default_factory=dict, metadata={"rest": True})


@dataclass(frozen=True)
class LineConfig:
    # From the LINE Developers console, Messaging API channel; both set: LINE is on.
    channel_secret: str = ""  # (env: LINE_CHANNEL_SECRET) signs every webhook call
    access_token: str = ""  # long-lived channel access token (env: LINE_CHANNEL_ACCESS_TOKEN)
    api_base_url: str = "https://api.line.me"  # the Messaging API's address
    owner_ids: tuple[str, ...] = ()  # the owner's LINE user ids (U…)
    allow: tuple[str, ...] = ()  # user ids besides the owner's that may talk 1:1 (as guests)
    names: tuple[str, ...] = ()  # names that address Lore in a group; empty: the bot's name

    @property
    def enabled(self) -> bool:
        return bool(self.channel_secret and self.access_token)


@dataclass(frozen=True)
class SlackConfig:
    # From the app's settings at api.slack.com/apps: the bot token (OAuth & Permissions)
    # and either the app-level token (Socket Mode: no public address) or the signing
    # secret (the Events API: Slack posts to the gateway's /slack/events), or both.
    bot_token: str = ""  # xoxb-… (env: SLACK_BOT_TOKEN)
    app_token: str = ""  # xapp-… with connections:write (env: SLACK_APP_TOKEN)
    signing_secret: str = ""  # signs every Events API call (env: SLACK_SIGNING_SECRET)
    api_base_url: str = "https://slack.com/api/"  # the Web API's address
    owner_ids: tuple[str, ...] = ()  # the owner's Slack member ids (U…)
    allow: tuple[str, ...] = ()  # member ids besides the owner's that may DM it (as guests)

    @property
    def enabled(self) -> bool:
        return bool(self.bot_token and (self.app_token or self.signing_secret))


@dataclass(frozen=True)
class WhatsAppConfig:
    # From the Meta app's WhatsApp > API Setup page; access token and phone number id
    # both set: WhatsApp is on (and then the app secret and verify token must be set).
    access_token: str = ""  # a system user's permanent token (env: WHATSAPP_ACCESS_TOKEN)
    phone_number_id: str = ""  # the business number's id (not the number itself)
    app_secret: str = ""  # signs every webhook call (env: WHATSAPP_APP_SECRET)
    verify_token: str = ""  # any string, given to Meta too (env: WHATSAPP_VERIFY_TOKEN)
    api_base_url: str = "https://graph.facebook.com/v21.0"  # the Graph API, with version
    owner_ids: tuple[str, ...] = ()  # the owner's WhatsApp ids (the number, digits only)
    allow: tuple[str, ...] = ()  # numbers besides the owner's that may talk (as guests)

    def __post_init__(self) -> None:  # a number as people write it: Graph's wa_id
        for name in ("owner_ids", "allow"):
            numbers = tuple("".join(c for c in n if c.isdigit()) for n in getattr(self, name))
            object.__setattr__(self, name, tuple(n for n in numbers if n))

    @property
    def enabled(self) -> bool:
        return bool(self.access_token and self.phone_number_id)


def _parts(scope: str) -> Scope | None:
    """The scope's parts; None for a string that is no conversation key (one stored
    before keys were checked): it is nobody's 1:1 chat, and not the owner's."""
    try:
        return Scope.parse(scope)
    except InvalidInputError:
        return None


@dataclass(frozen=True)
class Config:
    home: Path
    model: str = ""
    openai_api_key: str = ""
    openai_base_url: str = "https://api.openai.com/v1"
    anthropic_api_key: str = ""
    anthropic_base_url: str = "https://api.anthropic.com"
    ollama_host: str = "http://127.0.0.1:11434"
    context_window: int = 0  # 0: known value for the model, else a safe default
    max_tool_rounds: int = 10
    max_output_tokens: int = 4096
    max_message_chars: int = 100_000  # the longest message a turn takes, on every channel
    request_timeout: float = 120.0
    max_retries: int = 3
    timezone: str = ""  # IANA name; empty: the system's zone
    user_name: str = ""
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    memory_flush: MemoryFlushConfig = field(default_factory=MemoryFlushConfig)
    session_memory: SessionMemoryConfig = field(default_factory=SessionMemoryConfig)
    dream: DreamConfig = field(default_factory=DreamConfig)
    backup: BackupConfig = field(default_factory=BackupConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    web: WebConfig = field(default_factory=WebConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    reminders: RemindersConfig = field(default_factory=RemindersConfig)
    tasks: TasksConfig = field(default_factory=TasksConfig)
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    telegram: TelegramConfig = field(default_factory=TelegramConfig)
    channels: ChannelsConfig = field(default_factory=ChannelsConfig)
    line: LineConfig = field(default_factory=LineConfig)
    whatsapp: WhatsAppConfig = field(default_factory=WhatsAppConfig)
    discord: DiscordConfig = field(default_factory=DiscordConfig)
    slack: SlackConfig = field(default_factory=SlackConfig)
    log: LogConfig = field(default_factory=LogConfig)
    # Scopes besides cli:* that belong to the owner: they see the curated files and feed Dream.
    owner_scopes: tuple[str, ...] = ()
    # postgresql://user:password@host/db: keep memories, reminders and the index in
    # PostgreSQL (many workers, one database); empty: SQLite and files under `home`.
    database_url: str = ""

    def is_owner_scope(self, scope: str) -> bool:
        if scope in self.owner_scopes or scope == OWNER_SCOPE:
            return True
        parts = _parts(scope)
        return parts is not None and (parts.channel == "cli" or self._owners_own_chat(parts))

    def _owners_own_chat(self, scope: Scope) -> bool:
        """The owner's 1:1 chat with the bot: its chat id is the owner's user id."""
        owner_ids = {
            "line": self.line.owner_ids,
            "telegram": self.telegram.owner_ids,
            "whatsapp": self.whatsapp.owner_ids,
            "discord": self.discord.owner_ids,
            "slack": self.slack.owner_ids,
        }
        return scope.is_direct and scope.id in owner_ids.get(scope.channel, ())

    def conversation_scope(self, scope: str) -> str:
        """The scope a conversation is kept in: `owner` for the owner's 1:1 chats (and the
        terminal's default) when `channels.unified_owner_session` is on, else `scope`."""
        if not self.channels.unified_owner_session:
            return scope
        parts = _parts(scope)
        direct = scope in _OWNER_DIRECT or (parts is not None and parts.is_direct)
        return OWNER_SCOPE if direct and self.is_owner_scope(scope) else scope

    @property
    def workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    @property
    def db_path(self) -> Path:
        return self.home / "lore.db"

    @property
    def api_token_path(self) -> Path:
        return self.home / "api_token"

    @property
    def web_logins_path(self) -> Path:
        return self.home / "web_logins.json"

    @property
    def input_history_path(self) -> Path:
        return self.home / "input_history"

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"

    def model_spec(self) -> ModelSpec:
        return parse_model(self.model or self.default_model())

    def default_model(self) -> str:
        if self.openai_api_key:
            return "openai/gpt-4o-mini"
        if self.anthropic_api_key:
            return "anthropic/claude-3-5-haiku-latest"
        return "local"

    def redacted(self) -> dict[str, Any]:
        """The effective settings as plain data, with secrets masked."""
        data = asdict(self)
        data["home"] = str(self.home)
        data["model"] = self.model or self.default_model()
        for key in ("openai_api_key", "anthropic_api_key"):
            data[key] = _redact(data[key])
        data["api"]["token"] = _redact(data["api"]["token"])
        for client in data["api"]["clients"].values():
            client["token"] = _redact(client["token"])
        data["telegram"]["token"] = _redact(data["telegram"]["token"])
        data["telegram"]["webhook_secret"] = _redact(data["telegram"]["webhook_secret"])
        for key in ("channel_secret", "access_token"):
            data["line"][key] = _redact(data["line"][key])
        for key in ("access_token", "app_secret", "verify_token"):
            data["whatsapp"][key] = _redact(data["whatsapp"][key])
        for table in data["channels"]["plugins"].values():  # a plugin's, by the key's name
            for key, value in table.items():
                if isinstance(value, str) and _SECRET_KEY.search(key):
                    table[key] = _redact(value)
        data["discord"]["token"] = _redact(data["discord"]["token"])
        for key in ("bot_token", "app_token", "signing_secret"):
            data["slack"][key] = _redact(data["slack"][key])
        for server in data["mcp"]["servers"].values():
            for table in ("env", "headers"):  # where a server's keys go
                server[table] = {key: _redact(value) for key, value in server[table].items()}
            server["url"] = redact_url(server["url"])
        data["web"]["brave_api_key"] = _redact(data["web"]["brave_api_key"])
        data["database_url"] = redact_url(self.database_url)
        return data


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    name: str

    def __str__(self) -> str:
        return self.provider if not self.name else f"{self.provider}/{self.name}"


def parse_model(text: str) -> ModelSpec:
    """Split `provider/model` ("openai/gpt-4o-mini", "local") and check the provider."""
    text = text.strip()
    provider, _, name = text.partition("/")
    if provider not in PROVIDERS:
        known = ", ".join(p for p in PROVIDERS if p != "scripted")
        raise ConfigError(f"unknown model provider {provider!r} in {text!r}; use one of: {known}")
    if provider not in ("local", "scripted") and not name:
        raise ConfigError(f"model {text!r} needs a name, e.g. {provider}/<model>")
    return ModelSpec(provider, name)


def default_home(env: Mapping[str, str]) -> Path:
    if env.get("LORE_HOME"):
        return Path(env["LORE_HOME"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("lore", appauthor=False))


# Environment variables, each mapped to a dotted setting.
_ENV = {
    "LORE_MODEL": "model",
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_API_BASE": "openai_base_url",
    "OPENAI_BASE_URL": "openai_base_url",  # listed second: wins over OPENAI_API_BASE
    "ANTHROPIC_API_KEY": "anthropic_api_key",
    "ANTHROPIC_BASE_URL": "anthropic_base_url",
    "OLLAMA_HOST": "ollama_host",
    "TZ": "timezone",
    "LORE_TIMEZONE": "timezone",  # listed second: wins over TZ
    "LORE_USER": "user_name",
    "LORE_CONTEXT_WINDOW": "context_window",
    "LORE_MAX_TOOL_ROUNDS": "max_tool_rounds",
    "TELEGRAM_BOT_TOKEN": "telegram.token",
    "TELEGRAM_WEBHOOK_SECRET": "telegram.webhook_secret",
    "LINE_CHANNEL_SECRET": "line.channel_secret",
    "LINE_CHANNEL_ACCESS_TOKEN": "line.access_token",
    "WHATSAPP_ACCESS_TOKEN": "whatsapp.access_token",
    "WHATSAPP_APP_SECRET": "whatsapp.app_secret",
    "WHATSAPP_VERIFY_TOKEN": "whatsapp.verify_token",
    "DISCORD_BOT_TOKEN": "discord.token",
    "SLACK_BOT_TOKEN": "slack.bot_token",
    "SLACK_APP_TOKEN": "slack.app_token",
    "SLACK_SIGNING_SECRET": "slack.signing_secret",
    "LORE_DATABASE_URL": "database_url",
    "BRAVE_API_KEY": "web.brave_api_key",
}


# Every variable Lore reads.
ENVIRONMENT = ("LORE_HOME", *_ENV)


def load_config(
    env: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None
) -> Config:
    """Build the effective config. `env` defaults to `os.environ`; flags win over all."""
    env = os.environ if env is None else env
    home = Path(flags["home"]) if flags and flags.get("home") else default_home(env)
    values: dict[str, Any] = {}
    path = home / "config.toml"
    if path.exists():
        try:
            values = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    for var, key in _ENV.items():
        if env.get(var):
            _set_dotted(values, key, env[var])
    for key, value in (flags or {}).items():
        if key != "home" and value is not None:
            _set_dotted(values, key, value)
    if not values.get("user_name"):
        values["user_name"] = env.get("USER") or env.get("USERNAME") or _login_name()
    config: Config = _build(Config, {"home": home, **values}, "")
    if config.model:
        parse_model(config.model)
    check(config)
    return replace(config, timezone=config.timezone.lstrip(":"))


def inherited_environment() -> dict[str, str]:
    """The environment Lore runs in: where the exec tool finds bubblewrap, and the few
    harmless settings (PATH, language, time zone) a command it starts may inherit."""
    return dict(os.environ)


def lore_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables Lore reads (`ENVIRONMENT`) that are set here: what a service may
    be given."""
    env = os.environ if env is None else env
    return {name: env[name] for name in ENVIRONMENT if env.get(name)}


def user_config_home(env: Mapping[str, str] | None = None) -> Path:
    """Where per-user settings of other programs live (systemd's user units): XDG's."""
    env = os.environ if env is None else env
    configured = env.get("XDG_CONFIG_HOME", "")
    if configured and Path(configured).is_absolute():
        return Path(configured)
    return Path.home() / ".config"


# Each number setting with the range it must fall in: (lowest, highest, what it means).
# A value outside gets one line naming the setting and the range, before anything runs.
_RANGES: dict[str, tuple[float, float, str]] = {
    "context_window": (0, 10_000_000, "0 (the model's own) or at least 2048 tokens"),
    "max_tool_rounds": (1, 100, "between 1 and 100"),
    "max_output_tokens": (64, 1_000_000, "at least 64 tokens"),
    "max_message_chars": (100, 10_000_000, "between 100 and 10000000 characters"),
    "request_timeout": (1, 3600, "between 1 and 3600 seconds"),
    "max_retries": (0, 20, "between 0 and 20"),
    "memory.budget_chars": (200, 100_000, "between 200 and 100000 characters"),
    "consolidation.threshold": (0.1, 0.95, "a share of the history budget, 0.1 to 0.95"),
    "consolidation.target": (0.05, 0.9, "a share of the history budget, 0.05 to 0.9"),
    "consolidation.idle_minutes": (0, 525_600, "0 (never) or a number of minutes"),
    "consolidation.max_chunk_tokens": (500, 1_000_000, "at least 500 tokens"),
    "consolidation.max_failures": (1, 100, "between 1 and 100"),
    "session_memory.min_user_messages": (0, 1000, "0 or more"),
    "dream.interval_hours": (0, 8760, "0 (never) or a number of hours"),
    "dream.max_rounds": (1, 100, "between 1 and 100"),
    "dream.max_tokens": (1000, 10_000_000, "at least 1000 tokens"),
    "dream.max_entries": (1, 100_000, "at least 1"),
    "reminders.poll_seconds": (0.1, 86_400, "between 0.1 and 86400 seconds"),
    "backup.keep": (1, 10_000, "between 1 and 10000 backups"),
    "reminders.lease_seconds": (1, 86_400, "between 1 and 86400 seconds"),
    "tasks.max_rounds": (1, 20, "between 1 and 20 tool rounds"),
    "tasks.max_seconds": (5, 600, "between 5 and 600 seconds"),
    "telegram.poll_seconds": (0, 600, "between 0 and 600 seconds"),
    "tools.exec_timeout": (0.1, 3600, "between 0.1 and 3600 seconds"),
    "tools.output_cap": (500, 1_000_000, "between 500 and 1000000 characters"),
    "tools.approval_timeout": (1, 86_400, "between 1 and 86400 seconds"),
    "mcp.timeout": (0.1, 3600, "between 0.1 and 3600 seconds"),
    "mcp.start_timeout": (0.1, 3600, "between 0.1 and 3600 seconds"),
    "web.timeout": (0.1, 600, "between 0.1 and 600 seconds"),
    "web.max_bytes": (1000, 100_000_000, "between 1000 and 100000000 bytes"),
    "web.max_chars": (500, 1_000_000, "between 500 and 1000000 characters"),
    "web.max_redirects": (0, 20, "between 0 and 20"),
    "web.max_results": (1, 20, "between 1 and 20"),
    "api.login_days": (0.001, 3650, "between 0.001 and 3650 days"),
    "api.max_body_kb": (16, 1_048_576, "between 16 and 1048576 KB"),
    "api.max_upload_mb": (1, 10_240, "between 1 and 10240 MB"),
    "api.requests_per_minute": (0, 1_000_000, "0 (no limit) or a number of requests"),
    "api.header_seconds": (0.5, 600, "between 0.5 and 600 seconds"),
    "api.keep_alive_seconds": (0.5, 600, "between 0.5 and 600 seconds"),
    "log.max_kb": (10, 10_000_000, "between 10 and 10000000 KB"),
    "log.backups": (1, 100, "between 1 and 100 files"),
}
_MIN_CONTEXT_WINDOW = 2048


def _check_heartbeat(heartbeat: HeartbeatConfig) -> None:
    from lore.schedule import Interval, parse_schedule

    every = heartbeat.every.strip()
    if not every:
        return
    try:
        schedule = parse_schedule(f"every {every}")
    except InvalidInputError:
        schedule = None
    if not isinstance(schedule, Interval) or schedule.seconds < 60:
        raise ConfigError(
            f"setting 'heartbeat.every' is {heartbeat.every!r}; use a period of at least a "
            'minute like "30m" or "2h" (or empty for never)'
        )


def _login_name() -> str:
    """Who is logged in, when the environment does not say (cron, systemd, `env -i`)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name or "user"
    except (ImportError, KeyError, AttributeError):  # no password database, or no entry
        return "user"


_MAX_USER_NAME = 80


def check(config: Config) -> None:
    """Refuse settings that would run but do harm: a negative budget, a window too small
    to hold the prompt, a consolidation target above its threshold, a name that could
    start a line of its own in the prompt."""
    for dotted, (low, high, meaning) in _RANGES.items():
        value = _get_dotted(config, dotted)
        if not low <= value <= high:
            raise ConfigError(f"setting {dotted!r} is {value!r}; it must be {meaning}")
    if 0 < config.context_window < _MIN_CONTEXT_WINDOW:
        meaning = _RANGES["context_window"][2]
        raise ConfigError(
            f"setting 'context_window' is {config.context_window}; it must be {meaning}"
        )
    if config.consolidation.target >= config.consolidation.threshold:
        raise ConfigError(
            "setting 'consolidation.target' must be below 'consolidation.threshold' "
            f"(now {config.consolidation.target} and {config.consolidation.threshold})"
        )
    _check_telegram_webhook(config.telegram)
    if config.backup.every not in BACKUP_PERIODS:
        raise ConfigError(
            f"setting 'backup.every' is {config.backup.every!r}; use hourly, daily or weekly "
            "(or empty for never)"
        )
    _check_heartbeat(config.heartbeat)
    for proxy in config.api.trusted_proxies:
        if not _is_network(proxy):
            raise ConfigError(
                f"setting 'api.trusted_proxies' holds {proxy!r}, which is not an IP address "
                'or network (e.g. "127.0.0.1", "10.0.0.0/8")'
            )
    if config.channels.reminder_channel not in (*REMINDER_CHANNELS, *config.channels.plugins):
        raise ConfigError(
            f"setting 'channels.reminder_channel' is {config.channels.reminder_channel!r}; "
            "use one of: " + ", ".join(c for c in REMINDER_CHANNELS if c) + " (or empty for "
            "the channel the owner last wrote on)"
        )
    line = config.line
    if bool(line.channel_secret) != bool(line.access_token):
        missing = "line.access_token" if line.channel_secret else "line.channel_secret"
        raise ConfigError(
            f"LINE needs both the channel secret and the access token: set {missing!r}"
        )
    slack = config.slack
    if (slack.app_token or slack.signing_secret) and not slack.bot_token:
        raise ConfigError("Slack needs the bot token (xoxb-…) too: set 'slack.bot_token'")
    if slack.bot_token and not (slack.app_token or slack.signing_secret):
        raise ConfigError(
            "Slack needs 'slack.app_token' (Socket Mode) or 'slack.signing_secret' (the "
            "Events API at /slack/events) besides the bot token"
        )
    whatsapp = config.whatsapp
    if bool(whatsapp.access_token) != bool(whatsapp.phone_number_id):
        missing = "whatsapp.phone_number_id" if whatsapp.access_token else "whatsapp.access_token"
        raise ConfigError(
            f"WhatsApp needs the access token and the phone number id: set {missing!r}"
        )
    if whatsapp.enabled and not (whatsapp.app_secret and whatsapp.verify_token):
        missing = "whatsapp.verify_token" if whatsapp.app_secret else "whatsapp.app_secret"
        raise ConfigError(
            f"WhatsApp's webhook needs the app secret and a verify token: set {missing!r}"
        )
    _check_mcp(config.mcp)
    _check_web(config.web)
    name = config.user_name
    if not name.strip() or len(name) > _MAX_USER_NAME or not name.isprintable() or "<" in name:
        raise ConfigError(
            f"setting 'user_name' (or LORE_USER) must be one line of at most {_MAX_USER_NAME} "
            "printable characters, without '<'"
        )


def _is_network(text: str) -> bool:
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


_MCP_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def _check_mcp(mcp: McpConfig) -> None:
    """Each server: a name fit for a tool name, exactly one of command and url, trust
    levels that exist, and a timeout in range."""
    for name, server in mcp.servers.items():
        where = f"mcp.servers.{name}"
        if not _MCP_NAME.match(name) or "__" in name:
            raise ConfigError(
                f"setting {where!r}: a server's name must be 1-40 letters, digits, '-' or "
                "'_' (no '__'), as it starts its tools' names"
            )
        if bool(server.command) == bool(server.url):
            raise ConfigError(
                f"setting {where!r} needs either 'command' (a server run over stdio) or "
                "'url' (Streamable HTTP), not both or neither"
            )
        if server.url and not server.url.startswith(("http://", "https://")):
            raise ConfigError(f"setting '{where}.url' must start with http:// or https://")
        levels = {"trust": server.trust, **{f"tools.{k}": v for k, v in server.tools.items()}}
        for key, level in levels.items():
            if level not in TRUST_LEVELS:
                raise ConfigError(f"setting '{where}.{key}' is {level!r}; use allow, ask or never")
        if server.timeout and not 0.1 <= server.timeout <= 3600:
            raise ConfigError(
                f"setting '{where}.timeout' is {server.timeout!r}; it must be 0 (mcp.timeout) "
                "or between 0.1 and 3600 seconds"
            )


def _check_web(web: WebConfig) -> None:
    for network in web.allow_networks:
        if not _is_network(network):
            raise ConfigError(f"setting 'web.allow_networks' holds {network!r}, not an address")
    if web.search not in ("", "searxng", "brave", "ddgs"):
        raise ConfigError(f"setting 'web.search' is {web.search!r}; use searxng, brave or ddgs")
    for key, url in (("searxng_url", web.searxng_url), ("brave_url", web.brave_url)):
        if url and not url.startswith(("http://", "https://")):
            raise ConfigError(f"setting 'web.{key}' must start with http:// or https://")
    needs = {"searxng": "searxng_url", "brave": "brave_api_key"}.get(web.search, "")
    if needs and not getattr(web, needs):
        raise ConfigError(f"setting 'web.search' is {web.search!r}: set 'web.{needs}' too")


def _check_telegram_webhook(telegram: TelegramConfig) -> None:
    """A webhook needs an address and a secret Telegram accepts (1-256 of A-Z a-z 0-9 _ -)."""
    if not telegram.webhook_url:
        return
    if not telegram.webhook_url.startswith(("https://", "http://")):
        raise ConfigError(
            "setting 'telegram.webhook_url' must be the public https:// address of "
            "/telegram/webhook"
        )
    secret = telegram.webhook_secret
    if (
        not secret
        or len(secret) > 256
        or not all(c.isascii() and (c.isalnum() or c in "_-") for c in secret)
    ):
        raise ConfigError(
            "setting 'telegram.webhook_secret' (or TELEGRAM_WEBHOOK_SECRET) must be 1-256 "
            "characters of A-Z, a-z, 0-9, _ and - when 'telegram.webhook_url' is set"
        )


def _get_dotted(config: Config, dotted: str) -> Any:
    value: Any = config
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def with_overrides(config: Config, **changes: Any) -> Config:
    return replace(config, **changes)


def _set_dotted(values: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    for part in parts[:-1]:
        values = values.setdefault(part, {})
    values[parts[-1]] = value


def _build(cls: Any, data: Mapping[str, Any], prefix: str) -> Any:
    """Convert a mapping into the dataclass `cls`, coercing and checking each field."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"setting {prefix.rstrip('.')!r} must be a table")
    known = {f.name: f for f in fields(cls)}
    rest = next((f.name for f in fields(cls) if f.metadata.get("rest")), None)
    unknown = sorted(set(data) - set(known))
    kwargs: dict[str, Any] = {}
    if rest is not None:  # tables of their own (a plugin's settings) are kept as written
        kwargs[rest] = {
            name: dict(data[name]) for name in unknown if isinstance(data[name], Mapping)
        }
        unknown = [name for name in unknown if name not in kwargs[rest]]
    if unknown:
        raise ConfigError(f"unknown setting {prefix}{unknown[0]!r} in config.toml")
    for name, value in data.items():
        if name not in known:
            continue
        f = known[name]
        default = _default_of(f)
        if is_dataclass(default):
            kwargs[name] = _build(type(default), value, f"{prefix}{name}.")
        elif "table_of" in f.metadata:
            kwargs[name] = _tables(f.metadata["table_of"], value, f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(value, default, f"{prefix}{name}")
    return cls(**kwargs)


def _tables(cls: Any, data: Any, prefix: str) -> dict[str, Any]:
    """A table of named tables (`[api.clients.NAME]`), each one `cls`."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"setting {prefix.rstrip('.')!r} must be a table")
    return {str(name): _build(cls, value, f"{prefix}{name}.") for name, value in data.items()}


def _default_of(f: Any) -> Any:
    from dataclasses import MISSING

    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


def _coerce(value: Any, default: Any, name: str) -> Any:
    if default is None or isinstance(default, Path):
        return Path(value) if isinstance(value, str) else value
    try:
        if isinstance(default, dict):
            if not isinstance(value, Mapping):
                raise ValueError(value)
            return {str(key): str(item) for key, item in value.items()}
        if isinstance(default, tuple):
            items = value.split(",") if isinstance(value, str) else list(value)
            return tuple(str(item).strip() for item in items if str(item).strip())
        if isinstance(default, bool):
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return lowered in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"setting {name!r} has an invalid value {value!r}") from exc


def redact_url(url: str) -> str:
    """postgresql://lore:secret@db/lore -> postgresql://lore:***@db/lore"""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    user, colon, password = credentials.partition(":")
    if not (sep and at and colon and password):
        return url
    return f"{scheme}://{user}:***@{host}"


_SECRET_KEY = re.compile(r"token|secret|password|key", re.IGNORECASE)


def _redact(secret: str) -> str:
    if not secret:
        return ""
    if len(secret) <= 8:
        return "***"
    return f"{secret[:3]}…{secret[-4:]}"
