-- The run inputs door of a standalone run (runs supplement "Tool catalog, default runner, run
-- inputs"): message rows queued (or steering) until they land as a mainline round. Written only
-- by the run's binding; the run's snapshot holds the queue's order and times.
CREATE TABLE run_inputs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  run_id bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  author_id bigint NOT NULL REFERENCES users (id),
  text text NOT NULL,
  delivery_mode text NOT NULL CHECK (delivery_mode IN ('queue', 'steer')),
  state text NOT NULL CHECK (state IN ('pending', 'steering', 'consumed')),
  queue_position integer NOT NULL,
  lock_version integer NOT NULL DEFAULT 0,
  deliver_at timestamptz,
  task_key text,
  idempotency_key text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX run_inputs_run ON run_inputs (run_id, queue_position);
