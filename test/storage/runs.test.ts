// The runs repository on a freshly migrated database: a run and its tasks inserted and read back,
// task standing written many rows at a time, the run list's filters and the executor inbox
// (addressed, claimed and pool rows, ordering, tombstones), and a run's hidden inference requests.
import { assert, layer } from "@effect/vitest"
import { migratedDatabase } from "@troupe/server/Server"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { newPublicId } from "@troupe/storage/Ids"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { type NewTask, RunsRepository, type TaskChange } from "@troupe/storage/repositories/Runs"
import { WorkspacesRepository } from "@troupe/storage/repositories/Workspaces"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { freshDatabase } from "../support/database.ts"

const databaseLayer = Layer.unwrap(
  Effect.acquireRelease(Effect.promise(freshDatabase), (database) => Effect.promise(database.drop)).pipe(
    Effect.map((database: { readonly config: DatabaseConfig }) =>
      repositoriesLayer.pipe(Layer.provideMerge(migratedDatabase(database.config)))
    )
  )
)

const at = (second: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, second))

/** An account with a human, a workspace, a conversation, two runners and two tool providers. */
const world = Effect.gen(function* () {
  const accounts = yield* AccountsRepository
  const workspaces = yield* WorkspacesRepository
  const executors = yield* ExecutorsRepository
  const conversations = yield* ConversationsRepository
  const account = yield* accounts.insertAccount({ publicId: newPublicId(), now: at(0) })
  const human = yield* accounts.insertUser({
    publicId: newPublicId(),
    accountId: account.id,
    kind: "human",
    role: "owner",
    email: "owner@example.com",
    passwordDigest: "digest",
    displayName: "Owner",
    handle: "owner",
    now: at(0)
  })
  const workspace = yield* workspaces.insertWorkspace({
    publicId: newPublicId(),
    accountId: account.id,
    ownerId: human.id,
    createdBy: human.id,
    dedicatedAgentId: null,
    name: "Runs",
    accessMode: "account_wide",
    metadata: {},
    now: at(0)
  })
  const machine = (kind: "runner" | "tool_provider", name: string) =>
    executors.insertExecutor({
      publicId: newPublicId(),
      accountId: account.id,
      kind,
      displayName: name,
      managerId: human.id,
      registrationIdentifier: name,
      agentId: null,
      assignmentScope: "account_wide",
      now: at(0)
    })
  const conversationPublicId = newPublicId()
  const conversationId = yield* conversations.insertConversation({
    publicId: conversationPublicId,
    workspaceId: workspace.id,
    creatorId: human.id,
    answererId: human.id,
    title: null,
    metadataJson: "{}",
    billingSubject: null,
    defaultRunnerExecutorId: null,
    accessJson: "{}",
    memoryContextJson: null,
    usageSummaryJson: "{}",
    side: false,
    sourceConversationId: null,
    forkedPosition: null,
    forkedFromTurnPublicId: null,
    forkedFromVariantPublicId: null,
    now: at(0)
  })
  return {
    account,
    human,
    workspace,
    conversationId,
    conversationPublicId,
    runnerA: yield* machine("runner", "runner-a"),
    runnerB: yield* machine("runner", "runner-b"),
    providerP: yield* machine("tool_provider", "provider-p"),
    providerQ: yield* machine("tool_provider", "provider-q")
  }
})

type World = Effect.Success<typeof world>

const newRun = (w: World, options: { conversationId?: bigint | null; now?: Date } = {}) =>
  Effect.flatMap(RunsRepository, (runs) =>
    runs.insertRun({
      publicId: newPublicId(),
      workspaceId: w.workspace.id,
      conversationId: options.conversationId ?? null,
      turnPublicId: options.conversationId ? newPublicId() : null,
      creatorId: w.human.id,
      approvalMode: "bypass",
      approvalRulesJson: "[]",
      promptMechanism: "raw",
      billingSubject: null,
      requesterSpeakerId: w.human.id,
      defaultRunnerId: w.runnerA.id,
      modelSelectionJson: null,
      fallbackModelsJson: `["local/echo"]`,
      deliverableTaskKey: "s1-tool-2",
      now: options.now ?? at(1)
    })
  )

