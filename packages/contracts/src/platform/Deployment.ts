// Platform: deployment administration (spec "Deployment", supplement "Deployment administration"):
// the deployment as the installation's updater describes it, release checks, upgrade admission
// and the upgrade's receipt and log. A live human owner or admin only; the progress stream (SSE)
// is a plain route of the http package, outside this API.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { coded, specCode } from "../Codes.ts"
import { BadRequest, Conflict, Forbidden, NotFound, ServiceUnavailable } from "../Errors.ts"
import { optionalBody } from "../member/ConversationShapes.ts"
import { type CurrentPlatformCaller, PlatformAuthentication } from "./Caller.ts"

/** True for a ten-digit UTC tag yyMMddHHmm naming a real minute (20yy). */
export const isReleaseTag = (tag: string) => {
  if (!/^\d{10}$/.test(tag)) return false
  const [year, month, day, hour, minute] = [0, 2, 4, 6, 8].map((at) => Number(tag.slice(at, at + 2))) as [
    number,
    number,
    number,
    number,
    number
  ]
  const date = new Date(Date.UTC(2000 + year, month - 1, day, hour, minute))
  return (
    date.getUTCFullYear() === 2000 + year &&
    date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day &&
    date.getUTCHours() === hour &&
    date.getUTCMinutes() === minute
  )
}

const tagRule = (acceptLatest: boolean) =>
  coded("invalid_request")(
    Schema.String.check(
      Schema.makeFilter<string>(
        (tag) =>
          (acceptLatest && tag === "latest") ||
          isReleaseTag(tag) ||
          "a release tag is ten digits yyMMddHHmm (UTC) naming a real minute",
        {
          expected: acceptLatest ? "latest or a release tag yyMMddHHmm" : "a release tag yyMMddHHmm",
          [specCode]: "invalid_request"
        }
      )
    )
  )

/** `latest` or a release tag; anything else is 400 invalid_request. */
export const ReleaseTagOrLatest = tagRule(true)
/** A release tag; anything else is 400 invalid_request. */
export const ReleaseTag = tagRule(false)

export const Image = Schema.Struct({ name: Schema.String, reference: Schema.String })

export const Release = Schema.Struct({ release: Schema.String, images: Schema.Array(Image) })

export const Candidate = Schema.Struct({
  ...Release.fields,
  checked_at: Schema.String,
  source_revision: Schema.optionalKey(Schema.String),
  source_url: Schema.optionalKey(Schema.String)
})

export const Preflight = Schema.Struct({
  checked_at: Schema.String,
  ready: Schema.Boolean,
  backup: Schema.Boolean,
  checks: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      status: Schema.Literals(["passed", "blocked", "warning"]),
      message: Schema.String,
      next_step: Schema.optionalKey(Schema.String),
      available_bytes: Schema.optionalKey(Schema.Finite),
      required_bytes: Schema.optionalKey(Schema.Finite)
    })
  )
})

export const upgradePhases = [
  "accepted",
  "preparing",
  "draining",
  "stopping",
  "backing_up",
  "migrating",
  "activating",
  "resuming",
  "verifying",
  "completed"
] as const

export const UpgradeReceipt = Schema.Struct({
  id: Schema.String,
  idempotency_key: Schema.String,
  actor_public_id: Schema.NullOr(Schema.String),
  target: Release,
  previous: Schema.optionalKey(Release),
  phase: Schema.Literals(upgradePhases),
  status: Schema.Literals(["running", "succeeded", "failed", "interrupted"]),
  accepted_at: Schema.String,
  updated_at: Schema.String,
  completed_at: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.Struct({ code: Schema.String, message: Schema.String })),
  recovery: Schema.optionalKey(Schema.String),
  log_cursor: Schema.optionalKey(Schema.String),
  backup: Schema.Boolean,
  database_backup: Schema.NullOr(
    Schema.Struct({ created_at: Schema.String, size_bytes: Schema.Finite, available: Schema.Boolean })
  )
})
export type UpgradeReceipt = typeof UpgradeReceipt.Type

export const Deployment = Schema.Struct({
  supported: Schema.Boolean,
  sources: Schema.Array(Image),
  installed: Schema.NullOr(Release),
  candidate: Schema.NullOr(Candidate),
  preflight: Schema.NullOr(Preflight),
  active_operation: Schema.NullOr(UpgradeReceipt),
  last_operation: Schema.NullOr(UpgradeReceipt)
})
export type Deployment = typeof Deployment.Type

export const DeploymentResponse = Schema.Struct({ deployment: Deployment })

export const UpgradeLog = Schema.Struct({
  entries: Schema.Array(Schema.Struct({ cursor: Schema.String, text: Schema.String })),
  next_cursor: Schema.String,
  operation: UpgradeReceipt
})
export type UpgradeLog = typeof UpgradeLog.Type

