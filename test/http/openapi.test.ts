// What /openapi.json tells a newcomer (issue 8): the OAuth endpoints with their form and JSON
// bodies and RFC 6749 errors, as served; a security scheme per plane plus the browser cookie,
// on the operations that take them; the Idempotency-Key header wherever a key is required; and
// the members of JSON bodies (issue 9); and a description on every operation.
import { TroupeApi } from "@troupe/contracts/Api"
import { specCode } from "@troupe/contracts/Codes"
import { statusOfCode } from "@troupe/contracts/Errors"
import { Idempotent } from "@troupe/contracts/Idempotency"
import { IdempotencyKeyRequired } from "@troupe/contracts/member/StoreEntries"
import { UpgradeKey } from "@troupe/contracts/platform/Deployment"
import type { SchemaAST } from "effect"
import { HttpApi } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, request } from "../support/http.ts"
import { signedIn } from "../support/members.ts"
import { apiToken, createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

interface Operation {
  readonly security: ReadonlyArray<Record<string, ReadonlyArray<string>>>
  readonly parameters: ReadonlyArray<{ name: string; in: string; required: boolean; schema: { type?: string } }>
  readonly requestBody?: { content: Record<string, { schema: JsonSchema }> }
  readonly responses: Record<string, { content?: Record<string, { schema: JsonSchema }>; headers?: object }>
  readonly tags: ReadonlyArray<string>
  readonly description?: string
  readonly summary?: string
}
interface JsonSchema {
  readonly properties?: Record<string, unknown>
  readonly required?: ReadonlyArray<string>
}

let server: TestServer
let spec: { paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, any> } }

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  spec = (await request(server.baseUrl, "GET", "/openapi.json")).body
})
afterAll(() => server.close())

const operations = () =>
  Object.entries(spec.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation }))
  )

const form = "application/x-www-form-urlencoded"
const oauthPosts = [
  "/oauth/device_authorization",
  "/oauth/device_authorization/cancellation",
  "/oauth/token",
  "/oauth/revoke"
]

const expectOAuthError = (schema: JsonSchema | undefined) => {
  expect(Object.keys(schema?.properties ?? {})).toEqual(expect.arrayContaining(["error", "error_description"]))
  expect(schema?.required).toEqual(expect.arrayContaining(["error", "error_description"]))
}

describe("the OAuth endpoints", () => {
  it("take a form or a JSON body and answer RFC 6749 errors (429 with Retry-After where limited)", () => {
    for (const path of oauthPosts) {
      const post = spec.paths[path]?.post
      expect(post, path).toBeDefined()
      expect(Object.keys(post!.requestBody?.content ?? {}).sort(), path).toEqual(["application/json", form])
      expect(post!.security, path).toEqual([])
      expectOAuthError(post!.responses["400"]?.content?.["application/json"]?.schema)
    }
    for (const path of ["/oauth/device_authorization", "/oauth/device_authorization/cancellation", "/oauth/revoke"]) {
      const limited = spec.paths[path]!.post!.responses["429"]
      expectOAuthError(limited?.content?.["application/json"]?.schema)
      expect(Object.keys(limited?.headers ?? {})).toEqual(["retry-after"])
    }
    const token = spec.paths["/oauth/token"]!.post!.requestBody!.content[form]!.schema
    expect(Object.keys(token.properties ?? {})).toEqual(
      expect.arrayContaining(["grant_type", "client_id", "device_code", "code", "code_verifier", "refresh_token"])
    )
    const authorize = spec.paths["/oauth/authorize"]?.get
    expect(authorize?.parameters.filter((p) => p.in === "query").map((p) => p.name)).toEqual(
      expect.arrayContaining(["client_id", "redirect_uri", "code_challenge", "code_challenge_method", "state"])
    )
    expect(spec.paths["/.well-known/oauth-authorization-server"]?.get).toBeDefined()
  })

  it("every documented OAuth operation is served, and refuses a bad request in the documented shape", async () => {
    const documented = operations().filter(({ operation }) => operation.tags.includes("OAuth"))
    expect(documented.map(({ method, path }) => `${method} ${path}`).sort()).toEqual(
      [
        "get /.well-known/oauth-authorization-server",
        "get /oauth/authorize",
        ...oauthPosts.map((path) => `post ${path}`)
      ].sort()
    )
    for (const path of oauthPosts) {
      const refused = await request(server.baseUrl, "POST", path, {
        raw: "client_id=unknown",
        headers: { "content-type": form }
      })
      expect(refused.status, path).toBe(400)
      expect(Object.keys(refused.body).sort(), path).toEqual(["error", "error_description"])
    }
    const unredirectable = await request(server.baseUrl, "GET", "/oauth/authorize")
    expect(unredirectable.status).toBe(400)
    expect(unredirectable.headers.get("content-type")).toMatch(/^text\/html/)
  })

  it("the documented answers are the served ones: device authorization and the metadata", async () => {
    const started = await request(server.baseUrl, "POST", "/oauth/device_authorization", {
      raw: new URLSearchParams({
        client_id: "svc-first-party-connector",
        agent_identifier: "openapi-agent",
        agent_display_name: "OpenAPI agent",
        executor_display_name: "Laptop"
      }).toString(),
      headers: { "content-type": form }
    })
    expect(started.status).toBe(200)
    const device = spec.paths["/oauth/device_authorization"]!.post!.responses["200"]!.content!["application/json"]!
    expect(Object.keys(started.body).sort()).toEqual([...device.schema.required!].sort())
    const metadata = await request(server.baseUrl, "GET", "/.well-known/oauth-authorization-server")
    const documented = spec.paths["/.well-known/oauth-authorization-server"]!.get!.responses["200"]!.content!
    expect(Object.keys(metadata.body).sort()).toEqual([...documented["application/json"]!.schema.required!].sort())
  })
})

