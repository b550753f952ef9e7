// Named agent definitions (spec "Named agent definition", "Member: profile and named agents"):
// agent users declared by a paired agent under its steward, addressed by name, with the
// composed identifier <declarer identifier>/<name>, a system-assigned handle (name, name-2, ...),
// whole-replacement PUT (mint 201, replace or restore 200) and a reversible DELETE. A write reads
// the definition first and commits only if nobody else wrote it in between (concurrent_write).
// A PUT's members arrive as the contract decoded them (types, vocabularies and bounds settled);
// the configuration's rules are judged here. Not here: named agents' memory (memory verbs) and
// how a definition is served (executors).

import { newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { HandleReservationsRepository } from "@troupe/storage/repositories/HandleReservations"
import * as Named from "@troupe/storage/repositories/NamedAgents"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { allocateHandle } from "../accounts/HandleChanges.ts"
import { now } from "../kernel/Now.ts"
import { Absent, Invalid, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { codePointLength } from "../kernel/Text.ts"
import {
  type ConfigurationView,
  renderConfiguration,
  type StoredConfiguration,
  validateConfiguration
} from "./AgentConfiguration.ts"

export const nameGrammar = /^[a-z0-9][a-z0-9_-]{1,31}$/
export const limits = { identifier: 128 } as const

const notAgent = () =>
  new NotPermitted({ code: "not_agent", message: "Named agents are declared by agents; this credential is a human's" })
const definitionNotFound = () => new Absent({ code: "not_found", message: "No named agent definition by that name" })
const concurrentWrite = () =>
  new StateConflict({ code: "concurrent_write", message: "Another write to this definition landed first; retry" })

/** What a PUT refuses: its configuration, a caller that is no agent, or the write's own conflicts. */
export type PutFailure = Invalid | NotPermitted | StateConflict

/** A PUT's members as the contract decoded them: display_name trimmed, each value within its bounds. */
export interface DefinitionMembers {
  readonly scope: Named.NamedScope
  readonly description: string
  readonly configuration: Readonly<Record<string, unknown>>
  readonly display_name?: string | null
  readonly system_prompt?: string | null
  readonly create_only?: boolean
}

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
  readonly configuration: ConfigurationView
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

const invalid = (field: string, message: string) =>
  new Invalid({ code: "validation_failed", message: `${field} ${message}` })

/** A PUT's input: the members with the configuration judged and normalized (an empty system prompt is none). */
export const definitionInput = (members: DefinitionMembers): Effect.Effect<DefinitionInput, Invalid> => {
  const validated = validateConfiguration(members.configuration)
  if ("fault" in validated) {
    return Effect.fail(new Invalid({ code: "validation_failed", message: validated.fault.message }))
  }
  return Effect.succeed({
    scope: members.scope,
    description: members.description,
    configuration: validated.configuration,
    displayName: members.display_name ?? null,
    systemPrompt: members.system_prompt || null,
    createOnly: members.create_only === true
  })
}

/** What a write saw when it started: the declarer and the definition's revision (0: absent). */
export interface PreparedWrite {
  readonly declarer: UserRow
  readonly name: string
  readonly identifier: string
  readonly revision: number
}

const declarerOf = Effect.fnUntraced(function* (callerId: bigint) {
  const caller = yield* (yield* AccountsRepository).findUserById(callerId)
  if (caller?.kind !== "agent" || caller.agent_identifier === null) return yield* notAgent()
  return caller
})

/** The read half of a PUT (outside any transaction). */
export const preparePut = Effect.fnUntraced(function* (callerId: bigint, name: string) {
  const declarer = yield* declarerOf(callerId)
  const identifier = `${declarer.agent_identifier}/${name}`
  if (codePointLength(identifier) > limits.identifier) {
    return yield* invalid("agent_identifier", `${identifier} would be longer than ${limits.identifier} characters`)
  }
  const existing = yield* (yield* Named.NamedAgentsRepository).findByName(declarer.id, name)
  return { declarer, name, identifier, revision: existing?.revision ?? 0 } satisfies PreparedWrite
})

/** The write half of a PUT, in one transaction; answers the definition and whether it was minted. */
export const commitPut = Effect.fnUntraced(function* (prepared: PreparedWrite, input: DefinitionInput) {
  const sql = yield* SqlClient
  const accounts = yield* AccountsRepository
  const named = yield* Named.NamedAgentsRepository
  return yield* Effect.gen(function* () {
    const at = yield* now
    yield* named.lockDeclarer(prepared.declarer.id)
    const declarer = yield* accounts.findUserById(prepared.declarer.id)
    if (declarer?.status !== "active") {
      return yield* new NotPermitted({
        code: "not_authorized",
        message: "The declaring agent was removed during the declaration"
      })
    }
    const steward = declarer.steward_id === null ? undefined : yield* accounts.findUserById(declarer.steward_id)
    if (steward?.status !== "active" || steward.shutdown_generation !== declarer.steward_generation) {
      return yield* new StateConflict({ code: "shutdown_pending", message: "The steward's shutdown is in progress" })
    }
    const current = yield* named.findByName(declarer.id, prepared.name, true)
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
      yield* named.replaceNamed(current.id, steward.shutdown_generation, write)
      return { row: (yield* named.findByUserId(current.id))!, created: false }
    }
    if (yield* named.findAgentRowByIdentifier(declarer.account_id, prepared.identifier)) {
      return yield* new StateConflict({
        code: "identifier_taken",
        message: "Another agent of the account holds this agent identifier"
      })
    }
    yield* accounts.lockAccountWrites
    const userId = yield* named.insertNamed({
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
    return { row: (yield* named.findByUserId(userId))!, created: true }
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
      members: DefinitionMembers
    ) => Effect.Effect<{ readonly agent: NamedAgentView; readonly created: boolean }, PutFailure>
    readonly remove: (callerId: bigint, name: string) => Effect.Effect<void, NotPermitted | Absent>
  }
>()("@troupe/domain/agents/NamedAgents") {
  static readonly layer = Layer.effect(
    NamedAgents,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const named = yield* Named.NamedAgentsRepository
      const db = yield* withRepositories(AccountsRepository, HandleReservationsRepository, Named.NamedAgentsRepository)

      const list = (callerId: bigint) =>
        db(
          Effect.gen(function* () {
            const declarer = yield* declarerOf(callerId)
            return (yield* named.listVisible(declarer.id, declarer.steward_id!)).map(view)
          })
        )

      const show = (callerId: bigint, name: string) =>
        db(
          Effect.gen(function* () {
            const declarer = yield* declarerOf(callerId)
            const row = yield* named.findByName(declarer.id, name)
            if (row?.status !== "active") return yield* definitionNotFound()
            return view(row)
          })
        )

      const put = (callerId: bigint, name: string, members: DefinitionMembers) =>
        db(
          Effect.gen(function* () {
            yield* declarerOf(callerId)
            const input = yield* definitionInput(members)
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
              yield* named.lockDeclarer(declarer.id)
              const row = yield* named.findByName(declarer.id, name, true)
              if (row?.status !== "active") return yield* definitionNotFound()
              yield* named.setNamedStatus(row.id, "removed", yield* now)
            }).pipe(sql.withTransaction)
          })
        )

      return NamedAgents.of({ list, show, put, remove })
    })
  )
}
