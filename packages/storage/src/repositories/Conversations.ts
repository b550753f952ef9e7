// Rows of `conversations`, `conversation_inputs`, `conversation_turns` and
// `conversation_variants`. The conversation row is inserted at creation with its actor; every
// later write (the conversation's fields, its inputs, turns and variants) is its binding's.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import { newPublicId } from "../Ids.ts"
import { levelNotNone } from "./ConversationLevel.ts"
import {
  bindsAttachments,
  dropConversationNamings,
  dropInputNamings,
  nameInputUploads,
  syncInputNamings
} from "./InputAttachmentNamings.ts"
import * as Rows from "./Rows.ts"
import { dropHostedRunNamings } from "./RunUploadNamings.ts"
import { MessagingEntry } from "./Workspaces.ts"

const Json = Schema.Unknown
const NullId = Schema.NullOr(Schema.BigInt)

export const ConversationRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  workspace_id: Schema.BigInt,
  creator_id: Schema.BigInt,
  answerer_id: Schema.BigInt,
  title: Schema.NullOr(Schema.String),
  metadata: Json,
  billing_subject: Schema.NullOr(Schema.String),
  source_conversation_id: NullId,
  source_public_id: Schema.NullOr(Schema.String),
  forked_position: Schema.NullOr(Schema.Number),
  forked_from_turn_public_id: Schema.NullOr(Schema.String),
  forked_from_variant_public_id: Schema.NullOr(Schema.String),
  parent_id: NullId,
  parent_public_id: Schema.NullOr(Schema.String),
  spawn_node_key: Schema.NullOr(Schema.String),
  label: Schema.NullOr(Schema.String),
  side: Schema.Boolean,
  state: Schema.Literals(["active", "archived", "tombstoned"]),
  archived_at: Schema.NullOr(Schema.Date),
  tombstoned_at: Schema.NullOr(Schema.Date),
  default_runner_executor_id: NullId,
  access: Json,
  memory_context: Json,
  context: Json,
  usage_summary: Json,
  lock_version: Schema.Number,
  context_revision: Schema.Number,
  last_reply_model: Schema.NullOr(Schema.String),
  last_activity_at: Schema.Date,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  /** The turn pending or running in its reply lane (a reply, regeneration or summary), else null. */
  active_turn_public_id: Schema.NullOr(Schema.String)
})
export type ConversationRow = typeof ConversationRow.Type

const selectConversation = `
  SELECT c.*, s.public_id::text AS source_public_id, p.public_id::text AS parent_public_id,
    (SELECT t.public_id::text FROM conversation_turns t
     WHERE t.conversation_id = c.id AND t.status IN ('pending', 'running')
     ORDER BY t.position DESC LIMIT 1) AS active_turn_public_id
  FROM conversations c
  LEFT JOIN conversations s ON s.id = c.source_conversation_id
  LEFT JOIN conversations p ON p.id = c.parent_id`

export const NewConversation = Schema.Struct({
  publicId: Schema.String,
  workspaceId: Schema.BigInt,
  creatorId: Schema.BigInt,
  answererId: Schema.BigInt,
  title: Schema.NullOr(Schema.String),
  metadataJson: Schema.String,
  billingSubject: Schema.NullOr(Schema.String),
  defaultRunnerExecutorId: NullId,
  accessJson: Schema.String,
  memoryContextJson: Schema.NullOr(Schema.String),
  usageSummaryJson: Schema.String,
  side: Schema.Boolean,
  sourceConversationId: NullId,
  forkedPosition: Schema.NullOr(Schema.Number),
  forkedFromTurnPublicId: Schema.NullOr(Schema.String),
  forkedFromVariantPublicId: Schema.NullOr(Schema.String),
  /** A fork's or side's start: its source's last reply model (absent: none yet). */
  lastReplyModel: Schema.optionalKey(Schema.NullOr(Schema.String)),
  now: Schema.Date
})
export type NewConversation = typeof NewConversation.Type

const insertConversation = Effect.fnUntraced(function* (row: NewConversation) {
  const sql = yield* SqlClient
  const [inserted] = yield* sql<{ id: bigint }>`
    INSERT INTO conversations (public_id, workspace_id, creator_id, answerer_id, title, metadata, billing_subject,
      default_runner_executor_id, access, memory_context, usage_summary, side, source_conversation_id,
      forked_position, forked_from_turn_public_id, forked_from_variant_public_id, last_reply_model, state,
      last_activity_at, created_at, updated_at)
    VALUES (${row.publicId}, ${row.workspaceId}, ${row.creatorId}, ${row.answererId}, ${row.title},
      ${row.metadataJson}::jsonb, ${row.billingSubject}, ${row.defaultRunnerExecutorId}, ${row.accessJson}::jsonb,
      ${row.memoryContextJson}::jsonb, ${row.usageSummaryJson}::jsonb, ${row.side}, ${row.sourceConversationId},
      ${row.forkedPosition}, ${row.forkedFromTurnPublicId}, ${row.forkedFromVariantPublicId},
      ${row.lastReplyModel ?? null}, 'active', ${row.now}, ${row.now}, ${row.now})
    RETURNING id`
  return inserted!.id
})

const findConversation = Rows.maybe("Conversations.findConversation", {
  Request: Schema.String,
  Result: ConversationRow,
  execute: (publicId, sql) => sql`${sql.literal(selectConversation)} WHERE c.public_id = ${publicId}`
})

const findConversationById = Rows.maybe("Conversations.findConversationById", {
  Request: Schema.BigInt,
  Result: ConversationRow,
  execute: (id, sql) => sql`${sql.literal(selectConversation)} WHERE c.id = ${id}`
})

/** What a conversation door's standing judges of its workspace (seeing and write standing, Workspaces.ts). */
export const StandingWorkspace = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  account_id: Schema.BigInt,
  owner_id: Schema.BigInt,
  dedicated_agent_id: NullId,
  access_mode: Schema.Literals(["account_wide", "private"]),
  state: Schema.String,
  messaging: Schema.Array(MessagingEntry)
})
export type StandingWorkspace = typeof StandingWorkspace.Type

const StandingColumns = Schema.Struct({
  ws_id: Schema.BigInt,
  ws_public_id: Schema.String,
  ws_account_id: Schema.BigInt,
  ws_owner_id: Schema.BigInt,
  ws_dedicated_agent_id: NullId,
  ws_access_mode: StandingWorkspace.fields.access_mode,
  ws_state: Schema.String,
  ws_messaging: StandingWorkspace.fields.messaging,
  /** The conversation's id: null when the workspace holds no such conversation. */
  id: NullId
})
const decodeStanding = Schema.decodeUnknownEffect(StandingColumns)

/** A row its schema refuses is a defect naming the statement (as Rows' queries make it). */
const rowDefect = (name: string) => (error: Schema.SchemaError) =>
  Effect.die(new Rows.RowDecodeError(`${name}: ${error.message}`, { cause: error }))
const decodeConversation = Schema.decodeUnknownEffect(ConversationRow)

/** What an input's acceptance reads with its standing: whose key, if one was given. */
export interface AcceptanceKey {
  readonly authorId: bigint
  readonly key: string | null
}

/** An acceptance's extras: the stored answerer and the public id of the input the key already made. */
const AcceptanceColumns = Schema.Struct({
  ans_id: Schema.BigInt,
  ans_public_id: Schema.String,
  ans_handle: Schema.String,
  ans_kind: Schema.Literals(["human", "agent"]),
  ans_display_name: Schema.String,
  ans_status: Schema.String,
  ans_role: Schema.String,
  ans_steward_id: NullId,
  ans_configuration: Json,
  made_input_public_id: Schema.NullOr(Schema.String)
})
const decodeAcceptance = Schema.decodeUnknownEffect(AcceptanceColumns)

