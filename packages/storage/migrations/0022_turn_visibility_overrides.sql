-- A conversation's own visibility for a turn it reads by reference (a fork's or side's inherited
-- turn): the change is child-local, the source's row and other forks untouched. Timeline reads take
-- the nearest override along the reading conversation's chain, else the turn's own visibility.
CREATE TABLE conversation_turn_visibility (
  conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  turn_id bigint NOT NULL REFERENCES conversation_turns (id) ON DELETE CASCADE,
  visibility text NOT NULL,
  PRIMARY KEY (conversation_id, turn_id)
);

CREATE INDEX conversation_turn_visibility_turn ON conversation_turn_visibility (turn_id);