export const ReleaseCheckBody = Schema.Struct({
  release_check: Schema.optionalKey(
    Schema.Struct({ tag: Schema.optionalKey(ReleaseTagOrLatest), backup: Schema.optionalKey(Schema.Boolean) })
  )
})

/** The candidate as the check answered it; its release must be a release tag. */
export const UpgradeCandidate = Schema.Struct({
  release: ReleaseTag,
  images: Schema.Array(Image),
  checked_at: Schema.optionalKey(Schema.String),
  source_revision: Schema.optionalKey(Schema.String),
  source_url: Schema.optionalKey(Schema.String)
})

export const UpgradeBody = Schema.Struct({ backup: Schema.optionalKey(Schema.Boolean), candidate: UpgradeCandidate })

export const UpgradeResponse = Schema.Struct({ upgrade: UpgradeReceipt })

/** Deployment administration is for a live human owner or admin (else 403 not_authorized). */
export class DeploymentAdministrator extends HttpApiMiddleware.Service<
  DeploymentAdministrator,
  { requires: CurrentPlatformCaller }
>()("@troupe/contracts/platform/DeploymentAdministrator", { error: [Forbidden] }) {}

/**
 * Upgrade admission's Idempotency-Key: absent or blank is 400 idempotency_key_required, not a
 * UUIDv7 400 parameter_invalid. The updater keeps the receipts, so the key is its to honour.
 */
export class UpgradeKey extends HttpApiMiddleware.Service<UpgradeKey>()("@troupe/contracts/platform/UpgradeKey", {
  error: [BadRequest]
}) {}

/** Judged by UpgradeKey before the header is decoded; declared so that OpenAPI lists it. */
export const UpgradeKeyHeader = {
  "idempotency-key": Schema.String.annotate({
    description:
      "Required: a fresh UUIDv7. Missing or blank is 400 idempotency_key_required, another value 400 parameter_invalid."
  })
}

const upgradeParams = { id: Schema.String }
const cursorQuery = {
  cursor: Schema.optionalKey(Schema.String.annotate({ description: "The next_cursor of the previous window" }))
}
/** The gate's refusal and every answer the updater's codes map to (supplement). */
const deploymentErrors = [BadRequest, Forbidden, NotFound, Conflict, ServiceUnavailable]

export class DeploymentGroup extends HttpApiGroup.make("deployment")
  .add(
    HttpApiEndpoint.get("show", "/api/v1/admin/deployment", {
      success: DeploymentResponse,
      error: deploymentErrors
    }).annotate(OpenApi.Description, "The deployment as the updater describes it; supported false without one."),
    HttpApiEndpoint.post("releaseCheck", "/api/v1/admin/deployment/release_check", {
      payload: optionalBody(ReleaseCheckBody),
      success: DeploymentResponse,
      error: deploymentErrors
    }).annotate(
      OpenApi.Description,
      "Checks a release (tag latest by default, backup true by default) for up to 120 seconds; answers the deployment with the preflight, blocked results included."
    ),
    HttpApiEndpoint.post("upgrade", "/api/v1/admin/deployment/upgrades", {
      headers: UpgradeKeyHeader,
      payload: UpgradeBody,
      success: HttpApiSchema.WithHeaders(UpgradeResponse.pipe(HttpApiSchema.status(202)), { location: Schema.String }),
      error: deploymentErrors
    })
      .middleware(UpgradeKey)
      .annotate(
        OpenApi.Description,
        "Admits an upgrade to the checked candidate: 202 with the receipt and its Location. Conflicts are 409 (upgrade_in_progress, recovery_required, candidate_changed, preflight_failed, idempotency_conflict)."
      ),
    HttpApiEndpoint.get("upgradeShow", "/api/v1/admin/deployment/upgrades/:id", {
      params: upgradeParams,
      success: UpgradeResponse,
      error: deploymentErrors
    }).annotate(OpenApi.Description, "Live human owner or admin. One upgrade: 200 {upgrade}."),
    HttpApiEndpoint.get("upgradeLog", "/api/v1/admin/deployment/upgrades/:id/log", {
      params: upgradeParams,
      query: cursorQuery,
      success: Schema.Struct({ log: UpgradeLog }),
      error: deploymentErrors
    }).annotate(OpenApi.Description, "The log after the cursor, at most 64 KiB of text, with the receipt.")
  )
  .middleware(DeploymentAdministrator)
  .middleware(PlatformAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Platform: deployment administration" })) {}

/** A UUID of version 7 (RFC 9562), in either case. */
export const isUuidV7 = (value: string) =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.test(value)
