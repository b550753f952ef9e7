// Workspaces (spec "Workspace", "Member: workspaces"; SUPPLEMENT "Workspace ownership and
// access"). The owner is always a human. Seeing: the owner, and every active human of the
// account when access_mode is account_wide; an agent sees exactly what its live steward sees.
// Write standing: seeing, the workspace active, and the dedication fence (a workspace dedicated
// to one agent refuses every other agent, but for the named definitions DedicationFence.ts lets
// pass). access_mode and ownership_transfer are the owner's. What the caller cannot see answers
// like absence. Every write after creation is one event to the
// workspace's actor, whose machine judges the lock_version (this service never writes the row).
// Commands take their members as the contract decoded them (names, vocabularies, sizes and the
// override namespaces are settled there); what needs the database is judged here.
import { ActorHost } from "@troupe/actors/ActorHost"
import { workspaceActor } from "@troupe/actors/bindings/workspace"
import { workspaceEffects } from "@troupe/machines/workspace/effects"
import type { WorkspaceChanges } from "@troupe/machines/workspace/events"
import { workspaceTransitions } from "@troupe/machines/workspace/workspace.machine"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import * as Repo from "@troupe/storage/repositories/Workspaces"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { now } from "../kernel/Now.ts"
import { Absent, Invalid, NotPermitted, Stale, StateConflict } from "../kernel/Refusals.ts"
import { passesFence } from "./DedicationFence.ts"
import { type MessagingMembers, messagingEntries, providerOverrides } from "./WorkspaceSettings.ts"

export const notFound = () => Effect.fail(new Absent({ code: "not_found", message: "Not found" }))
const stale = () =>
  Effect.fail(
    new Stale({ code: "stale_object", message: "The workspace changed since you read it; read it again and retry" })
  )
const notActiveNow = () =>
  Effect.fail(new StateConflict({ code: "workspace_not_active", message: "The workspace is not active" }))
const dedicatedElsewhere = () =>
  Effect.fail(
    new NotPermitted({
      code: "workspace_agent_identifier_mismatch",
      message: "This workspace is dedicated to another agent"
    })
  )
export type WorkspaceState = Repo.WorkspaceState
export type AccessMode = Repo.WorkspaceRow["access_mode"]
type Metadata = Readonly<Record<string, unknown>>

/** A create's members: a trimmed name; null access_mode or metadata is the default. */
export interface CreateMembers {
  readonly name: string
  readonly access_mode?: AccessMode | null
  readonly metadata?: Metadata | null
}

/** A PATCH's members: the lock_version and a trimmed name, new metadata, or both. */
export interface PatchMembers {
  readonly lock_version: number
  readonly name?: string
  readonly metadata?: Metadata
}

/** A workspace as answers show it: the row, its owner (always a human) and its creator. */
export type Workspace = Repo.WorkspaceRow & {
  readonly owner_public_id: string
  readonly owner: { readonly public_id: string; readonly display_name: string }
  readonly creator: { readonly public_id: string; readonly display_name: string; readonly kind: "human" | "agent" }
}

const notActive = (state: string) =>
  workspaceTransitions.includes(state)
    ? Effect.fail(
        new StateConflict({
          code: "transition_in_progress",
          message: `The workspace is ${state}; wait until it settles`
        })
      )
    : Effect.fail(new StateConflict({ code: "workspace_not_active", message: `The workspace is ${state}` }))

/** What write standing refuses: unseen, dedicated to another agent, or not active. */
type Standing = Absent | NotPermitted | StateConflict

export class Workspaces extends Context.Service<
  Workspaces,
  {
    readonly list: (
      caller: Caller,
      filter: {
        readonly states: ReadonlyArray<Repo.WorkspaceState>
        readonly dedicatedToCurrentAgent: boolean
        readonly after: string | undefined
        readonly order: "asc" | "desc"
        readonly limit: number
      }
    ) => Effect.Effect<ReadonlyArray<Workspace>>
    readonly read: (caller: Caller, publicId: string) => Effect.Effect<Workspace, Absent>
    /** The workspace if the caller has write standing on it. */
    readonly writable: (caller: Caller, publicId: string) => Effect.Effect<Workspace, Standing>
    readonly create: (caller: Caller, members: CreateMembers) => Effect.Effect<Workspace>
    readonly patch: (
      caller: Caller,
      publicId: string,
      members: PatchMembers
    ) => Effect.Effect<Workspace, Standing | Stale>
    readonly setAccessMode: (
      caller: Caller,
      publicId: string,
      accessMode: AccessMode,
      lockVersion: number
    ) => Effect.Effect<Workspace, Standing | Stale>
    readonly transferOwnership: (
      caller: Caller,
      publicId: string,
      targetPublicId: string,
      lockVersion: number
    ) => Effect.Effect<Workspace, Standing | Invalid | Stale>
    readonly lifecycle: (
      caller: Caller,
      publicId: string,
      command: "archive" | "restore" | "tombstone",
      lockVersion: number
    ) => Effect.Effect<Workspace, Standing | Stale>
    readonly replaceMessaging: (
      caller: Caller,
      publicId: string,
      agents: ReadonlyArray<MessagingMembers>,
      lockVersion: number
    ) => Effect.Effect<Workspace, Standing | Invalid | Stale>
    readonly replaceOverrides: (
      caller: Caller,
      publicId: string,
      overrides: Readonly<Record<string, unknown>>,
      lockVersion: number
    ) => Effect.Effect<Workspace, Standing | Invalid | Stale>
    readonly principals: (caller: Caller, publicId: string) => Effect.Effect<ReadonlyArray<Repo.PrincipalRow>, Absent>
  }
