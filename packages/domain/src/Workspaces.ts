// Workspaces (spec "Workspace", "Member: workspaces"; SUPPLEMENT "Workspace ownership and
// access"). The owner is always a human. Seeing: the owner, and every active human of the
// account when access_mode is account_wide; an agent sees exactly what its live steward sees.
// Write standing: seeing, the workspace active, and the dedication fence (a workspace dedicated
// to one agent refuses every other agent). access_mode and ownership_transfer are the owner's.
// What the caller cannot see answers like absence.
import { ActorHost } from "@troupe/actors/ActorHost"
import { workspaceTransitions } from "@troupe/machines/workspace/workspace.machine"
import { withDatabase } from "@troupe/storage/Defects"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import * as Accounts from "@troupe/storage/repositories/Accounts"
import * as Repo from "@troupe/storage/repositories/Workspaces"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { canonicalBytes, isObject } from "./Json.ts"
import { now } from "./Now.ts"
import { type Refused, refuse } from "./Refused.ts"
import { isPrintableText } from "./Text.ts"
import { messagingEntries, providerOverrides } from "./WorkspaceSettings.ts"

export const notFound = () => refuse(404, "not_found", "Not found")
const stale = () => refuse(409, "stale_object", "The workspace changed since you read it; read it again and retry")

export const metadataLimitBytes = 2048

/** Who is asking: the member, and the human whose access counts (itself, or the agent's steward). */
export interface Viewer {
  readonly user: Accounts.UserRow
  readonly human: Accounts.UserRow
}

/** A workspace as answers show it: the row, its owner (always a human) and its creator. */
export type Workspace = Repo.WorkspaceRow & {
  readonly owner_public_id: string
  readonly owner: { readonly public_id: string; readonly display_name: string }
  readonly creator: { readonly public_id: string; readonly display_name: string; readonly kind: "human" | "agent" }
}

const notActive = (state: string) =>
  workspaceTransitions.includes(state)
    ? refuse(409, "transition_in_progress", `The workspace is ${state}; wait until it settles`)
    : refuse(409, "workspace_not_active", `The workspace is ${state}`)

const validName = (name: unknown) => isPrintableText(name, 1, 255) && name.trim() !== ""

export class Workspaces extends Context.Service<
  Workspaces,
  {
    readonly viewer: (userId: bigint) => Effect.Effect<Viewer, Refused>
    readonly list: (
      viewer: Viewer,
      filter: {
        readonly states: ReadonlyArray<Repo.WorkspaceState>
        readonly dedicatedToCurrentAgent: boolean
        readonly after: string | undefined
        readonly order: "asc" | "desc"
        readonly limit: number
      }
    ) => Effect.Effect<ReadonlyArray<Workspace>>
    readonly read: (viewer: Viewer, publicId: string) => Effect.Effect<Workspace, Refused>
    /** The workspace if the viewer has write standing on it. */
    readonly writable: (viewer: Viewer, publicId: string) => Effect.Effect<Workspace, Refused>
    readonly create: (
      viewer: Viewer,
      input: { readonly name: unknown; readonly accessMode: unknown; readonly metadata: unknown }
    ) => Effect.Effect<Workspace, Refused>
    readonly patch: (
      viewer: Viewer,
      publicId: string,
      input: { readonly name: unknown; readonly metadata: unknown; readonly lockVersion: number }
    ) => Effect.Effect<Workspace, Refused>
    readonly setAccessMode: (
      viewer: Viewer,
      publicId: string,
      accessMode: unknown,
      lockVersion: number
    ) => Effect.Effect<Workspace, Refused>
    readonly transferOwnership: (
      viewer: Viewer,
      publicId: string,
      targetPublicId: unknown,
      lockVersion: number
    ) => Effect.Effect<Workspace, Refused>
    readonly lifecycle: (
      viewer: Viewer,
      publicId: string,
      command: "archive" | "restore" | "tombstone",
      lockVersion: number
    ) => Effect.Effect<Workspace, Refused>
    readonly replaceMessaging: (
      viewer: Viewer,
      publicId: string,
      agents: unknown,
      lockVersion: number
    ) => Effect.Effect<Workspace, Refused>
    readonly replaceOverrides: (
      viewer: Viewer,
      publicId: string,
      overrides: unknown,
      lockVersion: number
    ) => Effect.Effect<Workspace, Refused>
    readonly principals: (viewer: Viewer, publicId: string) => Effect.Effect<ReadonlyArray<Repo.PrincipalRow>, Refused>
  }
