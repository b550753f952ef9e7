-- Durable messages between actors: a row written in the transaction of the step (or command)
-- that tells it, delivered after commit by the message runner (leased, FOR UPDATE SKIP LOCKED),
-- and settled in the receiving step's own transaction, so a redelivery is applied once.

CREATE TABLE actor_messages (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- the sending actor and the step that told it; null when told outside any actor's step
  from_kind text,
  from_actor_id uuid,
  from_seq bigint,
  to_kind text NOT NULL,
  to_actor_id uuid NOT NULL,
  event jsonb NOT NULL,
  state text NOT NULL CHECK (state IN ('pending', 'delivered', 'rejected')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  lease_until timestamptz,
  -- why a pending message waits, or why a rejected one was refused
  last_error text,
  created_at timestamptz NOT NULL,
  settled_at timestamptz,
  -- the receiver's seq whose step applied it
  settled_seq bigint
);

CREATE INDEX actor_messages_ready ON actor_messages (next_attempt_at) WHERE state = 'pending';
CREATE INDEX actor_messages_receiver ON actor_messages (to_kind, to_actor_id, id) WHERE state = 'pending';
CREATE INDEX actor_messages_settled ON actor_messages (settled_at) WHERE state <> 'pending';
