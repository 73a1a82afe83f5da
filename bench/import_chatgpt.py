"""Importing a large ChatGPT export, beside a raw read of the same file.

    python bench/import_chatgpt.py [--conversations N] [--messages M] [--json]

Writes a `conversations.json` in the export's real shape (a `mapping` tree per
conversation, system and hidden nodes, an edited turn leaving a second branch every
tenth conversation, English, Chinese and Russian text), 2,000 conversations and
100,000 messages by default, then times in a fresh home:

- the baseline: `json.load` of the file, nothing else;
- reading and checking it (`read_export`, `plan_import`): the branch walk, the hashes;
- writing it (`apply_import`): one archived transcript and index line per conversation;
- indexing it for search by its words (the search index's refresh; vectors are
  `lore serve`'s background work, as after `lore import`), with the hash embedder so
  no model is loaded;
- the same import again (everything already there: nothing is written).

No memory is extracted (`lore import` extracts none yet).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

_TEXTS = (
    "Do I need a visa to visit Japan in April with a Taiwanese passport?",
    "我下个月要去花莲，有什么推荐的地方？太鲁阁和七星潭怎么样？",
    "Напомни, как купить билеты на поезд из Москвы в Казань?",
    "Can you explain how a B-tree keeps its pages balanced after many inserts?",
)


def export(conversations: int, messages: int) -> list[dict[str, Any]]:
    """`conversations` conversations holding `messages` user and assistant messages."""
    each, extra = divmod(messages, conversations)
    start = 1_700_000_000.0
    found = []
    for number in range(conversations):
        count = each + (1 if number < extra else 0)
        at = start + number * 3600.0
        mapping: dict[str, Any] = {
            "root": {"id": "root", "message": None, "parent": None, "children": ["sys"]}
        }
        mapping["sys"] = _node("sys", "root", "system", "", at, hidden=True)
        parent = "sys"
        for index in range(count):
            node_id = f"n{index}"
            role = "user" if index % 2 == 0 else "assistant"
            text = f"{_TEXTS[(number + index) % len(_TEXTS)]} ({number}.{index})"
            mapping[node_id] = _node(node_id, parent, role, text, at + index * 30.0)
            mapping[parent]["children"].append(node_id)
            if index == 1 and number % 10 == 0:  # an edited turn: a branch left behind
                mapping["old"] = _node("old", node_id, "user", "an earlier wording", at + 40.0)
                mapping[node_id]["children"].append("old")
            parent = node_id
        found.append(
            {
                "title": f"Conversation {number}",
                "create_time": at,
                "update_time": at + count * 30.0,
                "mapping": mapping,
                "current_node": parent,
                "conversation_id": f"conv-{number:06d}",
                "id": f"conv-{number:06d}",
                "moderation_results": [],
                "is_archived": False,
            }
        )
    return found


def _node(
    node_id: str, parent: str, role: str, text: str, at: float, *, hidden: bool = False
) -> dict[str, Any]:
    return {
        "id": node_id,
        "parent": parent,
        "children": [],
        "message": {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": "all",
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    from lore.backends.fake.embedder import HashEmbedder
    from lore.config import load_config
    from lore.runtime import build
    from lore.search import searcher
    from lore.sessions.export_formats import read_export
    from lore.sessions.importing import ImportLedger, apply_import, plan_import

    with tempfile.TemporaryDirectory(prefix="lore-import-bench-") as tmp:
        root = Path(tmp)
        path = root / "conversations.json"
        path.write_text(
            json.dumps(export(args.conversations, args.messages), ensure_ascii=False),
            encoding="utf-8",
        )
        size = path.stat().st_size
        figures: dict[str, float] = {}

        started = time.perf_counter()
        with path.open("rb") as f:
            json.load(f)
        figures["json_load"] = time.perf_counter() - started

        config = load_config(
            env={"LORE_HOME": str(root / "home")},
            flags={"model": "scripted", "extraction.enabled": False},
        )
        lore = build(config, embedder=HashEmbedder())
        ledger = ImportLedger(config.home / "imports")
        try:
            started = time.perf_counter()
            plan = plan_import(
                read_export("chatgpt", path),
                ledger,
                sessions=lore.sessions,
                workspace=config.workspace,
            )
            figures["read_and_check"] = time.perf_counter() - started
            assert plan.messages == args.messages, plan.messages

            started = time.perf_counter()
            apply_import(
                plan,
                sessions=lore.sessions,
                notes=lore.notes,
                notes_root=config.workspace,
                ledger=ledger,
                scope="cli:default",
                zone=lore.zone,
                clock=lore.clock.now,
            )
            figures["write"] = time.perf_counter() - started

            started = time.perf_counter()
            searcher(lore).refresh(files=True)
            figures["index_words"] = time.perf_counter() - started

            started = time.perf_counter()
            again = plan_import(
                read_export("chatgpt", path),
                ledger,
                sessions=lore.sessions,
                workspace=config.workspace,
            )
            figures["second_import"] = time.perf_counter() - started
            assert not again.conversations and again.already_imported == args.conversations
            archived = len(lore.sessions.archive.entries())
        finally:
            lore.close()

    total = figures["read_and_check"] + figures["write"] + figures["index_words"]
    result = {
        "conversations": args.conversations,
        "messages": args.messages,
        "file_mb": round(size / 1e6, 1),
        "archived_sessions": archived,
        **{k: round(v, 2) for k, v in figures.items()},
        "import_total": round(total, 2),
        "ratio_to_json_load": round(total / figures["json_load"], 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{args.conversations} conversations, {args.messages} messages, "
        f"{result['file_mb']} MB conversations.json"
    )
    print(f"  json.load (baseline)        {figures['json_load']:8.2f} s")
    print(f"  read and check              {figures['read_and_check']:8.2f} s")
    print(f"  write the archive           {figures['write']:8.2f} s")
    print(f"  index the words for search  {figures['index_words']:8.2f} s")
    print(
        f"  import, all told            {total:8.2f} s  ({result['ratio_to_json_load']}x json.load)"
    )
    print(f"  the same export again       {figures['second_import']:8.2f} s  (adds nothing)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