/**
 * A door's standing in one statement: the workspace by public id (undefined: none) and the
 * conversation of it by public id (undefined: none there, or `conversationPublicId` null). An
 * input's acceptance (`acceptance` given) reads in it too the conversation's answerer and the
 * input its author already made under its Idempotency-Key; other doors read neither.
 */
const standingOf = Effect.fnUntraced(
  function* (workspacePublicId: string, conversationPublicId: string | null, acceptance?: AcceptanceKey) {
    const sql = yield* SqlClient
    const made =
      acceptance?.key == null
        ? sql`NULL::text`
        : sql`(SELECT i.public_id::text FROM conversation_inputs i WHERE i.conversation_id = conversation.id
            AND i.author_id = ${acceptance.authorId} AND i.idempotency_key = ${acceptance.key})`
    const extras =
      acceptance === undefined
        ? sql``
        : sql`, u.id AS ans_id, u.public_id::text AS ans_public_id, u.handle AS ans_handle, u.kind AS ans_kind,
            u.display_name AS ans_display_name, u.status AS ans_status, u.role AS ans_role,
            u.steward_id AS ans_steward_id, u.configuration AS ans_configuration, ${made} AS made_input_public_id`
    const joins = acceptance === undefined ? sql`` : sql`LEFT JOIN users u ON u.id = conversation.answerer_id`
    const [row] = yield* sql`
      SELECT w.id AS ws_id, w.public_id AS ws_public_id, w.account_id AS ws_account_id, w.owner_id AS ws_owner_id,
        w.dedicated_agent_id AS ws_dedicated_agent_id, w.access_mode AS ws_access_mode, w.state AS ws_state,
        w.messaging AS ws_messaging, conversation.* ${extras}
      FROM workspaces w
      LEFT JOIN LATERAL (${sql.literal(selectConversation)}
        WHERE c.public_id = ${conversationPublicId}::uuid AND c.workspace_id = w.id) conversation ON TRUE
      ${joins}
      WHERE w.public_id = ${workspacePublicId}::uuid`
    if (row === undefined) return undefined
    const columns = yield* decodeStanding(row)
    const workspace: StandingWorkspace = {
      id: columns.ws_id,
      public_id: columns.ws_public_id,
      account_id: columns.ws_account_id,
      owner_id: columns.ws_owner_id,
      dedicated_agent_id: columns.ws_dedicated_agent_id,
      access_mode: columns.ws_access_mode,
      state: columns.ws_state,
      messaging: columns.ws_messaging
    }
    if (columns.id === null) return { workspace, conversation: undefined, acceptance: undefined }
    const conversation = yield* decodeConversation(row)
    if (acceptance === undefined) return { workspace, conversation, acceptance: undefined }
    const extra = yield* decodeAcceptance(row)
    const answerer: SpeakerRow = {
      id: extra.ans_id,
      public_id: extra.ans_public_id,
      handle: extra.ans_handle,
      kind: extra.ans_kind,
      display_name: extra.ans_display_name,
      status: extra.ans_status,
      role: extra.ans_role,
      steward_id: extra.ans_steward_id,
      configuration: extra.ans_configuration
    }
    return { workspace, conversation, acceptance: { answerer, madeInputPublicId: extra.made_input_public_id } }
  },
  Effect.catchTag("SchemaError", rowDefect("Conversations.standingOf"))
)

export const ConversationFilter = Schema.Struct({
  workspaceIds: Schema.Array(Schema.BigInt),
  /** The reader: only conversations whose level for it is not none are listed. */
  viewerId: Schema.BigInt,
  /** roots: no parent, not a side; sides; children of a parent. */
  scope: Schema.Union([Schema.Literal("roots"), Schema.Literal("sides"), Schema.Struct({ parentId: Schema.BigInt })]),
  states: Schema.Array(Schema.String),
  answererId: NullId,
  metadata: Schema.NullOr(Schema.Struct({ key: Schema.String, value: Schema.String })),
  orderBy: Schema.Literals(["public_id", "last_activity_at"]),
  order: Schema.Literals(["asc", "desc"]),
  /** The keyset position after which to read: the ordering value and the public id. */
  after: Schema.NullOr(Schema.Struct({ value: Schema.String, publicId: Schema.String })),
  limit: Schema.Number
})
export type ConversationFilter = typeof ConversationFilter.Type

/** A JSON number or boolean text (what a metadata_value may also read as). */
const jsonScalar = /^(?:true|false|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)$/

const listConversations = Rows.all("Conversations.listConversations", {
  Request: ConversationFilter,
  Result: ConversationRow,
  execute: (filter, sql) => {
    const asc = filter.order === "asc"
    const direction = sql.literal(asc ? "ASC" : "DESC")
    const compare = sql.literal(asc ? ">" : "<")
    const scope =
      filter.scope === "roots"
        ? sql`c.parent_id IS NULL AND NOT c.side`
        : filter.scope === "sides"
          ? sql`c.side`
          : sql`c.parent_id = ${filter.scope.parentId}`
    const answerer = filter.answererId === null ? sql`TRUE` : sql`c.answerer_id = ${filter.answererId}`
    // metadata[key] equals the string, or is the number or boolean that JSON text reads as (1.5 matches "1.50").
    const scalar = filter.metadata !== null && jsonScalar.test(filter.metadata.value) ? filter.metadata.value : null
    const metadata =
      filter.metadata === null
        ? sql`TRUE`
        : sql`((jsonb_typeof(c.metadata -> ${filter.metadata.key}) = 'string'
                AND c.metadata ->> ${filter.metadata.key} = ${filter.metadata.value})
               OR (jsonb_typeof(c.metadata -> ${filter.metadata.key}) IN ('number', 'boolean')
                AND c.metadata -> ${filter.metadata.key} = ${scalar}::jsonb))`
    const byActivity = filter.orderBy === "last_activity_at"
    const after =
      filter.after === null
        ? sql`TRUE`
        : byActivity
          ? sql`(c.last_activity_at, c.public_id) ${compare} (${filter.after.value}::timestamptz, ${filter.after.publicId}::uuid)`
          : sql`c.public_id ${compare} ${filter.after.publicId}::uuid`
    const ordering = byActivity
      ? sql`c.last_activity_at ${direction}, c.public_id ${direction}`
      : sql`c.public_id ${direction}`
    return sql`
      ${sql.literal(selectConversation)}
      WHERE c.workspace_id = ANY(${[...filter.workspaceIds]}::bigint[]) AND c.state = ANY(${[...filter.states]}::text[])
        AND ${scope} AND ${answerer} AND ${metadata} AND ${after} AND ${levelNotNone(sql, filter.viewerId)}
      ORDER BY ${ordering}
      LIMIT ${filter.limit}`
  }
})

