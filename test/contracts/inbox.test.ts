// The executor inbox contract (issue 12): rows of kinds it does not know are carried; the extend
// and commit bodies are left whole to the domain (its order puts the run's standing and the claim
// first); progress needs an object frame; the cable's bare messages; the group documents all six
// routes.
import { ExecutorInboxMessage } from "@troupe/contracts/cable/ExecutorInboxChannel"
import { CommitBody, ExecutorInboxGroup, ExtendBody, InboxPage, ProgressBody } from "@troupe/contracts/executor/Inbox"
import { describeDecodeFailure } from "@troupe/http/conventions/SchemaIssues"
import { Effect, Exit, Schema } from "effect"
import { HttpApi, HttpApiError, OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"

const decode = (schema: Schema.Codec<unknown, unknown>, body: unknown) =>
  Schema.decodeUnknownExit(Schema.toCodecJson(schema))(body)

const answer = (schema: Schema.Codec<unknown, unknown>, body: unknown) => {
  const error = Effect.runSync(Effect.flip(Schema.decodeUnknownEffect(Schema.toCodecJson(schema))(body)))
  const failure = describeDecodeFailure(new HttpApiError.HttpApiSchemaError({ kind: "Payload", cause: error }))
  return [failure.status, failure.code]
}

const row = (kind: string, extra: Record<string, unknown> = {}) => ({
  kind,
  run_public_id: "01900000-0000-7000-8000-000000000001",
  workspace_public_id: "01900000-0000-7000-8000-000000000002",
  conversation_public_id: null,
  parent_public_id: null,
  task_key: "s1-tool-1",
  started_at: "2026-01-01T00:00:00.000Z",
  deadline_at: "2026-01-01T00:10:00.000Z",
  timeout_ms: 600000,
  claimed: false,
  addressed_to: { role: "runner", executor_public_id: "01900000-0000-7000-8000-000000000003" },
  ...extra
})

describe("inbox rows", () => {
  it("a tool_call row reads its call; a row of a kind the contract does not know is carried", () => {
    const page = decode(InboxPage, {
      tasks: [
        row("tool_call", { tool_name: "shout", tool_input: { text: "hi" }, tool_call_id: "s1-tool-1" }),
        row("telepathy", { vibe: "strong" })
      ],
      pagination: { next_after: null }
    })
    expect(Exit.isSuccess(page)).toBe(true)
    const tasks = Exit.isSuccess(page) ? (page.value as typeof InboxPage.Type).tasks : []
    expect(tasks.map((task) => task.kind)).toEqual(["tool_call", "telepathy"])
    expect(tasks[0]).toMatchObject({ tool_name: "shout", tool_input: { text: "hi" } })
    expect(tasks[0]?.deadline_at).toEqual(new Date("2026-01-01T00:10:00.000Z"))
  })
})

describe("claim bodies", () => {
  it("extend and commit: every member reaches the domain as sent, even absent or of the wrong type", () => {
    for (const body of [{}, { claim_token: 5, timeout_ms: "soon" }, { claim_token: "t", timeout_ms: 7_200_000 }]) {
      expect(decode(ExtendBody, body)).toEqual(Exit.succeed(body))
    }
    for (const body of [
      {},
      { claim_token: 7, content: { not: "a list" }, title: 9, metadata: [], result_type: "", outcome: "maybe" },
      { claim_token: "t", content: [{ type: "video" }], is_error: "yes" }
    ]) {
      expect(decode(CommitBody, body)).toEqual(Exit.succeed(body))
    }
  })

  it("progress: frame absent is 400 parameter_missing, not an object 400 parameter_invalid; its members are the domain's", () => {
    expect(answer(ProgressBody, {})).toEqual([400, "parameter_missing"])
    expect(answer(ProgressBody, { frame: "tail" })).toEqual([400, "parameter_invalid"])
    expect(decode(ProgressBody, { frame: { anything: 1 } })).toEqual(Exit.succeed({ frame: { anything: 1 } }))
  })
})

describe("the inbox channel", () => {
  it("reads the bare work_available, work_canceled and ping messages", () => {
    const read = Schema.decodeUnknownSync(ExecutorInboxMessage)
    expect(
      read({ type: "work_available", kind: "tool_call", run_public_id: "r", task_key: "k", tool_name: "x" })
    ).toEqual({ type: "work_available", kind: "tool_call", run_public_id: "r", task_key: "k", tool_name: "x" })
    expect(read({ type: "work_canceled", run_public_id: "r", task_key: "k" }).type).toBe("work_canceled")
    expect(read({ type: "ping", at: "2026-01-01T00:00:00Z" }).type).toBe("ping")
  })
})

describe("the inbox group", () => {
  it("documents the eight routes with their methods", () => {
    const spec = OpenApi.fromApi(HttpApi.make("inbox").add(ExecutorInboxGroup))
    const routes = Object.entries(spec.paths).flatMap(([path, operations]) =>
      Object.keys(operations as object).map((method) => `${method.toUpperCase()} ${path}`)
    )
    expect(routes.toSorted()).toEqual(
      [
        "GET /agent_api/v1/executor/inbox",
        "POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/claim",
        "GET /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/claim",
        "POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/extend",
        "POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/commit",
        "GET /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/attachments/{upload_public_id}",
        "GET /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/attachments/{upload_public_id}/bytes",
        "POST /agent_api/v1/executor/progress"
      ].toSorted()
    )
  })
})
