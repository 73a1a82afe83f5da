"""Choosing and building the provider for a `provider/model` name.

Provider modules are imported only when chosen, so `lore --help` stays fast.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from lore.config import Config, ModelSpec
from lore.errors import ConfigError
from lore.llm.base import Provider

if TYPE_CHECKING:
    import httpx

__all__ = ["make_provider"]


def make_provider(
    config: Config, spec: ModelSpec | None = None, *, client: httpx.AsyncClient | None = None
) -> Provider:
    """The provider for `spec` (default: the configured model), ready to stream."""
    spec = spec or config.model_spec()
    if spec.provider in ("openai", "anthropic", "ollama"):
        return _http_provider(config, spec, client)
    if spec.provider == "local":
        from lore.llm.local import LocalProvider

        return LocalProvider()
    if spec.provider == "scripted":
        from lore.llm.scripted import ScriptedProvider

        return ScriptedProvider(context_window=config.context_window or 32_000)
    raise ConfigError(f"unknown model provider {spec.provider!r}")


def _http_provider(config: Config, spec: ModelSpec, client: httpx.AsyncClient | None) -> Provider:
    from lore.llm.retry import RetryPolicy

    _without_httpx_cli()

    retry = RetryPolicy.from_config(config)
    if spec.provider == "openai":
        from lore.llm.openai import OpenAIProvider

        # A self-hosted compatible server usually wants no key; api.openai.com always does.
        if not config.openai_api_key and urlsplit(config.openai_base_url).hostname == (
            "api.openai.com"
        ):
            raise ConfigError(
                "OPENAI_API_KEY is not set; export it, or set OPENAI_BASE_URL to a "
                "compatible server"
            )
        return OpenAIProvider(
            spec.name,
            api_key=config.openai_api_key,
            base_url=config.openai_base_url,
            client=client,
            context_window=config.context_window,
            timeout=config.request_timeout,
            retry=retry,
        )
    if spec.provider == "anthropic":
        from lore.llm.anthropic import AnthropicProvider

        if not config.anthropic_api_key:
            raise ConfigError(f"ANTHROPIC_API_KEY is not set; it is needed for {spec}")
        return AnthropicProvider(
            spec.name,
            api_key=config.anthropic_api_key,
            base_url=config.anthropic_base_url,
            client=client,
            context_window=config.context_window,
            timeout=config.request_timeout,
            retry=retry,
        )
    from lore.llm.openai import OpenAIProvider

    # Ollama serves the OpenAI wire format under /v1 and wants no key.
    host = config.ollama_host.rstrip("/")
    if "://" not in host:
        host = f"http://{host}"  # OLLAMA_HOST is often written as "127.0.0.1:11434"
    return OpenAIProvider(
        spec.name,
        base_url=f"{host}/v1",
        client=client,
        context_window=config.context_window,
        timeout=config.request_timeout,
        retry=retry,
        name=f"ollama/{spec.name}",
        label="Ollama",
    )


def _without_httpx_cli() -> None:
    """httpx imports its command-line tool (click, rich and pygments: about 0.1 s of CPU
    and 6 MB) whenever those happen to be installed; no Lore process runs it, so it is
    left out (`import httpx` then falls back to a stub, as when they are missing). None in
    sys.modules is the import system's documented way to refuse a module; typeshed types
    the mapping as modules only."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