/** Writes the named fields (JSON members as JSON text) with the actor's fences. */
const updateConversation = Effect.fnUntraced(function* (
  publicId: string,
  fields: {
    readonly title?: string | null
    readonly metadataJson?: string
    readonly accessJson?: string
    readonly defaultRunnerExecutorId?: bigint | null
    readonly memoryContextJson?: string | null
    readonly state?: "active" | "archived" | "tombstoned"
    readonly lockVersion?: number
    readonly contextRevision?: number
    readonly lastReplyModel?: string
    readonly contextJson?: string
    readonly usageSummaryJson?: string
    readonly activity?: boolean
  },
  now: Date
) {
  const sql = yield* SqlClient
  const set = (value: unknown) => value !== undefined
  yield* sql`
    UPDATE conversations SET
      title = CASE WHEN ${set(fields.title)} THEN ${fields.title ?? null} ELSE title END,
      metadata = COALESCE(${fields.metadataJson ?? null}::jsonb, metadata),
      access = COALESCE(${fields.accessJson ?? null}::jsonb, access),
      default_runner_executor_id = CASE WHEN ${set(fields.defaultRunnerExecutorId)}
        THEN ${fields.defaultRunnerExecutorId ?? null}::bigint ELSE default_runner_executor_id END,
      memory_context = CASE WHEN ${set(fields.memoryContextJson)}
        THEN ${fields.memoryContextJson ?? null}::jsonb ELSE memory_context END,
      state = COALESCE(${fields.state ?? null}, state),
      archived_at = CASE WHEN ${fields.state ?? null}::text = 'archived' THEN ${now}::timestamptz
        WHEN ${fields.state ?? null}::text = 'active' THEN NULL ELSE archived_at END,
      tombstoned_at = CASE WHEN ${fields.state ?? null}::text = 'tombstoned' THEN ${now}::timestamptz ELSE tombstoned_at END,
      lock_version = COALESCE(${fields.lockVersion ?? null}::integer, lock_version),
      context_revision = COALESCE(${fields.contextRevision ?? null}::integer, context_revision),
      last_reply_model = COALESCE(${fields.lastReplyModel ?? null}, last_reply_model),
      context = COALESCE(${fields.contextJson ?? null}::jsonb, context),
      usage_summary = COALESCE(${fields.usageSummaryJson ?? null}::jsonb, usage_summary),
      last_activity_at = CASE WHEN ${fields.activity === true} THEN ${now}::timestamptz ELSE last_activity_at END,
      updated_at = ${now}
    WHERE public_id = ${publicId}`
})

/**
 * Deletes a conversation's rows: its inputs, turns, variants and the inference requests it asked
 * go with it (foreign keys), its store entries and conversation memory (hosted by kind and id,
 * without a key) explicitly. A conversation other conversations fork from or descend from keeps
 * its row and turns (they read its prefix by reference); its inputs and hosted rows still go.
 */
/** Its sides and subagent children, not tombstoned: the conversations that follow its lifecycle. */
const followersOf = Rows.all("Conversations.followersOf", {
  Request: Schema.BigInt,
  Result: Schema.Struct({ public_id: Schema.String, side: Schema.Boolean }),
  execute: (id, sql) => sql`
    SELECT public_id::text, side FROM conversations
    WHERE state <> 'tombstoned' AND (parent_id = ${id} OR (side AND source_conversation_id = ${id}))
    ORDER BY id`
})

/**
 * Whether work is live in its tree (itself, its sides and its children, recursively): a turn
 * pending or running, or a run hosted there that works (a reply that settled early leaves its run
 * working on delegated tasks). A run held (paused, needs_attention: its turn failed) does not hold
 * DELETE back; the tombstone stops it.
 */
const treeBusy = Rows.maybe("Conversations.treeBusy", {
  Request: Schema.BigInt,
  Result: Schema.Struct({ busy: Schema.Boolean }),
  execute: (id, sql) => sql`
    WITH RECURSIVE tree(id) AS (
      SELECT ${id}::bigint
      UNION
      SELECT c.id FROM conversations c JOIN tree ON c.parent_id = tree.id OR (c.side AND c.source_conversation_id = tree.id)
      WHERE c.state <> 'tombstoned'
    )
    SELECT EXISTS (
      SELECT 1 FROM conversation_turns t JOIN tree ON t.conversation_id = tree.id WHERE t.status IN ('pending', 'running')
    ) OR EXISTS (
      SELECT 1 FROM runs r JOIN tree ON r.conversation_id = tree.id
      WHERE r.tombstoned_at IS NULL AND r.status IN ('pending', 'running', 'canceling')
    ) AS busy`
})

/** Conversations (not tombstoned) in which the user has spoken a turn or answers. */
const spokenIn = Rows.all("Conversations.spokenIn", {
  Request: Schema.BigInt,
  Result: Schema.Struct({ public_id: Schema.String }),
  execute: (userId, sql) => sql`
    SELECT c.public_id::text FROM conversations c
    WHERE c.state <> 'tombstoned'
      AND (c.answerer_id = ${userId}
        OR c.id IN (SELECT t.conversation_id FROM conversation_turns t WHERE t.speaker_id = ${userId}))
    ORDER BY c.id`
})

const deleteConversation = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ id: bigint; referenced: boolean }>`
    SELECT id, EXISTS (SELECT 1 FROM conversations o WHERE o.source_conversation_id = c.id OR o.parent_id = c.id)
      AS referenced
    FROM conversations c WHERE public_id = ${publicId}`
  if (row === undefined) return
  yield* sql`DELETE FROM store_entries WHERE host_kind = 'conversation' AND host_id = ${row.id}`
  yield* sql`DELETE FROM store_entry_hosts WHERE host_kind = 'conversation' AND host_id = ${row.id}`
  yield* sql`DELETE FROM memory_documents WHERE anchor_kind = 'conversation' AND anchor_id = ${row.id}`
  yield* sql`DELETE FROM memory_anchors WHERE anchor_kind = 'conversation' AND anchor_id = ${row.id}`
  yield* dropConversationNamings(row.id)
  if (row.referenced) yield* sql`DELETE FROM conversation_inputs WHERE conversation_id = ${row.id}`
  else {
    // Its hosted runs go with it (a foreign key): their namings first.
    yield* dropHostedRunNamings(row.id)
    yield* sql`DELETE FROM conversations WHERE id = ${row.id}`
  }
})

export const InputRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  conversation_id: Schema.BigInt,
  queue_position: Schema.Number,
  kind: Schema.String,
  state: Schema.Literals(["pending", "steering", "blocked", "consumed"]),
  blocked_reason: Schema.NullOr(Schema.String),
  delivery_mode: Schema.String,
  role: Schema.String,
  origin: Schema.String,
  author_id: Schema.BigInt,
  speaker_id: Schema.BigInt,
  answerer_id: NullId,
  text: Schema.String,
  members: Json,
  deliver_at: Schema.NullOr(Schema.Date),
  lock_version: Schema.Number,
  turn_public_id: Schema.NullOr(Schema.String),
  variant_public_id: Schema.NullOr(Schema.String),
  consumed_at: Schema.NullOr(Schema.Date),
  idempotency_key: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type InputRow = typeof InputRow.Type

export interface NewInput {
  readonly publicId: string
  /** The conversation's public id: its activity is stamped in the insert's statement. */
  readonly conversationPublicId: string
  readonly queuePosition: number
  readonly kind: string
  readonly state: string
  readonly deliveryMode: string
  readonly role: string
  readonly origin: string
  readonly authorId: bigint
  readonly speakerId: bigint
  readonly answererId: bigint | null
  readonly text: string
  readonly membersJson: string
  readonly deliverAt: Date | null
  /** The Idempotency-Key it was accepted under (null: none). */
  readonly idempotencyKey: string | null
  readonly now: Date
}

const decodeInput = Schema.decodeUnknownEffect(InputRow)

/** Inserts an accepted input and stamps its conversation's activity, in one statement; answers the row. */
const insertInput = Effect.fnUntraced(
  function* (row: NewInput) {
    const sql = yield* SqlClient
    const [inserted] = yield* sql`
      WITH conversation AS (
        UPDATE conversations SET last_activity_at = ${row.now}, updated_at = ${row.now}
        WHERE public_id = ${row.conversationPublicId} RETURNING id)
      INSERT INTO conversation_inputs (public_id, conversation_id, queue_position, kind, state, delivery_mode, role,
        origin, author_id, speaker_id, answerer_id, text, members, deliver_at, idempotency_key, created_at, updated_at)
      VALUES (${row.publicId}, (SELECT id FROM conversation), ${row.queuePosition}, ${row.kind}, ${row.state},
        ${row.deliveryMode}, ${row.role}, ${row.origin}, ${row.authorId}, ${row.speakerId}, ${row.answererId},
        ${row.text}, ${row.membersJson}::jsonb, ${row.deliverAt}, ${row.idempotencyKey}, ${row.now}, ${row.now})
      RETURNING *`
    if (bindsAttachments(row.membersJson)) yield* nameInputUploads(row.publicId)
    return yield* decodeInput(inserted)
  },
  Effect.catchTag("SchemaError", rowDefect("Conversations.insertInput"))
)

