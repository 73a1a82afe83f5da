"""Scheduled tasks and their runs: a task's `due_at` is its next run time (whole seconds
since the epoch); a run is one occurrence under a unique key, leased (owner, until) by
the worker running its turn, and ends done or failed with the reason kept."""

SQL = """
CREATE TABLE IF NOT EXISTS tasks (
    id           INTEGER PRIMARY KEY,
    scope        TEXT    NOT NULL,
    author       TEXT    NOT NULL DEFAULT '',
    prompt       TEXT    NOT NULL,
    due_at       REAL    NOT NULL,
    timezone     TEXT    NOT NULL,
    recurrence   TEXT,
    anchor_at    REAL    NOT NULL,
    status       TEXT    NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'finished', 'cancelled')),
    channel      TEXT    NOT NULL DEFAULT '',
    trust        TEXT    NOT NULL DEFAULT 'owner',
    max_rounds   INTEGER NOT NULL,
    max_seconds  INTEGER NOT NULL,
    created_at   REAL    NOT NULL,
    run_count    INTEGER NOT NULL DEFAULT 0,
    cancelled_at REAL
);
CREATE INDEX IF NOT EXISTS tasks_due ON tasks (status, due_at);
CREATE INDEX IF NOT EXISTS tasks_scope ON tasks (scope, status, due_at);
CREATE TABLE IF NOT EXISTS task_runs (
    id          INTEGER PRIMARY KEY,
    task_id     INTEGER NOT NULL,
    key         TEXT    NOT NULL UNIQUE,
    scope       TEXT    NOT NULL,
    due_at      REAL    NOT NULL,
    late        INTEGER NOT NULL DEFAULT 0,
    status      TEXT    NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'done', 'failed')),
    attempts    INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until REAL,
    error       TEXT    NOT NULL DEFAULT '',
    created_at  REAL    NOT NULL,
    finished_at REAL
);
CREATE INDEX IF NOT EXISTS task_runs_open ON task_runs (status, id);
CREATE INDEX IF NOT EXISTS task_runs_task ON task_runs (task_id, id);
"""
