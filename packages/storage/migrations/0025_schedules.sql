-- Schedules and their executions. A schedule row is its schedule actor's projection (inserted at
-- creation with the actor, then written only by its binding); next_run_at mirrors the actor's
-- durable timer. An execution names the child conversation an occurrence (or a run now) opened and
-- its first input; its status is read from that input, its turn and run (withdrawn_at: the cancel
-- that deleted the input while it was still queued), never stored.
CREATE TABLE schedules (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  workspace_id bigint NOT NULL REFERENCES workspaces (id),
  conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  creator_id bigint NOT NULL REFERENCES users (id),
  name text,
  prompt text NOT NULL,
  rule jsonb NOT NULL,
  policy jsonb NOT NULL,
  source_run_public_id uuid,
  source_task_key text,
  status text NOT NULL CHECK (status IN ('active', 'paused', 'canceled', 'completed')),
  next_run_at timestamptz,
  last_enqueued_at timestamptz,
  last_input_public_id uuid,
  last_error_code text,
  lock_version integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX schedules_conversation ON schedules (conversation_id, public_id);
CREATE INDEX schedules_workspace ON schedules (workspace_id, public_id);

CREATE TABLE schedule_executions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  schedule_id bigint NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
  child_conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  input_public_id uuid NOT NULL UNIQUE,
  scheduled_for timestamptz NOT NULL,
  settled_at timestamptz,
  withdrawn_at timestamptz,
  created_at timestamptz NOT NULL
);

CREATE INDEX schedule_executions_schedule ON schedule_executions (schedule_id, id);
CREATE INDEX schedule_executions_child ON schedule_executions (child_conversation_id);
