"""One MCP server Lore is a client of: started on first need, its tools listed, called, stopped.

A server runs in a task of its own that holds the SDK's `Client` open until it is told to
stop, so the transport (a child process over stdio, or a Streamable HTTP session) is
opened and closed in one task, whichever turn started it and whoever stops it. Every way
a server can let a call down ends in `McpServerError`, one line saying what happened:

- it did not start (no such command, it exited, it did not answer within the timeout);
- it did not answer a call within the timeout: it is stopped, as its state is unknown;
- it went away during a call (the process died, the connection dropped);
- it answered with something that is not an MCP result.

A stopped or failed server starts again on its next use.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal, TextIO

from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CONNECTION_CLOSED, CallToolResult, Tool
from pydantic import ValidationError

from lore.config import McpServerConfig
from lore.errors import LoreError

__all__ = ["McpServer", "McpServerError", "State"]

log = logging.getLogger(__name__)

State = Literal["not started", "running", "failed"]
_STOP_GRACE = 10.0  # seconds the SDK gets to close a transport before its task is cancelled
_LIST_PAGES = 20  # a server that pages its tool list further is not believed


class McpServerError(LoreError):
    """An MCP server could not do what was asked; the message is one line for people."""


class McpServer:
    def __init__(
        self,
        name: str,
        settings: McpServerConfig,
        *,
        timeout: float,
        start_timeout: float,
        log_dir: Path,
    ) -> None:
        self.name = name
        self.settings = settings
        self.timeout = settings.timeout or timeout  # of a call
        self.start_timeout = start_timeout
        self.log_path = log_dir / f"mcp-{name}.log"  # the server's stderr, this run's
        self.state: State = "not started"
        self.reason = ""  # why it failed, when it did
        self.tools: list[Tool] = []  # as last listed; kept when the server stops
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock: asyncio.Lock | None = None

    @property
    def transport(self) -> str:
        """How it is reached, for people: `stdio: cmd args` or the URL."""
        if self.settings.url:
            return self.settings.url
        return "stdio: " + " ".join([self.settings.command, *self.settings.args])

    async def start(self) -> None:
        """Start the server and list its tools, unless it runs; McpServerError if not."""
        self._lock = self._lock or asyncio.Lock()
        async with self._lock:
            if self._task is not None and not self._task.done():
                return
            self._stop = asyncio.Event()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._hold(ready), name=f"mcp-server:{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.start_timeout)
            except TimeoutError:
                await self._end()
                _retrieve(ready)
                raise self._failed(f"did not start within {self.start_timeout:g} s") from None
            except McpServerError as exc:
                await self._end()
                raise self._failed(str(exc)) from None
            self.state, self.reason = "running", ""

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call one tool; McpServerError when the server does not give a result."""
        await self.start()
        client, holder = self._client, self._task
        if client is None or holder is None or holder.done():  # it ended right after
            raise self._failed(self._went_away("as the call began"))
        call = asyncio.ensure_future(client.call_tool(tool, arguments))
        try:
            done, _ = await asyncio.wait(
                {call, holder}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:  # the turn was cancelled: so is the call
            call.cancel()
            raise
        if call not in done:
            call.cancel()
            await asyncio.wait({call})  # its outcome is the cancellation; ours goes on
            if holder in done:
                raise self._failed(self._went_away("during the call"))
            await self._end()  # a server that hangs is in no state to trust
            raise self._failed(f"did not answer within {self.timeout:g} s and was stopped")
        try:
            result = call.result()
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED or holder.done():
                await self._end()
                raise self._failed(self._went_away("during the call")) from None
            raise McpServerError(f"answered with an error: {exc.error.message}") from None
        except ValidationError:
            raise McpServerError("answered with something that is not an MCP tool result") from None
        except Exception as exc:
            raise McpServerError(f"the call failed ({_one_line(exc)})") from None
        if not isinstance(result, CallToolResult):
            raise McpServerError("answered with something that is not an MCP tool result")
        return result

    async def stop(self) -> None:
        """Stop the server (its process, or its HTTP session), if it runs."""
        lock = self._lock or asyncio.Lock()
        async with lock:
            await self._end()
        if self.state == "running":
            self.state = "not started"

    # -- inside ---------------------------------------------------------------------------

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Open the connection, list the tools, hold it open until told to stop."""
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(Client(self._transport(stack)))
                self.tools = await _list_tools(client)
                self._client = client
                self.state, self.reason = "running", ""  # even if the starter was cancelled
                ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(McpServerError("was stopped while starting"))
            raise
        except BaseException as exc:  # the SDK's task groups raise exception groups
            reason = self._reason(exc)
            log.warning("MCP server %s ended: %s", self.name, reason)
            if not ready.done():
                ready.set_exception(McpServerError(self._with_last_words(reason)))
            else:  # it ran, then its connection failed between calls
                self.state, self.reason = "failed", self._with_last_words(f"stopped: {reason}")
        finally:
            self._client = None

    def _transport(self, stack: AsyncExitStack) -> Any:
        settings = self.settings
        if settings.url:
            http = create_mcp_http_client(headers=dict(settings.headers) or None)
            stack.push_async_callback(http.aclose)
            return streamable_http_client(settings.url, http_client=http)
        errlog = self._errlog()
        stack.callback(errlog.close)
        params = StdioServerParameters(
            command=settings.command, args=list(settings.args), env=dict(settings.env) or None
        )
        return stdio_client(params, errlog=errlog)

    def _errlog(self) -> TextIO:
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            return self.log_path.open("w", encoding="utf-8")
        except OSError:
            return Path("/dev/null").open("w", encoding="utf-8")  # noqa: SIM115

    async def _end(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        done, _ = await asyncio.wait({task}, timeout=_STOP_GRACE)
        if not done:
            task.cancel()
            await asyncio.wait({task})
        self._client = None

    def _reason(self, exc: BaseException) -> str:
        """One line for what ended a connection: the innermost cause of a group."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, FileNotFoundError):
            return f"could not be run: {exc.filename or exc} not found"
        if isinstance(exc, PermissionError):
            return f"could not be run: {exc.filename or exc} is not executable"
        if self.settings.url and "Connect" in type(exc).__name__:  # httpx's ConnectError
            return f"could not be reached ({_one_line(exc)})"
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            if self.settings.url:
                return "closed the connection before the MCP handshake was done"
            return "exited before the MCP handshake was done"
        if isinstance(exc, MCPError):
            return f"broke off the MCP handshake: {exc.error.message}"
        if isinstance(exc, ValidationError):
            return "answered with something that is not MCP"
        return f"failed to start ({_one_line(exc)})"

    def _went_away(self, when: str) -> str:
        what = "the connection closed" if self.settings.url else "the process ended"
        return self._with_last_words(f"stopped {when} ({what})")

    def _with_last_words(self, reason: str) -> str:
        """`reason`, with the last line the server wrote to its stderr, when there is one."""
        if self.settings.url:
            return reason
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return reason
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return f"{reason}; it said: {last[:200]}" if last else reason

    def _failed(self, reason: str) -> McpServerError:
        self.state, self.reason = "failed", reason
        return McpServerError(reason)


async def _list_tools(client: Client) -> list[Tool]:
    found: list[Tool] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        found.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def _retrieve(ready: asyncio.Future[None]) -> None:
    """Mark the outcome of a start nobody waits for any more as seen (no warning at exit)."""
    if ready.done() and not ready.cancelled():
        ready.exception()


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