>()("@troupe/domain/Workspaces") {
  static readonly layer = Layer.effect(
    Workspaces,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const workspaces = yield* Repo.WorkspacesRepository
      const accounts = yield* AccountsRepository
      const lifecycles = (yield* ActorHost).ref(workspaceActor)
      const db = yield* withRepositories(AccountsRepository, ExecutorsRepository, NamedAgentsRepository)

      /** The rows with their owners and creators, read in one query. */
      const withPeople = (rows: ReadonlyArray<Repo.WorkspaceRow>) =>
        Effect.map(workspaces.people(rows.flatMap((row) => [row.owner_id, row.created_by])), (found) => {
          const byId = new Map(found.map((person) => [person.id, person]))
          return rows.map((row): Workspace => {
            const owner = byId.get(row.owner_id)!
            const creator = byId.get(row.created_by)!
            return {
              ...row,
              owner_public_id: owner.public_id,
              owner: { public_id: owner.public_id, display_name: owner.display_name },
              creator: { public_id: creator.public_id, display_name: creator.display_name, kind: creator.kind }
            }
          })
        })
      const withOwner = (row: Repo.WorkspaceRow) => Effect.map(withPeople([row]), (rows) => rows[0]!)

      const canSee = (row: Repo.WorkspaceRow, who: Caller) =>
        row.account_id === who.human.accountId &&
        row.state !== "tombstoned" &&
        (row.owner_id === who.human.id || row.access_mode === "account_wide")

      const visible = (who: Caller, publicId: string) =>
        Effect.gen(function* () {
          if (!isUuid(publicId)) return yield* notFound()
          const row = yield* workspaces.findWorkspace(publicId)
          if (!row || !canSee(row, who)) return yield* notFound()
          return row
        })

      const standing = (who: Caller, publicId: string) =>
        Effect.gen(function* () {
          const row = yield* visible(who, publicId)
          if (!(yield* passesFence(row.dedicated_agent_id, who.user))) return yield* dedicatedElsewhere()
          if (row.state !== "active") return yield* notActiveNow()
          return row
        })

      /** Owner-only commands; a `transitional` one mid-transition is 409 transition_in_progress. */
      const ownerOnly = (who: Caller, publicId: string, transitional: boolean) =>
        Effect.gen(function* () {
          const row = yield* visible(who, publicId)
          if (who.user.id !== row.owner_id) {
            return yield* new NotPermitted({
              code: "not_workspace_owner",
              message: "Only the workspace's owner may do this"
            })
          }
          if (row.state !== "active") return yield* transitional ? notActive(row.state) : notActiveNow()
          return row
        })

      /** An edit is one step of the workspace's actor: its guard judges the lock_version. */
      const updated = (row: Repo.WorkspaceRow, lockVersion: number, changes: WorkspaceChanges) =>
        Effect.gen(function* () {
          const outcome = yield* lifecycles
            .send(row.public_id, { type: "workspace.edit", lockVersion, changes })
            .pipe(Effect.orDie)
          if (outcome._tag === "Vetoed") return yield* stale()
          if (outcome._tag === "Rejected") return yield* notActiveNow()
          const next = outcome.replies[workspaceEffects.recordChanges]
          if (!next) return yield* Effect.die(new Error("the edit step wrote no row"))
          return yield* withOwner(next)
        })

      const list = (who: Caller, filter: Parameters<Workspaces["Service"]["list"]>[1]) =>
        db(
          Effect.gen(function* () {
            const dedication: Repo.ListFilter["dedication"] =
              who.user.kind === "agent"
                ? filter.dedicatedToCurrentAgent
                  ? { _tag: "DedicatedTo", agentId: who.user.id }
                  : { _tag: "Undedicated" }
                : { _tag: "Any" }
            if (who.user.kind === "human" && filter.dedicatedToCurrentAgent) return []
            const rows = yield* workspaces.listVisible({
              accountId: who.human.accountId,
              viewerId: who.human.id,
              states: filter.states,
              dedication,
              after: filter.after,
              order: filter.order,
              limit: filter.limit
            })
            return yield* withPeople(rows)
          }).pipe(Effect.orDie)
        )

      const create = (who: Caller, members: CreateMembers) =>
        db(
          Effect.gen(function* () {
            // An agent's create is always private (and dedicated to it).
            const accessMode = (who.user.kind === "human" && members.access_mode) || "private"
            const at = yield* now
            const row = yield* Effect.gen(function* () {
              const created = yield* workspaces.insertWorkspace({
                publicId: newPublicId(),
                accountId: who.human.accountId,
                ownerId: who.human.id,
                createdBy: who.user.id,
                dedicatedAgentId: who.user.kind === "agent" ? who.user.id : null,
                name: members.name,
                accessMode,
                metadata: members.metadata ?? {},
                now: at
              })
              yield* lifecycles.create(created.public_id, { lockVersion: created.lock_version }).pipe(Effect.orDie)
              return created
            }).pipe(sql.withTransaction)
            return yield* withOwner(row)
          })
        )

      const patch = (who: Caller, publicId: string, members: PatchMembers) =>
        db(
          Effect.gen(function* () {
            const row = yield* standing(who, publicId)
            return yield* updated(row, members.lock_version, {
              ...(members.name === undefined ? {} : { name: members.name }),
              ...(members.metadata === undefined ? {} : { metadata: members.metadata })
            })
          })
        )

      const setAccessMode = (who: Caller, publicId: string, accessMode: AccessMode, lockVersion: number) =>
        db(
          Effect.gen(function* () {
            const row = yield* ownerOnly(who, publicId, false)
            return yield* updated(row, lockVersion, { access_mode: accessMode })
          })
        )

      const transferOwnership = (who: Caller, publicId: string, targetPublicId: string, lockVersion: number) =>
        db(
          Effect.gen(function* () {
            const row = yield* ownerOnly(who, publicId, true)
            const target = isUuid(targetPublicId) ? yield* accounts.findUserByPublicId(targetPublicId) : undefined
            if (
              !target ||
              target.account_id !== row.account_id ||
              target.kind !== "human" ||
              target.status !== "active"
            ) {
              return yield* new Invalid({
                code: "target_not_eligible",
                message: "target_user_public_id must name an active human of the account"
              })
            }
            return yield* updated(row, lockVersion, { owner_id: String(target.id) })
          })
        )

      const lifecycle = (
        who: Caller,
        publicId: string,
        command: "archive" | "restore" | "tombstone",
        lockVersion: number
      ) =>
        db(
          Effect.gen(function* () {
            const row = yield* visible(who, publicId)
            if (!(yield* passesFence(row.dedicated_agent_id, who.user))) return yield* dedicatedElsewhere()
            const outcome = yield* lifecycles
              .send(row.public_id, { type: `workspace.${command}`, lockVersion })
              .pipe(Effect.orDie)
            if (outcome._tag === "Vetoed") return yield* stale()
            if (outcome._tag === "Rejected") return yield* notActive(outcome.state)
            return yield* withOwner((yield* workspaces.findWorkspace(row.public_id))!)
          })
        )

      const replaceMessaging = (
        who: Caller,
        publicId: string,
        agents: ReadonlyArray<MessagingMembers>,
        lockVersion: number
      ) =>
        db(
          Effect.gen(function* () {
            const row = yield* standing(who, publicId)
            return yield* updated(row, lockVersion, { messaging: yield* messagingEntries(row, agents) })
          })
        )

      const replaceOverrides = (
        who: Caller,
        publicId: string,
        overrides: Readonly<Record<string, unknown>>,
        lockVersion: number
      ) =>
        db(
          Effect.gen(function* () {
            const row = yield* standing(who, publicId)
            return yield* updated(row, lockVersion, {
              tool_provider_overrides: yield* providerOverrides(row, overrides)
            })
          })
        )

      const principals = (who: Caller, publicId: string) =>
        db(Effect.flatMap(visible(who, publicId), (row) => workspaces.principals(row)))

      return Workspaces.of({
        list,
        read: (who, publicId) => db(Effect.flatMap(visible(who, publicId), withOwner)),
        writable: (who, publicId) => db(Effect.flatMap(standing(who, publicId), withOwner)),
        create,
        patch,
        setAccessMode,
        transferOwnership,
        lifecycle,
        replaceMessaging,
        replaceOverrides,
        principals
      })
    })
  )
}
