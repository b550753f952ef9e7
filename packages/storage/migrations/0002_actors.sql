-- The actor runtime: snapshots (seq-fenced), the journal of steps, durable timers, after-commit
-- jobs, dead letters, per-stream outbox items, and the audit trail of operator actions.

CREATE TABLE actor_snapshots (
  kind text NOT NULL,
  actor_id uuid NOT NULL,
  machine text NOT NULL,
  version integer NOT NULL,
  seq bigint NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'done', 'error')),
  state_value text NOT NULL,
  snapshot jsonb NOT NULL,
  quarantined_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (kind, actor_id)
);

CREATE INDEX actor_snapshots_state ON actor_snapshots (kind, state_value);

CREATE TABLE actor_journal (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind text NOT NULL,
  actor_id uuid NOT NULL,
  seq bigint NOT NULL,
  event_type text NOT NULL,
  event jsonb NOT NULL,
  from_state text,
  to_state text NOT NULL,
  actions jsonb NOT NULL,
  at timestamptz NOT NULL,
  UNIQUE (kind, actor_id, seq)
);

CREATE TABLE actor_timers (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind text NOT NULL,
  actor_id uuid NOT NULL,
  timer_id text NOT NULL,
  event jsonb NOT NULL,
  due_at timestamptz NOT NULL,
  set_at_seq bigint NOT NULL,
  UNIQUE (kind, actor_id, timer_id)
);

CREATE INDEX actor_timers_due ON actor_timers (due_at);

CREATE TABLE actor_jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind text NOT NULL,
  actor_id uuid NOT NULL,
  seq bigint NOT NULL,
  action_index integer NOT NULL,
  name text NOT NULL,
  params jsonb NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'done')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  lease_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  UNIQUE (kind, actor_id, seq, action_index)
);

CREATE INDEX actor_jobs_ready ON actor_jobs (next_attempt_at) WHERE state = 'pending';
CREATE INDEX actor_jobs_actor ON actor_jobs (kind, actor_id) WHERE state = 'pending';

CREATE TABLE actor_dead_letters (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind text NOT NULL,
  actor_id uuid NOT NULL,
  event jsonb NOT NULL,
  error text NOT NULL,
  attempts integer NOT NULL,
  at timestamptz NOT NULL
);

CREATE INDEX actor_dead_letters_actor ON actor_dead_letters (kind, actor_id);

CREATE TABLE stream_heads (
  stream text PRIMARY KEY,
  last_sequence bigint NOT NULL
);

CREATE TABLE outbox_items (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  stream text NOT NULL,
  sequence bigint NOT NULL,
  public_id uuid NOT NULL UNIQUE,
  type text NOT NULL,
  resource_type text NOT NULL,
  resource_public_id uuid NOT NULL,
  payload jsonb NOT NULL,
  occurred_at timestamptz NOT NULL,
  UNIQUE (stream, sequence)
);

CREATE INDEX outbox_items_occurred ON outbox_items (occurred_at);

CREATE TABLE audit_events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id bigint REFERENCES users (id),
  action text NOT NULL,
  target text NOT NULL,
  details jsonb NOT NULL,
  at timestamptz NOT NULL
);

ALTER TABLE sessions
  ADD COLUMN state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'revoked', 'expired'));
