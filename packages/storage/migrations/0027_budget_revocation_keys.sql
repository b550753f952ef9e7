-- Budgets (supplement "Budgets"): the Idempotency-Key a budget was revoked under, so a revocation
-- retried after its receipt was lost (the commit landed, the answer did not) answers the original.
ALTER TABLE budgets ADD COLUMN revocation_key text;
