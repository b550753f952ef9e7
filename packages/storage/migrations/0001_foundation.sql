-- Foundation: the installation's account, its people, their sessions, and the shared
-- stores every route leans on (idempotency receipts, rate-limit windows, installation secrets).
-- Internal keys are bigint identities that never leave the database; public ids are UUIDv7.

CREATE TABLE installation_secrets (
  name text PRIMARY KEY,
  value bytea NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE accounts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  -- one account per installation
  singleton boolean NOT NULL DEFAULT true UNIQUE CHECK (singleton),
  created_at timestamptz NOT NULL
);

CREATE TABLE users (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  account_id bigint NOT NULL REFERENCES accounts (id),
  kind text NOT NULL CHECK (kind IN ('human', 'agent', 'system')),
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'removed')),
  email text,
  password_digest text,
  display_name text NOT NULL,
  handle text NOT NULL CHECK (handle ~ '^[a-z0-9][a-z0-9_-]{1,31}$'),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (account_id, handle),
  CHECK (kind <> 'human' OR (email IS NOT NULL AND password_digest IS NOT NULL))
);

CREATE UNIQUE INDEX users_account_email ON users (account_id, lower(email)) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_account_owner ON users (account_id) WHERE role = 'owner';
CREATE UNIQUE INDEX users_account_system ON users (account_id) WHERE kind = 'system';

CREATE TABLE sessions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  user_id bigint NOT NULL REFERENCES users (id),
  kind text NOT NULL CHECK (kind IN ('api', 'browser')),
  lookup text NOT NULL UNIQUE,
  salt bytea NOT NULL,
  digest bytea NOT NULL,
  issued_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);

CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE idempotency_receipts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  caller text NOT NULL,
  route text NOT NULL,
  key text NOT NULL,
  request_digest bytea NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'completed')),
  response_status integer,
  response_headers jsonb,
  response_body text,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  UNIQUE (caller, route, key)
);

CREATE INDEX idempotency_receipts_expiry ON idempotency_receipts (expires_at);

CREATE TABLE rate_limit_windows (
  scope text NOT NULL,
  subject text NOT NULL,
  window_start timestamptz NOT NULL,
  hits integer NOT NULL,
  PRIMARY KEY (scope, subject, window_start)
);
