// A subagent child of a conversation as a test fixture (what a spawn will open): its row, written
// as the server writes one (instants in milliseconds), and its conversation actor.
import { ActorHost } from "@troupe/actors/ActorHost"
import { ConversationDefinition } from "@troupe/domain/conversations/Conversations"
import { newPublicId } from "@troupe/storage/Ids"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestServer } from "./server.ts"

export interface SubagentFixture {
  /** Its access (default: the parent's). */
  readonly access?: unknown
  /** The spawn call's key in the parent (default spawn-1; unique per parent). */
  readonly spawnKey?: string
  /** Its creation and activity instant (default now). */
  readonly at?: Date
}

/** Opens a subagent child of `parentId`; answers its public id. */
export const subagentOf = (server: TestServer, parentId: string, fixture: SubagentFixture = {}) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const publicId = newPublicId()
      const at = fixture.at ?? new Date()
      const access = fixture.access === undefined ? sql`access` : sql`${JSON.stringify(fixture.access)}::jsonb`
      yield* sql`
        INSERT INTO conversations (public_id, workspace_id, creator_id, answerer_id, metadata, parent_id, spawn_node_key,
          label, state, access, usage_summary, last_activity_at, created_at, updated_at)
        SELECT ${publicId}, workspace_id, creator_id, answerer_id, '{}', id, ${fixture.spawnKey ?? "spawn-1"}, 'helper',
          'active', ${access}, usage_summary, ${at}, ${at}, ${at}
        FROM conversations WHERE public_id = ${parentId}`
      const actors = (yield* ActorHost).ref(yield* ConversationDefinition)
      yield* actors
        .create(publicId, { publicId, firstPosition: 1, side: false, subagent: true, tail: null })
        .pipe(Effect.orDie)
      return publicId
    })
  )