const toolTask = (key: string, position: number, fields: Partial<NewTask> = {}): NewTask => ({
  key,
  position,
  kind: "tool_task",
  awaitKind: null,
  origin: "author",
  visibility: "visible",
  mainline: false,
  afterJson: "[]",
  onFailure: "propagate",
  toolName: "shell",
  toolAlias: null,
  toolCallId: key,
  targetExecutor: null,
  pool: false,
  timeoutMs: 600000,
  specJson: JSON.stringify({ tool_input: { command: key } }),
  now: at(1),
  ...fields
})

/** A task listed on an inbox: dispatched at `second`. */
const listed = (key: string, second: number, fields: Partial<TaskChange> = {}): TaskChange => ({
  key,
  status: "dispatched",
  generation: 1,
  failureResolution: null,
  errorJson: null,
  inboxKind: "tool_call",
  inboxExecutor: null,
  claimedByExecutor: null,
  claimTokenDigest: null,
  claimed: false,
  deadlineAt: new Date(at(second).getTime() + 600000),
  dispatchedAt: at(second),
  approvalJson: null,
  startedAt: at(second),
  completedAt: null,
  ...fields
})

layer(databaseLayer, { excludeTestServices: true, timeout: "60 seconds" })("runs repository", (it) => {
  let w: World
  it.effect("a run is inserted pending at revision 1 with its trace's public ids", () =>
    Effect.gen(function* () {
      w = yield* world
      const runs = yield* RunsRepository
      const run = yield* newRun(w, { conversationId: w.conversationId })
      assert.strictEqual(run.status, "pending")
      assert.strictEqual(run.revision, 1)
      assert.strictEqual(run.workspace_public_id, w.workspace.public_id)
      assert.strictEqual(run.conversation_public_id, w.conversationPublicId)
      assert.strictEqual(run.creator_public_id, w.human.public_id)
      assert.strictEqual(run.requester_speaker_public_id, w.human.public_id)
      assert.strictEqual(run.default_runner_public_id, w.runnerA.public_id)
      assert.strictEqual(run.default_runner_display_name, "runner-a")
      assert.deepStrictEqual(run.fallback_models, ["local/echo"])
      assert.isNull(run.attention)
      assert.strictEqual((yield* runs.findRunById(run.id))?.public_id, run.public_id)
      assert.isUndefined(yield* runs.findRun(newPublicId()))
    })
  )

  it.effect("tasks are inserted in one statement, waiting at generation 1, read in authoring order", () =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const run = yield* newRun(w)
      yield* runs.insertTasks(run.id, [
        toolTask("s1-tool-2", 1, { afterJson: `["s1-tool-1"]`, targetExecutor: w.runnerB.public_id, now: at(2) }),
        toolTask("s1-tool-1", 0, { targetExecutor: w.runnerA.public_id, now: at(2) })
      ])
      const tasks = yield* runs.listTasks(run.id)
      assert.deepStrictEqual(
        tasks.map((task) => [task.key, task.status, task.generation]),
        [
          ["s1-tool-1", "waiting", 1],
          ["s1-tool-2", "waiting", 1]
        ]
      )
      const second = (yield* runs.findTask(run.id, "s1-tool-2"))!
      assert.deepStrictEqual(second.after, ["s1-tool-1"])
      assert.deepStrictEqual(second.spec, { tool_input: { command: "s1-tool-2" } })
      assert.strictEqual(second.target_executor_public_id, w.runnerB.public_id)
      assert.strictEqual(second.target_display_name, "runner-b")
      assert.isUndefined(yield* runs.findTask(run.id, "missing"))
      assert.strictEqual((yield* runs.findRun(run.public_id))?.updated_at.getTime(), at(2).getTime())
    })
  )

  it.effect("task standing is written for many rows at once; absent optional members keep their columns", () =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const run = yield* newRun(w)
      yield* runs.insertTasks(run.id, [
        toolTask("a", 0, { targetExecutor: w.runnerA.public_id, timeoutMs: 1000 }),
        toolTask("b", 1, { toolName: null, targetExecutor: null })
      ])
      yield* runs.updateTasks(
        run.id,
        [
          listed("a", 3, {
            inboxExecutor: w.runnerA.public_id,
            claimedByExecutor: w.runnerA.public_id,
            claimTokenDigest: "digest-a",
            claimed: true
          }),
          {
            ...listed("b", 3, { inboxKind: null, status: "failed", errorJson: `{"key":"tool_not_served"}` }),
            dispatchedAt: null,
            targetExecutor: w.runnerB.public_id,
            pool: false,
            timeoutMs: 5000
          }
        ],
        at(4)
      )
      const [a, b] = yield* runs.listTasks(run.id)
      assert.strictEqual(a!.status, "dispatched")
      assert.strictEqual(a!.claimed_by_public_id, w.runnerA.public_id)
      assert.strictEqual(a!.claim_token_digest, "digest-a")
      assert.strictEqual(a!.timeout_ms, 1000)
      assert.strictEqual(a!.target_executor_public_id, w.runnerA.public_id)
      assert.strictEqual(a!.updated_at.getTime(), at(4).getTime())
      assert.strictEqual(b!.status, "failed")
      assert.deepStrictEqual(b!.error, { key: "tool_not_served" })
      assert.strictEqual(b!.target_executor_public_id, w.runnerB.public_id)
      assert.strictEqual(b!.timeout_ms, 5000)
      assert.strictEqual((yield* runs.findRun(run.public_id))?.updated_at.getTime(), at(4).getTime())

      yield* runs.setTaskResult(run.id, "a", JSON.stringify({ output: "done", is_error: false }), at(5))
      yield* runs.setTaskUsage(run.id, "a", JSON.stringify({ input_tokens: 3 }))
      const settled = (yield* runs.findTask(run.id, "a"))!
      assert.deepStrictEqual(settled.result, { output: "done", is_error: false })
      assert.deepStrictEqual(settled.usage, { input_tokens: 3 })
      assert.strictEqual((yield* runs.findRun(run.public_id))?.updated_at.getTime(), at(5).getTime())
    })
  )

  it.effect("the projection is written; the list filters by status, attention and host, and never tombstones", () =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const sql = yield* SqlClient
      yield* sql`UPDATE runs SET tombstoned_at = ${at(0)}`
      const standalone = yield* newRun(w)
      const hosted = yield* newRun(w, { conversationId: w.conversationId })
      const attention = yield* newRun(w)
      const gone = yield* newRun(w)
      yield* runs.setRunProjection(attention.public_id, {
        status: "needs_attention",
        attentionJson: JSON.stringify({ reason: "halt_failure", blocked_task_keys: ["a"] }),
        revision: 2,
        deliverableTaskKey: "a",
        startedAt: at(2),
        pausedAt: null,
        completedAt: null,
        defaultRunnerId: null,
        now: at(3)
      })
      const attended = (yield* runs.findRun(attention.public_id))!
      assert.strictEqual(attended.status, "needs_attention")
      assert.deepStrictEqual(attended.attention, { reason: "halt_failure", blocked_task_keys: ["a"] })
      assert.strictEqual(attended.revision, 2)
      assert.isNull(attended.default_runner_id)
      assert.strictEqual(attended.started_at?.getTime(), at(2).getTime())
      yield* runs.tombstoneRun(gone.public_id, at(4))
      assert.isNotNull((yield* runs.findRun(gone.public_id))?.tombstoned_at)

      const list = (filter: Partial<Parameters<typeof runs.listRuns>[0]> = {}) =>
        Effect.map(
          runs.listRuns({
            workspaceId: w.workspace.id,
            conversationIds: null,
            statuses: null,
            attentionOnly: false,
            after: null,
            order: "asc",
            limit: 50,
            ...filter
          }),
          (rows) => rows.map((row) => row.public_id)
        )
      assert.deepStrictEqual(yield* list(), [standalone.public_id, hosted.public_id, attention.public_id])
      assert.deepStrictEqual(yield* list({ order: "desc", limit: 2 }), [attention.public_id, hosted.public_id])
      assert.deepStrictEqual(yield* list({ after: standalone.public_id }), [hosted.public_id, attention.public_id])
      assert.deepStrictEqual(yield* list({ statuses: ["needs_attention"] }), [attention.public_id])
      assert.deepStrictEqual(yield* list({ attentionOnly: true }), [attention.public_id])
      assert.deepStrictEqual(yield* list({ conversationIds: [] }), [standalone.public_id, attention.public_id])
      assert.deepStrictEqual(yield* list({ conversationIds: [w.conversationId] }), [
        standalone.public_id,
        hosted.public_id,
        attention.public_id
      ])
    })
  )

  it.effect("an inbox lists addressed, claimed and announced pool rows by dispatch time then key", () =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const first = yield* newRun(w, { conversationId: w.conversationId })
      const second = yield* newRun(w)
      yield* runs.insertTasks(first.id, [
        toolTask("b", 0, { targetExecutor: w.runnerA.public_id }),
        toolTask("a", 1, { targetExecutor: w.runnerA.public_id }),
        toolTask("pool-shell", 2, { pool: true }),
        toolTask("pool-other", 3, { pool: true, toolName: "other" }),
        toolTask("pool-claimed", 4, { pool: true }),
        toolTask("waiting", 5, { targetExecutor: w.runnerA.public_id })
      ])
      yield* runs.insertTasks(second.id, [toolTask("a", 0, { targetExecutor: w.runnerA.public_id })])
      yield* runs.updateTasks(
        first.id,
        [
          listed("b", 10, { inboxExecutor: w.runnerA.public_id }),
          listed("a", 10, { inboxExecutor: w.runnerA.public_id }),
          listed("pool-shell", 11),
          listed("pool-other", 12),
          listed("pool-claimed", 13, {
            // A claimed row names its claimant as its addressee (the run binding's projection).
            inboxExecutor: w.providerQ.public_id,
            claimedByExecutor: w.providerQ.public_id,
            claimTokenDigest: "q",
            claimed: true
          })
        ],
        at(14)
      )
      yield* runs.updateTasks(second.id, [listed("a", 9, { inboxExecutor: w.runnerA.public_id })], at(14))

      const inbox = (
        executorId: bigint,
        provider: boolean,
        after: Parameters<typeof runs.listInbox>[0]["after"] = null
      ) =>
        runs.listInbox({
          executorId,
          announcedToolNames: provider ? ["shell"] : [],
          isToolProvider: provider,
          // The world's machines are account-wide: every pool row of the account is in reach.
          ...(provider
            ? {
                provider: {
                  accountId: w.account.id,
                  scope: "account_wide" as const,
                  managerId: w.human.id,
                  agentId: null
                }
              }
            : {}),
          after,
          limit: 50
        })
      const runner = yield* inbox(w.runnerA.id, false)
      assert.deepStrictEqual(
        runner.map((row) => [row.run_public_id, row.task_key]),
        [
          [second.public_id, "a"],
          [first.public_id, "a"],
          [first.public_id, "b"]
        ]
      )
      const row = runner[1]!
      assert.strictEqual(row.kind, "tool_call")
      assert.strictEqual(row.workspace_public_id, w.workspace.public_id)
      assert.strictEqual(row.conversation_public_id, w.conversationPublicId)
      assert.strictEqual(row.dispatched_at?.getTime(), at(10).getTime())
      assert.strictEqual(row.target_executor_public_id, w.runnerA.public_id)
      assert.deepStrictEqual(row.spec, { tool_input: { command: "a" } })
      assert.isNull(runner[0]!.conversation_public_id)

      const page = yield* inbox(w.runnerA.id, false, {
        dispatchedAt: at(10),
        runPublicId: first.public_id,
        key: "a"
      })
      assert.deepStrictEqual(
        page.map((row) => row.task_key),
        ["b"]
      )

      assert.deepStrictEqual(
        (yield* inbox(w.providerP.id, true)).map((row) => row.task_key),
        ["pool-shell"]
      )
      assert.deepStrictEqual(
        (yield* inbox(w.providerQ.id, true)).map((row) => [row.task_key, row.claimed, row.claimed_by_public_id]),
        [
          ["pool-shell", false, null],
          ["pool-claimed", true, w.providerQ.public_id]
        ]
      )
      // A provider out of reach sees no pool row: another account's, or another human's private one.
      const outOfReach = (provider: { accountId: bigint; scope: "user_private" | "account_wide"; managerId: bigint }) =>
        runs.listInbox({
          executorId: w.providerP.id,
          announcedToolNames: ["shell"],
          isToolProvider: true,
          provider: { ...provider, agentId: null },
          after: null,
          limit: 50
        })
      assert.deepStrictEqual(
        yield* outOfReach({ accountId: w.account.id + 1000n, scope: "account_wide", managerId: w.human.id }),
        []
      )
      assert.deepStrictEqual(
        yield* outOfReach({ accountId: w.account.id, scope: "user_private", managerId: w.human.id + 1000n }),
        []
      )
      assert.deepStrictEqual(yield* inbox(w.providerP.id, false), [])

      const found = (yield* runs.findInboxTask(first.public_id, "pool-claimed"))!
      assert.strictEqual(found.account_id, w.account.id)
      assert.strictEqual(found.run_status, "pending")
      assert.strictEqual(found.claim_token_digest, "q")
      assert.strictEqual(found.claimed_by_executor_id, w.providerQ.id)
      assert.strictEqual((yield* runs.findInboxTask(first.public_id, "waiting"))?.kind, null)

      yield* runs.tombstoneRun(second.public_id, at(15))
      assert.deepStrictEqual(
        (yield* inbox(w.runnerA.id, false)).map((row) => row.task_key),
        ["a", "b"]
      )
      assert.isUndefined(yield* runs.findInboxTask(second.public_id, "a"))
    })
  )

  it.effect("a run's model rounds are hidden inference requests, deleted with the run", () =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const requests = yield* InferenceRequestsRepository
      const run = yield* newRun(w)
      yield* runs.insertTasks(run.id, [toolTask("m", 0, { kind: "model_task", toolName: null, toolCallId: null })])
      const round = yield* requests.insertRequest({
        publicId: newPublicId(),
        workspaceId: w.workspace.id,
        creatorId: w.human.id,
        workload: "text_generation",
        modelJson: "{}",
        requestJson: "{}",
        billingSubject: null,
        usageSummaryJson: "{}",
        askedByRunId: run.id,
        askedByRunTaskKey: "m",
        now: at(2)
      })
      assert.strictEqual(round.asked_by_run_id, run.id)
      assert.strictEqual(round.asked_by_run_task_key, "m")
      yield* runs.updateTasks(
        run.id,
        [{ ...listed("m", 2, { inboxKind: null, status: "running" }), inferenceRequestId: round.id }],
        at(3)
      )
      assert.strictEqual((yield* runs.findTask(run.id, "m"))?.inference_request_public_id, round.public_id)
      const listedRequests = yield* requests.listRequests({
        workspaceId: w.workspace.id,
        workload: null,
        after: null,
        order: "asc",
        limit: 50
      })
      assert.isFalse(listedRequests.some((row) => row.public_id === round.public_id))

      yield* runs.deleteRun(run.public_id)
      assert.isUndefined(yield* runs.findRun(run.public_id))
      assert.isUndefined(yield* requests.findRequest(round.public_id))
      assert.deepStrictEqual(yield* runs.listTasks(run.id), [])
    })
  )
})
