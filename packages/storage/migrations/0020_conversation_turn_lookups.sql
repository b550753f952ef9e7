-- Lookups the conversation projections make: the turn pending or running in a conversation's
-- reply lane (active_turn_public_id, and DELETE's busy tree), and the conversations a principal
-- answers or has spoken in (handle_changed is narrated on their feeds).
CREATE INDEX conversation_turns_live ON conversation_turns (conversation_id) WHERE status IN ('pending', 'running');
CREATE INDEX conversation_turns_speaker ON conversation_turns (speaker_id) WHERE speaker_id IS NOT NULL;
CREATE INDEX conversations_answerer ON conversations (answerer_id) WHERE state <> 'tombstoned';
