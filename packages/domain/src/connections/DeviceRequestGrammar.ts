// The rules of a device authorization request's parameters (spec "OAuth", branch table) as a
// schema: each recognized parameter a string, then the client, then which branch the request is
// (A agent, B machine, A+B combined) and what each branch allows. A failure names its parameter
// (`agent_display_name must be ...`) and answers invalid_request, or the OAuth error its check is
// annotated with (`oauthError`: invalid_client for the client). Absent and empty parameters are
// the reader's business (DeviceRequest.ts): here every present one has a value.
import { Schema, SchemaTransformation } from "effect"
import { codePointLength, isPrintable } from "../kernel/Text.ts"

export const connectorClientId = "svc-first-party-connector"
export const applicationClientId = "svc-application"

const identifierMaxLength = 128
const displayNameMaxLength = 100

/** The annotation naming the OAuth error a check's failure answers (any other: invalid_request). */
export const oauthError = "troupe/oauthError"

/** The names examined; any other parameter is ignored entirely. */
export const recognized = [
  "client_id",
  "scope",
  "agent_identifier",
  "agent_display_name",
  "executor_display_name",
  "registration_identifier",
  "runner_display_name",
  "executor_kind",
  "assignment_agent_public_id"
] as const

const said = <S extends Schema.Top>(schema: S, message: string): S["Rebuild"] => schema.annotate({ message })

const stringWhere = (message: string, valid: (text: string) => boolean) =>
  Schema.String.annotate({ message }).check(Schema.makeFilter(valid, { message }))

// Decision: a string where a string belongs; no field is numeric or boolean, and stringifying
// (1e2 -> "100") would make an identifier depend on the client's serializer.
const scalar = Schema.optionalKey(said(Schema.String, "must be a string"))

const agentTriple = ["agent_identifier", "agent_display_name", "executor_display_name"] as const
const machinePair = ["registration_identifier", "runner_display_name"] as const
const together = (names: ReadonlyArray<string>) => `${names.slice(0, -1).join(", ")} and ${names.at(-1)} go together`

/** The recognized parameters, the client (exactly a device-flow client) and the branch's shape. */
const Parameters = Schema.Struct(
  Object.fromEntries(recognized.map((name) => [name, scalar])) as Record<(typeof recognized)[number], typeof scalar>
).check(
  // Decision: a missing client_id is invalid_client like a wrong one: for a public client the
  // client_id is its whole authentication (RFC 6749 section 5.2). Compared exactly.
  Schema.makeFilter(
    ({ client_id }) =>
      client_id === connectorClientId || client_id === applicationClientId
        ? undefined
        : { path: ["client_id"], issue: client_id === undefined ? "is required" : "is not a device-flow client" },
    { [oauthError]: "invalid_client" }
  ),
  Schema.makeFilter((parameters) => {
    const missingAgent = agentTriple.find((name) => parameters[name] === undefined)
    const missingMachine = machinePair.find((name) => parameters[name] === undefined)
    const anyAgent = agentTriple.some((name) => parameters[name] !== undefined)
    const anyMachine = machinePair.some((name) => parameters[name] !== undefined)
    if (anyAgent && missingAgent) {
      return { path: [missingAgent], issue: `is required: ${together(agentTriple)}` }
    }
    if (anyMachine && missingMachine) {
      return { path: [missingMachine], issue: `is required: ${together(machinePair)}` }
    }
    if (!anyAgent && !anyMachine) {
      return `the request names neither an agent (${agentTriple.join(", ")}) nor a machine (${machinePair.join(", ")})`
    }
    return undefined
  })
)

