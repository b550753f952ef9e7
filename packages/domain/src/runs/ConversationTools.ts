// The conversation kernel tools a run carries out (runs supplement "Tool catalog"): session_read,
// session_search, status and cancel, for the run's creator judged as the member doors judge it
// (conversations/Standing.ts: what it may not read is not found). `to` names a conversation of the
// run's workspace by public id, or a child of the run's hosting conversation by its spawn label.
// Each answers the JSON text the model reads, or a refusal (code, message) that fails the call.
// Spawning and sending are not here.
import { TransactionalActors } from "@troupe/actors/Binding"
import { isUuid } from "@troupe/storage/Ids"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { ConversationSearchRepository } from "@troupe/storage/repositories/ConversationSearch"
import { ConversationsRepository, type TimelineWindow } from "@troupe/storage/repositories/Conversations"
import { IdempotencyReceiptsRepository } from "@troupe/storage/repositories/IdempotencyReceipts"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import type { RunRow } from "@troupe/storage/repositories/Runs"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { type Caller, callerOfUser } from "../accounts/Caller.ts"
import { judgeStanding, seesWorkspace } from "../conversations/Standing.ts"
import { chainOf } from "../conversations/Timeline.ts"
import { replayWindowMillis } from "../kernel/Idempotency.ts"
import { now } from "../kernel/Now.ts"
import { outward, readTurnLimit, selectTurns } from "./SessionRead.ts"
import {
  type Arguments,
  invalid,
  optionalBoolean,
  optionalInteger,
  optionalString,
  optionalWord,
  type Refusal,
  requiredString
} from "./ToolArguments.ts"

const defaultReadLimit = 20
const searchLimit = 50
const defaultSearchLimit = 10
const queryBytes = 1024
const positionBound = 2_147_483_647
/** An instant as PostgreSQL writes a timestamptz (the cursor's `at`). */
const instantText = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?[+-](\d{2})(?::([0-5]\d)){0,2}$/

const refusal = (error: { readonly code: string; readonly message: string }): Refusal => ({
  code: error.code,
  message: error.message
})

const encodeCursor = (hit: { at: string; conversation_public_id: string; position: number; part: number }) =>
  Buffer.from(JSON.stringify([hit.at, hit.conversation_public_id, hit.position, hit.part])).toString("base64url")

/** A real calendar instant in PostgreSQL's text form (the statement would refuse any other). */
const isInstantText = (text: string) => {
  const [, year, month, day, hour, minute, second, offset] = (instantText.exec(text) ?? []).map(Number)
  if (year === undefined || year < 1 || offset! > 15) return false
  const date = new Date(Date.UTC(year, month! - 1, day, hour, minute, second))
  date.setUTCFullYear(year)
  const fields = [
    date.getUTCMonth() + 1,
    date.getUTCDate(),
    date.getUTCHours(),
    date.getUTCMinutes(),
    date.getUTCSeconds()
  ]
  return fields.every((field, index) => field === [month, day, hour, minute, second][index])
}

const inRange = (value: unknown, max: number) =>
  Number.isInteger(value) && (value as number) >= 0 && (value as number) <= max

const decodeCursor = (cursor: string) => {
  try {
    const [at, conversation, position, part] = JSON.parse(Buffer.from(cursor, "base64url").toString()) as Array<unknown>
    const valid =
      typeof at === "string" &&
      isInstantText(at) &&
      typeof conversation === "string" &&
      isUuid(conversation) &&
      inRange(position, positionBound) &&
      inRange(part, 2)
    return valid ? { at, conversation, position: position as number, part: part as number } : undefined
  } catch {
    return undefined
  }
}

const matchOf = (part: number) => (part === 0 ? "title" : part === 1 ? "prompt" : "message")

/** The call being carried out: its task key and generation (a retried job is the same call). */
export interface ToolCall {
  readonly key: string
  readonly generation: number
}

