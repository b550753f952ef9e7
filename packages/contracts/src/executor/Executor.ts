// Executor plane: GET /agent_api/v1/executor, the address the transport credential speaks for
// (with the presence members of its discovery row), and PUT /agent_api/v1/executor/announcement
// (SUPPLEMENT "Executor plane"), whose body is read here: a fault inside tools, environment or
// documents is 422 validation_failed naming the member, an environment over 64 KiB 413
// content_too_large, an absent tools 400 parameter_missing. Answers are the domain's description
// encoded by `Executor`.
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { coded, specCode } from "../Codes.ts"
import { BadRequest, ContentTooLarge, Unauthorized, Unprocessable } from "../Errors.ts"
import { canonicalBytes, isPrintableText } from "../Text.ts"
import { ExecutorAuthentication } from "./Caller.ts"

const environmentLimitBytes = 64 * 1024

/** A JSON object whose members the service does not read (an input schema, an environment). */
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

export const EffectProfile = Schema.Struct({
  kind: Schema.Literals(["read_only", "pure", "write"]),
  destructive: Schema.Boolean,
  effect_scope: Schema.Literals(["closed", "open"]),
  idempotency: Schema.Literals(["intrinsic", "none"]),
  reconciliation: Schema.Literals(["none", "lookup"])
})

export const ServedTool = Schema.Struct({
  name: Schema.String,
  effect_profile: EffectProfile,
  timeout_ms: Schema.optionalKey(Schema.Natural),
  description: Schema.optionalKey(Schema.String),
  input_schema: Schema.optionalKey(JsonObject)
})

export const ServedDocument = Schema.Struct({ name: Schema.String, description: Schema.String })

export const Presence = Schema.Literals(["online", "offline", "not_yet_seen"])

/** The members an address's answers share (its own view, discovery rows). */
export const executorMembers = {
  public_id: Schema.String,
  kind: Schema.Literals(["agent_application", "runner", "tool_provider"]),
  status: Schema.Literals(["active", "revoked"]),
  display_name: Schema.String,
  credential_epoch: Schema.Natural,
  served_tools: Schema.Array(ServedTool),
  environment: Schema.NullOr(JsonObject),
  served_documents: Schema.Array(ServedDocument),
  presence: Presence,
  last_seen_at: Schema.NullOr(Schema.Date),
  connected_at: Schema.NullOr(Schema.Date)
}

export const Executor = Schema.Struct(executorMembers)

const ExecutorDescription = Schema.Struct({ executor: Executor, measured_at: Schema.Date })

/** Printable text of 1 to `max` characters, not all blank. */
const Name = (max: number) =>
  Schema.String.check(
    isPrintableText(1, max),
    Schema.makeFilter<string>((name) => name.trim() !== "", { expected: "a name that is not blank" })
  )

/** An announced timeout is bounded as a tool step's own (1 ms to 7 days): runs' tasks keep it. */
const announcedTimeoutLimitMs = 7 * 24 * 3600 * 1000

const AnnouncedTool = Schema.Struct({
  name: Name(128),
  effect_profile: EffectProfile,
  timeout_ms: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(announcedTimeoutLimitMs))
  ),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4096))),
  input_schema: Schema.optionalKey(JsonObject)
})

/** No two tools share a name; the second is named. */
const distinctNames = Schema.makeFilter<ReadonlyArray<{ readonly name: string }>>(
  (tools) => {
    const seen = new Set<string>()
    for (const [index, tool] of tools.entries()) {
      if (seen.has(tool.name)) {
        return { path: [index, "name"], issue: `tools.${index}.name repeats ${JSON.stringify(tool.name)}` }
      }
      seen.add(tool.name)
    }
    return undefined
  },
  { expected: "tools with distinct names", [specCode]: "validation_failed" }
)

const Environment = JsonObject.check(
  Schema.makeFilter(
    (environment) => canonicalBytes(environment) <= environmentLimitBytes || "must be at most 64 KiB of canonical JSON",
    {
      expected: "at most 64 KiB of canonical JSON",
      [specCode]: "content_too_large"
    }
  )
)

const AnnouncementMembers = Schema.Struct({
  tools: Schema.Array(AnnouncedTool).pipe(coded("validation_failed"), Schema.check(distinctNames)),
  environment: Schema.optionalKey(Schema.NullOr(Environment).pipe(coded("validation_failed"))),
  documents: Schema.optionalKey(
    Schema.NullOr(Schema.Array(Schema.Struct({ name: Name(256), description: Schema.String }))).pipe(
      coded("validation_failed")
    )
  )
})

/** What an announcement replaces: absent (or null) environment is none, absent documents none. */
const Announcement = Schema.Struct({
  tools: Schema.Array(ServedTool),
  environment: Schema.NullOr(JsonObject),
  documents: Schema.Array(ServedDocument)
})

export const AnnouncementBody = AnnouncementMembers.pipe(
  Schema.decodeTo(
    Announcement,
    SchemaTransformation.transform({
      decode: (sent) => ({
        tools: sent.tools,
        environment: sent.environment ?? null,
        documents: sent.documents ?? []
      }),
      encode: (announcement) => announcement
    })
  )
)

export class ExecutorGroup extends HttpApiGroup.make("executor")
  .add(
    HttpApiEndpoint.get("show", "/agent_api/v1/executor", { success: ExecutorDescription }).annotate(
      OpenApi.Description,
      "Executor transport credential. This executor's description: 200 {executor, measured_at}."
    ),
    HttpApiEndpoint.put("announce", "/agent_api/v1/executor/announcement", {
      payload: AnnouncementBody,
      success: ExecutorDescription,
      error: [BadRequest, Unauthorized, ContentTooLarge, Unprocessable]
    }).annotate(
      OpenApi.Description,
      "Whole replacement of served tools, environment (an object of at most 64 KiB) and documents; tools is required ([] clears)."
    )
  )
  .middleware(ExecutorAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Executor plane" })) {}
