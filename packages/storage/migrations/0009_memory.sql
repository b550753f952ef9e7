-- Memory documents: text under a path whose first segment is the scope (conversation, workspace,
-- user, agent, speaker). Each scope resolves to an anchor: the row the documents belong to
-- (a workspace, a conversation, a human, an agent; a speaker anchor is an agent and the speaker
-- it remembers). Anchors of several kinds share one table, so there is no foreign key to the
-- anchor row; an anchor's documents are unreachable once its row is (they are kept).

-- One row per anchor that ever held a document: writes lock it, so the 64-document limit holds
-- under concurrent creates.
CREATE TABLE memory_anchors (
  anchor_kind text NOT NULL CHECK (anchor_kind IN ('conversation', 'workspace', 'user', 'agent', 'speaker')),
  anchor_id bigint NOT NULL,
  -- the remembered speaker (users.id) of a speaker anchor, else 0
  speaker_id bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (anchor_kind, anchor_id, speaker_id)
);

CREATE TABLE memory_documents (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  anchor_kind text NOT NULL CHECK (anchor_kind IN ('conversation', 'workspace', 'user', 'agent', 'speaker')),
  anchor_id bigint NOT NULL,
  speaker_id bigint NOT NULL DEFAULT 0,
  -- the whole path, scope segment included; byte order ("C") so listings are the same everywhere
  path text COLLATE "C" NOT NULL,
  content text NOT NULL,
  -- only on <scope>/skills/<name> rows
  description text,
  -- UTF-8 bytes of content
  bytesize integer NOT NULL CHECK (bytesize >= 0),
  lock_version integer NOT NULL DEFAULT 0 CHECK (lock_version >= 0),
  -- when the content was last written (the age of the content, not of the row)
  written_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (anchor_kind, anchor_id, speaker_id, path)
);
