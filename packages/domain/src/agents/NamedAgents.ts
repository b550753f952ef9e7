// Named agent definitions (spec "Named agent definition", "Member: profile and named agents"):
// agent users declared by a paired agent under its steward, addressed by name, with the
// composed identifier <declarer identifier>/<name>, a system-assigned handle (name, name-2, ...),
// whole-replacement PUT (mint 201, replace or restore 200) and a reversible DELETE. A write reads
// the definition first and commits only if nobody else wrote it in between (concurrent_write).
// Not here: named agents' memory (memory verbs) and how a definition is served (executors).

import { withDatabase } from "@troupe/storage/Defects"
import { newPublicId } from "@troupe/storage/Ids"
import * as Accounts from "@troupe/storage/repositories/Accounts"
import * as Named from "@troupe/storage/repositories/NamedAgents"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { allocateHandle } from "../accounts/HandleChanges.ts"
import { isObject } from "../kernel/Json.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { isPrintable, isPrintableText } from "../kernel/Text.ts"
import { renderConfiguration, type StoredConfiguration, validateConfiguration } from "./AgentConfiguration.ts"

export const nameGrammar = /^[a-z0-9][a-z0-9_-]{1,31}$/
export const limits = { identifier: 128, description: 1024, systemPromptBytes: 64 * 1024, displayName: 100 } as const

const notAgent = () =>
  new NotPermitted({ code: "not_agent", message: "Named agents are declared by agents; this credential is a human's" })
const definitionNotFound = () => new Absent({ code: "not_found", message: "No named agent definition by that name" })
const concurrentWrite = () =>
  new StateConflict({ code: "concurrent_write", message: "Another write to this definition landed first; retry" })

/** What a PUT refuses: its body, a caller that is no agent, or the write's own conflicts. */
export type PutFailure = BadParameter | Invalid | NotPermitted | StateConflict

export interface DefinitionInput {
  readonly scope: Named.NamedScope
  readonly description: string
  readonly configuration: StoredConfiguration
  readonly displayName: string | null
  readonly systemPrompt: string | null
  readonly createOnly: boolean
}

export interface NamedAgentView {
  readonly public_id: string
  readonly handle: string
  readonly kind: "agent"
  readonly display_name: string
  readonly agent_identifier: string
  readonly steward_public_id: string
  readonly scope: Named.NamedScope
  readonly name: string
  readonly description: string
  readonly derived_from_public_id: string
  readonly system_prompt: string | null
  readonly configuration: StoredConfiguration
}

export const view = (row: Named.NamedAgentRow): NamedAgentView => ({
  public_id: row.public_id,
  handle: row.handle,
  kind: "agent",
  display_name: row.display_name,
  agent_identifier: row.agent_identifier,
  steward_public_id: row.steward_public_id,
  scope: row.scope,
  name: row.name,
  description: row.description,
  derived_from_public_id: row.derived_from_public_id,
  system_prompt: row.system_prompt,
  configuration: renderConfiguration(row.configuration)
})

const missing = (name: string) => new BadParameter({ code: "parameter_missing", message: `${name} is required` })
const malformed = (name: string, what: string) =>
  new BadParameter({ code: "parameter_invalid", message: `${name} must be ${what}` })
const invalid = (field: string, message: string) =>
  new Invalid({ code: "validation_failed", message: `${field} ${message}` })

/**
 * Reads a PUT body: `{agent: {...}}` or the same members at top level. Shape faults (absent,
 * wrong JSON type, a create_only that is not a boolean) are 400s and judged before any value
 * fault (422 validation_failed naming the field).
 */