describe("operations", () => {
  it("every one says what it does: a nonempty description or summary", () => {
    const undescribed = operations()
      .filter(({ operation }) => `${operation.description ?? ""}${operation.summary ?? ""}`.trim() === "")
      .map(({ method, path }) => `${method} ${path}`)
    expect(undescribed).toEqual([])
  })
})

describe("security schemes", () => {
  it("a bearer per plane and the browser session cookie that signing in sets", async () => {
    const schemes = spec.components.securitySchemes
    for (const name of ["platform_bearer", "member_bearer", "executor_bearer"]) {
      expect(schemes[name], name).toMatchObject({ type: "http", scheme: expect.stringMatching(/^bearer$/i) })
    }
    expect(schemes.browser_session).toMatchObject({ type: "apiKey", in: "cookie" })
    const browser = await signedIn(server, ownerCredentials)
    expect([...browser.cookies.keys()]).toContain(schemes.browser_session.name)
  })

  it("apply per plane: the cookie to platform reads only, nothing to the sign-in door and OAuth", () => {
    for (const { path, method, operation } of operations()) {
      const where = `${method} ${path}`
      const names = operation.security.map((requirement) => Object.keys(requirement).join("+"))
      if (path.startsWith("/oauth/") || path.startsWith("/.well-known/") || where === "post /api/v1/session") {
        expect(names, where).toEqual([])
      } else if (path.startsWith("/api/v1/")) {
        expect(names, where).toEqual(
          method === "get" || method === "head" ? ["browser_session", "platform_bearer"] : ["platform_bearer"]
        )
      } else if (/^\/agent_api\/v1\/executor(\/|$)/.test(path)) {
        expect(names, where).toEqual(["executor_bearer"])
      } else {
        expect(path, where).toMatch(/^\/agent_api\/v1\//)
        expect(names, where).toEqual(["member_bearer"])
      }
    }
  })
})

describe("JSON bodies", () => {
  it("show their members: a memory write is {memory: {path, content, description?, expected_public_id, expected_lock_version}}", () => {
    for (const path of [
      "/agent_api/v1/profile/memory",
      "/agent_api/v1/workspaces/{workspace_id}/memory",
      "/agent_api/v1/profile/agents/{name}/memory"
    ]) {
      const body = spec.paths[path]?.post?.requestBody?.content["application/json"]?.schema
      const memory = body?.properties?.memory as JsonSchema | undefined
      expect(Object.keys(memory?.properties ?? {}).sort(), path).toEqual([
        "content",
        "description",
        "expected_lock_version",
        "expected_public_id",
        "path"
      ])
      expect([...(memory?.required ?? [])].sort(), path).toEqual([
        "content",
        "expected_lock_version",
        "expected_public_id",
        "path"
      ])
    }
  })

  it("show their members: a prompt document write is {prompt_document: {content, role?}}", () => {
    const body =
      spec.paths["/agent_api/v1/profile/prompt_documents/{slot}"]?.put?.requestBody?.content["application/json"]?.schema
    const document = body?.properties?.prompt_document as JsonSchema | undefined
    expect(Object.keys(document?.properties ?? {}).sort()).toEqual(["content", "role"])
    expect(document?.required).toEqual(["content"])
  })

  it("show their members: the workspace commands, a named agent PUT and a handle rename", () => {
    /** The members under `wrapper` (the object form where it may also be a member's own value). */
    const members = (path: string, method: string, wrapper: string) => {
      const body = spec.paths[path]?.[method]?.requestBody?.content["application/json"]?.schema
      const under = body?.properties?.[wrapper] as (JsonSchema & { anyOf?: Array<JsonSchema> }) | undefined
      const object = under?.anyOf?.find((schema) => schema.properties !== undefined) ?? under
      return {
        members: Object.keys(object?.properties ?? {}).sort(),
        required: [...(object?.required ?? [])].sort()
      }
    }
    const workspace = "/agent_api/v1/workspaces/{workspace_id}"
    expect(members("/agent_api/v1/workspaces", "post", "workspace")).toEqual({
      members: ["access_mode", "metadata", "name"],
      required: ["name"]
    })
    expect(members(workspace, "patch", "workspace")).toEqual({
      members: ["lock_version", "metadata", "name"],
      required: ["lock_version"]
    })
    const locked = (...names: Array<string>) => ({
      members: ["lock_version", ...names].sort(),
      required: ["lock_version", ...names].sort()
    })
    expect(members(`${workspace}/access_mode`, "put", "access_mode")).toEqual(locked("access_mode"))
    expect(members(`${workspace}/ownership_transfer`, "post", "ownership_transfer")).toEqual(
      locked("target_user_public_id")
    )
    expect(members(`${workspace}/archival`, "post", "command")).toEqual(locked())
    expect(members(`${workspace}/restoration`, "post", "command")).toEqual(locked())
    expect(members(`${workspace}/messaging`, "put", "messaging")).toEqual(locked("agents"))
    expect(members(`${workspace}/tool_provider_overrides`, "put", "tool_provider_overrides")).toEqual(
      locked("overrides")
    )
    expect(members("/agent_api/v1/profile/agents/{name}", "put", "agent")).toEqual({
      members: ["configuration", "create_only", "description", "display_name", "scope", "system_prompt"],
      required: ["configuration", "description", "scope"]
    })
    expect(members("/agent_api/v1/principals/{public_id}", "patch", "principal")).toEqual({
      members: ["handle"],
      required: ["handle"]
    })
  })

  it("show a named agent PUT's answer, {agent}, at 201 (minted) and at 200 (replaced)", () => {
    const responses = spec.paths["/agent_api/v1/profile/agents/{name}"]!.put!.responses
    for (const status of ["201", "200"]) {
      const answer = responses[status]?.content?.["application/json"]?.schema
      expect(answer?.required, status).toEqual(["agent"])
      expect(Object.keys((answer?.properties?.agent as JsonSchema | undefined)?.properties ?? {}), status).toContain(
        "agent_identifier"
      )
    }
  })
})

/** Every spec code annotated anywhere in a request schema (its members, checks, keys, encodings). */
const codesIn = (root: SchemaAST.AST): Set<string> => {
  const codes = new Set<string>()
  const seen = new Set<SchemaAST.AST>()
  const note = (annotations: { readonly [key: string]: unknown } | undefined) => {
    const code = annotations?.[specCode]
    if (typeof code === "string") codes.add(code)
  }
  const checks = (list: ReadonlyArray<SchemaAST.Check<any>> | undefined) => {
    for (const check of list ?? []) {
      note(check.annotations)
      if (check._tag === "FilterGroup") checks(check.checks)
    }
  }
  const children = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.AST> => {
    switch (ast._tag) {
      case "Objects":
        return [...ast.propertySignatures, ...ast.indexSignatures].map((member) => member.type)
      case "Arrays":
        return [...ast.elements, ...ast.rest]
      case "Union":
        return ast.types
      case "Suspend":
        return [ast.thunk()]
      case "Declaration":
        return ast.typeParameters
      default:
        return []
    }
  }
  const walk = (ast: SchemaAST.AST) => {
    if (seen.has(ast)) return
    seen.add(ast)
    note(ast.annotations)
    note(ast.context?.annotations)
    checks(ast.checks)
    for (const next of [...(ast.encoding ?? []).map((link) => link.to), ...children(ast)]) walk(next)
  }
  walk(root)
  return codes
}

describe("spec codes on request schemas", () => {
  it("every endpoint declares the error of each code its request schemas carry, so /openapi.json lists it", () => {
    const carried = new Map<string, Set<string>>()
    const undeclared: Array<string> = []
    HttpApi.reflect(TroupeApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, errors }) => {
        const payloads = [...endpoint.payload.values()].flatMap(({ schemas }) => schemas)
        const schemas = [endpoint.params, endpoint.query, endpoint.headers, ...payloads].filter(
          (schema) => schema !== undefined
        )
        const codes = new Set(schemas.flatMap((schema) => [...codesIn(schema.ast)]))
        carried.set(`${endpoint.method} ${endpoint.path}`, codes)
        for (const code of codes) {
          const status = statusOfCode[code as keyof typeof statusOfCode]
          if (!errors.has(status)) undeclared.push(`${endpoint.method} ${endpoint.path}: ${code} (${status})`)
        }
      }
    })
    expect([...(carried.get("POST /agent_api/v1/profile/memory") ?? [])]).toEqual(
      expect.arrayContaining(["memory_path_invalid", "skill_name_invalid", "memory_content_invalid"])
    )
    expect(undeclared).toEqual([])
  })
})

