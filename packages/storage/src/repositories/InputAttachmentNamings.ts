// A conversation input names the uploads its attachments bind (spec "Member: uploads": bytes are
// readable by whoever can read a row naming the upload; unbound uploads are reclaimed after a
// day): `upload_namings` rows under the holder kind `conversation_input`, kept equal to the
// input's `members.attachments` by the Conversations repository's input writes, and the read rule
// (whoever sees the input's conversation, as domain conversations/Standing.ts judges it).
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { levelNotNone } from "./ConversationLevel.ts"
import * as Rows from "./Rows.ts"

/** The holder kind of an input's namings. */
export const inputNamingKind = "conversation_input"

/** The input is going: it names none of its uploads any more. */
export const dropInputNamings = Effect.fnUntraced(function* (inputPublicId: string) {
  const sql = yield* SqlClient
  yield* sql`
    DELETE FROM upload_namings
    WHERE holder_kind = ${inputNamingKind}
      AND holder_id = (SELECT id FROM conversation_inputs WHERE public_id = ${inputPublicId})`
})

/** Whether an input's members (as stored) bind any attachment: only then has it namings to write. */
export const bindsAttachments = (membersJson: string) => {
  const members: unknown = JSON.parse(membersJson)
  return (
    typeof members === "object" &&
    members !== null &&
    Array.isArray((members as { attachments?: unknown }).attachments) &&
    (members as { attachments: ReadonlyArray<unknown> }).attachments.length > 0
  )
}

/** Names the uploads the input's attachments bind (a new input: it names none yet). */
export const nameInputUploads = Effect.fnUntraced(function* (inputPublicId: string) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO upload_namings (upload_id, holder_kind, holder_id)
    SELECT DISTINCT u.id, ${inputNamingKind}, i.id
    FROM conversation_inputs i
    CROSS JOIN LATERAL jsonb_array_elements(
      CASE WHEN jsonb_typeof(i.members->'attachments') = 'array' THEN i.members->'attachments' ELSE '[]'::jsonb END) a
    JOIN uploads u ON u.public_id = CASE
      WHEN a->>'public_id' ~ '^[0-9a-fA-F-]{36}$' THEN (a->>'public_id')::uuid END
    WHERE i.public_id = ${inputPublicId}
    ON CONFLICT DO NOTHING`
})

/** Names exactly the uploads the input's attachments bind now. */
export const syncInputNamings = Effect.fnUntraced(function* (inputPublicId: string) {
  yield* dropInputNamings(inputPublicId)
  yield* nameInputUploads(inputPublicId)
})

/** The inputs of a conversation are going: their namings go first. */
export const dropConversationNamings = Effect.fnUntraced(function* (conversationId: bigint) {
  const sql = yield* SqlClient
  yield* sql`
    DELETE FROM upload_namings
    WHERE holder_kind = ${inputNamingKind}
      AND holder_id IN (SELECT id FROM conversation_inputs WHERE conversation_id = ${conversationId})`
})

const readable = Rows.one("InputAttachmentNamings.readableBy", {
  Request: Schema.Struct({ userId: Schema.BigInt, inputIds: Schema.Array(Schema.BigInt) }),
  Result: Schema.Struct({ readable: Schema.Boolean }),
  // The conversation read rule for the member `userId`: its human (itself, or an agent's steward)
  // sees the workspace (its account, not tombstoned, owned by it or account wide); the
  // conversation is not tombstoned; its level is not none (full for the creator and the answerer,
  // else the caller's access entry, else access.default, "full" when unset).
  execute: ({ userId, inputIds }, sql) => sql`
    SELECT EXISTS (
      SELECT 1 FROM conversation_inputs i
      JOIN conversations c ON c.id = i.conversation_id
      JOIN workspaces w ON w.id = c.workspace_id
      JOIN users u ON u.id = ${userId}
      JOIN users h ON h.id = CASE WHEN u.kind = 'agent' THEN u.steward_id ELSE u.id END
      WHERE i.id = ANY(${[...inputIds]}::bigint[]) AND c.state <> 'tombstoned'
        AND w.account_id = h.account_id AND w.state <> 'tombstoned'
        AND (w.owner_id = h.id OR w.access_mode = 'account_wide')
        AND ${levelNotNone(sql, userId)}
    ) AS readable`
})

/** Whether the member `userId` can read the conversation of any of the inputs `inputIds`. */
export const inputsReadableBy = (userId: bigint, inputIds: ReadonlyArray<bigint>) =>
  Effect.map(readable({ userId, inputIds }), (row) => row.readable)
