-- Node lifetimes: one row per server process start. A pending idempotency receipt records the
-- lifetime that claimed it, so a retry can tell a request that died with its process (take it
-- over now) from one another live process is still running (wait). On PostgreSQL a lifetime is
-- alive while its process holds an advisory lock on its id (storage/src/NodeLifetime.ts) on a
-- session of its own; on the embedded database every lifetime but the current one is over.

CREATE TABLE node_lifetimes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  started_at timestamptz NOT NULL,
  -- set by a clean stop, or by the next start on the embedded database
  ended_at timestamptz
);

-- null for receipts claimed before lifetimes existed: only the age rule applies to them
ALTER TABLE idempotency_receipts ADD COLUMN lifetime_id bigint;
