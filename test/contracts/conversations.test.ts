// The conversation contracts' bodies (contracts/member/Conversations, ConversationInputs, Turns,
// ConversationContext): what each reads, the code its faults answer (JSON types 400 before
// vocabularies 422 and bounds 413), optional bodies read as no members, and the four groups'
// OpenAPI document.
import { ConversationContextGroup, EstimateBody } from "@troupe/contracts/member/ConversationContext"
import {
  ConversationInputsGroup,
  CreateInputBody,
  ReorderInputsBody,
  UpdateInputBody
} from "@troupe/contracts/member/ConversationInputs"
import { type Conversation, optionalBody, TurnResponse } from "@troupe/contracts/member/ConversationShapes"
import {
  ConversationsGroup,
  CreateConversationBody,
  DefaultRunnerBody,
  ForkBody,
  ReplaceAccessBody,
  SetMemoryContextBody,
  UpdateConversationBody
} from "@troupe/contracts/member/Conversations"
import {
  CancellationAnswers,
  EditBody,
  RegenerationBody,
  RegenerationMembers,
  TurnsGroup,
  UpdateTurnBody,
  UpdateVariantBody
} from "@troupe/contracts/member/Turns"
import { describeDecodeFailure } from "@troupe/http/conventions/SchemaIssues"
import { Effect, Exit, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiError, HttpApiGroup, OpenApi } from "effect/http-api"
import { afterAll, describe, expect, it } from "vitest"

const decode = (schema: Schema.Codec<unknown, unknown>, body: unknown) =>
  Schema.decodeUnknownExit(Schema.toCodecJson(schema))(body)

/** The status and code a body's decoding failure answers. */
const answer = (schema: Schema.Codec<unknown, unknown>, body: unknown) => {
  const error = Effect.runSync(Effect.flip(Schema.decodeUnknownEffect(Schema.toCodecJson(schema))(body)))
  const failure = describeDecodeFailure(new HttpApiError.HttpApiSchemaError({ kind: "Payload", cause: error }))
  return [failure.status, failure.code]
}

const missing = [400, "parameter_missing"]
const invalid = [400, "parameter_invalid"]
const vocabulary = [422, "validation_failed"]
const tooLarge = [413, "content_too_large"]

const uuid = "01900000-0000-7000-8000-000000000001"
const overMiB = "x".repeat(1024 * 1024 + 1)

describe("a conversation create", () => {
  it("takes every member optional, wrapped or at top level", () => {
    expect(decode(CreateConversationBody, { conversation: {} })).toEqual(Exit.succeed({}))
    expect(
      decode(CreateConversationBody, {
        title: "Plans",
        metadata: { a: 1 },
        billing_subject: "team-a",
        answering_user_public_id: "@helper",
        access: { default: "read", entries: [{ handle: "@olive", level: "full" }] },
        memory_context: { bindings: [{ name: "conversation", scope: "conversation", access: "read_write" }] }
      })
    ).toEqual(
      Exit.succeed({
        title: "Plans",
        metadata: { a: 1 },
        billing_subject: "team-a",
        answering_user_public_id: "@helper",
        memory_context: { bindings: [{ name: "conversation", scope: "conversation", access: "read_write" }] },
        access: { default: "read", entries: [{ handle: "@olive", level: "full" }] }
      })
    )
  })

  it("metadata: an object (else 422 validation_failed) of at most 2 KiB (else 413)", () => {
    for (const metadata of [[1], "x", null, 3]) {
      expect(answer(CreateConversationBody, { conversation: { metadata } }), JSON.stringify(metadata)).toEqual(
        vocabulary
      )
    }
    expect(answer(CreateConversationBody, { metadata: { blob: "y".repeat(2048) } })).toEqual(tooLarge)
  })

  it("billing_subject: a string (else 400) of 1 to 255 characters (else 422 billing_subject_too_long)", () => {
    expect(answer(CreateConversationBody, { billing_subject: 5 })).toEqual(invalid)
    for (const subject of ["", "s".repeat(256)]) {
      expect(answer(CreateConversationBody, { billing_subject: subject })).toEqual([422, "billing_subject_too_long"])
    }
    expect(decode(CreateConversationBody, { billing_subject: "😀".repeat(255) })._tag).toBe("Success")
  })

  it("access: default required, levels full, read or none (else 422), JSON types before vocabularies", () => {
    expect(answer(CreateConversationBody, { access: { entries: [] } })).toEqual(missing)
    expect(answer(CreateConversationBody, { access: { default: "owner" } })).toEqual(vocabulary)
    expect(answer(CreateConversationBody, { access: { default: "full", entries: [{ level: "admin" }] } })).toEqual(
      vocabulary
    )
    expect(answer(CreateConversationBody, { access: { default: "full", entries: [{ level: 5 }] } })).toEqual(invalid)
    expect(answer(CreateConversationBody, { access: { default: "owner" }, title: 5 })).toEqual(invalid)
  })

  it("an access PUT reads the same members under access", () => {
    expect(decode(ReplaceAccessBody, { access: { default: "none" } })).toEqual(Exit.succeed({ default: "none" }))
    expect(answer(ReplaceAccessBody, { access: { default: "none", entries: [{ user_public_id: uuid }] } })).toEqual(
      missing
    )
    expect(answer(ReplaceAccessBody, { access: { default: "hidden" } })).toEqual(vocabulary)
  })
})

