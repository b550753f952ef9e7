// Device authorization request parsing (spec "OAuth", branch table) and user codes.
import {
  type DeviceRequestResult,
  formatUserCode,
  newUserCode,
  normalizeUserCode,
  parseDeviceAuthorizationRequest,
  userCodeAlphabet
} from "@troupe/domain/connections/DeviceRequest"
import { describe, expect, it } from "vitest"

const FORM = "application/x-www-form-urlencoded"
const JSON_TYPE = "application/json"
const connector = "svc-first-party-connector"
const uuid = "0190f3a2-7b1c-7d2e-8f30-4a5b6c7d8e9f"

type Params = Record<string, unknown>

const agentFields: Params = {
  agent_identifier: "acme-cli/instance-1",
  agent_display_name: "Acme CLI",
  executor_display_name: "Laptop"
}
const machineFields: Params = { registration_identifier: "host-42", runner_display_name: "Build box" }

const formBody = (params: Params): string =>
  Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join("&")

const form = (params: Params) => parseDeviceAuthorizationRequest(FORM, formBody(params))
const json = (params: Params) => parseDeviceAuthorizationRequest(JSON_TYPE, JSON.stringify(params))
/** Runs the same parameters through both media types and expects the same answer. */
const both = (params: Params): DeviceRequestResult => {
  const a = form(params)
  const b = json(params)
  expect(a).toEqual(b)
  return a
}

const expectInvalid = (
  result: DeviceRequestResult,
  error: "invalid_request" | "invalid_client" = "invalid_request"
) => {
  expect(result._tag).toBe("Invalid")
  if (result._tag === "Invalid") {
    expect(result.error).toBe(error)
    expect(result.description).not.toBe("")
  }
}

const expectValid = (result: DeviceRequestResult) => {
  if (result._tag !== "Valid") throw new Error(`expected Valid, got ${JSON.stringify(result)}`)
  return result.request
}

const agentRequest = { client_id: connector, ...agentFields }
const machineRequest = { client_id: connector, ...machineFields }
const combinedRequest = { client_id: connector, ...agentFields, ...machineFields }

describe("device authorization request: valid branches", () => {
  it("branch A (agent) in form and JSON", () => {
    for (const result of [form(agentRequest), json(agentRequest)])
      expect(expectValid(result)).toEqual({
        branch: "agent",
        clientId: connector,
        agentIdentifier: "acme-cli/instance-1",
        agentDisplayName: "Acme CLI",
        executorDisplayName: "Laptop"
      })
  })

  it("branch B (machine) in form and JSON, executor_kind defaults to runner", () => {
    for (const result of [form(machineRequest), json(machineRequest)])
      expect(expectValid(result)).toEqual({
        branch: "machine",
        clientId: connector,
        registrationIdentifier: "host-42",
        runnerDisplayName: "Build box",
        executorKind: "runner",
        assignmentAgentPublicId: undefined
      })
  })

  it("branch B accepts executor_kind runner and tool_provider", () => {
    expect(expectValid(both({ ...machineRequest, executor_kind: "runner" }))).toMatchObject({ executorKind: "runner" })
    expect(expectValid(both({ ...machineRequest, executor_kind: "tool_provider" }))).toMatchObject({
      branch: "machine",
      executorKind: "tool_provider"
    })
  })

  it("branch B runner accepts assignment_agent_public_id as a UUID, answered in lower case", () => {
    expect(expectValid(both({ ...machineRequest, assignment_agent_public_id: uuid }))).toMatchObject({
      assignmentAgentPublicId: uuid
    })
    expect(
      expectValid(both({ ...machineRequest, executor_kind: "runner", assignment_agent_public_id: uuid.toUpperCase() }))
    ).toMatchObject({ assignmentAgentPublicId: uuid })
  })

  it("branch A+B (combined) in form and JSON, executor_kind runner", () => {
    const expected = {
      branch: "combined",
      clientId: connector,
      agentIdentifier: "acme-cli/instance-1",
      agentDisplayName: "Acme CLI",
      executorDisplayName: "Laptop",
      registrationIdentifier: "host-42",
      runnerDisplayName: "Build box",
      executorKind: "runner"
    }
    for (const result of [form(combinedRequest), json(combinedRequest)]) expect(expectValid(result)).toEqual(expected)
    expect(expectValid(both({ ...combinedRequest, executor_kind: "runner" }))).toEqual(expected)
  })

  it("both device-flow clients are accepted; the caller decides which one a door takes", () => {
    expect(expectValid(both({ ...agentRequest, client_id: "svc-application" })).clientId).toBe("svc-application")
    expect(expectValid(both(agentRequest)).clientId).toBe(connector)
  })
})

