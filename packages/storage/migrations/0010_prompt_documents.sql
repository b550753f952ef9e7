-- Prompt documents: text a prompt is assembled from, kept in named slots of a user (the profile
-- door: an agent's system_prompt and summarizer, a human's persona) or of a workspace (its
-- character). Which slots a door offers is the domain's rule. A delete empties the row instead of
-- removing it, so `version` keeps counting writes across a delete and a recreate.

CREATE TABLE prompt_documents (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id bigint REFERENCES users (id),
  workspace_id bigint REFERENCES workspaces (id),
  slot text NOT NULL CHECK (slot ~ '^[a-z][a-z_]{0,31}$'),
  role text NOT NULL CHECK (role IN ('system', 'developer', 'user')),
  -- null once deleted (the slot is empty)
  content text,
  bytesize integer NOT NULL CHECK (bytesize >= 0),
  -- the number of writes the slot has had
  version integer NOT NULL CHECK (version >= 1),
  written_at timestamptz NOT NULL,
  CHECK ((user_id IS NULL) <> (workspace_id IS NULL))
);

CREATE UNIQUE INDEX prompt_documents_user_slot ON prompt_documents (user_id, slot) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX prompt_documents_workspace_slot ON prompt_documents (workspace_id, slot) WHERE workspace_id IS NOT NULL;
