// Handlers of store entries at the profile host, the request budget and key-required middleware,
// and `storeEntryRequests`: the five operations for any host, taking decoded wire input and
// answering rows the contract's schemas encode, for the workspace and conversation hosts to reuse
// once they have found their host.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CallerIdentity, IdempotencyKeyMaxBytes } from "@troupe/contracts/Idempotency"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { IdempotencyKeyRequired, StoreEntryBudget } from "@troupe/contracts/member/StoreEntries"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { StoreEntries, type StoreEntryHost, StoreEntryRequestLimit } from "@troupe/domain/memory/StoreEntries"
import { Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { Context, Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { type PageQuery, pageOf, parsePage, stringPairKey } from "../conventions/Pagination.ts"
import { consume } from "../conventions/RateLimit.ts"

/** Counts every store-entry request against the caller's budget before anything is decoded. */
export const StoreEntryBudgetLive = Layer.effect(
  StoreEntryBudget,
  Effect.gen(function* () {
    const limiter = yield* RateLimiter
    const limit = yield* StoreEntryRequestLimit
    return (httpEffect) =>
      Effect.gen(function* () {
        const caller = yield* CallerIdentity
        yield* consume(limit, caller.key).pipe(Effect.provideService(RateLimiter, limiter))
        return yield* httpEffect
      })
  })
)

/** Requires a non-blank Idempotency-Key of 1 to 255 bytes; keeps nothing. */
export const IdempotencyKeyRequiredLive = Layer.succeed(IdempotencyKeyRequired, (httpEffect, { endpoint }) =>
  Effect.gen(function* () {
    const key = (yield* HttpServerRequest.HttpServerRequest).headers["idempotency-key"]
    if (key === undefined || key.trim() === "") {
      return yield* errors.badRequest("idempotency_key_required", "Send an Idempotency-Key header")
    }
    const maxBytes = Context.get(endpoint.annotations, IdempotencyKeyMaxBytes)
    // Node hands header values over as latin1 text: one character per byte on the wire.
    if (Buffer.byteLength(key, "latin1") > maxBytes) {
      return yield* errors.parameterInvalid(`Idempotency-Key must be 1 to ${maxBytes} bytes`)
    }
    return yield* httpEffect
  })
)

/**
 * The store-entry operations on one host, from decoded wire input to stored rows, failing with
 * the spec's errors. The host must be one the caller may use (a host it may not see is the
 * caller's 404 to answer before calling these).
 */
export const storeEntryRequests = {
  list: (host: StoreEntryHost, query: PageQuery) =>
    Effect.gen(function* () {
      const page = yield* parsePage(query, stringPairKey)
      const entries = yield* StoreEntries
      const rows = yield* entries.list(host, {
        after: page.after,
        order: page.order,
        limit: page.limit + 1
      })
      const result = pageOf(rows, page, (row) => [row.namespace, row.key])
      return { store_entries: result.items, pagination: result.pagination }
    }),

  create: (
    host: StoreEntryHost,
    payload: { readonly store_entry: { readonly namespace: string; readonly key: string; readonly value: unknown } }
  ) =>
    Effect.gen(function* () {
      const entries = yield* StoreEntries
      return { store_entry: yield* answerRefusals(entries.create(host, payload.store_entry)) }
    }),

  show: (host: StoreEntryHost, storeEntryId: string) =>
    Effect.gen(function* () {
      const entries = yield* StoreEntries
      return { store_entry: yield* answerRefusals(entries.get(host, storeEntryId)) }
    }),

  /** PATCH: `{store_entry: {value, lock_version}}`, or the same members at top level. */
  update: (
    host: StoreEntryHost,
    storeEntryId: string,
    members: { readonly lock_version: number; readonly value: unknown }
  ) =>
    Effect.gen(function* () {
      const entries = yield* StoreEntries
      const row = entries.replaceValue(host, storeEntryId, members.lock_version, members.value)
      return { store_entry: yield* answerRefusals(row) }
    }),

  /** DELETE with `?lock_version=`. */
  remove: (host: StoreEntryHost, storeEntryId: string, query: { readonly lock_version: number }) =>
    Effect.gen(function* () {
      const entries = yield* StoreEntries
      yield* answerRefusals(entries.remove(host, storeEntryId, query.lock_version))
    })
}

/** The profile host is the acting principal itself: an agent's own entries, or a human's. */
const profileHost = Effect.map(
  CurrentMemberCaller,
  (caller): StoreEntryHost => ({ kind: "profile", id: caller.user.id })
)

export const ProfileStoreEntriesHandlers = HttpApiBuilder.group(
  TroupeApi,
  "profileStoreEntries",
  Effect.fn(function* (handlers) {
    const entries = yield* StoreEntries
    const withEntries = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.provideService(effect, StoreEntries, entries)
    return handlers
      .handle("list", ({ query }) =>
        withEntries(Effect.flatMap(profileHost, (host) => storeEntryRequests.list(host, query)))
      )
      .handle("create", ({ payload }) =>
        withEntries(Effect.flatMap(profileHost, (host) => storeEntryRequests.create(host, payload)))
      )
      .handle("show", ({ params }) =>
        withEntries(Effect.flatMap(profileHost, (host) => storeEntryRequests.show(host, params.store_entry_id)))
      )
      .handle("update", ({ params, payload }) =>
        withEntries(
          Effect.flatMap(profileHost, (host) => storeEntryRequests.update(host, params.store_entry_id, payload))
        )
      )
      .handle("remove", ({ params, query }) =>
        withEntries(
          Effect.flatMap(profileHost, (host) => storeEntryRequests.remove(host, params.store_entry_id, query))
        )
      )
  })
)

/**
 * The workspace host: what the caller can see is listed and read; writes need write standing
 * (the dedication fence, the workspace active). An unseen workspace answers like absence.
 */
export const WorkspaceStoreEntriesHandlers = HttpApiBuilder.group(
  TroupeApi,
  "workspaceStoreEntries",
  Effect.fn(function* (handlers) {
    const entries = yield* StoreEntries
    const workspaces = yield* Workspaces
    const host = (workspaceId: string, write: boolean) =>
      Effect.gen(function* () {
        const caller = yield* CurrentMemberCaller
        const workspace = write
          ? yield* workspaces.writable(caller, workspaceId)
          : yield* workspaces.read(caller, workspaceId)
        return { kind: "workspace", id: workspace.id } as const
      }).pipe(answerRefusals)
    const withEntries = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.provideService(effect, StoreEntries, entries)
    return handlers
      .handle("list", ({ params, query }) =>
        withEntries(Effect.flatMap(host(params.workspace_id, false), (h) => storeEntryRequests.list(h, query)))
      )
      .handle("create", ({ params, payload }) =>
        withEntries(Effect.flatMap(host(params.workspace_id, true), (h) => storeEntryRequests.create(h, payload)))
      )
      .handle("show", ({ params }) =>
        withEntries(
          Effect.flatMap(host(params.workspace_id, false), (h) => storeEntryRequests.show(h, params.store_entry_id))
        )
      )
      .handle("update", ({ params, payload }) =>
        withEntries(
          Effect.flatMap(host(params.workspace_id, true), (h) =>
            storeEntryRequests.update(h, params.store_entry_id, payload)
          )
        )
      )
      .handle("remove", ({ params, query }) =>
        withEntries(
          Effect.flatMap(host(params.workspace_id, true), (h) =>
            storeEntryRequests.remove(h, params.store_entry_id, query)
          )
        )
      )
  })
)
