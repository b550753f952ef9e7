// The body of POST /oauth/device_authorization, parsed and validated into one of three branches
// (spec "OAuth": A agent, B machine, A+B combined), plus the user code shown to the human
// (8 characters from BCDFGHJKLMNPQRSTVWXZ, shown XXXX-XXXX). Pure: no I/O, no clock.
//
// Where the spec is silent, the choices below are those of a careful OAuth server; each is marked
// "Decision:".
//
// Decision (check order): errors are reported in this order, the first one wins:
//   1. media type, empty body, unparseable body, JSON that is not an object        -> invalid_request
//   2. a recognized parameter that is duplicated or not a string scalar             -> invalid_request
//   3. client_id missing or not exactly a device-flow client                        -> invalid_client
//   4. branch shape (half triple, half pair, neither), field contents, executor_kind,
//      assignment_agent_public_id                                                   -> invalid_request
// A malformed request is reported as malformed before asking who the client is.
//
// Decision (unknown parameters): only the recognized names below are examined. Any other name
// (assignment_scope included) is ignored entirely, even when duplicated or structured, so it can
// never influence the outcome. Parameter names are exact and case-sensitive.
import { codePointLength, isPrintable } from "../kernel/Text.ts"

export const connectorClientId = "svc-first-party-connector"
export const applicationClientId = "svc-application"

/** The clients that may use the device flow; the caller decides which of them a door accepts. */
export type DeviceClientId = typeof connectorClientId | typeof applicationClientId

export type ExecutorKind = "runner" | "tool_provider"

/** Branch A: an agent program and its agent_application executor. */
export interface AgentDeviceRequest {
  readonly branch: "agent"
  readonly clientId: DeviceClientId
  readonly agentIdentifier: string
  readonly agentDisplayName: string
  readonly executorDisplayName: string
}

/** Branch B: a machine (runner or tool provider), optionally bound to a paired agent (runner only). */
export interface MachineDeviceRequest {
  readonly branch: "machine"
  readonly clientId: DeviceClientId
  readonly registrationIdentifier: string
  readonly runnerDisplayName: string
  readonly executorKind: ExecutorKind
  readonly assignmentAgentPublicId: string | undefined
}

/** Branch A+B: the agent and a runner, committed together. */
export interface CombinedDeviceRequest {
  readonly branch: "combined"
  readonly clientId: DeviceClientId
  readonly agentIdentifier: string
  readonly agentDisplayName: string
  readonly executorDisplayName: string
  readonly registrationIdentifier: string
  readonly runnerDisplayName: string
  readonly executorKind: "runner"
}

export type DeviceRequest = AgentDeviceRequest | MachineDeviceRequest | CombinedDeviceRequest

export type DeviceRequestError = "invalid_request" | "invalid_client"

export type DeviceRequestResult =
  | { readonly _tag: "Valid"; readonly request: DeviceRequest }
  | { readonly _tag: "Invalid"; readonly error: DeviceRequestError; readonly description: string }

export const identifierMaxLength = 128
export const displayNameMaxLength = 100

const recognized = [
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

type Name = (typeof recognized)[number]

/** A recognized parameter after structural checks: absent (or empty), a string, or malformed. */
type Raw =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Present"; readonly value: string }
  | { readonly _tag: "Malformed"; readonly reason: string }

const absent: Raw = { _tag: "Absent" }

const invalid = (error: DeviceRequestError, description: string): DeviceRequestResult => ({
  _tag: "Invalid",
  error,
  description
})

const invalidRequest = (description: string) => invalid("invalid_request", description)

// ---------------------------------------------------------------------------------------------
// Media type

type MediaType = "form" | "json"

// Decision (charset): parameters of the Content-Type are allowed. The body reaches this function
// already decoded as UTF-8, so a charset parameter, when present, must name UTF-8 (or US-ASCII, a
// subset); any other charset would be silently mis-decoded and is invalid_request. Other media-type
// parameters are ignored. The type and subtype compare case-insensitively (RFC 9110 §8.3.1).
const mediaTypeOf = (contentType: string | undefined): MediaType | undefined => {
  if (contentType === undefined) return undefined
  const [essence = "", ...parameters] = contentType.split(";")
  const type = essence.trim().toLowerCase()
  const kind: MediaType | undefined =
    type === "application/x-www-form-urlencoded" ? "form" : type === "application/json" ? "json" : undefined
  if (kind === undefined) return undefined
  for (const parameter of parameters) {
    const eq = parameter.indexOf("=")
    if (eq < 0) continue
    if (parameter.slice(0, eq).trim().toLowerCase() !== "charset") continue
    const charset = parameter
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase()
    if (charset !== "utf-8" && charset !== "utf8" && charset !== "us-ascii") return undefined
  }
  return kind
}

// ---------------------------------------------------------------------------------------------
// Form bodies

const decodeFormComponent = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "))
  } catch {
    return undefined
  }
}