describe("a conversation PATCH", () => {
  it("needs a lock_version (absent 400 parameter_missing, malformed 400 parameter_invalid)", () => {
    expect(answer(UpdateConversationBody, { conversation: { title: "x" } })).toEqual(missing)
    expect(answer(UpdateConversationBody, { conversation: { title: "x", lock_version: "1" } })).toEqual(invalid)
    expect(decode(UpdateConversationBody, { conversation: { title: null, lock_version: 2 } })).toEqual(
      Exit.succeed({ lock_version: 2, title: null })
    )
  })

  it("leaves title-or-metadata to the domain; metadata is judged as on create", () => {
    expect(decode(UpdateConversationBody, { lock_version: 0 })).toEqual(Exit.succeed({ lock_version: 0 }))
    expect(answer(UpdateConversationBody, { lock_version: 0, metadata: [1] })).toEqual(vocabulary)
    expect(answer(UpdateConversationBody, { lock_version: 0, metadata: { blob: "y".repeat(2048) } })).toEqual(tooLarge)
  })
})

describe("memory_context", () => {
  const binding = (name: string, scope = "workspace", access = "read") => ({ name, scope, access })
  const root = binding("conversation", "conversation", "read_write")

  it("is required; null or a set of bindings", () => {
    expect(answer(SetMemoryContextBody, {})).toEqual(missing)
    expect(decode(SetMemoryContextBody, { memory_context: null })).toEqual(Exit.succeed({ memory_context: null }))
    expect(decode(SetMemoryContextBody, { memory_context: { bindings: [] } })).toEqual(
      Exit.succeed({ memory_context: { bindings: [] } })
    )
    expect(answer(SetMemoryContextBody, { memory_context: { bindings: {} } })).toEqual(invalid)
    expect(answer(SetMemoryContextBody, { memory_context: { bindings: [{ name: "a", scope: "user" }] } })).toEqual(
      missing
    )
  })

  it("refuses a bad name, scope or access, more than 16, a repeated name, or no conversation root (422)", () => {
    const put = (bindings: unknown) => answer(SetMemoryContextBody, { memory_context: { bindings } })
    expect(put([root, binding("Notes")])).toEqual(vocabulary)
    expect(put([root, binding("team", "team")])).toEqual(vocabulary)
    expect(put([root, binding("team", "workspace", "write")])).toEqual(vocabulary)
    expect(put([root, ...Array.from({ length: 16 }, (_, index) => binding(`w${index}`))])).toEqual(vocabulary)
    expect(put([root, binding("notes"), binding("notes", "user")])).toEqual(vocabulary)
    expect(put([binding("notes")])).toEqual(vocabulary)
    expect(put([{ ...root, conversation_public_id: uuid }])).toEqual(vocabulary)
    expect(put([root, { ...binding("other"), speaker_public_id: "x" }])).toEqual(invalid)
    expect(decode(SetMemoryContextBody, { memory_context: { bindings: [root, binding("notes")] } })._tag).toBe(
      "Success"
    )
  })
})