const findInput = Rows.maybe("Conversations.findInput", {
  Request: Schema.String,
  Result: InputRow,
  execute: (publicId, sql) => sql`SELECT * FROM conversation_inputs WHERE public_id = ${publicId}`
})

/** Unconsumed inputs in read order: kernel rows first, then arrival. */
const queueOf = Rows.all("Conversations.queueOf", {
  Request: Schema.BigInt,
  Result: InputRow,
  execute: (conversationId, sql) => sql`
    SELECT * FROM conversation_inputs WHERE conversation_id = ${conversationId} AND state <> 'consumed'
    ORDER BY (origin IN ('task_result', 'child')) DESC, queue_position`
})

const updateInput = Effect.fnUntraced(function* (
  publicId: string,
  fields: {
    readonly state?: string
    readonly blockedReason?: string | null
    readonly deliveryMode?: string
    readonly text?: string
    readonly membersJson?: string
    readonly deliverAt?: Date | null
    readonly queuePosition?: number
    readonly lockVersion?: number
    readonly turnPublicId?: string
    readonly variantPublicId?: string
  },
  now: Date
) {
  const sql = yield* SqlClient
  const set = (value: unknown) => value !== undefined
  yield* sql`
    UPDATE conversation_inputs SET
      state = COALESCE(${fields.state ?? null}, state),
      blocked_reason = CASE WHEN ${set(fields.blockedReason)} THEN ${fields.blockedReason ?? null} ELSE blocked_reason END,
      delivery_mode = COALESCE(${fields.deliveryMode ?? null}, delivery_mode),
      text = COALESCE(${fields.text ?? null}, text),
      members = members || COALESCE(${fields.membersJson ?? null}::jsonb, '{}'::jsonb),
      deliver_at = CASE WHEN ${set(fields.deliverAt)} THEN ${fields.deliverAt ?? null}::timestamptz ELSE deliver_at END,
      queue_position = COALESCE(${fields.queuePosition ?? null}::integer, queue_position),
      lock_version = COALESCE(${fields.lockVersion ?? null}::integer, lock_version),
      turn_public_id = COALESCE(${fields.turnPublicId ?? null}::uuid, turn_public_id),
      variant_public_id = COALESCE(${fields.variantPublicId ?? null}::uuid, variant_public_id),
      consumed_at = CASE WHEN ${fields.state ?? null}::text = 'consumed' THEN ${now}::timestamptz ELSE consumed_at END,
      updated_at = ${now}
    WHERE public_id = ${publicId}`
  if (fields.membersJson !== undefined) yield* syncInputNamings(publicId)
})

const deleteInput = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  yield* dropInputNamings(publicId)
  yield* sql`DELETE FROM conversation_inputs WHERE public_id = ${publicId}`
})

export const TurnRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  conversation_id: Schema.BigInt,
  position: Schema.Number,
  kind: Schema.String,
  role: Schema.String,
  status: Schema.String,
  visibility: Schema.String,
  origin: Schema.String,
  answerer_id: NullId,
  speaker_id: NullId,
  prompt_text: Schema.NullOr(Schema.String),
  input_public_id: Schema.NullOr(Schema.String),
  active_variant_public_id: Schema.NullOr(Schema.String),
  failure_reason_key: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type TurnRow = typeof TurnRow.Type

export interface NewTurn {
  readonly publicId: string
  readonly conversationId: bigint
  readonly position: number
  readonly kind: string
  readonly role: string
  readonly status: string
  readonly visibility: string
  readonly origin: string
  readonly answererId: bigint | null
  readonly speakerId: bigint | null
  readonly promptText: string | null
  readonly inputPublicId: string | null
  readonly activeVariantPublicId: string | null
  readonly now: Date
}

const insertTurn = Effect.fnUntraced(function* (row: NewTurn) {
  const sql = yield* SqlClient
  const [inserted] = yield* sql<{ id: bigint }>`
    INSERT INTO conversation_turns (public_id, conversation_id, position, kind, role, status, visibility, origin,
      answerer_id, speaker_id, prompt_text, input_public_id, active_variant_public_id, created_at, updated_at)
    VALUES (${row.publicId}, ${row.conversationId}, ${row.position}, ${row.kind}, ${row.role}, ${row.status},
      ${row.visibility}, ${row.origin}, ${row.answererId}, ${row.speakerId}, ${row.promptText}, ${row.inputPublicId},
      ${row.activeVariantPublicId}, ${row.now}, ${row.now})
    RETURNING id`
  return inserted!.id
})

const findTurn = Rows.maybe("Conversations.findTurn", {
  Request: Schema.String,
  Result: TurnRow,
  execute: (publicId, sql) => sql`SELECT * FROM conversation_turns WHERE public_id = ${publicId}`
})

const updateTurn = Effect.fnUntraced(function* (
  publicId: string,
  fields: {
    readonly status?: string
    readonly visibility?: string
    readonly activeVariantPublicId?: string
    readonly failureReasonKey?: string | null
  },
  now: Date
) {
  const sql = yield* SqlClient
  const set = (value: unknown) => value !== undefined
  yield* sql`
    UPDATE conversation_turns SET
      status = COALESCE(${fields.status ?? null}, status),
      visibility = COALESCE(${fields.visibility ?? null}, visibility),
      active_variant_public_id = COALESCE(${fields.activeVariantPublicId ?? null}::uuid, active_variant_public_id),
      failure_reason_key = CASE WHEN ${set(fields.failureReasonKey)} THEN ${fields.failureReasonKey ?? null}
        ELSE failure_reason_key END,
      updated_at = ${now}
    WHERE public_id = ${publicId}`
})

const deleteTurn = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM conversation_turns WHERE public_id = ${publicId}`
})

/** A conversation's own visibility for a turn it reads by reference (child-local: the turn's row is untouched). */
const overrideVisibility = Effect.fnUntraced(function* (
  conversationPublicId: string,
  turnPublicId: string,
  visibility: string
) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO conversation_turn_visibility (conversation_id, turn_id, visibility)
    SELECT c.id, t.id, ${visibility} FROM conversations c, conversation_turns t
    WHERE c.public_id = ${conversationPublicId} AND t.public_id = ${turnPublicId}
    ON CONFLICT (conversation_id, turn_id) DO UPDATE SET visibility = EXCLUDED.visibility`
})

/** Where a conversation's timeline reads: its own turns, then each source's below its fork position. */
export const TimelineChain = Schema.Struct({
  conversationIds: Schema.Array(Schema.BigInt),
  /** Positions read from each, exclusive upper bound (null: every position). */
  below: Schema.Array(Schema.NullOr(Schema.Number))
})
export type TimelineChain = typeof TimelineChain.Type

/**
 * A fork's chain in one statement: the conversation, then each source (while the one before has
 * a source and a fork position), each read below the smallest fork position met so far.
 */
