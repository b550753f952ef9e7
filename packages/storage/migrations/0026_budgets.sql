-- Budgets (spec "Budget", supplement "Budgets"): the account's cost unit (configured once), a
-- user's budgets with their windows and running totals, the ledger of credits and debits (exact
-- numeric amounts), and which budget admitted each inference request (settlement debits it).
ALTER TABLE accounts ADD COLUMN cost_unit text CHECK (cost_unit ~ '^[A-Z][A-Z0-9_]{0,15}$');

CREATE TABLE budgets (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  user_id bigint NOT NULL REFERENCES users (id),
  cost_unit text NOT NULL,
  credited_amount numeric NOT NULL DEFAULT 0 CHECK (credited_amount >= 0),
  debited_amount numeric NOT NULL DEFAULT 0 CHECK (debited_amount >= 0),
  -- the sequence of the last ledger entry: entries are numbered 1, 2, ... under the row's lock
  entry_count integer NOT NULL DEFAULT 0,
  starts_at timestamptz NOT NULL,
  expires_at timestamptz CHECK (expires_at IS NULL OR expires_at > starts_at),
  revoked_at timestamptz,
  revocation_reason text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE INDEX budgets_user ON budgets (user_id, starts_at);

CREATE TABLE budget_entries (
  budget_id bigint NOT NULL REFERENCES budgets (id),
  sequence integer NOT NULL,
  kind text NOT NULL CHECK (kind IN ('credit', 'debit')),
  amount numeric NOT NULL CHECK (amount > 0),
  reason text NOT NULL,
  -- the Idempotency-Key of an administrator's write, or usage:<usage_record_public_id>
  operation_key text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (budget_id, sequence),
  UNIQUE (budget_id, operation_key)
);

-- The budget that admitted an inference request (none when its payer had no usable budget).
CREATE TABLE budget_admissions (
  inference_request_id bigint PRIMARY KEY REFERENCES inference_requests (id) ON DELETE CASCADE,
  budget_id bigint NOT NULL REFERENCES budgets (id),
  created_at timestamptz NOT NULL
);
