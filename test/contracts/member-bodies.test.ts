// The member-plane bodies of workspaces, named agents and handle renames as contract schemas
// (issue 9): what each reads, what it answers for a fault (the code a schema or check carries, else
// 400), and the printable-text rule the contract restates from the domain.
import { PutNamedAgentBody } from "@troupe/contracts/member/NamedAgents"
import { RenamePrincipalBody } from "@troupe/contracts/member/Principals"
import {
  AccessModeBody,
  CreateWorkspaceBody,
  PatchWorkspaceBody,
  ReplaceMessagingBody,
  ReplaceOverridesBody
} from "@troupe/contracts/member/Workspaces"
import { isPrintable as contractPrintable } from "@troupe/contracts/Text"
import { isPrintable as domainPrintable } from "@troupe/domain/kernel/Text"
import { describeDecodeFailure } from "@troupe/http/conventions/SchemaIssues"
import { Effect, Exit, Schema } from "effect"
import { HttpApiError } from "effect/http-api"
import { describe, expect, it } from "vitest"

const decode = (schema: Schema.Codec<unknown, unknown>, body: unknown) =>
  Schema.decodeUnknownExit(Schema.toCodecJson(schema))(body)

/** The status and code a body's decoding failure answers. */
const answer = (schema: Schema.Codec<unknown, unknown>, body: unknown) => {
  const error = Effect.runSync(Effect.flip(Schema.decodeUnknownEffect(Schema.toCodecJson(schema))(body)))
  const failure = describeDecodeFailure(new HttpApiError.HttpApiSchemaError({ kind: "Payload", cause: error }))
  return [failure.status, failure.code]
}

const agentId = "01900000-0000-7000-8000-000000000001"

describe("workspace bodies", () => {
  it("a name is trimmed; null access_mode and metadata are the defaults; unknown members are ignored", () => {
    expect(
      decode(CreateWorkspaceBody, { workspace: { name: "  Plans ", access_mode: null, dedicated: true } })
    ).toEqual(Exit.succeed({ name: "Plans", access_mode: null }))
  })

  it("a name or an access mode outside its rules is 422 validation_failed, metadata over 2 KiB 413", () => {
    for (const name of [42, null, "", "   ", "tab\there", "x".repeat(256)]) {
      expect(answer(CreateWorkspaceBody, { workspace: { name } })).toEqual([422, "validation_failed"])
    }
    expect(answer(CreateWorkspaceBody, { workspace: { name: "x", access_mode: "public" } })).toEqual([
      422,
      "validation_failed"
    ])
    expect(answer(CreateWorkspaceBody, { workspace: { name: "x", metadata: [1] } })).toEqual([422, "validation_failed"])
    expect(answer(CreateWorkspaceBody, { workspace: { name: "x", metadata: { blob: "y".repeat(2048) } } })).toEqual([
      413,
      "content_too_large"
    ])
  })

  it("a PATCH needs lock_version (400) and name or metadata (400 parameter_missing)", () => {
    expect(answer(PatchWorkspaceBody, { workspace: { name: "x", lock_version: "0" } })).toEqual([
      400,
      "parameter_invalid"
    ])
    expect(answer(PatchWorkspaceBody, { workspace: { name: "x" } })).toEqual([400, "parameter_missing"])
    expect(answer(PatchWorkspaceBody, { workspace: { lock_version: 0 } })).toEqual([400, "parameter_missing"])
    expect(decode(PatchWorkspaceBody, { metadata: { a: 1 }, lock_version: 1 })).toEqual(
      Exit.succeed({ lock_version: 1, metadata: { a: 1 } })
    )
  })

  it("access_mode reads wrapped or at top level, where the wrapper is the member itself", () => {
    const members = { access_mode: "private", lock_version: 3 }
    expect(decode(AccessModeBody, { access_mode: members })).toEqual(
      Exit.succeed({ lock_version: 3, access_mode: "private" })
    )
    expect(decode(AccessModeBody, members)).toEqual(Exit.succeed({ lock_version: 3, access_mode: "private" }))
    expect(answer(AccessModeBody, { access_mode: "public", lock_version: 3 })).toEqual([422, "validation_failed"])
  })

  it("messaging: an array (else 400) of entries judged 422 validation_failed, each agent once, at most 64 KiB", () => {
    const put = (agents: unknown) => answer(ReplaceMessagingBody, { messaging: { agents, lock_version: 0 } })
    expect(put({})).toEqual([400, "parameter_invalid"])
    for (const entry of [3, {}, { agent_public_id: "x" }, { agent_public_id: agentId, mode: "secret" }]) {
      expect(put([entry])).toEqual([422, "validation_failed"])
    }
    expect(put([{ agent_public_id: agentId }, { agent_public_id: agentId }])).toEqual([422, "validation_failed"])
    const senders = Array.from({ length: 1700 }, () => agentId)
    expect(put([{ agent_public_id: agentId, allowed_sender_public_ids: senders }])).toEqual([413, "content_too_large"])
  })

  it("overrides: an object (else 400), reserved namespaces first, then any namespace but svc.memory", () => {
    const put = (overrides: unknown) => answer(ReplaceOverridesBody, { overrides, lock_version: 0 })
    expect(put([])).toEqual([400, "parameter_invalid"])
    expect(put({ "svc.skill": agentId, "svc.graph": agentId })).toEqual([422, "reserved_namespace"])
    expect(put({ "svc.skill": agentId })).toEqual([422, "validation_failed"])
    expect(decode(ReplaceOverridesBody, { overrides: { "svc.memory": 5 }, lock_version: 0 })).toEqual(
      Exit.succeed({ overrides: { "svc.memory": 5 }, lock_version: 0 })
    )
  })
})

describe("a named agent PUT", () => {
  it("judges shape (400) before values (422)", () => {
    expect(answer(PutNamedAgentBody, { scope: "nope", description: 1, configuration: {} })).toEqual([
      400,
      "parameter_invalid"
    ])
    expect(answer(PutNamedAgentBody, { scope: "nope", description: "d", configuration: {} })).toEqual([
      422,
      "validation_failed"
    ])
    expect(
      answer(PutNamedAgentBody, { scope: "instance", description: "d", configuration: {}, create_only: "false" })
    ).toEqual([400, "parameter_invalid"])
  })

  it("reads the members wrapped under agent, display_name trimmed", () => {
    expect(
      decode(PutNamedAgentBody, {
        agent: { scope: "steward", description: "d", configuration: {}, display_name: " R " }
      })
    ).toEqual(Exit.succeed({ scope: "steward", description: "d", configuration: {}, display_name: "R" }))
  })
})

describe("a handle rename", () => {
  it("a handle that is not a string is 400, one outside the grammar 422 validation_failed", () => {
    expect(answer(RenamePrincipalBody, { principal: { handle: 7 } })).toEqual([400, "parameter_invalid"])
    expect(answer(RenamePrincipalBody, { handle: "Olive" })).toEqual([422, "validation_failed"])
    expect(decode(RenamePrincipalBody, { principal: { handle: "olive" } })).toEqual(Exit.succeed({ handle: "olive" }))
  })
})

describe("printable text", () => {
  it("the contract's rule answers as the domain's", () => {
    const samples = [
      "plain",
      "tab\there",
      "line\nbreak",
      "\u202Eflip",
      "\uFEFFbom",
      "zero\u200Bwidth",
      "\uD800",
      "é",
      "🎭",
      ""
    ]
    for (const text of samples) expect(contractPrintable(text), JSON.stringify(text)).toBe(domainPrintable(text))
  })
})
