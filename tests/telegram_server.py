"""A fake Telegram Bot API on 127.0.0.1: the endpoints Lore uses, in the shapes Telegram
sends (getMe, getUpdates with offsets and long polling, sendMessage, setWebhook and
deleteWebhook), with outages on demand (502s, reset connections). The real
python-telegram-bot client talks to it through its base URL; in webhook mode it posts
updates to the registered address with the registered secret, as Telegram does."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import parse_qs

from tests.fake_api import FakeApi, Request

BOT_ID = 7000001
BOT_USERNAME = "lore_family_bot"


class FakeTelegram(FakeApi):
    def __init__(self) -> None:
        super().__init__()
        self.updates: list[dict[str, Any]] = []
        self.calls: list[str] = []
        self.fail_get_updates = 0  # answer this many getUpdates with 502
        self.reset_get_updates = 0  # reset the connection of this many getUpdates
        self.webhook: dict[str, Any] | None = None  # what setWebhook registered
        self.confirmed = 0  # the highest offset a getUpdates asked for
        self._next_update = 1
        self._next_message = 500

    # -- what users do ------------------------------------------------------------------

    def say(
        self,
        text: str,
        *,
        chat: dict[str, Any],
        sender: dict[str, Any],
        reply_to_bot: bool = False,
    ) -> int:
        """A user writes in a chat; returns the message id."""
        with self._changed:
            message_id = self._next_message
            self._next_message += 1
            message: dict[str, Any] = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": chat,
                "from": sender,
                "text": text,
            }
            if reply_to_bot:
                message["reply_to_message"] = {
                    "message_id": 1,
                    "date": int(time.time()),
                    "chat": chat,
                    "from": {"id": BOT_ID, "is_bot": True, "first_name": "Lore"},
                    "text": "earlier answer",
                }
            self.updates.append({"update_id": self._next_update, "message": message})
            self._next_update += 1
            self._changed.notify_all()
            return message_id

    def service(self, *, chat: dict[str, Any], sender: dict[str, Any], **fields: Any) -> None:
        """A service message in a chat: `new_chat_members`, `new_chat_title`..."""
        with self._changed:
            message = {"message_id": self._next_message, "date": int(time.time()),
                       "chat": chat, "from": sender, **fields}  # fmt: skip
            self._next_message += 1
            self.updates.append({"update_id": self._next_update, "message": message})
            self._next_update += 1
            self._changed.notify_all()

    def post_to_webhook(self, update: dict[str, Any], *, secret: str | None = "") -> int:
        """Telegram delivering `update` to the registered webhook, with the registered
        secret ("": that one; None: no header; else this one); the HTTP status."""
        assert self.webhook is not None, "no webhook is set"
        headers = {"Content-Type": "application/json"}
        token = self.webhook.get("secret_token", "") if secret == "" else secret
        if token is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = token
        data = json.dumps(update).encode("utf-8")
        request = urllib.request.Request(
            self.webhook["url"], data=data, headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    # -- the API --------------------------------------------------------------------------

    def answer(self, request: Request) -> tuple[int, dict[str, Any]] | None:
        params: dict[str, Any] = {}
        for key, values in parse_qs(request.body.decode("utf-8")).items():
            try:
                params[key] = json.loads(values[0])
            except ValueError:
                params[key] = values[0]
        method = request.path.rsplit("/", 1)[-1]
        if method == "getUpdates" and self.reset_get_updates:
            self.reset_get_updates -= 1
            self.calls.append(method)
            return None
        return self._answer(method, params)

    def _answer(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.calls.append(method)
        if method == "getMe":
            return 200, {"ok": True, "result": _bot()}
        if method == "getUpdates":
            return self._get_updates(params)
        if method == "setWebhook":
            self.webhook = params
            return 200, {"ok": True, "result": True, "description": "Webhook was set"}
        if method == "deleteWebhook":
            self.webhook = None
            return 200, {"ok": True, "result": True, "description": "Webhook was deleted"}
        if method == "sendMessage":
            with self._changed:
                self.sent.append(params)
                self._changed.notify_all()
                message_id = self._next_message
                self._next_message += 1
            chat_id = params["chat_id"]
            result = {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
                "from": _bot(),
                "text": params["text"],
            }
            return 200, {"ok": True, "result": result}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def _get_updates(self, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.webhook is not None:
            return 409, {
                "ok": False,
                "error_code": 409,
                "description": "Conflict: can't use getUpdates method while webhook is active;"
                " use deleteWebhook to delete the webhook first",
            }
        if self.fail_get_updates:
            self.fail_get_updates -= 1
            return 502, {"ok": False, "error_code": 502, "description": "Bad Gateway"}
        offset = int(params.get("offset") or 0)
        wait = min(float(params.get("timeout") or 0), 1.0)
        deadline = time.monotonic() + wait
        with self._changed:
            self.confirmed = max(self.confirmed, offset)
            while True:
                ready = [u for u in self.updates if u["update_id"] >= offset]
                if ready or time.monotonic() >= deadline:
                    return 200, {"ok": True, "result": ready}
                self._changed.wait(0.05)


def _bot() -> dict[str, Any]:
    return {
        "id": BOT_ID,
        "is_bot": True,
        "first_name": "Lore",
        "username": BOT_USERNAME,
        "can_join_groups": True,
        "can_read_all_group_messages": True,
        "supports_inline_queries": False,
    }