// Decision (form syntax): parsed by hand rather than with URLSearchParams, which silently keeps
// malformed percent escapes and turns invalid UTF-8 into U+FFFD. A malformed escape or invalid
// UTF-8 anywhere in the body is invalid_request. Empty `&&` segments are skipped; a name without
// `=` has an empty value (omitted). A recognized name given twice is a duplicated scalar even when
// one of the occurrences is empty (RFC 6749 §3.1: parameters MUST NOT be included more than once).
const formParameters = (body: string): ReadonlyMap<Name, Raw> | undefined => {
  const seen = new Map<string, string[]>()
  for (const segment of body.split("&")) {
    if (segment === "") continue
    const eq = segment.indexOf("=")
    const name = decodeFormComponent(eq < 0 ? segment : segment.slice(0, eq))
    const value = decodeFormComponent(eq < 0 ? "" : segment.slice(eq + 1))
    if (name === undefined || value === undefined) return undefined
    const values = seen.get(name)
    if (values) values.push(value)
    else seen.set(name, [value])
  }
  const result = new Map<Name, Raw>()
  for (const name of recognized) {
    const values = seen.get(name)
    if (values === undefined) result.set(name, absent)
    else if (values.length > 1) result.set(name, { _tag: "Malformed", reason: `${name} is given more than once` })
    else result.set(name, values[0] === "" ? absent : { _tag: "Present", value: values[0]! })
  }
  return result
}

// ---------------------------------------------------------------------------------------------
// JSON bodies

/**
 * The member names of the top-level object of a JSON text already known to be valid, in order and
 * with repeats (JSON.parse keeps only the last of duplicated names, hiding them).
 */
const topLevelNames = (text: string): string[] => {
  const names: string[] = []
  let depth = 0
  let expectName = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"') {
      let j = i + 1
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1
      if (depth === 1 && expectName) names.push(JSON.parse(text.slice(i, j + 1)) as string)
      expectName = false
      i = j
    } else if (c === "{" || c === "[") {
      depth++
      if (depth === 1) expectName = true
    } else if (c === "}" || c === "]") {
      depth--
    } else if (c === "," && depth === 1) {
      expectName = true
    }
  }
  return names
}

// Decision (JSON scalars): a string is the value ("" is omitted). null is treated as omitted, the
// JSON spelling of "no value". Numbers and booleans where a string belongs are invalid_request: no
// field of this request is numeric or boolean, and silently stringifying (1e2 -> "100") would make
// an identifier depend on the client's serializer. An array or object is invalid_request (spec).
// Decision (duplicate JSON names): a recognized name that appears twice in the top-level object is
// a duplicated scalar, invalid_request, exactly like a repeated form parameter (JSON.parse would
// otherwise keep the last one silently).
const jsonParameters = (body: string): ReadonlyMap<Name, Raw> | "not_json" | "not_object" => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return "not_json"
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return "not_object"
  const object = parsed as Record<string, unknown>
  const counts = new Map<string, number>()
  for (const name of topLevelNames(body)) counts.set(name, (counts.get(name) ?? 0) + 1)
  const result = new Map<Name, Raw>()
  for (const name of recognized) {
    const value = Object.hasOwn(object, name) ? object[name] : undefined
    if ((counts.get(name) ?? 0) > 1) result.set(name, { _tag: "Malformed", reason: `${name} is given more than once` })
    else if (value === undefined || value === null || value === "") result.set(name, absent)
    else if (typeof value === "string") result.set(name, { _tag: "Present", value })
    else if (typeof value === "object") result.set(name, { _tag: "Malformed", reason: `${name} must be a string` })
    else result.set(name, { _tag: "Malformed", reason: `${name} must be a string, not a ${typeof value}` })
  }
  return result
}

// ---------------------------------------------------------------------------------------------
// Field contents

// "Printable" is Text.ts's rule (no control, format, separator or lone surrogate character), for
// identifiers and display names alike.
const surroundingWhitespace = /^\s|\s$/u

// agent_identifier (spec: 1 to 128 printable non-NUL characters, no surrounding whitespace, exact
// case-sensitive) and registration_identifier (spec: nonblank, at most 128, exact case-sensitive).
// Decision: registration_identifier follows the agent_identifier rule exactly. Both are lookup keys
// compared exactly, so surrounding whitespace is refused rather than trimmed (trimming would make
// two spellings name one key; keeping it would make invisible differences name two). Refusing it
// also makes "nonblank" automatic. Neither is Unicode-normalized or case-folded.
const identifierProblem = (name: string, value: string): string | undefined => {
  const rule = `${name} must be 1 to ${identifierMaxLength} printable characters without surrounding whitespace`
  if (!isPrintable(value) || surroundingWhitespace.test(value)) return rule
  if (codePointLength(value) > identifierMaxLength) return rule
  return undefined
}

