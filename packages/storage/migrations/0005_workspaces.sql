-- Workspaces: where content and execution live. The owner is always a human; an agent's create
-- is owned by its steward and dedicated to the agent (the dedication is frozen and never on the
-- wire). Lifecycle state is the workspace actor's; lock_version fences every mutation.

CREATE TABLE workspaces (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  account_id bigint NOT NULL REFERENCES accounts (id),
  owner_id bigint NOT NULL REFERENCES users (id),
  created_by bigint NOT NULL REFERENCES users (id),
  dedicated_agent_id bigint REFERENCES users (id),
  name text NOT NULL,
  access_mode text NOT NULL CHECK (access_mode IN ('account_wide', 'private')),
  metadata jsonb NOT NULL DEFAULT '{}',
  messaging jsonb NOT NULL DEFAULT '[]',
  tool_provider_overrides jsonb NOT NULL DEFAULT '{}',
  state text NOT NULL DEFAULT 'active'
    CHECK (state IN ('active', 'archiving', 'archived', 'restoring', 'tombstoned')),
  lock_version integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  tombstoned_at timestamptz
);

CREATE INDEX workspaces_account ON workspaces (account_id, public_id);
CREATE INDEX workspaces_owner ON workspaces (owner_id);
