-- Conversations, their input queues, turns and variants. Each row set is its conversation actor's
-- projection, written only by its binding's row handlers (the conversation row is inserted at
-- creation, with the actor, in one transaction). Inherited turns are never copied: a fork reads its
-- source's turns below forked_position by reference.
CREATE TABLE conversations (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  workspace_id bigint NOT NULL REFERENCES workspaces (id),
  creator_id bigint NOT NULL REFERENCES users (id),
  answerer_id bigint NOT NULL REFERENCES users (id),
  title text,
  metadata jsonb NOT NULL DEFAULT '{}',
  billing_subject text,
  source_conversation_id bigint REFERENCES conversations (id),
  forked_position integer,
  forked_from_turn_public_id uuid,
  forked_from_variant_public_id uuid,
  parent_id bigint REFERENCES conversations (id),
  spawn_node_key text,
  label text,
  side boolean NOT NULL DEFAULT false,
  state text NOT NULL CHECK (state IN ('active', 'archived', 'tombstoned')),
  archived_at timestamptz,
  tombstoned_at timestamptz,
  default_runner_executor_id bigint REFERENCES executors (id),
  access jsonb NOT NULL,
  memory_context jsonb,
  context jsonb,
  usage_summary jsonb NOT NULL,
  lock_version integer NOT NULL DEFAULT 0,
  context_revision integer NOT NULL DEFAULT 0,
  last_reply_model text,
  last_activity_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX conversations_workspace ON conversations (workspace_id, public_id) WHERE state <> 'tombstoned';
CREATE INDEX conversations_activity ON conversations (workspace_id, last_activity_at, public_id) WHERE state <> 'tombstoned';
CREATE INDEX conversations_parent ON conversations (parent_id) WHERE parent_id IS NOT NULL;
CREATE INDEX conversations_source ON conversations (source_conversation_id) WHERE source_conversation_id IS NOT NULL;

CREATE TABLE conversation_inputs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  queue_position integer NOT NULL,
  kind text NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'steering', 'blocked', 'consumed')),
  blocked_reason text,
  delivery_mode text NOT NULL,
  role text NOT NULL,
  origin text NOT NULL,
  author_id bigint NOT NULL REFERENCES users (id),
  speaker_id bigint NOT NULL REFERENCES users (id),
  answerer_id bigint REFERENCES users (id),
  text text NOT NULL DEFAULT '',
  members jsonb NOT NULL,
  deliver_at timestamptz,
  lock_version integer NOT NULL DEFAULT 0,
  turn_public_id uuid,
  variant_public_id uuid,
  consumed_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX conversation_inputs_queue ON conversation_inputs (conversation_id, queue_position) WHERE state <> 'consumed';

CREATE TABLE conversation_turns (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  position integer NOT NULL,
  kind text NOT NULL,
  role text NOT NULL,
  status text NOT NULL,
  visibility text NOT NULL DEFAULT 'visible',
  origin text NOT NULL,
  answerer_id bigint REFERENCES users (id),
  speaker_id bigint REFERENCES users (id),
  prompt_text text,
  input_public_id uuid,
  active_variant_public_id uuid,
  failure_reason_key text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (conversation_id, position)
);

CREATE TABLE conversation_variants (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  turn_id bigint NOT NULL REFERENCES conversation_turns (id) ON DELETE CASCADE,
  source text NOT NULL,
  status text NOT NULL,
  model jsonb,
  content text NOT NULL DEFAULT '',
  usage jsonb,
  failure_reason_key text,
  origin_variant_public_id uuid,
  inference_request_public_id uuid,
  run_public_id uuid,
  concealed boolean NOT NULL DEFAULT false,
  memory_context jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX conversation_variants_turn ON conversation_variants (turn_id, id);

-- A conversation's reply samples are inference requests it asked: hidden from the inference
-- request doors, told back to the conversation when they end.
ALTER TABLE inference_requests ADD COLUMN asked_by_conversation_id bigint REFERENCES conversations (id) ON DELETE CASCADE;