describe("device authorization request: media type and body", () => {
  it("refuses any other media type, or none", () => {
    const body = JSON.stringify(agentRequest)
    for (const type of [undefined, "", "text/plain", "multipart/form-data", "application/merge-patch+json", "json"])
      expectInvalid(parseDeviceAuthorizationRequest(type, body))
    expectInvalid(parseDeviceAuthorizationRequest("text/plain", formBody(agentRequest)))
  })

  it("allows a UTF-8 charset parameter and case-insensitive type, refuses another charset", () => {
    expectValid(parseDeviceAuthorizationRequest("application/json; charset=utf-8", JSON.stringify(agentRequest)))
    expectValid(parseDeviceAuthorizationRequest('Application/JSON;Charset="UTF-8"', JSON.stringify(agentRequest)))
    expectValid(parseDeviceAuthorizationRequest(`${FORM};charset=UTF-8`, formBody(agentRequest)))
    expectValid(parseDeviceAuthorizationRequest(`${FORM}; charset=us-ascii`, formBody(agentRequest)))
    expectInvalid(parseDeviceAuthorizationRequest(`${FORM}; charset=iso-8859-1`, formBody(agentRequest)))
    expectInvalid(parseDeviceAuthorizationRequest("application/json; charset=utf-16", JSON.stringify(agentRequest)))
  })

  it("refuses an empty body in either media type", () => {
    expectInvalid(parseDeviceAuthorizationRequest(FORM, ""))
    expectInvalid(parseDeviceAuthorizationRequest(JSON_TYPE, ""))
  })

  it("refuses unparseable JSON and JSON that is not an object", () => {
    for (const body of ["{", "not json", '{"client_id":', "[]", "null", '"client_id"', "42", "true"])
      expectInvalid(parseDeviceAuthorizationRequest(JSON_TYPE, body))
    expectInvalid(parseDeviceAuthorizationRequest(JSON_TYPE, JSON.stringify([agentRequest])))
  })

  it("refuses malformed percent-encoding or invalid UTF-8 in a form body", () => {
    expectInvalid(parseDeviceAuthorizationRequest(FORM, `${formBody(agentRequest)}&x=%zz`))
    expectInvalid(parseDeviceAuthorizationRequest(FORM, `${formBody(agentRequest)}&x=%E2%82`))
  })

  it("decodes + as a space and percent escapes in a form body", () => {
    const body = `client_id=${connector}&agent_identifier=a%2Fb&agent_display_name=Acme+CLI&executor_display_name=Z%C3%BC`
    expect(expectValid(parseDeviceAuthorizationRequest(FORM, body))).toMatchObject({
      agentIdentifier: "a/b",
      agentDisplayName: "Acme CLI",
      executorDisplayName: "Zü"
    })
  })
})