describe("default runner and fork", () => {
  it("default_runner takes a UUID or null", () => {
    expect(decode(DefaultRunnerBody, { default_runner: { executor_public_id: null } })).toEqual(
      Exit.succeed({ executor_public_id: null })
    )
    expect(decode(DefaultRunnerBody, { executor_public_id: uuid })).toEqual(Exit.succeed({ executor_public_id: uuid }))
    expect(answer(DefaultRunnerBody, { default_runner: {} })).toEqual(missing)
    expect(answer(DefaultRunnerBody, { default_runner: { executor_public_id: "runner" } })).toEqual(invalid)
  })

  it("a fork's members are optional; side is a boolean", () => {
    expect(decode(ForkBody, { fork: { turn_public_id: uuid, title: "Branch" } })).toEqual(
      Exit.succeed({ turn_public_id: uuid, title: "Branch" })
    )
    expect(answer(ForkBody, { fork: { side: "yes" } })).toEqual(invalid)
  })
})

describe("an input create", () => {
  const create = (input: Record<string, unknown>) =>
    answer(CreateInputBody, { input: { kind: "direct_reply", ...input } })

  it("reads the members wrapped or at top level", () => {
    expect(
      decode(CreateInputBody, {
        input: {
          kind: "direct_reply",
          text: "hello",
          model: { model: "local/echo", reasoning_effort: null },
          history: { max_entries: 10, token_budget_share: 1 },
          deliver_in: "20m",
          delivery_mode: "queue",
          visible_in_context: false,
          unknown_member: 1
        }
      })
    ).toEqual(
      Exit.succeed({
        kind: "direct_reply",
        text: "hello",
        model: { model: "local/echo", reasoning_effort: null },
        visible_in_context: false,
        history: { max_entries: 10, token_budget_share: 1 },
        deliver_in: "20m",
        delivery_mode: "queue"
      })
    )
    expect(decode(CreateInputBody, { kind: "message", text: "note" })).toEqual(
      Exit.succeed({ kind: "message", text: "note" })
    )
  })

  it("kind: required (400), a string (400), message or direct_reply (422)", () => {
    expect(answer(CreateInputBody, { input: { text: "hi" } })).toEqual(missing)
    expect(answer(CreateInputBody, { input: { kind: 1 } })).toEqual(invalid)
    expect(answer(CreateInputBody, { input: { kind: "note" } })).toEqual(vocabulary)
    expect(answer(CreateInputBody, { input: { kind: "note", text: 5 } })).toEqual(invalid)
  })

  it("text: a string of at most 1 MiB (else 413 content_too_large)", () => {
    expect(create({ text: 5 })).toEqual(invalid)
    expect(create({ text: overMiB })).toEqual(tooLarge)
    expect(create({ text: "é".repeat(512 * 1024 + 1) })).toEqual(tooLarge)
  })

  it("model: an object (else 400) naming its model; the reference is the domain's", () => {
    expect(create({ model: "local/echo" })).toEqual(invalid)
    expect(create({ model: {} })).toEqual(missing)
    expect(decode(CreateInputBody, { kind: "direct_reply", model: { model: "nowhere" } })._tag).toBe("Success")
  })

  it("history: only max_entries and token_budget_share (else 400), in range (else 422)", () => {
    expect(create({ history: { max_entries: 5, depth: 2 } })).toEqual(invalid)
    expect(create({ history: [] })).toEqual(invalid)
    expect(create({ history: { max_entries: "5" } })).toEqual(invalid)
    for (const history of [{ max_entries: 201 }, { max_entries: -1 }, { max_entries: 1.5 }]) {
      expect(create({ history }), JSON.stringify(history)).toEqual(vocabulary)
    }
    for (const history of [{ token_budget_share: 0 }, { token_budget_share: 1.01 }]) {
      expect(create({ history }), JSON.stringify(history)).toEqual(vocabulary)
    }
    expect(
      decode(CreateInputBody, { kind: "message", history: { max_entries: 0, token_budget_share: 0.5 } })._tag
    ).toBe("Success")
  })

  it("delivery: deliver_in ^\\d+[smhd]$ (else 400), delivery_mode queue, steer or steer_now (else 422)", () => {
    for (const deliverIn of ["20 minutes", "20", "m", "-1s", 20]) {
      expect(create({ deliver_in: deliverIn }), String(deliverIn)).toEqual(invalid)
    }
    for (const deliverIn of ["0s", "20m", "3h", "7d"]) {
      expect(decode(CreateInputBody, { kind: "message", deliver_in: deliverIn })._tag).toBe("Success")
    }
    expect(create({ delivery_mode: "later" })).toEqual(vocabulary)
    expect(create({ delivery_mode: 1 })).toEqual(invalid)
    expect(decode(CreateInputBody, { kind: "message", delivery_mode: "steer_now" })._tag).toBe("Success")
  })

  it("other members: JSON types 400, context_mode 422, steps over 1 MiB 413", () => {
    expect(create({ visible_in_context: "false" })).toEqual(invalid)
    expect(create({ tool_names: "search" })).toEqual(invalid)
    expect(create({ configuration: [] })).toEqual(invalid)
    expect(create({ expected_context_revision: "3" })).toEqual(invalid)
    expect(create({ context_mode: "verbatim" })).toEqual(vocabulary)
    expect(create({ steps: {} })).toEqual(invalid)
    expect(create({ steps: [{ text: overMiB }] })).toEqual(tooLarge)
  })
})

