// Member: store entries (spec "Store entry", "Member: store entries"). Three hosts share one
// shape: the profile (here), a workspace and a conversation. `storeEntryEndpoints` builds the
// five endpoints for any host's collection path; each host adds its create middleware (the
// profile keeps no receipt and only requires the key; workspace and conversation replay).
// Answers are encoded from the stored rows; namespace and key carry their 422 validation_failed.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { coded } from "../Codes.ts"
import {
  BadRequest,
  Conflict,
  ContentTooLarge,
  Forbidden,
  NotFound,
  RateLimitedResponse,
  Unprocessable
} from "../Errors.ts"
import { type CallerIdentity, IdempotencyKeyHeader, Idempotent } from "../Idempotency.ts"
import { LockVersion, LockVersionQuery } from "../LockVersion.ts"
import { PageQuery, Pagination } from "../Pagination.ts"
import { isPrintableText } from "../Text.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"

/** Basic projection (lists). */
export const StoreEntrySummary = Schema.Struct({
  public_id: Schema.String,
  namespace: Schema.String,
  key: Schema.String,
  lock_version: Schema.Natural,
  created_at: Schema.DateFromString,
  updated_at: Schema.DateFromString
})

/** Full projection: the basic one and the value (any JSON, null included). */
export const StoreEntry = Schema.Struct({ ...StoreEntrySummary.fields, value: Schema.Unknown })

export const StoreEntryResponse = Schema.Struct({ store_entry: StoreEntry })

export const StoreEntryListResponse = Schema.Struct({
  store_entries: Schema.Array(StoreEntrySummary),
  pagination: Pagination
})

/** namespace or key: printable text of 1 to `max` code points (422 validation_failed naming it). */
const name = (max: number) =>
  Schema.String.annotate({ description: `1 to ${max} printable characters` })
    .pipe(coded("validation_failed"))
    .check(isPrintableText(1, max))

/** A value: any JSON, null included; over 1 MiB of canonical JSON is 413 content_too_large. */
const value = Schema.Unknown.annotate({ description: "any JSON, at most 1 MiB of canonical JSON" })

/** An absent member is 400 parameter_missing. */
export const CreateStoreEntryPayload = Schema.Struct({
  store_entry: Schema.Struct({ namespace: name(80), key: name(160), value })
})

/** `{store_entry: {value, lock_version}}` is canonical; the same members at top level are accepted. */
export const UpdateStoreEntryPayload = wrappedOrTopLevel(
  "store_entry",
  Schema.Struct({ lock_version: LockVersion, value })
)

export const DeleteStoreEntryQuery = { lock_version: LockVersionQuery }

/**
 * The store-entry request budget (6,000 per minute per caller): counted after authentication and
 * before anything is decoded, so malformed requests count too.
 */
export class StoreEntryBudget extends HttpApiMiddleware.Service<StoreEntryBudget, { requires: CallerIdentity }>()(
  "@troupe/contracts/member/StoreEntryBudget",
  { error: RateLimitedResponse }
) {}

/**
 * A create that keeps no receipt still requires an Idempotency-Key (1 to 255 bytes): blank or
 * missing is 400 idempotency_key_required. A repeat runs again.
 */
export class IdempotencyKeyRequired extends HttpApiMiddleware.Service<IdempotencyKeyRequired>()(
  "@troupe/contracts/member/IdempotencyKeyRequired",
  { error: BadRequest }
) {}

/**
 * The five endpoints of one host's store entries. `collection` is the collection path and
 * `hostParams` the schemas of its path parameters (none for the profile). The create endpoint
 * comes without its key middleware: the host adds `Idempotent` or `IdempotencyKeyRequired`.
 */
/** Every refusal a store entry route may answer (a workspace host adds standing, the fence, not active). */
const hostErrors = [BadRequest, Forbidden, Conflict, ContentTooLarge, Unprocessable] as const

export const storeEntryEndpoints = <const Path extends `/${string}`, const HostParams extends Schema.Struct.Fields>(
  collection: Path,
  hostParams: HostParams
) => {
  const entryParams = { ...hostParams, store_entry_id: Schema.String }
  return {
    list: HttpApiEndpoint.get("list", collection, {
      params: hostParams,
      query: PageQuery,
      success: StoreEntryListResponse,
      error: [NotFound, ...hostErrors]
    }).annotate(
      OpenApi.Description,
      "Store entries of this host, keyset over (namespace, key) ascending, in the basic projection."
    ),
    create: HttpApiEndpoint.post("create", collection, {
      params: hostParams,
      headers: IdempotencyKeyHeader,
      payload: CreateStoreEntryPayload,
      success: StoreEntryResponse.pipe(HttpApiSchema.status(201)),
      error: [NotFound, ...hostErrors]
    }).annotate(
      OpenApi.Description,
      "Header Idempotency-Key (required). {store_entry: {namespace, key, value}}: 201 {store_entry}. A taken key is 409 key_taken where no receipt is kept (the profile)."
    ),
    show: HttpApiEndpoint.get("show", `${collection}/:store_entry_id`, {
      params: entryParams,
      success: StoreEntryResponse,
      error: [NotFound, ...hostErrors]
    }).annotate(OpenApi.Description, "One store entry, value included: 200 {store_entry}."),
    update: HttpApiEndpoint.patch("update", `${collection}/:store_entry_id`, {
      params: entryParams,
      payload: UpdateStoreEntryPayload,
      success: StoreEntryResponse,
      error: [NotFound, ...hostErrors]
    }).annotate(
      OpenApi.Description,
      "Replaces the value; lock_version required (a stale one is 409). 200 {store_entry}."
    ),
    remove: HttpApiEndpoint.delete("remove", `${collection}/:store_entry_id`, {
      params: entryParams,
      query: DeleteStoreEntryQuery,
      error: [NotFound, ...hostErrors]
    }).annotate(OpenApi.Description, "Deletes the entry at ?lock_version=: 204.")
  }
}

const profile = storeEntryEndpoints("/agent_api/v1/profile/store_entries", {})

/** The acting principal's own store entries. Middleware added later wraps the earlier ones. */
export class ProfileStoreEntriesGroup extends HttpApiGroup.make("profileStoreEntries")
  .add(profile.list, profile.create.middleware(IdempotencyKeyRequired), profile.show, profile.update, profile.remove)
  .middleware(StoreEntryBudget)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: profile store entries" })) {}

const workspace = storeEntryEndpoints("/agent_api/v1/workspaces/:workspace_id/store_entries", {
  workspace_id: Schema.String
})

/** The workspace host: creates replay their acceptance within 24 hours (Idempotency-Replayed). */
export class WorkspaceStoreEntriesGroup extends HttpApiGroup.make("workspaceStoreEntries")
  .add(workspace.list, workspace.create.middleware(Idempotent), workspace.show, workspace.update, workspace.remove)
  .middleware(StoreEntryBudget)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: workspace store entries" })) {}