const timelineChain = Rows.all("Conversations.timelineChain", {
  Request: Schema.BigInt,
  Result: Schema.Struct({ conversation_id: Schema.BigInt, below: Schema.NullOr(Schema.Number) }),
  execute: (id, sql) => sql`
    WITH RECURSIVE chain(conversation_id, below, source_id, forked_position, depth) AS (
      SELECT id, NULL::integer, source_conversation_id, forked_position, 1 FROM conversations WHERE id = ${id}
      UNION ALL
      SELECT s.id, LEAST(chain.forked_position, chain.below), s.source_conversation_id, s.forked_position,
        chain.depth + 1
      FROM chain JOIN conversations s ON s.id = chain.source_id
      WHERE chain.forked_position IS NOT NULL
    )
    SELECT conversation_id, below FROM chain ORDER BY depth`
})

export const TimelineWindow = Schema.Struct({
  chain: TimelineChain,
  afterPosition: Schema.NullOr(Schema.Number),
  beforePosition: Schema.NullOr(Schema.Number),
  includeHidden: Schema.Boolean,
  /** newest: the window nearest the tail; oldest: nearest afterPosition. */
  from: Schema.Literals(["newest", "oldest"]),
  limit: Schema.Number
})
export type TimelineWindow = typeof TimelineWindow.Type

const TimelineTurnRow = Schema.Struct({ ...TurnRow.fields, own: Schema.Boolean })
export type TimelineTurnRow = typeof TimelineTurnRow.Type

/** The chain as rows (conversation_id, below, depth), depth 1 the conversation itself. */
const chainRows = (chain: TimelineChain, sql: SqlClient) => sql`
  SELECT * FROM unnest(${[...chain.conversationIds]}::bigint[],
    ${chain.below.map((below) => below ?? 2147483647)}::integer[]) WITH ORDINALITY AS chain(conversation_id, below, depth)`

const turnColumns = Object.keys(TurnRow.fields)
  .filter((column) => column !== "visibility")
  .map((column) => `t.${column}`)
  .join(", ")

/**
 * conversation_turns as the chain's first conversation reads them: a turn's visibility is the
 * nearest chain member's override (migration 0022: a child-local visibility of a turn read by
 * reference), else the turn's own.
 */
const chainTurns = (chain: TimelineChain, sql: SqlClient) => sql`(
  SELECT ${sql.literal(turnColumns)}, COALESCE((
    SELECT o.visibility FROM conversation_turn_visibility o
    JOIN unnest(${[...chain.conversationIds]}::bigint[]) WITH ORDINALITY AS reader(conversation_id, depth)
      ON reader.conversation_id = o.conversation_id
    WHERE o.turn_id = t.id ORDER BY reader.depth LIMIT 1), t.visibility) AS visibility
  FROM conversation_turns t)`

const chainJoin = (chain: TimelineChain, sql: SqlClient) => sql`
  JOIN (${chainRows(chain, sql)}) chain ON t.conversation_id = chain.conversation_id AND t.position < chain.below`

const hiddenFilter = (includeHidden: boolean, sql: SqlClient) =>
  includeHidden ? sql`TRUE` : sql`t.visibility <> 'hidden'`

/**
 * The `limit` turns of the chain meeting `conditions` nearest its tail (newest) or its start
 * (oldest): each member's nearest walked on the (conversation_id, position) index, then the
 * nearest of those, so no read sorts the chain's turns.
 */
const nearestTurns = (
  chain: TimelineChain,
  conditions: Fragment,
  from: "newest" | "oldest",
  limit: number,
  sql: SqlClient
) => {
  const direction = sql.literal(from === "newest" ? "DESC" : "ASC")
  return sql`
    SELECT t.*, chain.depth = 1 AS own FROM (${chainRows(chain, sql)}) chain
    CROSS JOIN LATERAL (
      SELECT * FROM ${chainTurns(chain, sql)} t
      WHERE t.conversation_id = chain.conversation_id AND t.position < chain.below AND ${conditions}
      ORDER BY t.position ${direction}
      LIMIT ${limit}
    ) t
    ORDER BY t.position ${direction}
    LIMIT ${limit}`
}

/** The window's turns, nearest its end first. */
const windowTurns = (window: TimelineWindow, sql: SqlClient) => {
  const after = window.afterPosition === null ? sql`TRUE` : sql`t.position > ${window.afterPosition}`
  const before = window.beforePosition === null ? sql`TRUE` : sql`t.position < ${window.beforePosition}`
  const conditions = sql`${after} AND ${before} AND ${hiddenFilter(window.includeHidden, sql)}`
  return nearestTurns(window.chain, conditions, window.from, window.limit, sql)
}

const timeline = Rows.all("Conversations.timeline", {
  Request: TimelineWindow,
  Result: TimelineTurnRow,
  execute: windowTurns
})

/** The newest turn of the conversation itself below `position` (the tail after a deletion). */
const ownTurnBelow = Rows.maybe("Conversations.ownTurnBelow", {
  Request: Schema.Struct({ conversationId: Schema.BigInt, position: Schema.Number }),
  Result: TurnRow,
  execute: (request, sql) => sql`
    SELECT * FROM conversation_turns WHERE conversation_id = ${request.conversationId} AND position < ${request.position}
    ORDER BY position DESC LIMIT 1`
})

/** The settled, unhidden turns of the chain in order (the material a prompt is assembled from). */
const historyOf = Rows.all("Conversations.historyOf", {
  Request: TimelineChain,
  Result: TimelineTurnRow,
  execute: (chain, sql) => sql`
    SELECT t.*, chain.depth = 1 AS own FROM ${chainTurns(chain, sql)} t ${chainJoin(chain, sql)}
    WHERE t.visibility = 'visible' AND t.status IN ('completed', 'failed', 'canceled', 'timed_out')
    ORDER BY t.position`
})

/** The newest settled turn of the chain, hidden ones included (where a fork is taken by default). */
const newestSettledTurn = Rows.maybe("Conversations.newestSettledTurn", {
  Request: TimelineChain,
  Result: TimelineTurnRow,
  execute: (chain, sql) =>
    nearestTurns(chain, sql`t.status IN ('completed', 'failed', 'canceled', 'timed_out')`, "newest", 1, sql)
})

export interface TurnCopy {
  readonly publicId: string
  readonly conversationId: bigint
  /** The turn copied (conversation_turns.id), at its position. */
  readonly fromTurnId: bigint
  /** The copy's one candidate, whose status and failure the turn takes. */
  readonly variantPublicId: string
  readonly status: string
  readonly failureReasonKey: string | null
  readonly now: Date
}

/**
 * A fork's own copy of its fork turn (a new id, the same position and members; its visibility as
 * the forked conversation read it: the nearest override along the sources, else the turn's own).
 */
const copyTurn = Effect.fnUntraced(function* (copy: TurnCopy) {
  const sql = yield* SqlClient
  const [inserted] = yield* sql<{ id: bigint }>`
    WITH RECURSIVE sources(id, depth) AS (
      SELECT source_conversation_id, 1 FROM conversations WHERE id = ${copy.conversationId}
      UNION ALL
      SELECT c.source_conversation_id, sources.depth + 1 FROM sources JOIN conversations c ON c.id = sources.id
      WHERE c.source_conversation_id IS NOT NULL
    )
    INSERT INTO conversation_turns (public_id, conversation_id, position, kind, role, status, visibility, origin,
      answerer_id, speaker_id, prompt_text, input_public_id, active_variant_public_id, failure_reason_key,
      created_at, updated_at)
    SELECT ${copy.publicId}, ${copy.conversationId}, position, kind, role, ${copy.status},
      COALESCE((SELECT o.visibility FROM sources JOIN conversation_turn_visibility o
                ON o.conversation_id = sources.id AND o.turn_id = ${copy.fromTurnId}
                ORDER BY sources.depth LIMIT 1), visibility), origin,
      answerer_id, speaker_id, prompt_text, input_public_id, ${copy.variantPublicId}, ${copy.failureReasonKey},
      ${copy.now}, ${copy.now}
    FROM conversation_turns WHERE id = ${copy.fromTurnId}
    RETURNING id`
  return inserted!.id
})

