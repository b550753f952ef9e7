-- Runs and their tasks: each run's rows are its actor's projection, written only by its binding's
-- row handlers (the run and its first tasks are inserted at creation, with the actor, in one
-- transaction). A task's inputs (spec) and results live on its row; its inbox columns say where it
-- is listed. A run's model rounds are hidden inference requests it asked.
CREATE TABLE runs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  workspace_id bigint NOT NULL REFERENCES workspaces (id),
  -- hosted runs: the conversation and its hosting turn (null standalone)
  conversation_id bigint REFERENCES conversations (id) ON DELETE CASCADE,
  turn_public_id uuid,
  creator_id bigint NOT NULL REFERENCES users (id),
  status text NOT NULL
    CHECK (status IN ('pending', 'running', 'paused', 'needs_attention', 'canceling', 'completed', 'canceled')),
  -- {reason, blocked_task_keys, blocked_task_overflow?}
  attention jsonb,
  approval_mode text NOT NULL,
  approval_rules jsonb NOT NULL,
  prompt_mechanism text NOT NULL,
  billing_subject text,
  requester_speaker_id bigint REFERENCES users (id),
  default_runner_id bigint REFERENCES executors (id),
  model_selection jsonb,
  fallback_models jsonb NOT NULL DEFAULT '[]',
  revision integer NOT NULL,
  deliverable_task_key text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  started_at timestamptz,
  paused_at timestamptz,
  completed_at timestamptz,
  tombstoned_at timestamptz
);

CREATE INDEX runs_workspace ON runs (workspace_id, public_id) WHERE tombstoned_at IS NULL;
CREATE INDEX runs_conversation ON runs (conversation_id) WHERE conversation_id IS NOT NULL;

CREATE TABLE run_tasks (
  run_id bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key text NOT NULL,
  -- authoring order
  position integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('model_task', 'tool_task', 'await_task', 'join_task')),
  await_kind text CHECK (await_kind IN ('ask', 'wait')),
  status text NOT NULL CHECK (status IN ('waiting', 'needs_approval', 'running', 'dispatched', 'awaiting_input',
    'completed', 'failed', 'canceled', 'timed_out', 'uncertain', 'skipped')),
  generation integer NOT NULL,
  origin text NOT NULL,
  visibility text NOT NULL,
  mainline boolean NOT NULL,
  -- the keys it waits on
  after jsonb NOT NULL,
  on_failure text NOT NULL,
  failure_resolution text,
  error jsonb,
  tool_name text,
  tool_alias text,
  tool_call_id text,
  -- a runner target (frozen at acceptance); pool rows go to the tool providers announcing tool_name
  target_executor_id bigint REFERENCES executors (id),
  pool boolean NOT NULL DEFAULT false,
  -- listed on an executor inbox while set: tool_call | ask | approval
  inbox_kind text CHECK (inbox_kind IN ('tool_call', 'ask', 'approval')),
  -- the addressee of a listed row (null for a pool row)
  inbox_executor_id bigint REFERENCES executors (id),
  claimed_by_executor_id bigint REFERENCES executors (id),
  -- SHA-256 of the claim token (the token itself is never stored)
  claim_token_digest text,
  claimed boolean NOT NULL DEFAULT false,
  timeout_ms integer,
  deadline_at timestamptz,
  dispatched_at timestamptz,
  approval jsonb,
  -- what the task read shows of its inputs (prompt, options, multi, instructions, model, tool_input, ...)
  spec jsonb NOT NULL,
  -- its result (output, content, structured_content, is_error, title, metadata, result_type)
  result jsonb,
  inference_request_id bigint REFERENCES inference_requests (id) ON DELETE SET NULL,
  usage jsonb,
  created_at timestamptz NOT NULL,
  started_at timestamptz,
  completed_at timestamptz,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, key),
  -- a listed row's dispatch time orders its inbox
  CHECK (inbox_kind IS NULL OR dispatched_at IS NOT NULL)
);

CREATE INDEX run_tasks_inbox ON run_tasks (inbox_executor_id, dispatched_at, key) WHERE inbox_kind IS NOT NULL;
CREATE INDEX run_tasks_claimed ON run_tasks (claimed_by_executor_id) WHERE inbox_kind IS NOT NULL;
CREATE INDEX run_tasks_pool ON run_tasks (tool_name)
  WHERE pool AND inbox_kind IS NOT NULL AND claimed_by_executor_id IS NULL;

-- A run's model round is an inference request it asked: hidden from the inference request doors
-- (as a conversation's reply samples are), told back to the run's task when it ends.
ALTER TABLE inference_requests ADD COLUMN asked_by_run_id bigint REFERENCES runs (id) ON DELETE CASCADE;
ALTER TABLE inference_requests ADD COLUMN asked_by_run_task_key text;

CREATE INDEX inference_requests_run ON inference_requests (asked_by_run_id) WHERE asked_by_run_id IS NOT NULL;
