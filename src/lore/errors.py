"""Lore's exception tree: every error a user can meet derives from `LoreError`.

    LoreError
    ├── ConfigError            bad or missing settings (unknown provider, missing key)
    ├── ProviderError          a model call failed; carries `status` and `body`
    │   ├── ProviderConnectionError   no answer at all (refused, reset, timeout)  [transient]
    │   ├── RateLimitError            429                                         [transient]
    │   ├── ProviderServerError       500, 502, 503, 504, 529                     [transient]
    │   ├── AuthenticationError       401, 403
    │   ├── BadRequestError           other 4xx (bad model name, context too long)
    │   └── ProviderResponseError     a reply we cannot parse
    ├── SessionError           a live session or archive cannot be read or written
    ├── StoreError             the database refused an operation
    │   ├── NotFoundError      an id that does not exist in this scope
    │   ├── DiskFullError      the disk holding LORE_HOME is full; the write changed nothing
    │   ├── DamagedRecordError a stored record this version cannot read (an outbox payload)
    │   └── DatabaseUnavailable  the database server cannot be reached now     [transient]
    ├── InvalidInputError      user or model input that is refused (oversize, secret, bad time)
    └── ToolError              a tool failed; its message goes back to the model as the result

Retry decisions use the class (derived from the HTTP status), never message text.
The CLI turns any `LoreError` into one line on stderr and a non-zero exit.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ConfigError",
    "DamagedRecordError",
    "DatabaseUnavailable",
    "DiskFullError",
    "InvalidInputError",
    "LoreError",
    "NotFoundError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderResponseError",
    "ProviderServerError",
    "RateLimitError",
    "SessionError",
    "StoreError",
    "ToolError",
    "provider_error_for_status",
    "quoted",
]


class LoreError(Exception):
    """Root of every error Lore raises on purpose."""


class ConfigError(LoreError):
    """Settings are missing, malformed or contradictory."""


class ProviderError(LoreError):
    """A call to the model provider failed."""

    transient = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after


class ProviderConnectionError(ProviderError):
    transient = True


class RateLimitError(ProviderError):
    transient = True


class ProviderServerError(ProviderError):
    transient = True


class AuthenticationError(ProviderError):
    pass


class BadRequestError(ProviderError):
    pass


class ProviderResponseError(ProviderError):
    pass


class SessionError(LoreError):
    """A session file could not be read or written."""


class StoreError(LoreError):
    """The database refused an operation."""


class NotFoundError(StoreError):
    """An id that does not exist, or not in this scope."""


class DiskFullError(StoreError):
    """The disk holding LORE_HOME is full (SQLITE_FULL, ENOSPC): the write that met it
    was undone, so nothing was changed. Not damage: freeing space is the whole fix."""

    def __init__(self, message: str = "the disk holding LORE_HOME is full; nothing was changed"):
        super().__init__(message)


class DamagedRecordError(StoreError):
    """A stored record cannot be read: damaged, or written by a newer Lore. The store
    keeps it as it is; what reads it says what is wrong and never drops it."""


class DatabaseUnavailable(StoreError):
    """The database server cannot be reached right now (stopped, restarting, a lost
    connection): nothing was done, and the same call is worth making again once it is
    back. `retry_after` is a fair guess, in seconds, of when to ask again."""

    retry_after = 5


class InvalidInputError(LoreError):
    """Input refused with a reason: too long, looks secret, impossible time, malformed."""


class ToolError(LoreError):
    """A tool could not do what the model asked; the message is returned to the model."""


def quoted(value: str, limit: int = 40) -> str:
    """A caller's value for an error message, as `repr` writes it (one line, control
    characters escaped), cut to `limit` characters with "…" and the whole length."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value)} characters)"


_TRANSIENT_STATUSES = {500, 502, 503, 504, 529}


def provider_error_for_status(
    status: int, body: str, *, provider: str, retry_after: float | None = None
) -> ProviderError:
    """Classify an HTTP error status into the right `ProviderError` subclass."""
    detail = _short_detail(body)
    suffix = f": {detail}" if detail else ""
    if status == 429:
        return RateLimitError(
            f"{provider} rate limit (HTTP 429){suffix}",
            status=status,
            body=body,
            retry_after=retry_after,
        )
    if status in _TRANSIENT_STATUSES:
        return ProviderServerError(
            f"{provider} is unavailable (HTTP {status}){suffix}",
            status=status,
            body=body,
            retry_after=retry_after,
        )
    if status in (401, 403):
        return AuthenticationError(
            f"{provider} rejected the API key (HTTP {status}){suffix}; "
            "check the key in your environment or config.toml",
            status=status,
            body=body,
        )
    if 400 <= status < 500:
        return BadRequestError(
            f"{provider} refused the request (HTTP {status}){suffix}", status=status, body=body
        )
    return ProviderError(f"{provider} failed (HTTP {status}){suffix}", status=status, body=body)


def _short_detail(body: str) -> str:
    """Pull a human message out of a JSON error body, kept to one short line."""
    import json

    text = body.strip()
    if not text:
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:200]
    message = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        message = message or data.get("message")
    if not isinstance(message, str):
        message = text
    return " ".join(message.split())[:200]