/** The tools for one call of the run: its creator is the caller. */
export const conversationTools = (run: RunRow, call: ToolCall) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const actors = yield* TransactionalActors
    const conversations = yield* ConversationsRepository.make
    const searches = yield* ConversationSearchRepository.make
    const accounts = yield* AccountsRepository.make
    const receipts = yield* IdempotencyReceiptsRepository.make
    const named = yield* NamedAgentsRepository.make

    /** The creator as a door's caller: itself, and the human whose access counts (an agent's steward). */
    const caller = Effect.gen(function* () {
      const user = yield* accounts.findUserById(run.creator_id)
      if (user === undefined || user.kind === "system") {
        return yield* Effect.fail<Refusal>({ code: "not_authorized", message: "The run's creator cannot act here" })
      }
      return callerOfUser({ ...user, kind: user.kind }, user.account_id)
    })

    /**
     * The conversation `to` names, as the caller stands on it for `need` (absent or unreadable:
     * not_found; for a write, read level not_authorized, then the workspace's write standing).
     */
    const target = (who: Caller, to: string, need: "read" | "write" = "read") =>
      Effect.gen(function* () {
        const hosting = run.conversation_id
        const publicId = isUuid(to)
          ? to
          : hosting === null
            ? undefined
            : (yield* searches.childByLabel({ parentId: hosting, label: to }))?.public_id
        if (publicId === undefined) {
          return yield* Effect.fail<Refusal>({
            code: "not_found",
            message: `No conversation was spawned here as ${to}`
          })
        }
        const found = yield* conversations.standingOf(run.workspace_public_id, publicId)
        return yield* judgeStanding(found, who, need).pipe(
          Effect.mapError((failure) => (isSqlError(failure) ? failure : refusal(failure))),
          Effect.provideService(NamedAgentsRepository, named)
        )
      })

    /** The people an answer names, by id. */
    const people = (ids: ReadonlyArray<bigint>) =>
      Effect.map(conversations.speakers(ids), (rows) => new Map(rows.map((row) => [row.id, row])))

    const read = (input: Arguments) =>
      Effect.gen(function* () {
        const sessionId = yield* requiredString(input, "session_id")
        const around = yield* optionalString(input, "around_turn_id")
        const after = yield* optionalInteger(input, "after_position", 0, positionBound)
        const before = yield* optionalInteger(input, "before_position", 0, positionBound)
        const limit = (yield* optionalInteger(input, "limit", 1, readTurnLimit)) ?? defaultReadLimit
        if ([around, after, before].filter((cursor) => cursor !== undefined).length > 1) {
          return yield* Effect.fail(
            invalid("Give at most one cursor: around_turn_id, after_position or before_position")
          )
        }
        const who = yield* caller
        if (!isUuid(sessionId))
          return yield* Effect.fail<Refusal>({ code: "not_found", message: "No such conversation" })
        const { row } = yield* target(who, sessionId)
        const chain = yield* chainOf(conversations, row)
        const window = (bounds: Partial<TimelineWindow>) =>
          conversations.timelineWindow({
            chain,
            afterPosition: null,
            beforePosition: null,
            includeHidden: false,
            from: "newest",
            limit,
            ...bounds
          })
        let selected: ReturnType<typeof selectTurns>
        if (around !== undefined) {
          const anchor = isUuid(around) ? yield* conversations.timelineTurn({ chain, publicId: around }) : undefined
          if (anchor === undefined || anchor.visibility === "hidden") {
            return yield* Effect.fail<Refusal>({ code: "not_found", message: "No such turn in that conversation" })
          }
          const older = yield* window({ beforePosition: anchor.position })
          const newer = yield* window({ afterPosition: anchor.position, from: "oldest" })
          const ordered = outward(anchor, older.turns, newer.turns)
          selected = selectTurns(ordered, yield* people(ordered.flatMap((turn) => turn.speaker_id ?? [])), limit, {
            older: older.has_older,
            newer: newer.has_newer
          })
        } else {
          const page = yield* window(
            after === undefined ? { beforePosition: before ?? null } : { afterPosition: after, from: "oldest" }
          )
          const ordered = after === undefined ? [...page.turns].reverse() : page.turns
          selected = selectTurns(ordered, yield* people(ordered.flatMap((turn) => turn.speaker_id ?? [])), limit, {
            older: page.has_older,
            newer: page.has_newer
          })
        }
        return JSON.stringify({ conversation_id: row.public_id, title: row.title, ...selected })
      })

    const search = (input: Arguments) =>
      Effect.gen(function* () {
        const query = yield* requiredString(input, "query")
        if (Buffer.byteLength(query) > queryBytes) return yield* Effect.fail(invalid("query is over 1024 bytes"))
        const archived = (yield* optionalWord(input, "archived", ["exclude", "include", "only"])) ?? "exclude"
        const auxiliary = (yield* optionalBoolean(input, "include_auxiliary")) ?? false
        const limit = (yield* optionalInteger(input, "limit", 1, searchLimit)) ?? defaultSearchLimit
        const cursor = yield* optionalString(input, "after")
        const after = cursor === undefined ? null : decodeCursor(cursor)
        if (after === undefined) return yield* Effect.fail(invalid("after is not a cursor of this search"))
        if (!(yield* searches.hasWords({ query })).has_words) return yield* Effect.fail(invalid("query has no words"))
        const who = yield* caller
        const found = yield* conversations.standingOf(run.workspace_public_id, null)
        if (found === undefined || !seesWorkspace(found.workspace, who)) {
          return yield* Effect.fail<Refusal>({ code: "not_found", message: "The run's workspace is out of reach" })
        }
        const hits = yield* searches.search({
          workspaceId: run.workspace_id,
          readerId: who.user.id,
          states: archived === "exclude" ? ["active"] : archived === "only" ? ["archived"] : ["active", "archived"],
          auxiliary,
          query,
          after,
          limit
        })
        const last = hits.at(-1)
        return JSON.stringify({
          results: hits.map((hit) => ({
            conversation_id: hit.conversation_public_id,
            title: hit.title,
            archived: hit.state === "archived",
            side: hit.side,
            parent_id: hit.parent_public_id,
            label: hit.label,
            turn_id: hit.turn_public_id,
            ...(hit.turn_public_id === null ? {} : { position: hit.position, role: hit.role }),
            match: matchOf(hit.part),
            excerpt: `${hit.clipped_before ? "…" : ""}${hit.excerpt}${hit.clipped_after ? "…" : ""}`
          })),
          next_after: last !== undefined && hits.length === limit ? encodeCursor(last) : null
        })
      })

    const status = (input: Arguments) =>
      Effect.gen(function* () {
        const to = yield* requiredString(input, "to")
        const { row } = yield* target(yield* caller, to)
        const turn =
          row.active_turn_public_id === null ? undefined : yield* conversations.findTurn(row.active_turn_public_id)
        const runId = turn === undefined ? undefined : yield* conversations.runningRunOf(row.public_id)
        const queue = yield* conversations.queueOf(row.id)
        const known = yield* people([row.answerer_id, ...(turn?.answerer_id == null ? [] : [turn.answerer_id])])
        const person = (id: bigint | null | undefined) => {
          const found = id == null ? undefined : known.get(id)
          return found === undefined
            ? null
            : { user_id: found.public_id, handle: found.handle, kind: found.kind, display_name: found.display_name }
        }
        return JSON.stringify({
          conversation_id: row.public_id,
          title: row.title,
          label: row.label,
          parent_id: row.parent_public_id,
          archived: row.state === "archived",
          replying: turn !== undefined,
          reply:
            turn === undefined
              ? null
              : {
                  turn_id: turn.public_id,
                  kind: turn.kind,
                  status: turn.status,
                  answering: person(turn.answerer_id),
                  run_id: runId ?? null
                },
          waiting_inputs: queue.length,
          blocked_inputs: queue.filter((each) => each.state === "blocked").length,
          answerer: person(row.answerer_id)
        })
      })

    /**
     * Stops the running reply of a conversation the caller may write in (the member door's
     * cancellation standing; what it spawned it created, so it may): the cancellation of that
     * turn is told to the conversation in this call's transaction, with the answer kept under the
     * call, so a retried job answers it again and tells nothing twice.
     */
    const cancel = (input: Arguments) =>
      Effect.gen(function* () {
        const to = yield* requiredString(input, "to")
        const receipt = {
          caller: `run:${run.public_id}`,
          route: "kernel svc.conversation.cancel",
          key: `${call.key}:${call.generation}`
        }
        const kept = yield* receipts.findCompleted(receipt, yield* now)
        if (kept?.response_body != null) return kept.response_body
        const { row } = yield* target(yield* caller, to, "write")
        if (row.state === "archived") {
          return yield* Effect.fail<Refusal>({ code: "conversation_archived", message: "The conversation is archived" })
        }
        const turn =
          row.active_turn_public_id === null ? undefined : yield* conversations.findTurn(row.active_turn_public_id)
        if (turn?.status !== "running") {
          return JSON.stringify({ conversation_id: row.public_id, canceled: false, turn_id: null })
        }
        const answer = JSON.stringify({ conversation_id: row.public_id, canceled: true, turn_id: turn.public_id })
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const at = yield* now
            const expiresAt = new Date(at.getTime() + replayWindowMillis)
            if ((yield* receipts.keep({ ...receipt, body: answer, now: at, expiresAt })) === undefined) {
              return (yield* receipts.findCompleted(receipt, at))?.response_body ?? answer
            }
            yield* actors.reply(
              { kind: "conversation", actorId: row.public_id },
              { type: "conversation.cancel", turnId: turn.public_id }
            )
            return answer
          })
        )
      })

    // A failing statement is no answer: the job fails and is retried.
    const tool =
      <A>(carry: (input: Arguments) => Effect.Effect<A, Refusal | SqlError>) =>
      (input: Arguments) =>
        Effect.catchIf(carry(input), isSqlError, Effect.die)
    return { read: tool(read), search: tool(search), status: tool(status), cancel: tool(cancel) }
  })