describe("an input edit and reorder", () => {
  it("an edit carries expected_lock_version (malformed 400) and frozen members for the domain to refuse", () => {
    expect(decode(UpdateInputBody, { input: { delivery_mode: "steer_now", expected_lock_version: 2 } })).toEqual(
      Exit.succeed({ delivery_mode: "steer_now", expected_lock_version: 2 })
    )
    expect(answer(UpdateInputBody, { input: { expected_lock_version: "2" } })).toEqual(invalid)
    expect(decode(UpdateInputBody, { input: { kind: "message", role: "user" } })).toEqual(
      Exit.succeed({ kind: "message", role: "user" })
    )
    expect(answer(UpdateInputBody, { input: { text: overMiB } })).toEqual(tooLarge)
    expect(answer(UpdateInputBody, { input: { history: { max_entries: 500 } } })).toEqual(vocabulary)
  })

  it("a reorder names public ids", () => {
    expect(decode(ReorderInputsBody, { inputs: [uuid] })).toEqual(Exit.succeed({ inputs: [uuid] }))
    expect(answer(ReorderInputsBody, { inputs: ["first"] })).toEqual(invalid)
    expect(answer(ReorderInputsBody, {})).toEqual(missing)
  })
})

describe("turn bodies", () => {
  it("an edit needs text of at most 1 MiB", () => {
    expect(decode(EditBody, { edit: { text: "better" } })).toEqual(Exit.succeed({ text: "better" }))
    expect(answer(EditBody, { edit: {} })).toEqual(missing)
    expect(answer(EditBody, { edit: { text: overMiB } })).toEqual(tooLarge)
  })

  it("a turn's visibility is visible, hidden or excluded_from_context; a variant's concealed a boolean", () => {
    expect(decode(UpdateTurnBody, { turn: { visibility: "hidden" } })).toEqual(Exit.succeed({ visibility: "hidden" }))
    expect(answer(UpdateTurnBody, { turn: { visibility: "gone" } })).toEqual(vocabulary)
    expect(answer(UpdateTurnBody, { turn: { visibility: 0 } })).toEqual(invalid)
    expect(decode(UpdateVariantBody, { variant: { concealed: true } })).toEqual(Exit.succeed({ concealed: true }))
    expect(answer(UpdateVariantBody, { variant: { concealed: "yes" } })).toEqual(invalid)
  })

  it("a regeneration's model is an object", () => {
    expect(answer(RegenerationBody, { regeneration: { model: "local/echo" } })).toEqual(invalid)
  })
})