describe("device authorization request: parameter structure", () => {
  it("ignores unknown parameters, duplicated or structured, and assignment_scope", () => {
    expect(expectValid(form(agentRequest))).toEqual(
      expectValid(
        parseDeviceAuthorizationRequest(
          FORM,
          `${formBody(agentRequest)}&foo=1&foo=2&assignment_scope=account_wide&assignment_scope=user_private`
        )
      )
    )
    expect(
      expectValid(
        json({ ...machineRequest, foo: { deep: [1, 2] }, bar: 3, assignment_scope: "account_wide", Client_Id: "x" })
      )
    ).toEqual(expectValid(json(machineRequest)))
  })

  it("counts empty values as omitted", () => {
    expect(
      expectValid(both({ ...agentRequest, registration_identifier: "", runner_display_name: "", executor_kind: "" }))
    ).toMatchObject({ branch: "agent" })
    expect(expectValid(both({ ...machineRequest, executor_kind: "", assignment_agent_public_id: "" }))).toMatchObject({
      branch: "machine",
      executorKind: "runner",
      assignmentAgentPublicId: undefined
    })
    expect(expectValid(parseDeviceAuthorizationRequest(FORM, `${formBody(agentRequest)}&executor_kind`))).toMatchObject(
      { branch: "agent" }
    )
    expectInvalid(both({ ...agentRequest, agent_identifier: "" }))
  })

  it("treats JSON null as omitted", () => {
    expect(
      expectValid(json({ ...agentRequest, executor_kind: null, registration_identifier: null, scope: null }))
    ).toMatchObject({ branch: "agent" })
  })

  it("accepts and ignores scope", () => {
    expect(expectValid(both({ ...agentRequest, scope: "openid admin anything" }))).toEqual(
      expectValid(both(agentRequest))
    )
    expect(expectValid(both({ ...combinedRequest, scope: "x" }))).toEqual(expectValid(both(combinedRequest)))
  })

  it("refuses a duplicated scalar in a form body, even when one occurrence is empty", () => {
    const body = formBody(agentRequest)
    expectInvalid(parseDeviceAuthorizationRequest(FORM, `${body}&agent_identifier=other`))
    expectInvalid(parseDeviceAuthorizationRequest(FORM, `${body}&agent_display_name=`))
    expectInvalid(parseDeviceAuthorizationRequest(FORM, `${body}&scope=a&scope=b`))
    expectInvalid(
      parseDeviceAuthorizationRequest(FORM, `${formBody(machineRequest)}&executor_kind=runner&executor_kind=runner`)
    )
    expectInvalid(parseDeviceAuthorizationRequest(FORM, `client_id=${connector}&${body}`))
  })

  it("refuses a duplicated member name in a JSON object", () => {
    const body = JSON.stringify(agentRequest)
    expectInvalid(parseDeviceAuthorizationRequest(JSON_TYPE, `${body.slice(0, -1)},"agent_identifier":"other"}`))
    expectInvalid(parseDeviceAuthorizationRequest(JSON_TYPE, `${body.slice(0, -1)},"client_id":"${connector}"}`))
    // The same name nested inside an unknown member is not a duplicate.
    expectValid(parseDeviceAuthorizationRequest(JSON_TYPE, `${body.slice(0, -1)},"x":{"agent_identifier":"y"}}`))
    expectValid(parseDeviceAuthorizationRequest(JSON_TYPE, `${body.slice(0, -1)},"x":"\\"agent_identifier\\""}`))
  })

  it("refuses a JSON array or object in place of a scalar", () => {
    expectInvalid(json({ ...agentRequest, agent_identifier: ["a"] }))
    expectInvalid(json({ ...agentRequest, agent_display_name: { name: "a" } }))
    expectInvalid(json({ ...agentRequest, client_id: [connector] }))
    expectInvalid(json({ ...agentRequest, scope: ["a", "b"] }))
    expectInvalid(json({ ...machineRequest, executor_kind: [] }))
  })

  it("refuses JSON numbers and booleans where a string belongs", () => {
    expectInvalid(json({ ...machineRequest, registration_identifier: 42 }))
    expectInvalid(json({ ...agentRequest, agent_identifier: true }))
    expectInvalid(json({ ...agentRequest, executor_display_name: false }))
  })

  it("reports a malformed request before a bad client", () => {
    expectInvalid(json({ ...agentRequest, client_id: "nope", agent_identifier: 1 }), "invalid_request")
  })
})

describe("device authorization request: client_id", () => {
  it("refuses any client_id that is not exactly a device-flow client as invalid_client", () => {
    for (const client_id of [
      "svc-first-party-connector ",
      " svc-first-party-connector",
      "SVC-FIRST-PARTY-CONNECTOR",
      "svc-first-party",
      "other"
    ])
      expectInvalid(both({ ...agentRequest, client_id }), "invalid_client")
  })

  it("refuses a missing or empty client_id as invalid_client", () => {
    expectInvalid(both(agentFields), "invalid_client")
    expectInvalid(both({ ...agentFields, client_id: "" }), "invalid_client")
    expectInvalid(json({ ...agentFields, client_id: null }), "invalid_client")
  })
})

