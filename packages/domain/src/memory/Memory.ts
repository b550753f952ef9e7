// Memory documents at the member plane's doors (spec "Memory document", "Member: profile
// memory"): which scopes a door reaches and the anchor each resolves to (a Reach), the caller's
// ceiling (memory_context_limit), a provider's override of the workspace's memory, conditional
// writes (null pair creates, the observed pair replaces or deletes), the 64-document anchor limit
// and grep. Who may use a door (authentication, concealment, workspace standing) is decided
// before a Reach is made. Not here: the conversation door (bindings, speakers) and the
// model-facing memory tools.

import { withDatabase } from "@troupe/storage/Defects"
import { newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Memory"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, invalidBy, NotPermitted, Stale, StateConflict } from "../kernel/Refusals.ts"
import { memoryProviderOf } from "../workspaces/WorkspaceSettings.ts"
import type { Workspace } from "../workspaces/Workspaces.ts"
import { compilePattern, isPatternFault } from "./GrepPattern.ts"
import {
  applyEdit,
  checkContent,
  checkDescription,
  type GrepMatch,
  isSkillPath,
  type MemoryFault,
  type MemoryPath,
  matchingLines,
  memoryLimits,
  parseDocumentPath,
  parseFilterPath,
  type Scope,
  scopes
} from "./MemoryRules.ts"

export type MemoryDocumentRow = Repo.MemoryDocumentRow
export type MemorySummaryRow = Repo.MemorySummaryRow

/** What one door reaches: its scopes with their anchors, the caller's ceiling, an override. */
export interface Reach {
  readonly anchors: Partial<Record<Scope, Repo.Anchor>>
  /** The roots the caller's memory_context_limit allows (null: every root). */
  readonly roots: ReadonlyArray<Scope> | null
  /** The caller's memory_context_limit grants read access only. */
  readonly readOnly: boolean
  /** Scopes reached through a read-only binding (the conversation door's). */
  readonly readOnlyScopes?: ReadonlyArray<Scope>
  /** The workspace's svc.memory is served by a tool provider. */
  readonly overridden: boolean
}

export interface GrepResult {
  readonly matches: ReadonlyArray<GrepMatch>
  readonly truncated: boolean
}

/**
 * The members of each verb as the contract decodes them: shapes and grammars are settled there
 * (a path is well formed); what depends on several members or on stored documents is judged here.
 */
export interface ShowMembers {
  readonly path: string
}
interface ExpectedPair {
  readonly expected_public_id: string | null
  readonly expected_lock_version: number | null
}
export interface WriteMembers extends ShowMembers, ExpectedPair {
  readonly content: string
  readonly description?: string | null
}
export interface EditMembers extends ShowMembers, ExpectedPair {
  readonly old_text: string
  readonly new_text: string
}
export interface RemoveMembers extends ShowMembers, ExpectedPair {}
export interface GrepMembers {
  readonly pattern: string
  readonly path?: string | null
  readonly ignore_case?: boolean
  readonly limit?: number
}

/** What the memory doors refuse. */
export type MemoryRefusal = Absent | BadParameter | Invalid | NotPermitted | Stale | StateConflict

const refuseFault = (fault: MemoryFault) => Effect.fail(invalidBy(fault))
const isFault = (value: unknown): value is MemoryFault =>
  typeof value === "object" && value !== null && "code" in value && "message" in value
const malformed = (member: string, what: string) =>
  Effect.fail(new BadParameter({ code: "parameter_invalid", message: `memory.${member} must be ${what}` }))
const memoryNotFound = () =>
  Effect.fail(new Absent({ code: "memory_not_found", message: "No memory document at that path" }))
const stale = () =>
  Effect.fail(
    new Stale({
      code: "stale_object",
      message: "The document changed since you read it (or exists already); read it again and retry"
    })
  )
const overridden = () =>
  Effect.fail(
    new StateConflict({
      code: "memory_overridden",
      message: "This workspace's memory is served by a tool provider (svc.memory is overridden)"
    })
  )

/** The caller's ceiling from its declared configuration's memory_context_limit {roots, access}. */
export const ceilingOf = (user: Pick<Caller["user"], "configuration">): Pick<Reach, "roots" | "readOnly"> => {
  const limit = (user.configuration as { memory_context_limit?: unknown } | null)?.memory_context_limit
  if (typeof limit !== "object" || limit === null) return { roots: null, readOnly: false }
  const { roots, access } = limit as { roots?: unknown; access?: unknown }
  return {
    roots: Array.isArray(roots)
      ? roots.filter((root): root is Scope => (scopes as ReadonlyArray<unknown>).includes(root))
      : null,
    readOnly: access === "read"
  }
}

/** The anchor of a scope this door reaches within the ceiling, or memory_scope_unavailable. */
const anchorOf = (reach: Reach, scope: Scope) => {
  const anchor = reach.anchors[scope]
  if (anchor === undefined || (reach.roots !== null && !reach.roots.includes(scope))) {
    return Effect.fail(
      new Invalid({ code: "memory_scope_unavailable", message: `${scope}/ memory is not reachable here` })
    )
  }
  return Effect.succeed(anchor)
}

/** Every anchor the door reaches within the ceiling. */
const reachableAnchors = (reach: Reach) =>
  scopes.flatMap((scope) => {
    const anchor = reach.anchors[scope]
    return anchor !== undefined && (reach.roots === null || reach.roots.includes(scope)) ? [anchor] : []
  })

/** The skills/ exception of an override: show, write and delete of a skills/ path still work. */
const checkOverride = (reach: Reach, path: MemoryPath | undefined) =>
  reach.overridden && (path === undefined || !isSkillPath(path)) ? overridden() : Effect.void

/** The anchor to write through: reachable, and the ceiling not read-only. */
const writableAnchor = (reach: Reach, path: MemoryPath) =>
  Effect.gen(function* () {
    const anchor = yield* anchorOf(reach, path.scope)
    if (reach.readOnly || reach.readOnlyScopes?.includes(path.scope)) {
      return yield* new NotPermitted({
        code: "memory_read_only",
        message: `${path.scope}/ memory is read-only here (a read binding or the caller's limit)`
      })
    }
    return anchor
  })

interface Observed {
  readonly publicId: string
  readonly lockVersion: number
}

/**
 * expected_public_id and expected_lock_version (their shapes decoded): both null (create an
 * absent path; refused where `observedOnly`) or the observed pair.
 */
const expectedPair = (members: ExpectedPair, observedOnly: boolean) =>
  Effect.gen(function* () {
    const publicId = members.expected_public_id
    const lockVersion = members.expected_lock_version
    if (publicId === null && lockVersion === null) {
      if (observedOnly) {
        return yield* malformed("expected_public_id", "the observed public_id (with expected_lock_version), not null")
      }
      return undefined
    }
    if (publicId === null || lockVersion === null) {
      return yield* malformed("expected_public_id", "null together with expected_lock_version, or both set")
    }
    return { publicId: publicId.toLowerCase(), lockVersion } satisfies Observed
  })

const matchesObserved = (row: Repo.MemoryDocumentRow, observed: Observed) =>
  row.public_id.toLowerCase() === observed.publicId && row.lock_version === observed.lockVersion

export class Memory extends Context.Service<
  Memory,
  {
    /** The profile door: user/ only (a human itself; an agent the human it serves, its steward). */
    readonly profileReach: (caller: Caller) => Reach
    /** The workspace door (the caller's standing on the workspace already judged): workspace/ only. */
    readonly workspaceReach: (caller: Caller, workspace: Workspace) => Reach
    /** The named-agent door: agent/ of one of the caller's own active definitions, by name. */
    readonly namedAgentReach: (caller: Caller, name: string) => Effect.Effect<Reach, NotPermitted | Absent>
    readonly list: (reach: Reach) => Effect.Effect<ReadonlyArray<MemorySummaryRow>, MemoryRefusal>
    readonly show: (reach: Reach, members: ShowMembers) => Effect.Effect<MemoryDocumentRow, MemoryRefusal>
    readonly write: (reach: Reach, members: WriteMembers) => Effect.Effect<MemoryDocumentRow, MemoryRefusal>
    readonly grep: (reach: Reach, members: GrepMembers) => Effect.Effect<GrepResult, MemoryRefusal>
    readonly edit: (reach: Reach, members: EditMembers) => Effect.Effect<MemoryDocumentRow, MemoryRefusal>
    readonly remove: (reach: Reach, members: RemoveMembers) => Effect.Effect<void, MemoryRefusal>
  }
>()("@troupe/domain/memory/Memory") {
  static readonly layer = Layer.effect(
    Memory,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const db = withDatabase(sql)
      const memory = yield* Repo.MemoryRepository
      const named = yield* NamedAgentsRepository

      /** A human's own ceiling is open; an agent's is its declared memory_context_limit. */
      const ceilingOfCaller = (caller: Caller) =>
        caller.user.kind === "agent" ? ceilingOf(caller.user) : { roots: null, readOnly: false }

      const profileReach = (caller: Caller): Reach => ({
        anchors: { user: { kind: "user", id: caller.human.id } },
        ...ceilingOfCaller(caller),
        overridden: false
      })

      const workspaceReach = (caller: Caller, workspace: Workspace): Reach => ({
        anchors: { workspace: { kind: "workspace", id: workspace.id } },
        ...ceilingOfCaller(caller),
        overridden: memoryProviderOf(workspace.tool_provider_overrides) !== undefined
      })

      const namedAgentReach = (caller: Caller, name: string) =>
        db(
          Effect.gen(function* () {
            if (caller.user.kind !== "agent") {
              return yield* new NotPermitted({
                code: "not_agent",
                message: "Named agents are an agent's; this credential is a human's"
              })
            }
            const definition = yield* named.findByName(caller.user.id, name)
            if (definition?.status !== "active") {
              return yield* new Absent({ code: "not_found", message: "No named agent definition by that name" })
            }
            return {
              anchors: { agent: { kind: "agent", id: definition.id } },
              ...ceilingOf(caller.user),
              overridden: false
            } satisfies Reach
          })
        )

      const list = (reach: Reach) =>
        Effect.gen(function* () {
          yield* checkOverride(reach, undefined)
          return yield* db(memory.listDocuments(reachableAnchors(reach)))
        })

      const show = (reach: Reach, members: ShowMembers) =>
        Effect.gen(function* () {
          const path = parseDocumentPath(members.path)
          yield* checkOverride(reach, path)
          const anchor = yield* anchorOf(reach, path.scope)
          const row = yield* db(memory.findDocument(anchor, path.path))
          if (!row) return yield* memoryNotFound()
          return row
        })

      const write = (reach: Reach, members: WriteMembers) =>
        Effect.gen(function* () {
          const path = parseDocumentPath(members.path)
          const observed = yield* expectedPair(members, false)
          yield* checkOverride(reach, path)
          const anchor = yield* writableAnchor(reach, path)
          const content = checkContent(members.content)
          if (isFault(content)) return yield* refuseFault(content)
          const described = checkDescription(members.description, path)
          if (isFault(described)) return yield* refuseFault(described)
          const write: Repo.DocumentWrite = {
            content: members.content,
            description: described.description,
            bytesize: content.bytes,
            now: yield* now
          }
          return yield* db(
            Effect.gen(function* () {
              // Under the anchor's lock nothing else writes this anchor, so the checks hold.
              yield* memory.lockAnchor(anchor)
              const current = yield* memory.findDocument(anchor, path.path, true)
              if (observed === undefined) {
                if (current) return yield* stale()
                if ((yield* memory.countDocuments(anchor)) >= memoryLimits.documentsPerAnchor) {
                  return yield* new Invalid({
                    code: "memory_full",
                    message: `This ${path.scope}/ memory holds ${memoryLimits.documentsPerAnchor} documents already`
                  })
                }
                return yield* memory.insertDocument(anchor, { ...write, publicId: newPublicId(), path: path.path })
              }
              if (!current) return yield* memoryNotFound()
              if (!matchesObserved(current, observed)) return yield* stale()
              return yield* memory.replaceDocument(current.id, write)
            }).pipe(sql.withTransaction)
          )
        })

      const edit = (reach: Reach, members: EditMembers) =>
        Effect.gen(function* () {
          const path = parseDocumentPath(members.path)
          const observed = (yield* expectedPair(members, true))!
          yield* checkOverride(reach, undefined)
          const anchor = yield* writableAnchor(reach, path)
          const at = yield* now
          return yield* db(
            Effect.gen(function* () {
              const current = yield* memory.findDocument(anchor, path.path, true)
              if (!current) return yield* memoryNotFound()
              if (!matchesObserved(current, observed)) return yield* stale()
              const edited = applyEdit(current.content, members.old_text, members.new_text)
              if (isFault(edited)) return yield* refuseFault(edited)
              const content = checkContent(edited)
              if (isFault(content)) return yield* refuseFault(content)
              return yield* memory.replaceDocument(current.id, {
                content: edited,
                description: current.description,
                bytesize: content.bytes,
                now: at
              })
            }).pipe(sql.withTransaction)
          )
        })

      const remove = (reach: Reach, members: RemoveMembers) =>
        Effect.gen(function* () {
          const path = parseDocumentPath(members.path)
          const observed = (yield* expectedPair(members, true))!
          yield* checkOverride(reach, path)
          const anchor = yield* writableAnchor(reach, path)
          yield* db(
            Effect.gen(function* () {
              const current = yield* memory.findDocument(anchor, path.path, true)
              if (!current) return yield* memoryNotFound()
              if (!matchesObserved(current, observed)) return yield* stale()
              yield* memory.deleteDocument(current.id)
            }).pipe(sql.withTransaction)
          )
        })

      const grep = (reach: Reach, members: GrepMembers) =>
        Effect.gen(function* () {
          const ignoreCase = members.ignore_case ?? false
          const limit = members.limit ?? memoryLimits.grepDefault
          const pattern = compilePattern(members.pattern, ignoreCase)
          if (isPatternFault(pattern)) return yield* invalidBy(pattern)
          let anchors = reachableAnchors(reach)
          let under: string | undefined
          if (members.path !== undefined && members.path !== null) {
            const filter = parseFilterPath(members.path)
            anchors = [yield* anchorOf(reach, filter.scope)]
            under = filter.under === filter.scope ? undefined : filter.under
          }
          yield* checkOverride(reach, undefined)
          const documents = yield* db(memory.documentTexts(anchors, under))
          const matches: Array<GrepMatch> = []
          // A budget of scanning time (not a timestamp, so not the Clock's): past it, the answer
          // is what was found so far, marked truncated.
          const started = performance.now()
          let truncated = false
          for (const [index, document] of documents.entries()) {
            // One more than the limit tells whether the answer is cut short.
            matches.push(...matchingLines(pattern, document.path, document.content, limit + 1 - matches.length))
            const more = index + 1 < documents.length
            if (matches.length > limit || (more && performance.now() - started > memoryLimits.grepMillis)) {
              truncated = true
              break
            }
            yield* Effect.yieldNow
          }
          return { matches: matches.slice(0, limit), truncated }
        })

      return Memory.of({ profileReach, workspaceReach, namedAgentReach, list, show, write, grep, edit, remove })
    })
  )
}
