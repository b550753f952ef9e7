// The conversation level rule in SQL (domain conversations/Standing.ts `levelOf` is its TypeScript
// form; the two must agree): for the user `userId`, a conversation `c` is not at level none when
// it is the creator or the answerer, else by its access entry, else access.default, "full" unset.
import type { SqlClient } from "effect/sql/SqlClient"

/** The condition that the conversation aliased `c` is not at level none for the user `userId`. */
export const levelNotNone = (sql: SqlClient, userId: bigint) => sql`
  (c.creator_id = ${userId} OR c.answerer_id = ${userId} OR COALESCE(
    (SELECT e->>'level' FROM jsonb_array_elements(
       CASE WHEN jsonb_typeof(c.access->'entries') = 'array' THEN c.access->'entries' ELSE '[]'::jsonb END) e
     WHERE e->>'user_id' = ${String(userId)} LIMIT 1),
    c.access->>'default', 'full') <> 'none')`
