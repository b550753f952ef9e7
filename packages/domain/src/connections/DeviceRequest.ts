// The body of POST /oauth/device_authorization, read and decoded into one of three branches
// (spec "OAuth": A agent, B machine, A+B combined), plus the user code shown to the human
// (8 characters from BCDFGHJKLMNPQRSTVWXZ, shown XXXX-XXXX). Pure: no I/O, no clock. The rules of
// the parameters are a schema (DeviceRequestGrammar.ts); reading the body (media type, form
// syntax, repeated names) is done here by hand.
//
// Where the spec is silent, the choices below are those of a careful OAuth server; each is marked
// "Decision:".
//
// Decision (check order): errors are reported in this order, the first one wins:
//   1. media type, empty body, unparseable body, JSON that is not an object        -> invalid_request
//   2. a recognized parameter that is duplicated, then one that is not a string     -> invalid_request
//   3. client_id missing or not exactly a device-flow client                        -> invalid_client
//   4. branch shape (half triple, half pair, neither), field contents, executor_kind,
//      assignment_agent_public_id                                                   -> invalid_request
// A malformed request is reported as malformed before asking who the client is. A description
// names the parameter at fault (`agent_display_name must be nonblank, ...`).
//
// Decision (unknown parameters): only the recognized names are examined. Any other name
// (assignment_scope included) is ignored entirely, even when duplicated or structured, so it can
// never influence the outcome. Parameter names are exact and case-sensitive.
import { Result, SchemaParser } from "effect"
import { dottedPath, firstFault } from "../kernel/SchemaFaults.ts"
import {
  type applicationClientId,
  type connectorClientId,
  DeviceAuthorizationParameters,
  oauthError,
  recognized
} from "./DeviceRequestGrammar.ts"

export { applicationClientId, connectorClientId } from "./DeviceRequestGrammar.ts"

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

/** The recognized parameters present with a value, or the first one given more than once. */
type Read = { readonly parameters: Readonly<Record<string, unknown>> } | { readonly repeated: string }

const invalid = (error: DeviceRequestError, description: string): DeviceRequestResult => ({
  _tag: "Invalid",
  error,
  description
})

const invalidRequest = (description: string) => invalid("invalid_request", description)

/** The recognized names given more than once are refused; the others keep their one value. */
const readRecognized = (count: (name: string) => number, value: (name: string) => unknown): Read => {
  const repeated = recognized.find((name) => count(name) > 1)
  if (repeated) return { repeated }
  const parameters: Record<string, unknown> = {}
  for (const name of recognized) {
    const given = value(name)
    if (given !== undefined) parameters[name] = given
  }
  return { parameters }
}

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
const formParameters = (body: string): Read | undefined => {
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
  return readRecognized(
    (name) => seen.get(name)?.length ?? 0,
    (name) => seen.get(name)?.[0] || undefined
  )
}

// ---------------------------------------------------------------------------------------------
// JSON bodies

/**
 * The member names of the top-level object of a JSON text already known to be valid, in order and
 * with repeats (JSON.parse keeps only the last of duplicated names, hiding them).
 */
export const topLevelNames = (text: string): string[] => {
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
// JSON spelling of "no value". Anything else where a string belongs (numbers and booleans too) is
// the schema's invalid_request. Decision (duplicate JSON names): a recognized name that appears
// twice in the top-level object is a duplicated scalar, invalid_request, exactly like a repeated
// form parameter (JSON.parse would otherwise keep the last one silently).
const jsonParameters = (body: string): Read | "not_json" | "not_object" => {
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
  return readRecognized(
    (name) => counts.get(name) ?? 0,
    (name) => {
      const value = Object.hasOwn(object, name) ? object[name] : undefined
      return value === null || value === "" ? undefined : value
    }
  )
}

// ---------------------------------------------------------------------------------------------
// The request

const decodeParameters = SchemaParser.decodeUnknownResult(DeviceAuthorizationParameters)

/** The decoded parameters in the form the device flow stores and reads. */
const toRequest = (decoded: DeviceAuthorizationParameters): DeviceRequest => {
  const agent = (parameters: {
    readonly agent_identifier: string
    readonly agent_display_name: string
    readonly executor_display_name: string
  }) => ({
    agentIdentifier: parameters.agent_identifier,
    agentDisplayName: parameters.agent_display_name,
    executorDisplayName: parameters.executor_display_name
  })
  const machine = (parameters: { readonly registration_identifier: string; readonly runner_display_name: string }) => ({
    registrationIdentifier: parameters.registration_identifier,
    runnerDisplayName: parameters.runner_display_name
  })
  switch (decoded.branch) {
    case "agent":
      return { branch: "agent", clientId: decoded.client_id, ...agent(decoded) }
    case "combined":
      return {
        branch: "combined",
        clientId: decoded.client_id,
        ...agent(decoded),
        ...machine(decoded),
        executorKind: "runner"
      }
    case "machine":
      return {
        branch: "machine",
        clientId: decoded.client_id,
        ...machine(decoded),
        executorKind: decoded.executor_kind ?? "runner",
        assignmentAgentPublicId: decoded.assignment_agent_public_id
      }
  }
}

/**
 * Parses and validates a device authorization request body. `contentType` is the raw Content-Type
 * header; `body` is the request body decoded as UTF-8.
 */
export const parseDeviceAuthorizationRequest = (contentType: string | undefined, body: string): DeviceRequestResult => {
  const mediaType = mediaTypeOf(contentType)
  if (mediaType === undefined)
    return invalidRequest("the request must be application/x-www-form-urlencoded or application/json (UTF-8)")
  if (body === "") return invalidRequest("the request body is empty")

  let read: Read
  if (mediaType === "form") {
    const parsed = formParameters(body)
    if (parsed === undefined) return invalidRequest("the form body is not valid percent-encoded UTF-8")
    read = parsed
  } else {
    const parsed = jsonParameters(body)
    if (parsed === "not_json") return invalidRequest("the JSON body cannot be parsed")
    if (parsed === "not_object") return invalidRequest("the JSON body must be an object")
    read = parsed
  }
  if ("repeated" in read) return invalidRequest(`${read.repeated} is given more than once`)

  const decoded = decodeParameters(read.parameters)
  if (Result.isSuccess(decoded)) return { _tag: "Valid", request: toRequest(decoded.success) }
  const { path, message, checks } = firstFault(decoded.failure)
  const error = checks.some((check) => check.annotations?.[oauthError] === "invalid_client")
    ? "invalid_client"
    : "invalid_request"
  return invalid(error, path.length === 0 ? message : `${dottedPath(path)} ${message}`)
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