export const parseDefinition = (body: unknown): Effect.Effect<DefinitionInput, BadParameter | Invalid> =>
  Effect.gen(function* () {
    const members = isObject(body) && isObject(body.agent) ? body.agent : isObject(body) ? body : {}
    const { scope, description, configuration, display_name, system_prompt, create_only } = members
    if (create_only !== undefined && typeof create_only !== "boolean") {
      return yield* malformed("create_only", "a JSON boolean")
    }
    if (scope === undefined) return yield* missing("scope")
    if (typeof scope !== "string") return yield* malformed("scope", "a string")
    if (description === undefined) return yield* missing("description")
    if (typeof description !== "string") return yield* malformed("description", "a string")
    if (configuration === undefined) return yield* missing("configuration")
    if (!isObject(configuration)) return yield* malformed("configuration", "an object")
    if (display_name !== undefined && display_name !== null && typeof display_name !== "string") {
      return yield* malformed("display_name", "a string")
    }
    if (system_prompt !== undefined && system_prompt !== null && typeof system_prompt !== "string") {
      return yield* malformed("system_prompt", "a string or null")
    }

    if (scope !== "instance" && scope !== "steward") return yield* invalid("scope", "must be instance or steward")
    if (!isPrintableText(description, 1, limits.description)) {
      return yield* invalid("description", `must be one printable line of 1 to ${limits.description} characters`)
    }
    // Judged before trimming: trim() would drop a U+FEFF the rule refuses.
    if (
      typeof display_name === "string" &&
      !(isPrintable(display_name) && isPrintableText(display_name.trim(), 1, limits.displayName))
    ) {
      return yield* invalid("display_name", `must be 1 to ${limits.displayName} printable characters`)
    }
    const displayName = typeof display_name === "string" ? display_name.trim() : null
    if (typeof system_prompt === "string" && Buffer.byteLength(system_prompt, "utf8") > limits.systemPromptBytes) {
      return yield* invalid("system_prompt", "is larger than 64 KiB")
    }
    const validated = validateConfiguration(configuration)
    if ("fault" in validated) {
      return yield* new Invalid({ code: "validation_failed", message: validated.fault.message })
    }
    return {
      scope,
      description,
      configuration: validated.configuration,
      displayName,
      systemPrompt: typeof system_prompt === "string" && system_prompt !== "" ? system_prompt : null,
      createOnly: create_only === true
    } satisfies DefinitionInput
  })

/** What a write saw when it started: the declarer and the definition's revision (0: absent). */
export interface PreparedWrite {
  readonly declarer: Accounts.UserRow
  readonly name: string
  readonly identifier: string
  readonly revision: number
}

const declarerOf = Effect.fnUntraced(function* (callerId: bigint) {
  const caller = yield* Accounts.findUserById(callerId)
  if (caller?.kind !== "agent" || caller.agent_identifier === null) return yield* notAgent()
  return caller
})

/** The read half of a PUT (outside any transaction). */
export const preparePut = Effect.fnUntraced(function* (callerId: bigint, name: string) {
  const declarer = yield* declarerOf(callerId)
  const identifier = `${declarer.agent_identifier}/${name}`
  if (identifier.length > limits.identifier) {
    return yield* invalid("agent_identifier", `${identifier} would be longer than ${limits.identifier} characters`)
  }
  const existing = yield* Named.findByName(declarer.id, name)
  return { declarer, name, identifier, revision: existing?.revision ?? 0 } satisfies PreparedWrite
})

