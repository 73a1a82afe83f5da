"""In-memory implementations of every port: no SQLite, no files. Memories, reminders,
the outbox and the chat ledger run the same flows as the databases (`lore.backends.*_flow`,
`memory_reads`, `memory_writes`) over dicts, and the suites in tests/contract hold every
fake to the contract the other backends keep, so a test of a feature or a channel can use
them instead of a home directory."""