describe("a context estimate", () => {
  it("render is a JSON boolean; the prompt and history are judged as an input's", () => {
    expect(decode(EstimateBody, { context_estimate: { prompt: "hello", render: true } })).toEqual(
      Exit.succeed({ prompt: "hello", render: true })
    )
    for (const render of ["true", 1, null]) {
      expect(answer(EstimateBody, { context_estimate: { render } }), String(render)).toEqual(invalid)
    }
    expect(answer(EstimateBody, { context_estimate: { prompt: overMiB } })).toEqual(tooLarge)
    expect(answer(EstimateBody, { context_estimate: { history: { max_entries: 300 } } })).toEqual(vocabulary)
    expect(answer(EstimateBody, { context_estimate: { model: "local/echo" } })).toEqual(invalid)
  })
})

const at = new Date("2025-01-02T03:04:05.000Z")

const conversation: typeof Conversation.Type = {
  public_id: uuid,
  workspace_public_id: uuid,
  lock_version: 0,
  title: null,
  metadata: {},
  billing_subject: null,
  source_conversation_public_id: null,
  forked_from_turn_public_id: null,
  forked_from_variant_public_id: null,
  parent: null,
  side: false,
  archived_at: null,
  active_turn_public_id: null,
  context_revision: 0,
  last_activity_at: at,
  created_at: at,
  updated_at: at,
  answering_user_public_id: uuid,
  creator_public_id: uuid,
  default_runner: null,
  access: { default: "full", entries: [] },
  memory_context: null,
  effective_memory_context: { bindings: [] },
  context: null,
  usage_summary: {},
  input_queue: { limit: 16, held: 0 },
  latest_event_cursor: null
}

describe("answers", () => {
  it("encode instants as ISO 8601 strings and leave a summary turn without a speaker", () => {
    const encoded = Schema.encodeSync(Schema.toCodecJson(TurnResponse))({
      turn: {
        public_id: uuid,
        position: 1,
        kind: "compaction_summary",
        role: "user",
        status: "completed",
        visibility: "visible",
        inherited: false,
        origin: null,
        answering_user_public_id: null,
        input_public_id: null,
        sender_conversation_public_id: null,
        sender_run_public_id: null,
        sender_task_key: null,
        callback_result: null,
        callback_sources: [],
        active_variant: null,
        running_variant: null,
        failure_reason_key: null,
        created_at: at
      }
    })
    const { turn } = encoded as { turn: Record<string, unknown> }
    expect(turn.created_at).toBe("2025-01-02T03:04:05.000Z")
    expect("speaker" in turn).toBe(false)
  })
})

describe("served", () => {
  const Api = HttpApi.make("optional-body").add(
    HttpApiGroup.make("g").add(
      HttpApiEndpoint.post("regenerate", "/regenerate", {
        payload: optionalBody(RegenerationBody),
        success: RegenerationMembers
      }),
      HttpApiEndpoint.post("cancel", "/cancel", {
        payload: Schema.Struct({ canceled: Schema.Boolean }),
        success: CancellationAnswers
      })
    )
  )
  const handlers = HttpApiBuilder.group(Api, "g", (handlers) =>
    handlers
      .handle("regenerate", ({ payload }) => Effect.succeed(payload))
      .handle("cancel", ({ payload }) =>
        Effect.succeed(payload.canceled ? { conversation, canceled: true } : { conversation, canceled: false })
      )
  )
  const { handler, dispose } = HttpRouter.toWebHandler(
    HttpApiBuilder.layer(Api).pipe(Layer.provide(handlers), Layer.provide(HttpServer.layerServices)),
    { disableLogger: true }
  )
  afterAll(() => dispose())

  const post = async (body?: string, path = "/regenerate") => {
    const response = await handler(
      new Request(`http://troupe.test${path}`, {
        method: "POST",
        ...(body === undefined ? {} : { body, headers: { "content-type": "application/json" } })
      })
    )
    const text = await response.text()
    return [response.status, text === "" ? undefined : JSON.parse(text)]
  }

  it("an optional body: none, or null, reads as no members, and a body as its members", async () => {
    expect(await post()).toEqual([200, {}])
    expect(await post("null")).toEqual([200, {}])
    expect(await post(JSON.stringify({ regeneration: { fallback_models: ["local/echo"] } }))).toEqual([
      200,
      { fallback_models: ["local/echo"] }
    ])
    expect((await post(JSON.stringify({ regeneration: { model: 5 } })))[0]).toBe(400)
  })

  it("a cancellation answers {conversation} at 202 when it cut running work, else at 200", async () => {
    const [cut, body] = await post(JSON.stringify({ canceled: true }), "/cancel")
    expect([cut, Object.keys(body)]).toEqual([202, ["conversation"]])
    expect(body.conversation.created_at).toBe("2025-01-02T03:04:05.000Z")
    expect((await post(JSON.stringify({ canceled: false }), "/cancel"))[0]).toBe(200)
  })

  it("answers a body's faults as the body does (the server reads the payloads as one union)", () => {
    const served = (body: Schema.Top) => Schema.Union(optionalBody(body)) as unknown as Schema.Codec<unknown, unknown>
    expect(answer(served(RegenerationBody), { regeneration: { model: 5 } })).toEqual(invalid)
    expect(answer(served(ForkBody), { fork: { side: "yes" } })).toEqual(invalid)
    expect(answer(served(CreateConversationBody), { conversation: { access: { default: "owner" } } })).toEqual(
      vocabulary
    )
    expect(answer(served(CreateConversationBody), { metadata: { blob: "y".repeat(2048) } })).toEqual(tooLarge)
    expect(answer(served(EstimateBody), [])).toEqual(invalid)
  })
})

