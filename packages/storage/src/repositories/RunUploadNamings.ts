// A run names the uploads it binds (spec "Member: uploads": bytes are readable by whoever can read
// a row naming the upload; unbound uploads are reclaimed after a day): `upload_namings` rows under
// the holder kind `run`, kept equal to what the run's task rows bind by the Runs repository's task
// writes, and dropped with the run (its reap, or its hosting conversation's deletion). What a run
// binds (docs/decisions.md): a task's `attachments` member naming an upload of the run's creator
// (a public id, or an object with `upload_public_id` or `public_id`), and a task result's
// `resource_link` to `svc://uploads/<id>`. The read rule is domain runs/RunNamingRule.ts.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** The holder kind of a run's namings (holder_id: runs.id). */
export const runNamingKind = "run"

const uuidText = "'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"

/**
 * A write whose text may bind an upload. The Runs repository rescans only after such a write, so a
 * write that binds none costs no statement; an upload only a replaced result linked stays named
 * until the next binding write of the run rescans, or the run goes.
 */
export const mayBindUploads = (json: string) => /"attachments"|svc:\/\/uploads\//i.test(json)

/** Names exactly the uploads the run's tasks bind now. */
export const syncRunNamings = Effect.fnUntraced(function* (runId: bigint) {
  const sql = yield* SqlClient
  yield* sql`
    WITH bound AS (
      SELECT u.id FROM runs r
        JOIN run_tasks t ON t.run_id = r.id
        CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(t.spec->'attachments') = 'array'
          THEN t.spec->'attachments' ELSE '[]'::jsonb END) a
        CROSS JOIN LATERAL (VALUES (CASE WHEN jsonb_typeof(a) = 'string' THEN lower(a #>> '{}') END),
          (lower(a->>'upload_public_id')), (lower(a->>'public_id'))) v(named)
        JOIN uploads u ON u.public_id = CASE WHEN v.named ~ ${sql.literal(uuidText)} THEN v.named::uuid END
          AND u.creator_user_id = r.creator_id
      WHERE r.id = ${runId}
      UNION
      SELECT u.id FROM run_tasks t
        CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(t.result->'content') = 'array'
          THEN t.result->'content' ELSE '[]'::jsonb END) b
        CROSS JOIN LATERAL (VALUES (CASE WHEN lower(b->>'uri') LIKE 'svc://uploads/%'
          THEN substr(lower(b->>'uri'), 15) END)) v(named)
        JOIN uploads u ON u.public_id = CASE WHEN v.named ~ ${sql.literal(uuidText)} THEN v.named::uuid END
      WHERE t.run_id = ${runId} AND b->>'type' = 'resource_link'),
    gone AS (
      DELETE FROM upload_namings
      WHERE holder_kind = ${runNamingKind} AND holder_id = ${runId} AND upload_id NOT IN (SELECT id FROM bound))
    INSERT INTO upload_namings (upload_id, holder_kind, holder_id)
    SELECT id, ${runNamingKind}, ${runId} FROM bound
    ON CONFLICT DO NOTHING`
})

/** The run is going: it names none of its uploads any more. */
export const dropRunNamings = Effect.fnUntraced(function* (runPublicId: string) {
  const sql = yield* SqlClient
  yield* sql`
    DELETE FROM upload_namings
    WHERE holder_kind = ${runNamingKind} AND holder_id = (SELECT id FROM runs WHERE public_id = ${runPublicId}::uuid)`
})

/** The runs a conversation hosts are going with it: their namings go first. */
export const dropHostedRunNamings = Effect.fnUntraced(function* (conversationId: bigint) {
  const sql = yield* SqlClient
  yield* sql`
    DELETE FROM upload_namings
    WHERE holder_kind = ${runNamingKind}
      AND holder_id IN (SELECT id FROM runs WHERE conversation_id = ${conversationId})`
})

/** Whether the run names the upload (what a claimant may read under its claim). */
export const runNamesUpload = Effect.fnUntraced(function* (runId: bigint, uploadId: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    SELECT 1 FROM upload_namings
    WHERE upload_id = ${uploadId} AND holder_kind = ${runNamingKind} AND holder_id = ${runId}`
  return rows.length > 0
})