// Display names (spec: nonblank, at most 100). Decision: control characters anywhere in the value
// (before trimming) are refused; surrounding whitespace is then trimmed, since a display name is
// presentation rather than a key, and the trimmed name must be nonblank and at most 100 code points.
const displayName = (name: string, value: string): { readonly ok: string } | { readonly problem: string } => {
  const rule = `${name} must be nonblank, printable and at most ${displayNameMaxLength} characters`
  if (!isPrintable(value)) return { problem: rule }
  const trimmed = value.trim()
  if (trimmed === "" || codePointLength(trimmed) > displayNameMaxLength) return { problem: rule }
  return { ok: trimmed }
}

// Decision (assignment_agent_public_id): the canonical hyphenated 8-4-4-4-12 hexadecimal form, in
// either case, answered in lower case. Any UUID version is accepted here: whether it names an
// active paired agent of this steward is the approval's and the consume's question, not syntax.
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

// ---------------------------------------------------------------------------------------------
// The request

/**
 * Parses and validates a device authorization request body. `contentType` is the raw Content-Type
 * header; `body` is the request body decoded as UTF-8.
 */
export const parseDeviceAuthorizationRequest = (contentType: string | undefined, body: string): DeviceRequestResult => {
  const mediaType = mediaTypeOf(contentType)
  if (mediaType === undefined)
    return invalidRequest("the request must be application/x-www-form-urlencoded or application/json (UTF-8)")
  if (body === "") return invalidRequest("the request body is empty")

  let params: ReadonlyMap<Name, Raw>
  if (mediaType === "form") {
    const parsed = formParameters(body)
    if (parsed === undefined) return invalidRequest("the form body is not valid percent-encoded UTF-8")
    params = parsed
  } else {
    const parsed = jsonParameters(body)
    if (parsed === "not_json") return invalidRequest("the JSON body cannot be parsed")
    if (parsed === "not_object") return invalidRequest("the JSON body must be an object")
    params = parsed
  }

  for (const name of recognized) {
    const raw = params.get(name)!
    if (raw._tag === "Malformed") return invalidRequest(raw.reason)
  }
  const get = (name: Name): string | undefined => {
    const raw = params.get(name)!
    return raw._tag === "Present" ? raw.value : undefined
  }

  // Decision (client_id): a missing client_id is invalid_client, like a wrong one. The spec says the
  // client_id "must be exactly its value, else invalid_client"; for a public client the client_id is
  // its whole authentication, and RFC 6749 §5.2 gives invalid_client for "no client authentication
  // included". The comparison is exact (no trimming, no case folding).
  const clientId = get("client_id")
  if (clientId !== connectorClientId && clientId !== applicationClientId)
    return invalid(
      "invalid_client",
      clientId === undefined ? "client_id is required" : "client_id is not a device-flow client"
    )

  // scope: accepted and ignored (spec). It is still structurally checked above like any recognized
  // scalar, so a duplicated scope is invalid_request.

  const agentIdentifier = get("agent_identifier")
  const agentDisplayName = get("agent_display_name")
  const executorDisplayName = get("executor_display_name")
  const registrationIdentifier = get("registration_identifier")
  const runnerDisplayName = get("runner_display_name")
  const executorKind = get("executor_kind")
  const assignmentAgentPublicId = get("assignment_agent_public_id")

  const triple = [agentIdentifier, agentDisplayName, executorDisplayName].filter((v) => v !== undefined).length
  const pair = [registrationIdentifier, runnerDisplayName].filter((v) => v !== undefined).length
  if (triple !== 0 && triple !== 3)
    return invalidRequest("agent_identifier, agent_display_name and executor_display_name go together")
  if (pair === 1) return invalidRequest("registration_identifier and runner_display_name go together")
  if (triple === 0 && pair === 0)
    return invalidRequest(
      "the request names neither an agent (agent_identifier, agent_display_name, executor_display_name) nor a machine (registration_identifier, runner_display_name)"
    )
  const hasAgent = triple === 3
  const hasMachine = pair === 2

  let agent: { agentIdentifier: string; agentDisplayName: string; executorDisplayName: string } | undefined
  if (hasAgent) {
    const identifierIssue = identifierProblem("agent_identifier", agentIdentifier!)
    if (identifierIssue) return invalidRequest(identifierIssue)
    const agentName = displayName("agent_display_name", agentDisplayName!)
    if ("problem" in agentName) return invalidRequest(agentName.problem)
    const executorName = displayName("executor_display_name", executorDisplayName!)
    if ("problem" in executorName) return invalidRequest(executorName.problem)
    agent = {
      agentIdentifier: agentIdentifier!,
      agentDisplayName: agentName.ok,
      executorDisplayName: executorName.ok
    }
  }

  let machine: { registrationIdentifier: string; runnerDisplayName: string } | undefined
  if (hasMachine) {
    const identifierIssue = identifierProblem("registration_identifier", registrationIdentifier!)
    if (identifierIssue) return invalidRequest(identifierIssue)
    const runnerName = displayName("runner_display_name", runnerDisplayName!)
    if ("problem" in runnerName) return invalidRequest(runnerName.problem)
    machine = { registrationIdentifier: registrationIdentifier!, runnerDisplayName: runnerName.ok }
  }

  // executor_kind values are exact and case-sensitive.
  if (agent && !machine) {
    if (executorKind !== undefined) return invalidRequest("executor_kind is not allowed in an agent request")
    if (assignmentAgentPublicId !== undefined)
      return invalidRequest("assignment_agent_public_id is only for a standalone runner request")
    return { _tag: "Valid", request: { branch: "agent", clientId, ...agent } }
  }

  if (agent && machine) {
    if (executorKind !== undefined && executorKind !== "runner")
      return invalidRequest("executor_kind must be runner in a combined request")
    if (assignmentAgentPublicId !== undefined)
      return invalidRequest("assignment_agent_public_id cannot be combined with an agent request")
    return { _tag: "Valid", request: { branch: "combined", clientId, ...agent, ...machine, executorKind: "runner" } }
  }

  const kind = executorKind ?? "runner"
  if (kind !== "runner" && kind !== "tool_provider")
    return invalidRequest("executor_kind must be runner or tool_provider")
  let assignment: string | undefined
  if (assignmentAgentPublicId !== undefined) {
    if (kind !== "runner") return invalidRequest("assignment_agent_public_id is only for a runner")
    if (!uuidPattern.test(assignmentAgentPublicId)) return invalidRequest("assignment_agent_public_id must be a UUID")
    assignment = assignmentAgentPublicId.toLowerCase()
  }
  return {
    _tag: "Valid",
    request: {
      branch: "machine",
      clientId,
      ...machine!,
      executorKind: kind,
      assignmentAgentPublicId: assignment
    }
  }
}

