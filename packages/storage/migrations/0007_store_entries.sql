-- Store entries: JSON values kept under (namespace, key) on a host. A host is named by its kind
-- and the internal id of the row it belongs to: 'profile' (the acting principal, users.id),
-- 'workspace' (workspaces.id) or 'conversation' (conversations.id). Hosts of several kinds share
-- one table, so there is no foreign key to the host row; a host's entries are unreachable once
-- its row is (tombstoned workspaces and conversations keep theirs).

-- One row per host that ever held an entry: creates lock it, so the per-host entry limit holds
-- under concurrent creates.
CREATE TABLE store_entry_hosts (
  host_kind text NOT NULL CHECK (host_kind IN ('profile', 'workspace', 'conversation')),
  host_id bigint NOT NULL,
  PRIMARY KEY (host_kind, host_id)
);

CREATE TABLE store_entries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  host_kind text NOT NULL CHECK (host_kind IN ('profile', 'workspace', 'conversation')),
  host_id bigint NOT NULL,
  -- byte order ("C"), so keyset pages are the same on every database and locale
  namespace text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  -- json, not jsonb: the value comes back with the member order it was written with
  value json NOT NULL,
  lock_version integer NOT NULL DEFAULT 0 CHECK (lock_version >= 0),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (host_kind, host_id, namespace, key)
);
