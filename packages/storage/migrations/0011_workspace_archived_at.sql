-- Workspaces carry archived_at: the instant archival was accepted, null while live (restoration
-- clears it). Workspaces already archived take their last change as that instant.

ALTER TABLE workspaces ADD COLUMN archived_at timestamptz;

UPDATE workspaces SET archived_at = updated_at WHERE state IN ('archiving', 'archived');
