-- Named agents and handles: an agent's declared configuration (null until declared), named
-- agent definitions (agent users declared by a paired agent, with no credential or address of
-- their own), and the name each user's latest handle rename released, reserved for 14 days.

ALTER TABLE users ADD COLUMN configuration jsonb;

CREATE TABLE named_agents (
  user_id bigint PRIMARY KEY REFERENCES users (id),
  -- the paired agent that declared it (its agent_identifier prefixes the definition's)
  derived_from_id bigint NOT NULL REFERENCES users (id),
  name text NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{1,31}$'),
  scope text NOT NULL CHECK (scope IN ('instance', 'steward')),
  description text NOT NULL,
  system_prompt text,
  -- advances on every write; a write prepared against another revision is a concurrent write
  revision integer NOT NULL DEFAULT 1,
  UNIQUE (derived_from_id, name)
);

CREATE INDEX named_agents_scope ON named_agents (scope);

CREATE TABLE handle_reservations (
  -- only the latest released name of a user is reserved
  user_id bigint PRIMARY KEY REFERENCES users (id),
  account_id bigint NOT NULL REFERENCES accounts (id),
  handle text NOT NULL,
  released_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);

CREATE INDEX handle_reservations_handle ON handle_reservations (account_id, handle, expires_at);