/** The write half of a PUT, in one transaction; answers the definition and whether it was minted. */
export const commitPut = Effect.fnUntraced(function* (prepared: PreparedWrite, input: DefinitionInput) {
  const sql = yield* SqlClient
  return yield* Effect.gen(function* () {
    const at = yield* now
    yield* Named.lockDeclarer(prepared.declarer.id)
    const declarer = yield* Accounts.findUserById(prepared.declarer.id)
    if (declarer?.status !== "active") {
      return yield* new NotPermitted({
        code: "not_authorized",
        message: "The declaring agent was removed during the declaration"
      })
    }
    const steward = declarer.steward_id === null ? undefined : yield* Accounts.findUserById(declarer.steward_id)
    if (steward?.status !== "active" || steward.shutdown_generation !== declarer.steward_generation) {
      return yield* new StateConflict({ code: "shutdown_pending", message: "The steward's shutdown is in progress" })
    }
    const current = yield* Named.findByName(declarer.id, prepared.name, true)
    if (current && input.createOnly) {
      return yield* new StateConflict({
        code: "name_taken",
        message: `A definition named ${prepared.name} already exists`
      })
    }
    if ((current?.revision ?? 0) !== prepared.revision) return yield* concurrentWrite()
    const write: Named.NamedAgentWrite = {
      displayName: input.displayName ?? prepared.name,
      scope: input.scope,
      description: input.description,
      systemPrompt: input.systemPrompt,
      configuration: input.configuration,
      now: at
    }
    if (current) {
      yield* Named.replaceNamed(current.id, steward.shutdown_generation, write)
      return { row: (yield* Named.findByUserId(current.id))!, created: false }
    }
    if (yield* Named.findAgentRowByIdentifier(declarer.account_id, prepared.identifier)) {
      return yield* new StateConflict({
        code: "identifier_taken",
        message: "Another agent of the account holds this agent identifier"
      })
    }
    yield* Accounts.lockAccountWrites
    const userId = yield* Named.insertNamed({
      ...write,
      publicId: newPublicId(),
      accountId: declarer.account_id,
      agentIdentifier: prepared.identifier,
      handle: yield* allocateHandle(declarer.account_id, prepared.name, at),
      stewardId: steward.id,
      stewardGeneration: steward.shutdown_generation,
      derivedFromId: declarer.id,
      name: prepared.name
    })
    return { row: (yield* Named.findByUserId(userId))!, created: true }
  }).pipe(
    sql.withTransaction,
    Effect.catchTag("SqlError", (error: SqlError) =>
      error.reason._tag === "UniqueViolation" ? Effect.fail(concurrentWrite()) : Effect.die(error)
    )
  )
})

export class NamedAgents extends Context.Service<
  NamedAgents,
  {
    readonly list: (callerId: bigint) => Effect.Effect<ReadonlyArray<NamedAgentView>, NotPermitted>
    readonly show: (callerId: bigint, name: string) => Effect.Effect<NamedAgentView, NotPermitted | Absent>
    readonly put: (
      callerId: bigint,
      name: string,
      body: unknown
    ) => Effect.Effect<{ readonly agent: NamedAgentView; readonly created: boolean }, PutFailure>
    readonly remove: (callerId: bigint, name: string) => Effect.Effect<void, NotPermitted | Absent>
  }
>()("@troupe/domain/agents/NamedAgents") {
  static readonly layer = Layer.effect(
    NamedAgents,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const db = withDatabase(sql)

      const list = (callerId: bigint) =>
        db(
          Effect.gen(function* () {
            const declarer = yield* declarerOf(callerId)
            return (yield* Named.listVisible(declarer.id, declarer.steward_id!)).map(view)
          })
        )

      const show = (callerId: bigint, name: string) =>
        db(
          Effect.gen(function* () {
            const declarer = yield* declarerOf(callerId)
            const row = yield* Named.findByName(declarer.id, name)
            if (row?.status !== "active") return yield* definitionNotFound()
            return view(row)
          })
        )

      const put = (callerId: bigint, name: string, body: unknown) =>
        db(
          Effect.gen(function* () {
            yield* declarerOf(callerId)
            const input = yield* parseDefinition(body)
            const prepared = yield* preparePut(callerId, name)
            const { row, created } = yield* commitPut(prepared, input)
            return { agent: view(row), created }
          })
        )

      const remove = (callerId: bigint, name: string) =>
        db(
          Effect.gen(function* () {
            const declarer = yield* declarerOf(callerId)
            yield* Effect.gen(function* () {
              yield* Named.lockDeclarer(declarer.id)
              const row = yield* Named.findByName(declarer.id, name, true)
              if (row?.status !== "active") return yield* definitionNotFound()
              yield* Named.setNamedStatus(row.id, "removed", yield* now)
            }).pipe(sql.withTransaction)
          })
        )

      return NamedAgents.of({ list, show, put, remove })
    })
  )
}