// agent_identifier (spec: 1 to 128 printable non-NUL characters, no surrounding whitespace, exact
// case-sensitive) and registration_identifier (spec: nonblank, at most 128, exact case-sensitive).
// Decision: registration_identifier follows the agent_identifier rule exactly. Both are lookup keys
// compared exactly, so surrounding whitespace is refused rather than trimmed (trimming would make
// two spellings name one key; keeping it would make invisible differences name two). Refusing it
// also makes "nonblank" automatic. Neither is Unicode-normalized or case-folded. "Printable" is
// Text.ts's rule (no control, format, separator or lone surrogate character).
const Identifier = stringWhere(
  `must be 1 to ${identifierMaxLength} printable characters without surrounding whitespace`,
  (value) => isPrintable(value) && !/^\s|\s$/u.test(value) && codePointLength(value) <= identifierMaxLength
)

// Display names (spec: nonblank, at most 100). Decision: control characters anywhere in the value
// (before trimming) are refused; surrounding whitespace is then trimmed, since a display name is
// presentation rather than a key, and the trimmed name must be nonblank and at most 100 code points.
const displayNameRule = `must be nonblank, printable and at most ${displayNameMaxLength} characters`
const DisplayName = stringWhere(displayNameRule, isPrintable).pipe(
  Schema.decodeTo(
    stringWhere(displayNameRule, (name) => name !== "" && codePointLength(name) <= displayNameMaxLength),
    SchemaTransformation.trim()
  )
)

// Decision (assignment_agent_public_id): the canonical hyphenated 8-4-4-4-12 hexadecimal form, in
// either case, answered in lower case. Any UUID version is accepted here: whether it names an
// active paired agent of this steward is the approval's and the consume's question, not syntax.
const AssignmentAgent = Schema.optionalKey(
  stringWhere("must be a UUID", (id) =>
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)
  ).pipe(Schema.decodeTo(Schema.String, SchemaTransformation.toLowerCase()))
)

const DeviceClient = Schema.Literals([connectorClientId, applicationClientId])

const agentFields = {
  client_id: DeviceClient,
  agent_identifier: Identifier,
  agent_display_name: DisplayName,
  executor_display_name: DisplayName
}

const machineFields = {
  client_id: DeviceClient,
  registration_identifier: Identifier,
  runner_display_name: DisplayName
}

// executor_kind values are exact and case-sensitive.
const Branch = Schema.Union([
  Schema.Struct({
    branch: Schema.Literal("agent"),
    ...agentFields,
    executor_kind: Schema.optionalKey(said(Schema.Never, "is not allowed in an agent request")),
    assignment_agent_public_id: Schema.optionalKey(said(Schema.Never, "is only for a standalone runner request"))
  }),
  Schema.Struct({
    branch: Schema.Literal("machine"),
    ...machineFields,
    executor_kind: Schema.optionalKey(
      said(Schema.Literals(["runner", "tool_provider"]), "must be runner or tool_provider")
    ),
    assignment_agent_public_id: AssignmentAgent
  }).check(
    Schema.makeFilter((machine) =>
      machine.assignment_agent_public_id !== undefined && machine.executor_kind === "tool_provider"
        ? { path: ["assignment_agent_public_id"], issue: "is only for a runner" }
        : undefined
    )
  ),
  Schema.Struct({
    branch: Schema.Literal("combined"),
    ...agentFields,
    ...machineFields,
    executor_kind: Schema.optionalKey(said(Schema.Literal("runner"), "must be runner in a combined request")),
    assignment_agent_public_id: Schema.optionalKey(said(Schema.Never, "cannot be combined with an agent request"))
  })
])

/** The branch a request of a valid shape is: the agent triple, the machine pair, or both. */
const branchOf = (parameters: typeof Parameters.Type) =>
  parameters.agent_identifier === undefined
    ? "machine"
    : parameters.registration_identifier === undefined
      ? "agent"
      : "combined"

/** A request's recognized parameters, decoded into its branch (snake_case, as on the wire). */
export const DeviceAuthorizationParameters = Parameters.pipe(
  Schema.decodeTo(
    Branch,
    SchemaTransformation.transform({
      decode: (parameters) => ({ ...parameters, branch: branchOf(parameters) }) as typeof Branch.Encoded,
      encode: ({ branch: _, ...parameters }) => parameters
    })
  )
)

export type DeviceAuthorizationParameters = typeof DeviceAuthorizationParameters.Type