describe("the Idempotency-Key header", () => {
  const keyParameters = (operation: Operation | undefined) =>
    (operation?.parameters ?? []).filter((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key")

  it("is a required header of the creates that take one", () => {
    for (const path of [
      "/agent_api/v1/workspaces",
      "/agent_api/v1/workspaces/{workspace_id}/store_entries",
      "/agent_api/v1/profile/store_entries"
    ]) {
      expect(keyParameters(spec.paths[path]?.post), path).toEqual([
        expect.objectContaining({ required: true, schema: expect.objectContaining({ type: "string" }) })
      ])
    }
  })

  it("is documented exactly where a key middleware runs", () => {
    const keyMiddleware = new Set([Idempotent.key, IdempotencyKeyRequired.key, UpgradeKey.key])
    const takesKey = new Set<string>()
    HttpApi.reflect(TroupeApi, {
      onGroup: () => {},
      onEndpoint: ({ endpoint, middleware }) => {
        if ([...middleware].some((service) => keyMiddleware.has(service.key))) {
          takesKey.add(`${endpoint.method.toLowerCase()} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
        }
      }
    })
    const documented = operations()
      .filter(({ operation }) => keyParameters(operation).length > 0)
      .map(({ method, path }) => `${method} ${path}`)
    expect(documented.sort()).toEqual([...takesKey].sort())
  })
})

/** Every schema object under `root` with the member it describes (the nearest `properties` key). */
const membersIn = (root: unknown, member = "", found: Array<{ member: string; schema: any }> = []) => {
  if (Array.isArray(root)) for (const item of root) membersIn(item, member, found)
  else if (root !== null && typeof root === "object") {
    found.push({ member, schema: root })
    for (const [key, value] of Object.entries(root)) {
      if (key === "properties") {
        for (const [name, schema] of Object.entries(value as object)) membersIn(schema, name, found)
      } else membersIn(value, member, found)
    }
  }
  return found
}

/** A response body's schema, its `$ref` to a component followed. */
const bodyOf = (path: string, method: string, status: string): any => {
  const schema = spec.paths[path]?.[method]?.responses[status]?.content?.["application/json"]?.schema as any
  const ref = /^#\/components\/schemas\/(.+)$/.exec(schema?.$ref ?? "")
  return ref === null ? schema : (spec.components as any).schemas[ref[1]!]
}

const count = { type: "integer", minimum: 0 }

describe("numbers", () => {
  it("are never a number-or-string union: no schema carries the non-finite strings (Infinity, NaN)", () => {
    const nonFinite = membersIn(spec)
      .filter(
        ({ schema }) => Array.isArray(schema.enum) && schema.enum.some((v: unknown) => /Infinity|NaN/.test(`${v}`))
      )
      .map(({ member }) => member)
    expect(nonFinite).toEqual([])
  })

  it("are integers but for the few real-valued members (generation bounds, the updater's byte figures)", () => {
    const real = new Set(
      membersIn(spec)
        .filter(({ schema }) => schema.type === "number")
        .map(({ member }) => member)
    )
    expect([...real].sort()).toEqual(["available_bytes", "maximum", "minimum", "required_bytes", "size_bytes"])
  })

  it("counters are non-negative integers: a supervisor's, a job's attempts, a stale append's current_revision", () => {
    const supervisor = bodyOf("/api/v1/admin/supervisors", "get", "200").properties.supervisors.items.properties
    for (const member of [
      "version",
      "restarts",
      "failures",
      "quarantines",
      "live_actors",
      "actors",
      "active_actors",
      "quarantined_actors"
    ]) {
      expect(supervisor[member], member).toMatchObject(count)
    }
    const actor = bodyOf("/api/v1/admin/actors/{kind}/{id}", "get", "200").properties.actor.properties
    expect(actor.jobs.items.properties.attempts).toMatchObject(count)
    expect(actor.dead_letters.items.properties.attempts).toMatchObject(count)
    const stale = bodyOf("/agent_api/v1/workspaces/{workspace_id}/runs/{run_id}/tasks", "post", "409")
    expect(stale.properties.error.properties.current_revision).toMatchObject(count)
    const workspace = bodyOf("/agent_api/v1/workspaces/{workspace_id}", "get", "200").properties.workspace.properties
    expect(workspace.lock_version).toMatchObject(count)
  })

  it("the served supervisors hold integers where the document says so", async () => {
    const documented = bodyOf("/api/v1/admin/supervisors", "get", "200").properties.supervisors.items.properties
    const integers = Object.keys(documented).filter((member) => documented[member].type === "integer")
    const served = await request(server.baseUrl, "GET", "/api/v1/admin/supervisors", {
      headers: bearer(await apiToken(server))
    })
    expect(served.status).toBe(200)
    expect(served.body.supervisors.length).toBeGreaterThan(0)
    for (const supervisor of served.body.supervisors) {
      for (const member of integers) expect(Number.isInteger(supervisor[member]), member).toBe(true)
    }
  })
})

describe("open members that have a shape", () => {
  it("a workspace's metadata and tool_provider_overrides are objects, overrides of strings", () => {
    const workspace = bodyOf("/agent_api/v1/workspaces/{workspace_id}", "get", "200").properties.workspace.properties
    expect(workspace.metadata).toMatchObject({ type: "object" })
    expect(workspace.tool_provider_overrides).toMatchObject({
      type: "object",
      additionalProperties: { type: "string" }
    })
  })

  it("a run's phases name the current one by label, and a race node its rule", () => {
    const phases = bodyOf("/agent_api/v1/workspaces/{workspace_id}/runs/{run_id}/phases", "get", "200")
    expect(phases.properties.current.anyOf).toEqual([
      expect.objectContaining({ type: "string" }),
      expect.objectContaining({ type: "null" })
    ])
    const graph = bodyOf("/agent_api/v1/workspaces/{workspace_id}/runs/{run_id}/graph", "get", "200")
    const join = graph.properties.nodes.items.properties.join
    expect(join.properties.until.anyOf).toEqual([
      expect.objectContaining({ enum: ["any"] }),
      expect.objectContaining(count)
    ])
    expect(join.properties.losers.enum).toEqual(["cancel", "run_out"])
  })
})
