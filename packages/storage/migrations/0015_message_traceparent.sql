-- The W3C traceparent of the step (or command) that told a message, so the receiving step's trace
-- links back to it. Null when nothing was traced.
ALTER TABLE actor_messages ADD COLUMN traceparent text;
