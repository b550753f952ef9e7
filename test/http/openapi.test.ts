// What /openapi.json tells a newcomer (issue 8): the OAuth endpoints with their form and JSON
// bodies and RFC 6749 errors, as served; a security scheme per plane plus the browser cookie,
// on the operations that take them; the Idempotency-Key header wherever a key is required; and
// the members of JSON bodies (issue 9).
import { TroupeApi } from "@troupe/contracts/Api"
import { Idempotent } from "@troupe/contracts/Idempotency"
import { IdempotencyKeyRequired } from "@troupe/contracts/member/StoreEntries"
import { HttpApi } from "effect/http-api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { request } from "../support/http.ts"
import { signedIn } from "../support/members.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

interface Operation {
  readonly security: ReadonlyArray<Record<string, ReadonlyArray<string>>>
  readonly parameters: ReadonlyArray<{ name: string; in: string; required: boolean; schema: { type?: string } }>
  readonly requestBody?: { content: Record<string, { schema: JsonSchema }> }
  readonly responses: Record<string, { content?: Record<string, { schema: JsonSchema }>; headers?: object }>
  readonly tags: ReadonlyArray<string>
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
    const keyMiddleware = new Set([Idempotent.key, IdempotencyKeyRequired.key])
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