describe("device authorization request: branch shape", () => {
  it("refuses a half triple", () => {
    for (const drop of ["agent_identifier", "agent_display_name", "executor_display_name"]) {
      const { [drop]: _, ...rest } = agentRequest as Params
      expectInvalid(both(rest))
      expectInvalid(both({ ...rest, ...machineFields }))
    }
    expectInvalid(both({ client_id: connector, agent_identifier: "a" }))
  })

  it("refuses a half pair", () => {
    expectInvalid(both({ client_id: connector, registration_identifier: "host" }))
    expectInvalid(both({ client_id: connector, runner_display_name: "Box" }))
    expectInvalid(both({ ...agentRequest, registration_identifier: "host" }))
    expectInvalid(both({ ...agentRequest, runner_display_name: "Box" }))
  })

  it("refuses a request naming neither branch", () => {
    expectInvalid(both({ client_id: connector }))
    expectInvalid(both({ client_id: connector, scope: "x", executor_kind: "runner", assignment_agent_public_id: uuid }))
  })

  it("branch A refuses executor_kind, whatever its value", () => {
    for (const executor_kind of ["runner", "tool_provider", "agent_application", "x"])
      expectInvalid(both({ ...agentRequest, executor_kind }))
  })

  it("branch B refuses an executor_kind other than runner or tool_provider (case-sensitive)", () => {
    for (const executor_kind of ["Runner", "TOOL_PROVIDER", "agent_application", "tool-provider", " runner"])
      expectInvalid(both({ ...machineRequest, executor_kind }))
  })

  it("branch A+B accepts only an absent executor_kind or exactly runner", () => {
    expectInvalid(both({ ...combinedRequest, executor_kind: "tool_provider" }))
    expectInvalid(both({ ...combinedRequest, executor_kind: "RUNNER" }))
  })

  it("assignment_agent_public_id must be a UUID", () => {
    for (const id of ["x", "0190f3a27b1c7d2e8f304a5b6c7d8e9f", `{${uuid}}`, `${uuid} `, `${uuid.slice(0, -1)}g`])
      expectInvalid(both({ ...machineRequest, assignment_agent_public_id: id }))
  })

  it("assignment_agent_public_id is refused with tool_provider", () => {
    expectInvalid(both({ ...machineRequest, executor_kind: "tool_provider", assignment_agent_public_id: uuid }))
  })

  it("assignment_agent_public_id is refused with branch A fields (combined or agent)", () => {
    expectInvalid(both({ ...combinedRequest, assignment_agent_public_id: uuid }))
    expectInvalid(both({ ...agentRequest, assignment_agent_public_id: uuid }))
  })
})

