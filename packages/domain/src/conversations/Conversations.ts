// The conversation doors (supplement "Conversation", "Access, default runner, messaging, memory,
// store", "Feed and conversation channel"): create (the row and its actor in one transaction),
// lists, reads, and every write as one event to the conversation's actor, whose machine judges
// what depends on its state. Standing is judged here first (Standing.ts), in the spec's order.
import { ActorHost } from "@troupe/actors/ActorHost"
import { conversationActor } from "@troupe/actors/bindings/conversation"
import { encodeStreamCursor, type StreamPage, Streams } from "@troupe/actors/Streams"
import type { ConversationChanges, ConversationEvent } from "@troupe/machines/conversation/events"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import {
  type AcceptanceKey,
  type ConversationFilter,
  type ConversationRow,
  ConversationsRepository,
  type SpeakerRow
} from "@troupe/storage/repositories/Conversations"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { accountCostUnit } from "../budgets/Admission.ts"
import { emptyUsageSummary } from "../inference/Attempts.ts"
import { InferenceRequestDefinition } from "../inference/InferenceRequests.ts"
import { flagParameter } from "../kernel/Flags.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, type NotPermitted, Stale, StateConflict } from "../kernel/Refusals.ts"
import { codePointLength } from "../kernel/Text.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { RunDefinition } from "../runs/Runs.ts"
import { type Workspace, Workspaces } from "../workspaces/Workspaces.ts"
import { withHostedRuns } from "./Accounting.ts"
import { contactRefusal } from "./Contact.ts"
import { makeConversationReplies } from "./Replies.ts"
import { defaultRunnerBlock, judgeMemoryContext, judgeRunner, type MemoryContextMembers } from "./Settings.ts"
import {
  agentWrites,
  judgeStanding,
  type Level,
  levelOf,
  type StoredAccess,
  sameAccess,
  storedAccess,
  type WorkspaceWriters
} from "./Standing.ts"
import {
  type ConversationSummaryView,
  type ConversationView,
  conversationFull,
  conversationSummary,
  type People,
  peopleOfConversation
} from "./Views.ts"

/** The one definition of the conversation actor the runtime holds. */
export class ConversationDefinition extends Context.Service<
  ConversationDefinition,
  ReturnType<typeof conversationActor>
>()("@troupe/domain/conversations/ConversationDefinition") {
  static readonly layer = Layer.effect(
    ConversationDefinition,
    Effect.gen(function* () {
      return conversationActor(
        makeConversationReplies(yield* ModelCatalog),
        yield* InferenceRequestDefinition,
        yield* RunDefinition
      )
    })
  )
}

export type Refused = Absent | NotPermitted | StateConflict | Invalid | Stale | BadParameter

export interface AccessMembers {
  readonly default: Level
  readonly entries?:
    | ReadonlyArray<{
        readonly user_public_id?: string | null | undefined
        readonly handle?: string | null | undefined
        readonly level: Level
      }>
    | null
    | undefined
}

export interface CreateMembers {
  readonly title?: string | null | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | null | undefined
  readonly billing_subject?: string | null | undefined
  readonly answering_user_public_id?: string | null | undefined
  readonly default_runner_executor_public_id?: string | null | undefined
  readonly memory_context?: MemoryContextMembers | null | undefined
  readonly access?: AccessMembers | null | undefined
}

export interface ListQuery {
  readonly archived?: string | undefined
  readonly side?: string | undefined
  readonly answering_user_public_id?: string | undefined
  readonly metadata_key?: string | undefined
  readonly metadata_value?: string | undefined
  readonly order_by?: string | undefined
  readonly order?: string | undefined
  readonly after?: string | undefined
  readonly limit?: string | undefined
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly nextAfter: string | null
}

/** A conversation the caller may act on: its row, its workspace's public id and the caller's level. */
export interface Standing {
  readonly row: ConversationRow
  readonly workspacePublicId: string
  readonly workspaceAccountId: bigint
  /** The workspace's messaging policy (the contact rule reads it). */
  readonly messaging: Workspace["messaging"]
  /** Who may write in the workspace (an addressed answerer is judged against it). */
  readonly workspace: WorkspaceWriters
  readonly level: Level
  /** The caller's human (whose user/ memory the default root reaches). */
  readonly callerHumanId: bigint
}