// ---------------------------------------------------------------------------------------------
// User codes

export const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
export const userCodeLength = 8

// The largest multiple of the alphabet size not above 256: bytes at or above it are rejected so
// that every character is equally likely (no modulo bias).
const acceptBelow = 256 - (256 % userCodeAlphabet.length)

/**
 * A fresh canonical user code (8 characters, no dash). `random(n)` must answer n bytes from a
 * cryptographically secure source; it is asked for exactly as many bytes as characters are still
 * missing, and again while rejected bytes leave the code short.
 */
export const newUserCode = (random: (n: number) => Uint8Array): string => {
  let code = ""
  while (code.length < userCodeLength) {
    for (const byte of random(userCodeLength - code.length)) {
      if (byte >= acceptBelow) continue
      code += userCodeAlphabet[byte % userCodeAlphabet.length]
      if (code.length === userCodeLength) break
    }
  }
  return code
}

/** The display form XXXX-XXXX of a canonical user code. */
export const formatUserCode = (code: string): string => `${code.slice(0, 4)}-${code.slice(4)}`

const canonicalUserCode = new RegExp(`^[${userCodeAlphabet}]{${userCodeLength}}$`)

// Decision (typed user codes): input longer than 64 UTF-16 units is refused outright (a code with
// generous separators fits easily). The input is NFKC-normalized (full-width letters typed through
// an IME become ASCII), whitespace and dash punctuation (hyphen-minus, en and em dashes, ...) are
// removed, and only ASCII a-z is upper-cased (full Unicode upper-casing would turn "ß" into "SS",
// both in the alphabet). No look-alike mapping (0 -> O etc.): the alphabet has no vowels or digits.
const userCodeInputMax = 64

/** The 8 canonical characters of a user code as typed by a human, or undefined when it is not one. */
export const normalizeUserCode = (input: string): string | undefined => {
  if (input.length > userCodeInputMax) return undefined
  const code = input
    .normalize("NFKC")
    .replace(/[\s\p{Pd}]/gu, "")
    .replace(/[a-z]/g, (c) => c.toUpperCase())
  return canonicalUserCode.test(code) ? code : undefined
}
