-- What an authorization code issued, so that presenting it again ends it (RFC 6749 §4.1.2): the
-- public ids of the lineages its exchange started, and when it was first presented again (an
-- exchange still under way then issues nothing).
ALTER TABLE authorization_codes
  ADD COLUMN issued_lineages uuid[] NOT NULL DEFAULT '{}',
  ADD COLUMN replayed_at timestamptz;
