"""Each indexed row's length in tokens, as SQLite's FTS5 counts it for BM25: every
occurrence in every column (words, CJK grams, extra text), repeats included, where a
tsvector's `length` counts distinct words. Kept by PostgreSQL from `terms` itself, so
every way a row is written (a store, a copy, a bulk load) has it."""

SQL = """
CREATE FUNCTION lore_tokens(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1) $$;

ALTER TABLE search_entries ADD COLUMN tokens integer NOT NULL
    GENERATED ALWAYS AS (lore_tokens(terms)) STORED;
ALTER TABLE memories ADD COLUMN tokens integer
    GENERATED ALWAYS AS (lore_tokens(terms)) STORED;
"""
