-- An actor's context parts (Binding.parts): members of its snapshot's context that are arrays kept
-- here, one row per element (by its key, at its position), instead of inside the snapshot's JSON,
-- so a step writes only the elements it changed. They go with their snapshot row.
-- Reads filter by the primary key's prefix and sort one actor's rows by position in memory
-- (an ordered aggregate sorts its input anyway), so no index by position.
CREATE TABLE actor_parts (
  kind text NOT NULL,
  actor_id uuid NOT NULL,
  part text NOT NULL,
  key text NOT NULL,
  position integer NOT NULL,
  value jsonb NOT NULL,
  PRIMARY KEY (kind, actor_id, part, key),
  FOREIGN KEY (kind, actor_id) REFERENCES actor_snapshots (kind, actor_id) ON DELETE CASCADE
);
