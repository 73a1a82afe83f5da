"""Text search reads less:

- each indexed row's length in tokens, as SQLite's FTS5 counts it for BM25: every
  occurrence in every column (words, CJK grams, extra text), repeats included, where a
  tsvector's `length` counts distinct words. Kept by PostgreSQL from `terms` itself, so
  every way a row is written (a store, a copy, a bulk load) has it;
- an entry's vector (1.5 KB) is stored out of line, its terms and text in the row: a
  text search reads every row a query's words match, and with the vector inline a page
  held three or four of them (1.6x faster at 100,000 entries; vector search reads the
  HNSW index, and the few vectors it then needs, as fast). Rows written before move when
  rewritten (a vector stored, `VACUUM FULL search_entries`)."""

SQL = """
CREATE FUNCTION lore_tokens(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1) $$;

ALTER TABLE search_entries ADD COLUMN tokens integer NOT NULL
    GENERATED ALWAYS AS (lore_tokens(terms)) STORED;
ALTER TABLE memories ADD COLUMN tokens integer
    GENERATED ALWAYS AS (lore_tokens(terms)) STORED;

ALTER TABLE search_entries ALTER COLUMN embedding SET STORAGE EXTERNAL;
ALTER TABLE search_entries ALTER COLUMN terms SET STORAGE MAIN;
ALTER TABLE search_entries ALTER COLUMN text SET STORAGE MAIN;
ALTER TABLE search_entries SET (toast_tuple_target = 128);
"""