describe("the groups", () => {
  it("describe every conversation route in OpenAPI", () => {
    const spec = OpenApi.fromApi(
      HttpApi.make("conversations")
        .add(ConversationsGroup)
        .add(ConversationInputsGroup)
        .add(TurnsGroup)
        .add(ConversationContextGroup)
    )
    const c = "/agent_api/v1/workspaces/{workspace_id}/conversations"
    const routes = Object.entries(spec.paths).flatMap(([path, operations]) =>
      Object.keys(operations as object).map((method) => `${method.toUpperCase()} ${path.replace(c, "C")}`)
    )
    expect(routes.sort()).toEqual(
      [
        "GET /agent_api/v1/conversations",
        "GET C",
        "POST C",
        "GET C/archived",
        "GET C/{conversation_id}",
        "PATCH C/{conversation_id}",
        "DELETE C/{conversation_id}",
        "GET C/{conversation_id}/children",
        "POST C/{conversation_id}/archive",
        "POST C/{conversation_id}/unarchive",
        "PUT C/{conversation_id}/access",
        "PUT C/{conversation_id}/default_runner",
        "POST C/{conversation_id}/memory_context",
        "POST C/{conversation_id}/forks",
        "GET C/{conversation_id}/events",
        "GET C/{conversation_id}/inputs",
        "POST C/{conversation_id}/inputs",
        "PATCH C/{conversation_id}/inputs/{input_id}",
        "DELETE C/{conversation_id}/inputs/{input_id}",
        "POST C/{conversation_id}/inputs/reorder",
        "GET C/{conversation_id}/inputs/{input_id}/materialization",
        "GET C/{conversation_id}/turns",
        "GET C/{conversation_id}/turns/{turn_id}",
        "PATCH C/{conversation_id}/turns/{turn_id}",
        "DELETE C/{conversation_id}/turns/{turn_id}",
        "POST C/{conversation_id}/turns/{turn_id}/edit",
        "POST C/{conversation_id}/turns/{turn_id}/regeneration",
        "GET C/{conversation_id}/turns/{turn_id}/regeneration_receipt",
        "POST C/{conversation_id}/cancellation",
        "GET C/{conversation_id}/turns/{turn_id}/variants",
        "POST C/{conversation_id}/turns/{turn_id}/variants/{variant_id}/activation",
        "PATCH C/{conversation_id}/turns/{turn_id}/variants/{variant_id}",
        "POST C/{conversation_id}/context_estimate",
        "POST C/{conversation_id}/compaction",
        "GET C/{conversation_id}/turns/{turn_id}/variants/{variant_id}/request"
      ].sort()
    )
  })
})
