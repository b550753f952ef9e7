-- Authorization codes of the application client (PKCE S256): five minutes, single use, bound to
-- the client, the callback, the challenge and the approved consequence.

CREATE TABLE authorization_codes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  lookup text NOT NULL UNIQUE,
  salt bytea NOT NULL,
  digest bytea NOT NULL,
  client_id text NOT NULL,
  redirect_uri text NOT NULL,
  code_challenge text NOT NULL,
  consequence jsonb NOT NULL,
  approved_by bigint NOT NULL REFERENCES users (id),
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