const notFound = () => new Absent({ code: "not_found", message: "No such conversation" })
const badParameter = (message: string) => new BadParameter({ code: "parameter_invalid", message })

/** Keyset cursors carry the ordering, the direction and the position. */
const encodeCursor = (orderBy: string, order: string, value: string, publicId: string) =>
  Buffer.from(JSON.stringify([orderBy, order, value, publicId])).toString("base64url")

const isInstant = (value: string) => !Number.isNaN(Date.parse(value))

const decodeCursor = (cursor: string, orderBy: string, order: string) => {
  try {
    const [by, direction, value, publicId] = JSON.parse(Buffer.from(cursor, "base64url").toString()) as Array<string>
    if (by !== orderBy || direction !== order || typeof value !== "string" || !isUuid(publicId ?? "")) return undefined
    // An activity position is the instant as this list wrote it (anything else is no cursor of ours).
    if (orderBy === "last_activity_at" && !(isInstant(value) && new Date(value).toISOString() === value)) {
      return undefined
    }
    return { value, publicId: publicId! }
  } catch {
    return undefined
  }
}

/** The refusal a vetoed step names (the machine's `refuse`, or the binding's row fence). */
export const refusalOf = (reason: string): Refused => {
  switch (reason) {
    case "stale_object":
    case "stale_context":
    case "stale_timeline":
      return new Stale({ code: reason, message: `The conversation moved on (${reason})` })
    case "not_found":
      return new Absent({ code: "not_found", message: "No such input or turn" })
    case "validation_failed":
    case "side_conversation":
    case "nothing_to_compact":
      return new Invalid({ code: reason, message: Invalid.sentenceOf(reason) })
    default:
      return new StateConflict({ code: reason as StateConflict["code"], message: StateConflict.sentenceOf(reason) })
  }
}

export class Conversations extends Context.Service<
  Conversations,
  {
    /** The caller's standing on a conversation: visible (else 404); with `write`, full level and write standing. */
    readonly standing: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      need: "read" | "write"
    ) => Effect.Effect<Standing, Refused>
    /**
     * An input's acceptance's `write` standing, read in the same statement with the stored
     * answerer and the public id of the input the caller already made under `key` (null: none).
     */
    readonly acceptance: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      key: string | undefined
    ) => Effect.Effect<
      { readonly target: Standing; readonly answerer: SpeakerRow; readonly madeInputPublicId: string | null },
      Refused
    >
    /** One event to the conversation's actor; a refusal answers its code. */
    readonly send: (
      standing: Standing,
      event: ConversationEvent
    ) => Effect.Effect<{ readonly applied: boolean; readonly replies: Readonly<Record<string, unknown>> }, Refused>
    readonly people: (ids: ReadonlyArray<bigint>) => Effect.Effect<People>
    readonly principal: (
      accountId: bigint,
      who: { readonly publicId?: string | undefined; readonly handle?: string | undefined }
    ) => Effect.Effect<SpeakerRow | undefined>
    /** Whether an agent may write in the conversation's workspace, as an addressed answerer must. */
    readonly mayWrite: (
      standing: Standing,
      agent: { readonly id: bigint; readonly steward_id: bigint | null }
    ) => Effect.Effect<boolean>
    readonly view: (standing: Standing) => Effect.Effect<ConversationView>
    readonly create: (
      caller: Caller,
      workspaceId: string,
      members: CreateMembers
    ) => Effect.Effect<ConversationView, Refused>
    readonly list: (
      caller: Caller,
      workspaceId: string | null,
      scope: "roots" | "archived" | "children",
      query: ListQuery,
      parent?: string
    ) => Effect.Effect<Page<ConversationSummaryView>, Refused>
    readonly read: (
      caller: Caller,
      workspaceId: string,
      conversationId: string
    ) => Effect.Effect<ConversationView, Refused>
    readonly update: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      members: {
        readonly title?: string | null
        readonly metadata?: Readonly<Record<string, unknown>>
        readonly lock_version: number
      }
    ) => Effect.Effect<ConversationView, Refused>
    readonly lifecycle: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      command: "archive" | "unarchive" | "tombstone"
    ) => Effect.Effect<ConversationView, Refused>
    readonly replaceAccess: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      access: AccessMembers
    ) => Effect.Effect<ConversationView, Refused>
    readonly events: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      after: string | undefined,
      limit: number
    ) => Effect.Effect<StreamPage, Refused>
    readonly eventSource: (
      caller: Caller,
      workspaceId: string,
      conversationId: string
    ) => Effect.Effect<
      { readonly stream: string; readonly actor: { readonly kind: string; readonly id: string } },
      Refused
    >
  }