/** The copy's one candidate: source fork, its origin the candidate copied (content, model, usage kept). */
const copyVariant = Effect.fnUntraced(function* (publicId: string, turnId: bigint, fromPublicId: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO conversation_variants (public_id, turn_id, source, status, model, content, usage, failure_reason_key,
      origin_variant_public_id, inference_request_public_id, run_public_id, memory_context, created_at, updated_at)
    SELECT ${publicId}, ${turnId}, 'fork', status, model, content, usage, failure_reason_key, public_id,
      inference_request_public_id, run_public_id, memory_context, ${now}, ${now}
    FROM conversation_variants WHERE public_id = ${fromPublicId}`
})

/**
 * A fork's copies of what its source hosts (migrations 0007, 0009): the store entries of the
 * conversation host and the documents of the conversation memory anchor, each under a new id.
 */
const copyHostedRows = Effect.fnUntraced(function* (fromId: bigint, toId: bigint, now: Date) {
  const sql = yield* SqlClient
  const [counts] = yield* sql<{ entries: number; documents: number }>`
    SELECT (SELECT count(*)::int FROM store_entries WHERE host_kind = 'conversation' AND host_id = ${fromId}) AS entries,
      (SELECT count(*)::int FROM memory_documents
       WHERE anchor_kind = 'conversation' AND anchor_id = ${fromId} AND speaker_id = 0) AS documents`
  const ids = (count: number) => Array.from({ length: count }, newPublicId)
  if (counts!.entries > 0) {
    yield* sql`
      INSERT INTO store_entries (public_id, host_kind, host_id, namespace, key, value, created_at, updated_at)
      SELECT (${ids(counts!.entries)}::uuid[])[row_number() OVER (ORDER BY id)], 'conversation', ${toId}, namespace,
        key, value, ${now}, ${now}
      FROM store_entries WHERE host_kind = 'conversation' AND host_id = ${fromId}`
  }
  if (counts!.documents > 0) {
    yield* sql`
      INSERT INTO memory_documents (public_id, anchor_kind, anchor_id, speaker_id, path, content, description,
        bytesize, written_at, created_at)
      SELECT (${ids(counts!.documents)}::uuid[])[row_number() OVER (ORDER BY id)], 'conversation', ${toId}, 0, path,
        content, description, bytesize, written_at, ${now}
      FROM memory_documents WHERE anchor_kind = 'conversation' AND anchor_id = ${fromId} AND speaker_id = 0`
  }
})

export const VariantRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  turn_id: Schema.BigInt,
  turn_public_id: Schema.String,
  source: Schema.String,
  status: Schema.String,
  model: Json,
  content: Schema.String,
  usage: Json,
  failure_reason_key: Schema.NullOr(Schema.String),
  origin_variant_public_id: Schema.NullOr(Schema.String),
  inference_request_public_id: Schema.NullOr(Schema.String),
  run_public_id: Schema.NullOr(Schema.String),
  concealed: Schema.Boolean,
  memory_context: Json,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type VariantRow = typeof VariantRow.Type

export interface NewVariant {
  readonly publicId: string
  readonly turnId: bigint
  readonly source: string
  readonly status: string
  readonly modelJson: string | null
  readonly content: string
  readonly originVariantPublicId: string | null
  readonly inferenceRequestPublicId: string | null
  /** A run-backed reply's run. */
  readonly runPublicId?: string | null
  readonly now: Date
}

const insertVariant = Effect.fnUntraced(function* (row: NewVariant) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO conversation_variants (public_id, turn_id, source, status, model, content, origin_variant_public_id,
      inference_request_public_id, run_public_id, created_at, updated_at)
    VALUES (${row.publicId}, ${row.turnId}, ${row.source}, ${row.status}, ${row.modelJson}::jsonb, ${row.content},
      ${row.originVariantPublicId}, ${row.inferenceRequestPublicId}, ${row.runPublicId ?? null}, ${row.now}, ${row.now})`
})

export interface MessageTurn {
  /** The conversation's public id: its context_revision and activity are written too. */
  readonly conversationPublicId: string
  readonly inputPublicId: string
  readonly turnPublicId: string
  readonly variantPublicId: string
  readonly position: number
  readonly contextRevision: number
  readonly now: Date
}

/**
 * A message input becomes a completed turn, in one statement: the turn (the input's role, origin
 * and speaker; excluded from context when its members say visible_in_context false), its one
 * candidate (source edit, the input's text), the input consumed into them, and the conversation's
 * context_revision and activity. Answers false (having written nothing) when there is no such input.
 */
