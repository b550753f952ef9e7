-- Bus notices of committed steps waiting to be NOTIFYed (actors/src/Notices.ts): a step that
-- commits while others are committing queues its notices here, in its own statement, instead of
-- NOTIFYing them itself (a NOTIFY holds a database-wide lock through its transaction's commit and
-- WAL flush); a sender deletes and NOTIFYs them in batches whose commits wait for no flush.
CREATE TABLE actor_notices (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel text NOT NULL,
  payload text NOT NULL
);