>()("@troupe/domain/conversations/Conversations") {
  static readonly layer = Layer.effect(
    Conversations,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const workspaces = yield* Workspaces
      const streams = yield* Streams
      const repository = yield* ConversationsRepository
      const definition = yield* ConversationDefinition
      const actors = (yield* ActorHost).ref(definition)
      const db = yield* withRepositories(ConversationsRepository, ExecutorsRepository, NamedAgentsRepository)
      const catalog = yield* ModelCatalog

      const people = (ids: ReadonlyArray<bigint>) =>
        Effect.map(db(repository.speakers(ids)), (rows) => new Map(rows.map((row) => [row.id, row])) as People)

      const principal = (
        accountId: bigint,
        who: { readonly publicId?: string | undefined; readonly handle?: string | undefined }
      ) =>
        db(
          repository.principal({
            accountId,
            publicId: who.publicId !== undefined && isUuid(who.publicId) ? who.publicId : null,
            handle: who.handle === undefined ? null : who.handle.replace(/^@/, "")
          })
        )

      /**
       * One statement reads the workspace and the conversation in it; the workspace is judged as
       * Workspaces' read and writable judge it (seeing; then the dedication fence and active).
       */
      const standingWith = (
        caller: Caller,
        workspaceId: string,
        conversationId: string,
        need: "read" | "write",
        acceptance?: AcceptanceKey
      ) =>
        Effect.gen(function* () {
          const found = isUuid(workspaceId)
            ? yield* db(repository.standingOf(workspaceId, isUuid(conversationId) ? conversationId : null, acceptance))
            : undefined
          const { workspace, row, level } = yield* db(judgeStanding(found, caller, need))
          const target: Standing = {
            row,
            workspacePublicId: workspace.public_id,
            workspaceAccountId: workspace.account_id,
            messaging: workspace.messaging,
            workspace,
            level,
            callerHumanId: caller.human.id
          }
          return { target, extras: found?.acceptance }
        })

      const standing = (caller: Caller, workspaceId: string, conversationId: string, need: "read" | "write") =>
        Effect.map(standingWith(caller, workspaceId, conversationId, need), ({ target }) => target)

      const acceptance = (caller: Caller, workspaceId: string, conversationId: string, key: string | undefined) =>
        Effect.map(
          standingWith(caller, workspaceId, conversationId, "write", { authorId: caller.user.id, key: key ?? null }),
          ({ target, extras }) => ({
            target,
            answerer: extras!.answerer,
            madeInputPublicId: extras!.madeInputPublicId
          })
        )

      const send = (target: Standing, event: ConversationEvent) =>
        Effect.gen(function* () {
          const outcome = yield* actors.send(target.row.public_id, event).pipe(Effect.orDie)
          if (outcome._tag === "Vetoed") return yield* refusalOf(outcome.reason)
          // Not accepted in this state: a command that changes nothing here (a repeated archive,
          // a cancellation with nothing running); a tombstone is absent.
          if (outcome._tag === "Rejected") {
            if (outcome.state === "tombstoned" || outcome.state === "reaped") return yield* notFound()
            return { applied: false, replies: {} }
          }
          return { applied: true, replies: outcome.replies as Readonly<Record<string, unknown>> }
        })

      const view = (target: Standing) =>
        Effect.gen(function* () {
          const stored = (yield* db(repository.findConversation(target.row.public_id))) ?? target.row
          const row = { ...stored, ...withHostedRuns(catalog, stored, yield* db(repository.hostedRunUsage(stored.id))) }
          const known = yield* people([...peopleOfConversation(row), target.callerHumanId])
          const queue = yield* db(repository.queueOf(row.id))
          const page = yield* streams.read(definition.stream(row.public_id), undefined, 1).pipe(Effect.orDie)
          return conversationFull(row, known, {
            workspacePublicId: target.workspacePublicId,
            callerHumanPublicId: known.get(target.callerHumanId)?.public_id ?? null,
            held: queue.filter((input) => input.origin !== "task_result" && input.origin !== "child").length,
            latestCursor:
              page.pagination.watermark > 0
                ? encodeStreamCursor(definition.stream(row.public_id), BigInt(page.pagination.watermark))
                : null,
            defaultRunner: yield* db(defaultRunnerBlock(row))
          })
        })

      /**
       * Access entries as stored: each names, once and in request order, an eligible principal: an
       * active member of the account (not the system user, the creator or the answerer) with access
       * to the workspace (its human, an agent's steward, owns it or it is account-wide).
       */
      const resolveAccess = (
        workspace: Pick<Workspace, "account_id" | "owner_id" | "access_mode">,
        row: { creator: bigint; answerer: bigint },
        access: AccessMembers
      ) =>
        Effect.gen(function* () {
          const accountId = workspace.account_id
          const seesWorkspace = (found: SpeakerRow) => {
            const humanId = found.kind === "human" ? found.id : found.steward_id
            return humanId !== null && (humanId === workspace.owner_id || workspace.access_mode === "account_wide")
          }
          const entries: Array<StoredAccess["entries"][number]> = []
          for (const entry of access.entries ?? []) {
            const bothSpellings = entry.user_public_id != null && entry.handle != null
            const found = bothSpellings
              ? undefined
              : yield* principal(accountId, {
                  publicId: entry.user_public_id ?? undefined,
                  handle: entry.handle ?? undefined
                })
            const ineligible =
              found === undefined ||
              found.id === row.creator ||
              found.id === row.answerer ||
              found.status !== "active" ||
              !seesWorkspace(found) ||
              entries.some((each) => each.user_id === String(found.id))
            if (ineligible) {
              return yield* new Invalid({
                code: "principal_not_eligible",
                message: `access entry ${entries.length} names a principal that may not be named`
              })
            }
            entries.push({ user_id: String(found.id), user_public_id: found.public_id, level: entry.level })
          }
          return { default: access.default, entries } satisfies StoredAccess
        })

      /** The named answerer: an active agent of the account that may write in the workspace. */
      const answererOf = (caller: Caller, workspace: Workspace, named: string | null | undefined) =>
        Effect.gen(function* () {
          if (named === undefined || named === null) return caller.user.id
          const found = isUuid(named)
            ? yield* principal(workspace.account_id, { publicId: named })
            : yield* principal(workspace.account_id, { handle: named })
          if (
            found === undefined ||
            found.kind !== "agent" ||
            found.status !== "active" ||
            !(yield* db(agentWrites(workspace, found)))
          ) {
            return yield* new Invalid({
              code: "answerer_not_eligible",
              message: "answering_user_public_id must name an active agent of the account that may write here"
            })
          }
          return found.id
        })

      const listOf = (
        caller: Caller,
        workspaceIds: ReadonlyArray<bigint>,
        workspacePublicIds: ReadonlyMap<bigint, string>,
        scope: ConversationFilter["scope"],
        states: ReadonlyArray<string>,
        query: ListQuery
      ) =>
        Effect.gen(function* () {
          const orderBy = query.order_by ?? "public_id"
          if (orderBy !== "public_id" && orderBy !== "last_activity_at") {
            return yield* badParameter("order_by must be public_id or last_activity_at")
          }
          const order = query.order ?? "asc"
          if (order !== "asc" && order !== "desc") return yield* badParameter("order must be asc or desc")
          const limit = query.limit === undefined ? 25 : Number(query.limit)
          if (!/^\d+$/.test(query.limit ?? "25") || limit < 1 || limit > 100) {
            return yield* badParameter("limit must be 1 to 100")
          }
          const after = query.after === undefined ? null : decodeCursor(query.after, orderBy, order)
          if (after === undefined) return yield* badParameter("after is not a cursor of this listing")
          const answerer = query.answering_user_public_id
          if (answerer !== undefined && !isUuid(answerer)) {
            return yield* badParameter("answering_user_public_id must be a UUID")
          }
          const answererRow =
            answerer === undefined ? undefined : yield* principal(caller.human.accountId, { publicId: answerer })
          const key = query.metadata_key
          const value = query.metadata_value
          if ((key === undefined) !== (value === undefined) || key === "" || value === "") {
            return yield* badParameter("metadata_key and metadata_value go together, both nonempty")
          }
          if (key !== undefined && (Buffer.byteLength(key) > 128 || Buffer.byteLength(value!) > 1024)) {
            return yield* badParameter("metadata_key is at most 128 bytes, metadata_value at most 1024")
          }
          if (answerer !== undefined && answererRow === undefined) return { items: [], nextAfter: null }
          const rows = yield* db(
            repository.listConversations({
              workspaceIds,
              viewerId: caller.user.id,
              scope,
              states,
              answererId: answererRow?.id ?? null,
              metadata: key === undefined ? null : { key, value: value! },
              orderBy,
              order,
              after,
              limit: limit + 1
            })
          )
          // The statement passes over rows at level none (one more than the page: whether any
          // follows); the level is judged here again, and the cursor stands on the page's last row.
          const page = rows.slice(0, limit)
          const visible = page.filter((row) => levelOf(row, caller) !== "none")
          const last = page.at(-1)
          return {
            items: visible.map((row) => conversationSummary(row, workspacePublicIds.get(row.workspace_id) ?? "")),
            nextAfter:
              last === undefined || rows.length <= limit
                ? null
                : encodeCursor(
                    orderBy,
                    order,
                    orderBy === "public_id" ? last.public_id : last.last_activity_at.toISOString(),
                    last.public_id
                  )
          }
        })

      return Conversations.of({
        standing,
        acceptance,
        send,
        people,
        principal,
        mayWrite: (target, agent) => db(agentWrites(target.workspace, agent)),
        view,
        create: (caller, workspaceId, members) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.writable(caller, workspaceId)
            const answerer = yield* answererOf(caller, workspace, members.answering_user_public_id)
            yield* db(contactRefusal(caller, workspace, answerer))
            const answererRow = (yield* people([answerer])).get(answerer)!
            const runner =
              members.default_runner_executor_public_id == null
                ? null
                : yield* db(judgeRunner(workspace.account_id, answererRow, members.default_runner_executor_public_id))
            const memoryContext =
              members.memory_context == null
                ? null
                : yield* db(
                    judgeMemoryContext(
                      caller,
                      { id: workspace.id, accountId: workspace.account_id },
                      members.memory_context
                    )
                  )
            const access = yield* resolveAccess(
              workspace,
              { creator: caller.user.id, answerer },
              members.access ?? { default: "full", entries: [] }
            )
            // Counted in characters (code points): 255 emoji are a valid subject, as on inference requests.
            if (members.billing_subject != null && codePointLength(members.billing_subject) > 255) {
              return yield* new Invalid({
                code: "billing_subject_too_long",
                message: "billing_subject is over 255 characters"
              })
            }
            const publicId = newPublicId()
            const at = yield* now
            yield* db(
              Effect.gen(function* () {
                yield* repository.insertConversation({
                  publicId,
                  workspaceId: workspace.id,
                  creatorId: caller.user.id,
                  answererId: answerer,
                  title: members.title ?? null,
                  metadataJson: JSON.stringify(members.metadata ?? {}),
                  billingSubject: members.billing_subject ?? null,
                  defaultRunnerExecutorId: runner?.id ?? null,
                  accessJson: JSON.stringify(access),
                  memoryContextJson: memoryContext === null ? null : JSON.stringify(memoryContext),
                  usageSummaryJson: JSON.stringify(emptyUsageSummary(yield* accountCostUnit)),
                  side: false,
                  sourceConversationId: null,
                  forkedPosition: null,
                  forkedFromTurnPublicId: null,
                  forkedFromVariantPublicId: null,
                  now: at
                })
                yield* actors
                  .create(publicId, { publicId, firstPosition: 1, side: false, subagent: false, tail: null })
                  .pipe(Effect.orDie)
              }).pipe(sql.withTransaction)
            )
            const row = (yield* db(repository.findConversation(publicId)))!
            return yield* view({
              row,
              workspacePublicId: workspace.public_id,
              workspaceAccountId: workspace.account_id,
              messaging: workspace.messaging,
              workspace,
              level: "full",
              callerHumanId: caller.human.id
            })
          }),
        list: (caller, workspaceId, scope, query, parent) =>
          Effect.gen(function* () {
            const archived = yield* flagParameter(query.archived, "archived")
            const side = yield* flagParameter(query.side, "side")
            if (workspaceId === null) {
              const visible = yield* db(repository.visibleWorkspaces(caller.human.accountId, caller.human.id))
              const names = new Map(visible.map((workspace) => [workspace.id, workspace.public_id]))
              return yield* listOf(caller, [...names.keys()], names, "roots", [archived ? "archived" : "active"], query)
            }
            const workspace = yield* workspaces.read(caller, workspaceId)
            const names = new Map([[workspace.id, workspace.public_id]])
            if (scope === "children") {
              const target = yield* standing(caller, workspaceId, parent ?? "", "read")
              return yield* listOf(
                caller,
                [workspace.id],
                names,
                { parentId: target.row.id },
                ["active", "archived"],
                query
              )
            }
            if (scope === "archived") return yield* listOf(caller, [workspace.id], names, "roots", ["archived"], query)
            return yield* listOf(caller, [workspace.id], names, side ? "sides" : "roots", ["active"], query)
          }),
        read: (caller, workspaceId, conversationId) =>
          Effect.flatMap(standing(caller, workspaceId, conversationId, "read"), view),
        update: (caller, workspaceId, conversationId, members) =>
          Effect.gen(function* () {
            const target = yield* standing(caller, workspaceId, conversationId, "write")
            const changes: ConversationChanges = {
              ...(members.title === undefined ? {} : { title: members.title }),
              ...(members.metadata === undefined ? {} : { metadata: members.metadata })
            }
            yield* send(target, { type: "conversation.edit", lockVersion: members.lock_version, changes })
            return yield* view(target)
          }),
        lifecycle: (caller, workspaceId, conversationId, command) =>
          Effect.gen(function* () {
            const target = yield* standing(caller, workspaceId, conversationId, "write")
            const type =
              command === "archive"
                ? ("conversation.archive" as const)
                : command === "unarchive"
                  ? ("conversation.unarchive" as const)
                  : ("conversation.tombstone" as const)
            yield* send(target, { type })
            return yield* view(target)
          }),
        replaceAccess: (caller, workspaceId, conversationId, access) =>
          Effect.gen(function* () {
            const target = yield* standing(caller, workspaceId, conversationId, "write")
            const stored = yield* resolveAccess(
              yield* workspaces.read(caller, workspaceId),
              { creator: target.row.creator_id, answerer: target.row.answerer_id },
              access
            )
            if (!sameAccess(stored, storedAccess(target.row))) {
              yield* send(target, {
                type: "conversation.configure",
                changes: { access: stored as unknown as Record<string, unknown> },
                item: {
                  type: "access_changed",
                  default: stored.default,
                  entries: stored.entries.map((entry) => ({
                    user_public_id: entry.user_public_id,
                    level: entry.level
                  })),
                  by: (yield* people([caller.user.id])).get(caller.user.id)?.public_id ?? null,
                  kind: caller.user.kind
                }
              })
            }
            return yield* view(target)
          }),
        events: (caller, workspaceId, conversationId, after, limit) =>
          Effect.gen(function* () {
            const target = yield* standing(caller, workspaceId, conversationId, "read")
            return yield* streams
              .read(definition.stream(target.row.public_id), after === "" ? undefined : after, limit)
              .pipe(Effect.mapError(() => badParameter("after is not a cursor of this conversation")))
          }),
        eventSource: (caller, workspaceId, conversationId) =>
          Effect.map(standing(caller, workspaceId, conversationId, "read"), (target) => ({
            stream: definition.stream(target.row.public_id),
            actor: { kind: definition.kind, id: target.row.public_id }
          }))
      })
    })
  )
}