>()("@troupe/domain/Workspaces") {
  static readonly layer = Layer.effect(
    Workspaces,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const host = yield* ActorHost
      const db = withDatabase(sql)

      /** The rows with their owners and creators, read in one query. */
      const withPeople = (rows: ReadonlyArray<Repo.WorkspaceRow>) =>
        Effect.map(Repo.people(rows.flatMap((row) => [row.owner_id, row.created_by])), (found) => {
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

      const viewer = (userId: bigint) =>
        db(
          Effect.gen(function* () {
            const user = yield* Accounts.findUserById(userId)
            if (!user) return yield* notFound()
            if (user.kind === "human") return { user, human: user }
            const steward = user.steward_id === null ? undefined : yield* Accounts.findUserById(user.steward_id)
            if (steward?.status !== "active") return yield* refuse(401, "unauthorized", "The credential is not valid")
            return { user, human: steward }
          })
        )

      const canSee = (row: Repo.WorkspaceRow, who: Viewer) =>
        row.account_id === who.human.account_id &&
        row.state !== "tombstoned" &&
        (row.owner_id === who.human.id || row.access_mode === "account_wide")

      const visible = (who: Viewer, publicId: string) =>
        Effect.gen(function* () {
          if (!isUuid(publicId)) return yield* notFound()
          const row = yield* Repo.findWorkspace(publicId)
          if (!row || !canSee(row, who)) return yield* notFound()
          return row
        })

      const standing = (who: Viewer, publicId: string) =>
        Effect.gen(function* () {
          const row = yield* visible(who, publicId)
          if (who.user.kind === "agent" && row.dedicated_agent_id !== null && row.dedicated_agent_id !== who.user.id) {
            return yield* refuse(
              403,
              "workspace_agent_identifier_mismatch",
              "This workspace is dedicated to another agent"
            )
          }
          if (row.state !== "active") return yield* refuse(409, "workspace_not_active", "The workspace is not active")
          return row
        })

      /** Owner-only commands; a `transitional` one mid-transition is 409 transition_in_progress. */
      const ownerOnly = (who: Viewer, publicId: string, transitional: boolean) =>
        Effect.gen(function* () {
          const row = yield* visible(who, publicId)
          if (who.user.id !== row.owner_id)
            return yield* refuse(403, "not_workspace_owner", "Only the workspace's owner may do this")
          if (row.state !== "active") {
            return yield* transitional
              ? notActive(row.state)
              : refuse(409, "workspace_not_active", "The workspace is not active")
          }
          return row
        })

      const updated = (row: Repo.WorkspaceRow, lockVersion: number, changes: Repo.Changes) =>
        Effect.gen(function* () {
          if (row.lock_version !== lockVersion) return yield* stale()
          const next = yield* Repo.updateWorkspace(row.id, lockVersion, changes, yield* now)
          if (!next) return yield* stale()
          return yield* withOwner(next)
        })

      const checkMetadata = (metadata: unknown) =>
        Effect.gen(function* () {
          if (!isObject(metadata)) return yield* refuse(422, "validation_failed", "metadata must be a JSON object")
          if (canonicalBytes(metadata) > metadataLimitBytes) {
            return yield* refuse(413, "content_too_large", "metadata is over 2 KiB of canonical JSON")
          }
          return metadata
        })

      const checkName = (name: unknown) =>
        validName(name)
          ? Effect.succeed((name as string).trim())
          : refuse(422, "validation_failed", "name must be 1 to 255 printable characters")

      const list = (who: Viewer, filter: Parameters<Workspaces["Service"]["list"]>[1]) =>
        db(
          Effect.gen(function* () {
            const dedication: Repo.ListFilter["dedication"] =
              who.user.kind === "agent"
                ? filter.dedicatedToCurrentAgent
                  ? { _tag: "DedicatedTo", agentId: who.user.id }
                  : { _tag: "Undedicated" }
                : { _tag: "Any" }
            if (who.user.kind === "human" && filter.dedicatedToCurrentAgent) return []
            const rows = yield* Repo.listVisible({
              accountId: who.human.account_id,
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

      const create = (
        who: Viewer,
        input: { readonly name: unknown; readonly accessMode: unknown; readonly metadata: unknown }
      ) =>
        db(
          Effect.gen(function* () {
            const name = yield* checkName(input.name)
            const metadata =
              input.metadata === undefined || input.metadata === null ? {} : yield* checkMetadata(input.metadata)
            let accessMode: Repo.WorkspaceRow["access_mode"] = "private"
            if (who.user.kind === "human" && input.accessMode !== undefined && input.accessMode !== null) {
              if (input.accessMode !== "private" && input.accessMode !== "account_wide") {
                return yield* refuse(422, "validation_failed", "access_mode must be account_wide or private")
              }
              accessMode = input.accessMode
            }
            const at = yield* now
            const row = yield* Effect.gen(function* () {
              const created = yield* Repo.insertWorkspace({
                publicId: newPublicId(),
                accountId: who.human.account_id,
                ownerId: who.human.id,
                createdBy: who.user.id,
                dedicatedAgentId: who.user.kind === "agent" ? who.user.id : null,
                name,
                accessMode,
                metadata,
                now: at
              })
              yield* host.create("workspace", created.public_id, {}).pipe(Effect.orDie)
              return created
            }).pipe(sql.withTransaction)
            return yield* withOwner(row)
          })
        )

      const patch = (
        who: Viewer,
        publicId: string,
        input: { readonly name: unknown; readonly metadata: unknown; readonly lockVersion: number }
      ) =>
        db(
          Effect.gen(function* () {
            const row = yield* standing(who, publicId)
            if (input.name === undefined && input.metadata === undefined) {
              return yield* refuse(400, "parameter_missing", "Send name or metadata with lock_version")
            }
            const name = input.name === undefined ? undefined : yield* checkName(input.name)
            const metadata = input.metadata === undefined ? undefined : yield* checkMetadata(input.metadata)
            return yield* updated(row, input.lockVersion, { name, metadata })
          })
        )

      const setAccessMode = (who: Viewer, publicId: string, accessMode: unknown, lockVersion: number) =>
        db(
          Effect.gen(function* () {
            const row = yield* ownerOnly(who, publicId, false)
            if (accessMode !== "private" && accessMode !== "account_wide") {
              return yield* refuse(422, "validation_failed", "access_mode must be account_wide or private")
            }
            return yield* updated(row, lockVersion, { access_mode: accessMode })
          })
        )

      const transferOwnership = (who: Viewer, publicId: string, targetPublicId: unknown, lockVersion: number) =>
        db(
          Effect.gen(function* () {
            const row = yield* ownerOnly(who, publicId, true)
            if (targetPublicId === undefined || targetPublicId === null) {
              return yield* refuse(400, "parameter_missing", "target_user_public_id is required")
            }
            if (typeof targetPublicId !== "string" || !isUuid(targetPublicId)) {
              return yield* refuse(400, "parameter_invalid", "target_user_public_id must be a public id")
            }
            const target = yield* Accounts.findUserByPublicId(targetPublicId)
            if (
              !target ||
              target.account_id !== row.account_id ||
              target.kind !== "human" ||
              target.status !== "active"
            ) {
              return yield* refuse(
                422,
                "target_not_eligible",
                "target_user_public_id must name an active human of the account"
              )
            }
            return yield* updated(row, lockVersion, { owner_id: target.id })
          })
        )

      const lifecycle = (
        who: Viewer,
        publicId: string,
        command: "archive" | "restore" | "tombstone",
        lockVersion: number
      ) =>
        db(
          Effect.gen(function* () {
            const row = yield* visible(who, publicId)
            if (
              who.user.kind === "agent" &&
              row.dedicated_agent_id !== null &&
              row.dedicated_agent_id !== who.user.id
            ) {
              return yield* refuse(
                403,
                "workspace_agent_identifier_mismatch",
                "This workspace is dedicated to another agent"
              )
            }
            if (workspaceTransitions.includes(row.state)) return yield* notActive(row.state)
            if (row.lock_version !== lockVersion) return yield* stale()
            const outcome = yield* host
              .send("workspace", row.public_id, { type: `workspace.${command}`, lockVersion } as never)
              .pipe(Effect.orDie)
            if (outcome._tag === "Vetoed") return yield* stale()
            if (outcome._tag === "Rejected") return yield* notActive(outcome.state)
            return yield* withOwner((yield* Repo.findWorkspace(row.public_id))!)
          })
        )

      const replaceMessaging = (who: Viewer, publicId: string, agents: unknown, lockVersion: number) =>
        db(
          Effect.gen(function* () {
            const row = yield* standing(who, publicId)
            return yield* updated(row, lockVersion, { messaging: yield* messagingEntries(row, agents) })
          })
        )

      const replaceOverrides = (who: Viewer, publicId: string, overrides: unknown, lockVersion: number) =>
        db(
          Effect.gen(function* () {
            const row = yield* standing(who, publicId)
            return yield* updated(row, lockVersion, {
              tool_provider_overrides: yield* providerOverrides(row, overrides)
            })
          })
        )

      const principals = (who: Viewer, publicId: string) =>
        db(Effect.flatMap(visible(who, publicId), (row) => Repo.principals(row)))

      return Workspaces.of({
        viewer,
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
