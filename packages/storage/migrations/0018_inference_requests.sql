-- Inference requests: the row is the actor's projection (status, usage, result, tombstone) written
-- only by its binding's row handlers, plus what the request asked for (written once, at acceptance).
-- attempt_text and attempt_reasoning gather the current attempt's streamed output until its end.
CREATE TABLE inference_requests (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  workspace_id bigint NOT NULL REFERENCES workspaces (id),
  creator_id bigint NOT NULL REFERENCES users (id),
  workload text NOT NULL,
  model jsonb NOT NULL,
  request jsonb NOT NULL,
  billing_subject text,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'canceled', 'timed_out')),
  usage_summary jsonb NOT NULL,
  attempt_text text NOT NULL DEFAULT '',
  attempt_reasoning text NOT NULL DEFAULT '',
  result jsonb,
  tombstoned_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX inference_requests_workspace ON inference_requests (workspace_id, public_id) WHERE tombstoned_at IS NULL;

-- Files an attempt produced (image and speech workloads), by index; a later attempt's replace an
-- earlier one's. Deleted with their request.
CREATE TABLE inference_output_files (
  request_id bigint NOT NULL REFERENCES inference_requests (id) ON DELETE CASCADE,
  index integer NOT NULL,
  filename text NOT NULL,
  content_type text NOT NULL,
  bytes bytea NOT NULL,
  PRIMARY KEY (request_id, index)
);
