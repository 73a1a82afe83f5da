"""Who is calling `lore serve`, and which conversation scopes they may touch.

The owner's token (config `api.token`, else the `api_token` file in LORE_HOME, created
on first start with mode 0600) opens every scope. Each `[api.clients.NAME]` has its own
token and a list of scopes: exact keys, or prefixes ending in `*` (`"api:*"`). A request
for any other scope is refused with the same 403 whether or not the scope exists.
A log-in to the web page remembers its token only by fingerprint (SHA-256): changing or
removing a client's token ends its log-ins.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from lore.config import OWNER_SCOPE, Config
from lore.errors import ConfigError, LoreError
from lore.keys import conversation_key

__all__ = [
    "Client",
    "Clients",
    "Forbidden",
    "Unauthorized",
    "ensure_token",
    "fingerprint",
    "is_loopback",
    "read_token",
]

OWNER = "owner"


class Unauthorized(LoreError):
    """No token, or one nobody was given."""


class Forbidden(LoreError):
    """A valid token asking for a scope it was not given."""


@dataclass(frozen=True)
class Client:
    name: str
    scopes: tuple[str, ...]  # ("*",) for the owner
    author: str  # who memories and messages written through this client are noted by
    default: str = ""  # the scope of a request that names none; empty: see default_scope

    @property
    def is_owner(self) -> bool:
        return self.scopes == ("*",)

    def may(self, scope: str) -> bool:
        return any(_matches(pattern, scope) for pattern in self.scopes)

    def check(self, scope: str) -> str:
        """The scope, if it is a conversation key (else InvalidInputError) and this client
        may touch it; otherwise Forbidden, saying nothing more."""
        key = conversation_key(scope)
        if not self.may(key):
            raise Forbidden("this token may not use that conversation")
        return key

    @property
    def default_scope(self) -> str:
        """The scope a request that names none goes to: `api:default`, or the client's own."""
        if self.default:
            return self.default
        if self.may("api:default"):
            return "api:default"
        for pattern in self.scopes:
            if not pattern.endswith("*"):
                return pattern
        prefix = self.scopes[0].removesuffix("*") if self.scopes else "api:"
        return f"{prefix}{self.name}"


class Clients:
    """Tokens to clients; compared in constant time."""

    def __init__(self, owner_token: str, config: Config) -> None:
        self._tokens: list[tuple[bytes, Client]] = []
        if owner_token:
            # The owner's chat on the web page joins their one conversation, if they have one.
            default = OWNER_SCOPE if config.channels.unified_owner_session else ""
            owner = Client(OWNER, ("*",), config.user_name, default)
            self._tokens.append((owner_token.encode(), owner))
        for name, client in sorted(config.api.clients.items()):
            if not client.token:
                raise ConfigError(f"api.clients.{name} needs a token")
            if not client.scopes:
                raise ConfigError(f'api.clients.{name} needs scopes, e.g. ["api:*"]')
            if client.token == owner_token:
                raise ConfigError(f"api.clients.{name} uses the owner's token")
            self._tokens.append((client.token.encode(), Client(name, client.scopes, name)))

    def by_fingerprint(self, found: str) -> Client:
        """The client whose token has this fingerprint (a web page log-in's)."""
        for known, client in self._tokens:
            if hmac.compare_digest(fingerprint(known.decode()), found):
                return client
        raise Unauthorized("that log-in's token is no longer valid: log in again")

    def identify(self, token: str | None) -> Client:
        if token:
            given = token.encode()
            found = None
            for known, client in self._tokens:
                if hmac.compare_digest(known, given):
                    found = client
            if found is not None:
                return found
        raise Unauthorized("a valid token is required (Authorization: Bearer TOKEN)")


def fingerprint(token: str) -> str:
    """What a log-in keeps of the token it was opened with: enough to tell it, not to use it."""
    return hashlib.sha256(token.encode()).hexdigest()


def read_token(config: Config) -> str:
    """The owner's token, or "" when none was configured or created yet."""
    if config.api.token:
        return config.api.token
    try:
        return config.api_token_path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ConfigError(f"cannot read {config.api_token_path}: {exc}") from exc


def ensure_token(config: Config) -> str:
    """The owner's token, created (32 random bytes, file mode 0600) when there is none."""
    token = read_token(config)
    if token:
        return token
    _write_private(config.api_token_path, secrets.token_urlsafe(32) + "\n")
    return read_token(config)  # ours, or the one another first start wrote just before


def is_loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.") or host in ("::1", "[::1]")


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL: two first starts at once cannot both write a token.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise ConfigError(f"cannot create {path}: {exc}") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _matches(pattern: str, scope: str) -> bool:
    if pattern.endswith("*"):
        return scope.startswith(pattern[:-1])
    return scope == pattern