const materializeMessage = Effect.fnUntraced(function* (turn: MessageTurn) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    WITH input AS (
      SELECT public_id, role, origin, speaker_id, text,
        CASE WHEN members -> 'visible_in_context' = 'false'::jsonb THEN 'excluded_from_context' ELSE 'visible' END
          AS visibility
      FROM conversation_inputs WHERE public_id = ${turn.inputPublicId}::uuid),
    conversation AS (
      UPDATE conversations SET context_revision = ${turn.contextRevision}::integer,
        last_activity_at = ${turn.now}::timestamptz, updated_at = ${turn.now}::timestamptz
      WHERE public_id = ${turn.conversationPublicId}::uuid AND EXISTS (SELECT 1 FROM input) RETURNING id),
    made AS (
      INSERT INTO conversation_turns (public_id, conversation_id, position, kind, role, status, visibility, origin,
        answerer_id, speaker_id, prompt_text, input_public_id, active_variant_public_id, created_at, updated_at)
      SELECT ${turn.turnPublicId}::uuid, conversation.id, ${turn.position}::integer, 'message', input.role,
        'completed', input.visibility, input.origin, NULL, input.speaker_id, NULL, input.public_id,
        ${turn.variantPublicId}::uuid, ${turn.now}::timestamptz, ${turn.now}::timestamptz
      FROM input, conversation
      RETURNING id),
    candidate AS (
      INSERT INTO conversation_variants (public_id, turn_id, source, status, model, content, origin_variant_public_id,
        inference_request_public_id, created_at, updated_at)
      SELECT ${turn.variantPublicId}::uuid, made.id, 'edit', 'completed', NULL, input.text, NULL, NULL,
        ${turn.now}::timestamptz, ${turn.now}::timestamptz
      FROM made, input)
    UPDATE conversation_inputs SET state = 'consumed', blocked_reason = NULL,
      turn_public_id = ${turn.turnPublicId}::uuid, variant_public_id = ${turn.variantPublicId}::uuid,
      consumed_at = ${turn.now}::timestamptz, updated_at = ${turn.now}::timestamptz
    WHERE public_id = ${turn.inputPublicId}::uuid AND EXISTS (SELECT 1 FROM made)
    RETURNING id`
  return rows.length > 0
})

const selectVariant = `
  SELECT v.*, t.public_id::text AS turn_public_id FROM conversation_variants v
  JOIN conversation_turns t ON t.id = v.turn_id`

const findVariant = Rows.maybe("Conversations.findVariant", {
  Request: Schema.String,
  Result: VariantRow,
  execute: (publicId, sql) => sql`${sql.literal(selectVariant)} WHERE v.public_id = ${publicId}`
})

/** Every variant of the turns, in creation order. */
const variantsOf = Rows.all("Conversations.variantsOf", {
  Request: Schema.Array(Schema.BigInt),
  Result: VariantRow,
  execute: (turnIds, sql) =>
    sql`${sql.literal(selectVariant)} WHERE v.turn_id = ANY(${[...turnIds]}::bigint[]) ORDER BY v.id`
})

/**
 * The turns door's reads of the timeline: its turns joined to their variants (one row per
 * variant, oldest turn first, each turn's in creation order; a turn without one has null variant
 * columns), gathered into turns with their variants.
 */
const variantColumns = `v.id AS variant_id, v.public_id AS variant_public_id, v.source AS variant_source,
  v.status AS variant_status, v.model AS variant_model, v.content AS variant_content, v.usage AS variant_usage,
  v.failure_reason_key AS variant_failure_reason_key,
  v.origin_variant_public_id AS variant_origin_variant_public_id,
  v.inference_request_public_id AS variant_inference_request_public_id,
  v.run_public_id AS variant_run_public_id, v.concealed AS variant_concealed,
  v.memory_context AS variant_memory_context, v.created_at AS variant_created_at, v.updated_at AS variant_updated_at`

const NullString = Schema.NullOr(Schema.String)
const TurnVariantRow = Schema.Struct({
  ...TimelineTurnRow.fields,
  variant_id: NullId,
  variant_public_id: NullString,
  variant_source: NullString,
  variant_status: NullString,
  variant_model: Json,
  variant_content: NullString,
  variant_usage: Json,
  variant_failure_reason_key: NullString,
  variant_origin_variant_public_id: NullString,
  variant_inference_request_public_id: NullString,
  variant_run_public_id: NullString,
  variant_concealed: Schema.NullOr(Schema.Boolean),
  variant_memory_context: Json,
  variant_created_at: Schema.NullOr(Schema.Date),
  variant_updated_at: Schema.NullOr(Schema.Date)
})
type TurnVariantRow = typeof TurnVariantRow.Type

export interface TimelineTurnWithVariants extends TimelineTurnRow {
  readonly variants: ReadonlyArray<VariantRow>
}

const withVariants = (rows: ReadonlyArray<TurnVariantRow>) => {
  const turns: Array<TimelineTurnWithVariants & { variants: Array<VariantRow> }> = []
  for (const row of rows) {
    const {
      variant_id,
      variant_public_id,
      variant_source,
      variant_status,
      variant_model,
      variant_content,
      variant_usage,
      variant_failure_reason_key,
      variant_origin_variant_public_id,
      variant_inference_request_public_id,
      variant_run_public_id,
      variant_concealed,
      variant_memory_context,
      variant_created_at,
      variant_updated_at,
      ...turn
    } = row
    const last = turns.at(-1)
    const current = last?.id === turn.id ? last : { ...turn, variants: [] }
    if (current !== last) turns.push(current)
    if (variant_id !== null) {
      current.variants.push({
        id: variant_id,
        public_id: variant_public_id!,
        turn_id: turn.id,
        turn_public_id: turn.public_id,
        source: variant_source!,
        status: variant_status!,
        model: variant_model,
        content: variant_content!,
        usage: variant_usage,
        failure_reason_key: variant_failure_reason_key,
        origin_variant_public_id: variant_origin_variant_public_id,
        inference_request_public_id: variant_inference_request_public_id,
        run_public_id: variant_run_public_id,
        concealed: variant_concealed!,
        memory_context: variant_memory_context,
        created_at: variant_created_at!,
        updated_at: variant_updated_at!
      })
    }
  }
  return turns
}

export interface TimelinePage {
  /** Oldest first. */
  readonly turns: ReadonlyArray<TimelineTurnWithVariants>
  /** Whether the chain has a turn (hidden ones as the window counts them) before the first; false when empty. */
  readonly has_older: boolean
  /** Likewise after the last. */
  readonly has_newer: boolean
}

const windowRows = Rows.all("Conversations.timelineWindow", {
  Request: TimelineWindow,
  Result: Schema.Struct({ ...TurnVariantRow.fields, has_older: Schema.Boolean, has_newer: Schema.Boolean }),
  execute: (window, sql) => {
    const hidden = hiddenFilter(window.includeHidden, sql)
    const beyond = (side: Fragment) => sql`
      EXISTS (SELECT 1 FROM (${chainRows(window.chain, sql)}) chain, bounds WHERE EXISTS (
        SELECT 1 FROM ${chainTurns(window.chain, sql)} t
        WHERE t.conversation_id = chain.conversation_id AND t.position < chain.below AND ${side} AND ${hidden}))`
    return sql`
      WITH w AS (${windowTurns(window, sql)}),
        bounds AS (SELECT min(position) AS first, max(position) AS last FROM w)
      SELECT t.*, ${sql.literal(variantColumns)}, ${beyond(sql`t.position < bounds.first`)} AS has_older,
        ${beyond(sql`t.position > bounds.last`)} AS has_newer
      FROM w t LEFT JOIN conversation_variants v ON v.turn_id = t.id
      ORDER BY t.position, v.id`
  }
})

/**
 * The timeline window with its turns' variants, and whether the chain holds a turn beyond either
 * end (one index probe per chain member), in one statement.
 */
const timelineWindow = (window: TimelineWindow) =>
  Effect.map(
    windowRows(window),
    (rows): TimelinePage => ({
      turns: withVariants(rows),
      has_older: rows[0]?.has_older ?? false,
      has_newer: rows[0]?.has_newer ?? false
    })
  )

const turnRows = Rows.all("Conversations.timelineTurn", {
  Request: Schema.Struct({ chain: TimelineChain, publicId: Schema.String }),
  Result: TurnVariantRow,
  execute: (request, sql) => sql`
    SELECT t.*, ${sql.literal(variantColumns)}
    FROM (SELECT t.*, chain.depth = 1 AS own FROM ${chainTurns(request.chain, sql)} t ${chainJoin(request.chain, sql)}
          WHERE t.public_id = ${request.publicId}) t
    LEFT JOIN conversation_variants v ON v.turn_id = t.id
    ORDER BY v.id`
})

/** A turn of the chain by public id (inherited ones below their bound) with its variants. */
const timelineTurn = (request: { readonly chain: TimelineChain; readonly publicId: string }) =>
  Effect.map(turnRows(request), (rows): TimelineTurnWithVariants | undefined => withVariants(rows)[0])

/** Settles a variant, its text copied from the inference request that made it. */
const settleVariant = Effect.fnUntraced(function* (
  publicId: string,
  fields: { readonly status: string; readonly usageJson: string | null; readonly failureReasonKey: string | null },
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE conversation_variants v SET
      status = ${fields.status},
      usage = COALESCE(${fields.usageJson}::jsonb, v.usage),
      failure_reason_key = ${fields.failureReasonKey},
      content = COALESCE((SELECT COALESCE(r.result ->> 'output_text', r.attempt_text) FROM inference_requests r
                          WHERE r.public_id = v.inference_request_public_id),
                         (SELECT t.result ->> 'output' FROM runs ru
                          JOIN run_tasks t ON t.run_id = ru.id AND t.key = ru.deliverable_task_key
                          WHERE ru.public_id = v.run_public_id), v.content),
      updated_at = ${now}
    WHERE v.public_id = ${publicId}`
})

