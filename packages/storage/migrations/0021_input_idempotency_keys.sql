-- The Idempotency-Key an input was accepted under, kept with the row in the accepting step: a
-- retry whose receipt its process never completed (killed between the step's commit and the
-- receipt) finds the row its key already made instead of making a second one.
ALTER TABLE conversation_inputs ADD COLUMN idempotency_key text;

CREATE UNIQUE INDEX conversation_inputs_idempotency_key ON conversation_inputs (conversation_id, author_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
