-- A run's billing subject belongs to the account's first run that named it (runs supplement
-- "Shell"): each create naming one asks who that was, by subject, oldest run first.
CREATE INDEX runs_billing_subject ON runs (billing_subject, id) WHERE billing_subject IS NOT NULL;
