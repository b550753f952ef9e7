-- Connections: agents (users of kind agent with a steward), executor addresses, credential
-- lineages and credentials (access and refresh tokens, stored as lookup and salted digest), and
-- device authorizations.

ALTER TABLE users ADD COLUMN agent_identifier text;
ALTER TABLE users ADD COLUMN steward_id bigint REFERENCES users (id);
-- A human's shutdown generation advances when the human is removed; an agent records the one
-- of its steward it was connected under, and has authority only while they are equal.
ALTER TABLE users ADD COLUMN shutdown_generation integer NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN steward_generation integer;
ALTER TABLE users ADD CONSTRAINT users_agent_identity
  CHECK (kind <> 'agent' OR (agent_identifier IS NOT NULL AND steward_id IS NOT NULL AND steward_generation IS NOT NULL));

CREATE UNIQUE INDEX users_account_agent_identifier ON users (account_id, agent_identifier) WHERE kind = 'agent';

CREATE TABLE executors (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  account_id bigint NOT NULL REFERENCES accounts (id),
  kind text NOT NULL CHECK (kind IN ('agent_application', 'runner', 'tool_provider')),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
  display_name text NOT NULL,
  credential_epoch integer NOT NULL DEFAULT 1,
  -- the human who connected it (for an agent application: the agent's steward)
  manager_id bigint NOT NULL REFERENCES users (id),
  -- machines (runner, tool_provider): the client's registration identifier
  registration_identifier text,
  -- agent application: its agent; agent-bound machine: the agent it serves
  agent_id bigint REFERENCES users (id),
  assignment_scope text NOT NULL CHECK (assignment_scope IN ('agent_private', 'user_private', 'account_wide')),
  announcement jsonb NOT NULL DEFAULT '{"tools": [], "environment": null, "documents": []}',
  last_seen_at timestamptz,
  connected_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  revoked_at timestamptz,
  CHECK ((kind = 'agent_application') = (registration_identifier IS NULL)),
  CHECK (kind <> 'agent_application' OR agent_id IS NOT NULL)
);

CREATE UNIQUE INDEX executors_live_registration
  ON executors (account_id, manager_id, registration_identifier)
  WHERE status = 'active' AND registration_identifier IS NOT NULL;
CREATE UNIQUE INDEX executors_live_agent_application
  ON executors (agent_id) WHERE status = 'active' AND kind = 'agent_application';

CREATE TABLE credential_lineages (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  holder text NOT NULL CHECK (holder IN ('human', 'agent', 'runner')),
  client_id text NOT NULL,
  user_id bigint REFERENCES users (id),
  executor_id bigint REFERENCES executors (id),
  created_at timestamptz NOT NULL,
  revoked_at timestamptz
);

CREATE TABLE credentials (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
  plane text CHECK (plane IN ('platform', 'member', 'executor_transport')),
  lineage_id bigint REFERENCES credential_lineages (id),
  user_id bigint REFERENCES users (id),
  executor_id bigint REFERENCES executors (id),
  -- the authority epoch of the address this credential answers to, at issuance
  epoch integer,
  name text,
  lookup text NOT NULL UNIQUE,
  salt bytea NOT NULL,
  digest bytea NOT NULL,
  issued_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  superseded_at timestamptz,
  CHECK ((kind = 'access') = (plane IS NOT NULL))
);

CREATE INDEX credentials_lineage ON credentials (lineage_id);
CREATE INDEX credentials_user ON credentials (user_id);

CREATE TABLE device_authorizations (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  client_id text NOT NULL,
  branch text NOT NULL CHECK (branch IN ('agent', 'machine', 'combined')),
  request jsonb NOT NULL,
  device_lookup text NOT NULL UNIQUE,
  device_salt bytea NOT NULL,
  device_digest bytea NOT NULL,
  user_code text NOT NULL,
  state text NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'approved', 'consumed', 'denied', 'canceled', 'invalidated', 'expired')),
  interval_seconds integer NOT NULL DEFAULT 5,
  last_polled_at timestamptz,
  approved_by bigint REFERENCES users (id),
  assignment_scope text CHECK (assignment_scope IN ('agent_private', 'user_private', 'account_wide')),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);

CREATE UNIQUE INDEX device_authorizations_live_user_code
  ON device_authorizations (user_code) WHERE state IN ('pending', 'approved');
