-- Uploads (spec "Upload", supplement "Uploads"): files handed in by members, signed-in humans and
-- executors. Their bytes live in the content-addressed blob store on disk (storage/src/BlobStore.ts,
-- blobs/<first two hex digits>/<sha256>), never in rows; the rows say what each upload is and who
-- made it, which rows name it, and which representations (thumbnail, preview) were rendered.

-- One row per distinct content in the blob store. Uploads of the same bytes share it; its row
-- lock serializes putting the file in place (an ingest) against taking it away (the reaper), and
-- it goes, with its file and its representations, once no upload names it.
CREATE TABLE upload_blobs (
  sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  byte_size integer NOT NULL CHECK (byte_size BETWEEN 0 AND 104857600),
  created_at timestamptz NOT NULL
);

CREATE TABLE uploads (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  public_id uuid NOT NULL UNIQUE,
  -- the creator: a member (an agent, or a human at the member or browser door), or an executor
  creator_user_id bigint REFERENCES users (id),
  creator_executor_id bigint REFERENCES executors (id),
  -- sanitized, extension corrected for detected media (domain/src/uploads/UploadNames.ts)
  filename text NOT NULL CHECK (filename <> '' AND octet_length(filename) <= 255),
  -- detected from the bytes, never the declared type
  content_type text NOT NULL CHECK (content_type IN (
    'image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf',
    'audio/wav', 'audio/mpeg', 'audio/ogg', 'audio/flac', 'audio/mp4',
    'video/mp4', 'video/webm', 'text/plain', 'application/octet-stream'
  )),
  byte_size integer NOT NULL CHECK (byte_size BETWEEN 0 AND 104857600),
  sha256 text NOT NULL REFERENCES upload_blobs (sha256),
  created_at timestamptz NOT NULL,
  CHECK ((creator_user_id IS NULL) <> (creator_executor_id IS NULL))
);

CREATE INDEX uploads_sha256 ON uploads (sha256);
CREATE INDEX uploads_created_at ON uploads (created_at);

-- The rows that name an upload (an inference request's upload_public_ids, an input's
-- attachments, ...): each naming feature writes its rows here beside its own, under a holder kind
-- of its choosing, and removes them with it. An upload no row names is reaped 24 hours after
-- created_at; a named one lives while a naming row does (no cascade: a named upload is never
-- deleted). Whoever can read a naming row may read the upload's bytes (domain/src/uploads/UploadAccess.ts).
CREATE TABLE upload_namings (
  upload_id bigint NOT NULL REFERENCES uploads (id),
  holder_kind text NOT NULL,
  holder_id bigint NOT NULL,
  PRIMARY KEY (upload_id, holder_kind, holder_id)
);

CREATE INDEX upload_namings_holder ON upload_namings (holder_kind, holder_id);

-- Representations rendered on first read and kept, per blob: the file is
-- blobs/<aa>/<sha256>.<kind>. A row without content_type records bytes that could not be
-- rendered, so they are not tried again.
CREATE TABLE upload_representations (
  sha256 text NOT NULL REFERENCES upload_blobs (sha256) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('thumbnail', 'preview')),
  content_type text CHECK (content_type IN ('image/png', 'image/jpeg')),
  byte_size integer CHECK (byte_size >= 0),
  width integer CHECK (width >= 1),
  height integer CHECK (height >= 1),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (sha256, kind),
  CHECK ((content_type IS NULL) = (byte_size IS NULL) AND (byte_size IS NULL) = (width IS NULL)
    AND (width IS NULL) = (height IS NULL))
);