describe("device authorization request: field contents", () => {
  it("agent_identifier and registration_identifier: 128 characters pass, 129 fail", () => {
    expect(expectValid(both({ ...agentRequest, agent_identifier: "a".repeat(128) }))).toMatchObject({
      agentIdentifier: "a".repeat(128)
    })
    expectInvalid(both({ ...agentRequest, agent_identifier: "a".repeat(129) }))
    expect(expectValid(both({ ...machineRequest, registration_identifier: "r".repeat(128) }))).toMatchObject({
      registrationIdentifier: "r".repeat(128)
    })
    expectInvalid(both({ ...machineRequest, registration_identifier: "r".repeat(129) }))
  })

  it("display names: 100 characters pass, 101 fail", () => {
    for (const field of ["agent_display_name", "executor_display_name"]) {
      expectValid(both({ ...agentRequest, [field]: "n".repeat(100) }))
      expectInvalid(both({ ...agentRequest, [field]: "n".repeat(101) }))
    }
    expectValid(both({ ...machineRequest, runner_display_name: "n".repeat(100) }))
    expectInvalid(both({ ...machineRequest, runner_display_name: "n".repeat(101) }))
  })

  it("lengths count code points, not UTF-16 units (emoji)", () => {
    const emoji = "😀" // one code point, two UTF-16 units
    expect(emoji.repeat(100)).toHaveLength(200)
    expect(expectValid(both({ ...agentRequest, agent_display_name: emoji.repeat(100) }))).toMatchObject({
      agentDisplayName: emoji.repeat(100)
    })
    expectInvalid(both({ ...agentRequest, agent_display_name: emoji.repeat(101) }))
    expectValid(both({ ...agentRequest, agent_identifier: emoji.repeat(128) }))
    expectInvalid(both({ ...agentRequest, agent_identifier: emoji.repeat(129) }))
    expectValid(both({ ...machineRequest, registration_identifier: emoji.repeat(128) }))
    expectInvalid(both({ ...machineRequest, registration_identifier: emoji.repeat(129) }))
  })

  it("format characters (bidi controls, ZERO WIDTH JOINER, BOM) are refused in identifiers and display names", () => {
    for (const bad of ["a\u202eb", "Team 👩\u200d💻", "\ufeffa", "a\u2066b\u2069", "a\u200bb"]) {
      expectInvalid(json({ ...agentRequest, agent_identifier: bad }))
      expectInvalid(json({ ...agentRequest, agent_display_name: bad }))
      expectInvalid(json({ ...agentRequest, executor_display_name: bad }))
      expectInvalid(json({ ...machineRequest, registration_identifier: bad }))
      expectInvalid(json({ ...machineRequest, runner_display_name: bad }))
    }
    expectValid(both({ ...agentRequest, agent_display_name: "Team 👩💻 ✓" }))
  })

  it("refuses a NUL byte in any identifier or display name", () => {
    for (const [base, field] of [
      [agentRequest, "agent_identifier"],
      [agentRequest, "agent_display_name"],
      [agentRequest, "executor_display_name"],
      [machineRequest, "registration_identifier"],
      [machineRequest, "runner_display_name"]
    ] as const)
      expectInvalid(both({ ...base, [field]: "ab\u0000cd" }))
  })

  it("refuses control characters, lone surrogates and line separators", () => {
    for (const bad of ["a\tb", "a\nb", "a\u007fb", "a\u0085b", "a\u2028b", "a\ud800b"]) {
      expectInvalid(json({ ...agentRequest, agent_identifier: bad }))
      expectInvalid(json({ ...agentRequest, agent_display_name: bad }))
      expectInvalid(json({ ...machineRequest, registration_identifier: bad }))
      expectInvalid(json({ ...machineRequest, runner_display_name: bad }))
    }
    // A trailing newline is a control character, refused before any trimming.
    expectInvalid(both({ ...agentRequest, agent_display_name: "Acme\n" }))
  })

  it("identifiers refuse surrounding whitespace but allow inner spaces, exact and case-sensitive", () => {
    for (const bad of [" a", "a ", "\u00a0a", "a\u3000", " "]) {
      expectInvalid(both({ ...agentRequest, agent_identifier: bad }))
      expectInvalid(both({ ...machineRequest, registration_identifier: bad }))
    }
    expect(expectValid(both({ ...agentRequest, agent_identifier: "My Agent" }))).toMatchObject({
      agentIdentifier: "My Agent"
    })
    expect(expectValid(both({ ...machineRequest, registration_identifier: "Host-A" }))).toMatchObject({
      registrationIdentifier: "Host-A"
    })
  })

  it("display names are trimmed and must be nonblank", () => {
    expect(expectValid(both({ ...agentRequest, agent_display_name: "  Acme CLI  " }))).toMatchObject({
      agentDisplayName: "Acme CLI"
    })
    expect(expectValid(both({ ...machineRequest, runner_display_name: ` ${"n".repeat(100)} ` }))).toMatchObject({
      runnerDisplayName: "n".repeat(100)
    })
    expectInvalid(both({ ...agentRequest, executor_display_name: "   " }))
    expectInvalid(both({ ...machineRequest, runner_display_name: "\u00a0" }))
  })
})