const concealVariant = Effect.fnUntraced(function* (publicId: string, concealed: boolean, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE conversation_variants SET concealed = ${concealed}, updated_at = ${now} WHERE public_id = ${publicId}`
})

export const SpeakerRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  status: Schema.String,
  role: Schema.String,
  steward_id: NullId,
  configuration: Json
})
export type SpeakerRow = typeof SpeakerRow.Type

/** The users named by `ids`, as speakers and answerers are shown. */
const speakers = Rows.all("Conversations.speakers", {
  Request: Schema.Array(Schema.BigInt),
  Result: SpeakerRow,
  execute: (ids, sql) => sql`
    SELECT id, public_id, handle, kind, display_name, status, role, steward_id, configuration FROM users
    WHERE id = ANY(${[...new Set(ids)]}::bigint[])`
})

/** A member of the account (a human or an agent, never its system user) by public id or handle. */
const principal = Rows.maybe("Conversations.principal", {
  Request: Schema.Struct({
    accountId: Schema.BigInt,
    publicId: Schema.NullOr(Schema.String),
    handle: Schema.NullOr(Schema.String)
  }),
  Result: SpeakerRow,
  execute: (request, sql) => sql`
    SELECT id, public_id, handle, kind, display_name, status, role, steward_id, configuration FROM users
    WHERE account_id = ${request.accountId} AND kind <> 'system'
      AND (public_id::text = lower(${request.publicId ?? ""}) OR handle = ${request.handle ?? ""})
    LIMIT 1`
})

/** The account's system user: whom a principal lookup never answers, but a door may refuse by name. */
const systemUser = Rows.maybe("Conversations.systemUser", {
  Request: Schema.BigInt,
  Result: Schema.Struct({ public_id: Schema.String, handle: Schema.String }),
  execute: (accountId, sql) => sql`
    SELECT public_id::text, handle FROM users WHERE account_id = ${accountId} AND kind = 'system'`
})

/** Workspaces of the account the human sees (owner, or account-wide), not tombstoned. */
const visibleWorkspaces = Effect.fnUntraced(function* (accountId: bigint, humanId: bigint) {
  const sql = yield* SqlClient
  return yield* sql<{ id: bigint; public_id: string }>`
    SELECT id, public_id::text AS public_id FROM workspaces WHERE account_id = ${accountId} AND state <> 'tombstoned'
      AND (owner_id = ${humanId} OR access_mode = 'account_wide')`
})

/** The model of `answererId`'s newest completed reply in the conversation (its last reply model there). */
const lastReplyModelOf = Rows.maybe("Conversations.lastReplyModelOf", {
  Request: Schema.Struct({ conversationId: Schema.BigInt, answererId: Schema.BigInt }),
  Result: Schema.Struct({ model_ref: Schema.String }),
  execute: (request, sql) => sql`
    SELECT v.model ->> 'model_ref' AS model_ref
    FROM conversation_turns t JOIN conversation_variants v ON v.public_id = t.active_variant_public_id
    WHERE t.conversation_id = ${request.conversationId} AND t.answerer_id = ${request.answererId}
      AND t.kind = 'direct_reply' AND v.status = 'completed' AND v.model ->> 'model_ref' IS NOT NULL
    ORDER BY t.position DESC LIMIT 1`
})

/**
 * What the runs a conversation hosts spent (their model tasks' inference requests): the requests'
 * usage_summary members summed (tokens as float8, exact below 2^53; cost as numeric text), and the
 * newest of them to report usage (its result's usage block and the model that answered), with
 * whether it reported after the conversation's own newest reporting sample (a variant settled
 * with usage: a direct reply or a summary).
 */
export const HostedRunUsage = Schema.Struct({
  request_count: Schema.Number,
  input_tokens: Schema.Number,
  cache_read_tokens: Schema.Number,
  cache_creation_tokens: Schema.Number,
  output_tokens: Schema.Number,
  reasoning_tokens: Schema.Number,
  cost_amount: Schema.String,
  cost_unit: Schema.NullOr(Schema.String),
  cost_complete: Schema.Boolean,
  newest_usage: Schema.NullOr(Json),
  newest_model_ref: Schema.NullOr(Schema.String),
  newest_is_latest: Schema.Boolean
})
export type HostedRunUsage = typeof HostedRunUsage.Type

const hostedRunUsage = Rows.maybe("Conversations.hostedRunUsage", {
  Request: Schema.BigInt,
  Result: HostedRunUsage,
  execute: (conversationId, sql) => sql`
    WITH calls AS (
      SELECT q.id, q.usage_summary AS summary, q.result, q.model, q.updated_at
      FROM runs r JOIN inference_requests q ON q.asked_by_run_id = r.id
      WHERE r.conversation_id = ${conversationId}
    ), newest AS (
      SELECT result -> 'usage' AS usage, COALESCE(result -> 'model_change' ->> 'to', model ->> 'model_ref') AS model_ref,
        updated_at
      FROM calls WHERE jsonb_typeof(result -> 'usage') = 'object'
      ORDER BY updated_at DESC, id DESC LIMIT 1
    ), own AS (
      SELECT max(q.updated_at) AS at FROM conversation_turns t
      JOIN conversation_variants v ON v.turn_id = t.id
      JOIN inference_requests q ON q.public_id = v.inference_request_public_id
      WHERE t.conversation_id = ${conversationId} AND v.usage IS NOT NULL
    )
    SELECT COALESCE(sum((summary ->> 'request_count')::numeric), 0)::float8 AS request_count,
      COALESCE(sum((summary ->> 'input_tokens')::numeric), 0)::float8 AS input_tokens,
      COALESCE(sum((summary ->> 'cache_read_tokens')::numeric), 0)::float8 AS cache_read_tokens,
      COALESCE(sum((summary ->> 'cache_creation_tokens')::numeric), 0)::float8 AS cache_creation_tokens,
      COALESCE(sum((summary ->> 'output_tokens')::numeric), 0)::float8 AS output_tokens,
      COALESCE(sum((summary ->> 'reasoning_tokens')::numeric), 0)::float8 AS reasoning_tokens,
      COALESCE(sum((summary ->> 'cost_amount')::numeric), 0)::text AS cost_amount,
      max(summary ->> 'cost_unit') AS cost_unit,
      COALESCE(bool_and((summary ->> 'cost_complete')::boolean), true) AS cost_complete,
      (SELECT usage FROM newest) AS newest_usage,
      (SELECT model_ref FROM newest) AS newest_model_ref,
      CASE WHEN NOT EXISTS (SELECT 1 FROM newest) THEN false
        ELSE (SELECT updated_at FROM newest) > COALESCE((SELECT at FROM own), '-infinity') END AS newest_is_latest
    FROM calls`
})

/** The run a conversation's running run-backed reply is made by, if one is running. */
const runningRunOf = Effect.fnUntraced(function* (conversationPublicId: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ readonly run_public_id: string }>`
    SELECT v.run_public_id::text AS run_public_id FROM conversation_variants v
    JOIN conversation_turns t ON t.id = v.turn_id
    JOIN conversations c ON c.id = t.conversation_id
    WHERE c.public_id = ${conversationPublicId}::uuid AND t.status = 'running'
      AND v.status IN ('pending', 'running') AND v.run_public_id IS NOT NULL
    ORDER BY v.id DESC LIMIT 1`
  return rows[0]?.run_public_id
})

export class ConversationsRepository extends Context.Service<ConversationsRepository>()(
  "@troupe/storage/ConversationsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        insertConversation,
        findConversation,
        findConversationById,
        standingOf,
        listConversations,
        updateConversation,
        deleteConversation,
        followersOf,
        treeBusy,
        spokenIn,
        insertInput,
        findInput,
        lastReplyModelOf,
        queueOf,
        updateInput,
        deleteInput,
        insertTurn,
        findTurn,
        updateTurn,
        deleteTurn,
        overrideVisibility,
        timelineChain,
        timeline,
        timelineWindow,
        timelineTurn,
        ownTurnBelow,
        historyOf,
        newestSettledTurn,
        copyTurn,
        copyVariant,
        copyHostedRows,
        insertVariant,
        materializeMessage,
        findVariant,
        runningRunOf,
        hostedRunUsage,
        variantsOf,
        settleVariant,
        concealVariant,
        speakers,
        principal,
        systemUser,
        visibleWorkspaces
      })
    )
  }
) {
  static readonly layer = Layer.effect(ConversationsRepository, ConversationsRepository.make)
}
