"""The PostgreSQL search index's own: its vector search walks the HNSW graph until a
small scope has its results. What every search index does is in tests/contract/."""

from __future__ import annotations

import numpy as np
import pytest

from lore.embed import default_embedder
from lore.ports.search import Entry

T0 = 1_764_000_000.0  # late 2025, Unix seconds
NOW = T0 + 86_400


def message(text: str, *, scope: str = "cli:a", source: str = "s1", locator: int = 0) -> Entry:
    return Entry(scope, "message", source, locator, T0, text, "john")


@pytest.mark.postgres
def test_postgres_walks_the_hnsw_graph_until_a_small_scope_has_its_results(
    postgres_url: str,
) -> None:
    from lore.backends.postgres.database import PostgresDatabase
    from lore.backends.postgres.search_index import PostgresSearchIndex

    db = PostgresDatabase(postgres_url)
    try:
        index = PostgresSearchIndex(db, default_embedder())
        rng = np.random.default_rng(7)
        crowd = rng.normal(size=(800, 384)).astype(np.float32)
        crowd /= np.linalg.norm(crowd, axis=1, keepdims=True)
        ids = index.put([message(f"n{n}", source="crowd", locator=n) for n in range(800)])
        index.store_vectors(ids, crowd)
        (mine,) = index.put([message("mine", scope="line:group:b", source="b")])
        index.store_vectors([mine], -crowd[:1])  # as far from the query as can be
        with db.atomic() as conn:
            # Make the graph the planner's only way, as it is on a big table.
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            plan = conn.execute(
                "EXPLAIN SELECT id FROM search_entries WHERE scope = ANY(%s)"
                " ORDER BY embedding <=> %s::vector LIMIT 10",
                (["line:group:b"], "[" + ",".join("0.05" for _ in range(384)) + "]"),
            ).fetchall()
            assert "search_entries_embedding" in " ".join(str(row) for row in plan)
            # The crowd fills the first candidates; the iterative scan walks on to "mine".
            small = index.vector_search(["line:group:b"], crowd[0], limit=5, now=NOW)
            assert [i for i, _ in small] == [mine]
            found = index.vector_search(["cli:a"], crowd[0], limit=5, now=NOW)
            assert found[0][0] == ids[0] and found[0][1] > 0.999
    finally:
        db.close()