describe("device authorization request: the parameter at fault", () => {
  const refusal = (result: DeviceRequestResult) => {
    if (result._tag !== "Invalid") throw new Error(`expected Invalid, got ${JSON.stringify(result)}`)
    return `${result.error}: ${result.description}`
  }

  it("names the parameter whose value, type or repetition is refused", () => {
    expect(refusal(both({ ...agentRequest, agent_display_name: "   " }))).toBe(
      "invalid_request: agent_display_name must be nonblank, printable and at most 100 characters"
    )
    expect(refusal(both({ ...machineRequest, registration_identifier: " host" }))).toBe(
      "invalid_request: registration_identifier must be 1 to 128 printable characters without surrounding whitespace"
    )
    expect(refusal(json({ ...agentRequest, executor_display_name: 7 }))).toBe(
      "invalid_request: executor_display_name must be a string"
    )
    expect(refusal(parseDeviceAuthorizationRequest(FORM, `${formBody(agentRequest)}&scope=a&scope=b`))).toBe(
      "invalid_request: scope is given more than once"
    )
    expect(refusal(both({ ...machineRequest, assignment_agent_public_id: "x" }))).toBe(
      "invalid_request: assignment_agent_public_id must be a UUID"
    )
  })

  it("names the client, and the member a half branch lacks", () => {
    expect(refusal(both(agentFields))).toBe("invalid_client: client_id is required")
    expect(refusal(both({ ...agentRequest, client_id: "other" }))).toBe(
      "invalid_client: client_id is not a device-flow client"
    )
    expect(refusal(both({ client_id: connector, agent_identifier: "a", executor_display_name: "E" }))).toBe(
      "invalid_request: agent_display_name is required: agent_identifier, agent_display_name and executor_display_name go together"
    )
    expect(refusal(both({ ...agentRequest, runner_display_name: "Box" }))).toBe(
      "invalid_request: registration_identifier is required: registration_identifier and runner_display_name go together"
    )
  })

  it("names what a branch does not allow", () => {
    expect(refusal(both({ ...agentRequest, executor_kind: "runner" }))).toBe(
      "invalid_request: executor_kind is not allowed in an agent request"
    )
    expect(refusal(both({ ...combinedRequest, executor_kind: "tool_provider" }))).toBe(
      "invalid_request: executor_kind must be runner in a combined request"
    )
    expect(refusal(both({ ...combinedRequest, assignment_agent_public_id: uuid }))).toBe(
      "invalid_request: assignment_agent_public_id cannot be combined with an agent request"
    )
    expect(refusal(both({ ...machineRequest, executor_kind: "tool_provider", assignment_agent_public_id: uuid }))).toBe(
      "invalid_request: assignment_agent_public_id is only for a runner"
    )
  })
})

describe("user codes", () => {
  it("alphabet is BCDFGHJKLMNPQRSTVWXZ", () => {
    expect(userCodeAlphabet).toBe("BCDFGHJKLMNPQRSTVWXZ")
  })

  it("are 8 characters from the alphabet, deterministic for a fixed random source", () => {
    const bytes = Uint8Array.from([0, 1, 2, 19, 20, 39, 100, 239])
    const code = newUserCode((n) => bytes.slice(0, n))
    expect(code).toBe("BCDZBZBZ")
    expect(newUserCode((n) => bytes.slice(0, n))).toBe(code)
    for (let seed = 0; seed < 200; seed++) {
      let state = seed
      const random = (n: number) =>
        Uint8Array.from({ length: n }, () => {
          state = (state * 1103515245 + 12345) % 2 ** 31
          return state >>> 16
        })
      const generated = newUserCode(random)
      expect(generated).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/)
    }
  })

  it("reject bytes at or above 240 (rejection sampling, no modulo bias) and ask again", () => {
    const calls: number[] = []
    const batches = [
      Uint8Array.from([240, 0, 255, 1, 250, 2, 3, 4]),
      Uint8Array.from([5, 241, 6]),
      Uint8Array.from([7])
    ]
    const code = newUserCode((n) => {
      calls.push(n)
      return batches.shift()!.slice(0, n)
    })
    expect(code).toBe("BCDFGHJK")
    expect(calls).toEqual([8, 3, 1])
  })

  it("format as XXXX-XXXX", () => {
    expect(formatUserCode("BCDFGHJK")).toBe("BCDF-GHJK")
  })

  it("normalize human input: lower case, spaces and dashes", () => {
    expect(normalizeUserCode("BCDF-GHJK")).toBe("BCDFGHJK")
    expect(normalizeUserCode("bcdfghjk")).toBe("BCDFGHJK")
    expect(normalizeUserCode(" bcdf ghjk ")).toBe("BCDFGHJK")
    expect(normalizeUserCode("bc-df – gh-jk")).toBe("BCDFGHJK")
    expect(normalizeUserCode("ＢＣＤＦ－ＧＨＪＫ")).toBe("BCDFGHJK")
    const generated = newUserCode((n) => Uint8Array.from({ length: n }, (_, i) => i * 7))
    expect(normalizeUserCode(formatUserCode(generated))).toBe(generated)
  })

  it("normalize refuses anything that is not 8 alphabet characters", () => {
    for (const bad of ["", "BCDF-GHJ", "BCDF-GHJKL", "ABCD-EFGH", "BCDF-GHJ0", "BCDF_GHJK", "ßCDFGHJ", "BCDF.GHJK"])
      expect(normalizeUserCode(bad)).toBeUndefined()
    expect(normalizeUserCode(`BCDF${" ".repeat(100)}GHJK`)).toBeUndefined()
  })
})
