// The routes the hostile-input test walks: every operation of the server's own /openapi.json, plus
// the routes it does not describe (the OAuth doors and the HTML pages), listed here and only here,
// and the sample bodies that let a request reach body decoding where the document declares none.

export type Door = "api" | "oauth" | "page"
/** Whose credential a route takes: an /api/v1 one, a member or executor token, the browser cookie. */
export type Plane = "platform" | "member" | "executor" | "browser" | "none"

export type JsonSchema = { readonly [key: string]: any }

export interface Route {
  readonly method: string
  /** The path template, with `{name}` for each path parameter. */
  readonly path: string
  readonly door: Door
  readonly plane: Plane
  readonly params: ReadonlyArray<string>
  readonly query: ReadonlyArray<string>
  /** How the route reads its body, when it reads one. */
  readonly body?: "json" | "form" | "multipart"
  /** The body's JSON schema as /openapi.json declares it. */
  readonly schema?: JsonSchema
  /** The form fields a form route reads, with plausible values. */
  readonly fields?: Readonly<Record<string, string>>
  /** How a page route takes its CSRF token; hostile requests carry the real one so they get past it. */
  readonly csrf?: "form" | "header"
  /** The Action Cable route: its requests ask for a WebSocket upgrade. */
  readonly websocket?: boolean
}

export const connector = "svc-first-party-connector"
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

const oauth = (path: string, fields: Record<string, string>): Route => ({
  method: "POST",
  path,
  door: "oauth",
  plane: "none",
  params: [],
  query: [],
  body: "form",
  fields
})

const page = (method: "GET" | "POST", path: string, more: Partial<Route> = {}): Route => ({
  method,
  path,
  door: "page",
  plane: "browser",
  params: [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!),
  query: [],
  ...(method === "POST" ? { body: "form" as const, fields: {}, csrf: "form" as const } : {}),
  ...more
})

const authorizeQuery = [
  "response_type",
  "client_id",
  "redirect_uri",
  "code_challenge",
  "code_challenge_method",
  "state"
]

/** Routes /openapi.json does not describe. /logout takes no real CSRF token: it would sign the test out. */
export const unlistedRoutes: ReadonlyArray<Route> = [
  oauth("/oauth/device_authorization", {
    client_id: connector,
    agent_identifier: "hostile-agent",
    agent_display_name: "Hostile agent",
    executor_display_name: "Hostile app"
  }),
  oauth("/oauth/device_authorization/cancellation", { client_id: connector, device_code: "hostile-device-code" }),
  oauth("/oauth/token", { client_id: connector, grant_type: deviceGrant, device_code: "hostile-device-code" }),
  oauth("/oauth/revoke", { client_id: connector, token: "hostile-token", token_type_hint: "refresh_token" }),
  { ...page("GET", "/.well-known/oauth-authorization-server"), plane: "none" },
  // The cable takes an API session bearer (or a member or transport credential, or the same-origin cookie).
  {
    method: "GET",
    path: "/agent_api/v1/cable",
    door: "api",
    plane: "platform",
    params: [],
    query: [],
    websocket: true
  },
  // The deployment progress stream (SSE): a platform read outside /openapi.json.
  {
    method: "GET",
    path: "/api/v1/admin/deployment/upgrades/{id}/stream",
    door: "api",
    plane: "platform",
    params: ["id"],
    query: ["cursor"]
  },
  // The browser upload door: the signed-in cookie from the same origin, answered in the API envelope.
  { method: "POST", path: "/uploads", door: "api", plane: "browser", params: [], query: [], body: "multipart" },
  page("GET", "/"),
  page("GET", "/docs"),
  page("GET", "/health"),
  page("GET", "/ready"),
  page("GET", "/setup"),
  page("POST", "/setup", {
    fields: { setup_secret: "x", email: "hostile@example.com", password: "hostile password", display_name: "Hostile" }
  }),
  page("GET", "/login", { query: ["return_to"] }),
  page("POST", "/login", {
    fields: { email: "nobody@example.com", password: "not the password", return_to: "/agents" }
  }),
  page("POST", "/logout", { csrf: undefined }),
  page("GET", "/oauth/device", { query: ["user_code"] }),
  page("POST", "/oauth/device", {
    fields: { user_code: "BCDF-GHJK", decision: "approve", assignment_scope: "user_private" }
  }),
  page("GET", "/oauth/authorize", { query: authorizeQuery }),
  page("POST", "/oauth/authorize", { query: authorizeQuery, fields: { decision: "approve" } }),
  page("GET", "/agents"),
  page("POST", "/agents/{id}/remove"),
  page("GET", "/runners"),
  page("POST", "/runners/{id}/revoke"),
  page("GET", "/tokens"),
  page("POST", "/tokens", { fields: { name: "hostile", plane: "member" } }),
  page("POST", "/tokens/{id}/revoke"),
  page("GET", "/inspector"),
  page("GET", "/inspector/{file}"),
  page("POST", "/inspector/supervisors/{kind}/restart", { body: undefined, fields: undefined, csrf: "header" }),
  page("POST", "/inspector/actors/{kind}/{id}/restart", { body: undefined, fields: undefined, csrf: "header" }),
  page("GET", "/conversations/{id}"),
  page("GET", "/conversations/{id}/queue"),
  page("GET", "/budgets"),
  page("POST", "/budgets/cost_unit", { fields: { cost_unit: "USD" } }),
  page("POST", "/budgets/users/{user}/open", {
    fields: { amount: "1", starts_at: "2091-01-01T00:00:00Z", expires_at: "", reason: "hostile", operation_key: "k" }
  }),
  page("POST", "/budgets/users/{user}/{budget}/adjust", {
    fields: { kind: "debit", amount: "1", reason: "hostile", operation_key: "k" }
  }),
  page("POST", "/budgets/users/{user}/{budget}/revoke", { fields: { reason: "hostile" } }),
  page("GET", "/assets/{file}")
]

/** A route's plane from its OpenAPI group (tag), else from its path. */
const planeOf = (path: string, tags: ReadonlyArray<string>): Plane => {
  const tag = tags.join(" ")
  if (/^Platform/i.test(tag)) return "platform"
  if (/^Executor/i.test(tag)) return "executor"
  if (/^Member/i.test(tag)) return "member"
  if (path.startsWith("/api/")) return "platform"
  if (/^\/agent_api\/v\d+\/executor(\/|$)/.test(path)) return "executor"
  return path.startsWith("/agent_api/") ? "member" : "none"
}

const doorOf = (path: string): Door =>
  path.startsWith("/oauth/") ? "oauth" : path.startsWith("/api/") || path.startsWith("/agent_api/") ? "api" : "page"

const methods = ["get", "put", "post", "delete", "patch"]

/** Every operation of an OpenAPI document, then the unlisted routes it does not already hold. */
export const routesOf = (document: JsonSchema): Array<Route> => {
  const listed: Array<Route> = []
  for (const [path, item] of Object.entries<JsonSchema>(document.paths ?? {})) {
    for (const method of methods.filter((name) => item[name] !== undefined)) {
      const operation = item[method]
      const parameters: Array<JsonSchema> = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
      const content: JsonSchema = operation.requestBody?.content ?? {}
      const form = content["application/x-www-form-urlencoded"]
      const json = content["application/json"]
      const body = form ? "form" : json ? "json" : content["multipart/form-data"] ? "multipart" : undefined
      const schema = (form ?? json)?.schema
      listed.push({
        method: method.toUpperCase(),
        path,
        door: doorOf(path),
        plane: path === "/api/v1/session" && method === "post" ? "none" : planeOf(path, operation.tags ?? []),
        params: parameters.filter((p) => p.in === "path").map((p) => p.name),
        query: parameters.filter((p) => p.in === "query").map((p) => p.name),
        ...(body ? { body, schema } : {}),
        ...(form ? { fields: sampleFields(resolve(document, schema)) } : {})
      })
    }
  }
  // Where the document describes a route of the list too, the list says which door it is (a page
  // such as /oauth/authorize) and gives its fields.
  const key = (route: Route) => `${route.method} ${route.path}`
  const extra = new Map(unlistedRoutes.map((route) => [key(route), route]))
  const merged = listed.map((route) => {
    const mine = extra.get(key(route))
    return mine ? { ...route, ...mine, query: [...new Set([...route.query, ...mine.query])] } : route
  })
  const known = new Set(listed.map(key))
  return [...merged, ...unlistedRoutes.filter((route) => !known.has(key(route)))]
}

/** Follows a local `$ref` of the document. */
export const resolve = (document: JsonSchema, schema: JsonSchema | undefined): JsonSchema => {
  let at = schema ?? {}
  while (typeof at.$ref === "string") {
    at = (at.$ref as string)
      .slice(2)
      .split("/")
      .reduce<JsonSchema>((node, key) => node?.[key], document)
  }
  return at
}

const sampleFields = (schema: JsonSchema) =>
  Object.fromEntries(Object.keys(schema.properties ?? {}).map((name) => [name, "hostile"]))

/**
 * Marks a sample member whose contents are the client's own JSON (metadata, a stored value): it
 * gets no wrong-type variants inside, only hostile text and nesting; `anyType` when the member
 * itself may be any JSON value, else it must stay an object.
 */
export class FreeJson {
  readonly value: unknown
  readonly anyType: boolean
  constructor(value: unknown, anyType = false) {
    this.value = value
    this.anyType = anyType
  }
  toJSON() {
    return this.value
  }
}

/** Ids of the test's own resources that sample bodies name. */
export interface SampleIds {
  readonly agentPublicId: string
  readonly otherAgentPublicId: string
}

const tool = {
  name: "search",
  effect_profile: {
    kind: "read_only",
    destructive: false,
    effect_scope: "closed",
    idempotency: "intrinsic",
    reconciliation: "none"
  },
  description: "Searches",
  input_schema: new FreeJson({ type: "object" })
}

const memory = (path: string) => ({
  "": { memory: { path, content: "hostile", expected_public_id: null, expected_lock_version: null } },
  "/show": { memory: { path } },
  "/grep": { memory: { pattern: "hostile", path } },
  "/edit": {
    memory: { path, old_text: "hostile", new_text: "kind", expected_public_id: null, expected_lock_version: null }
  },
  "/delete": { memory: { path, expected_public_id: null, expected_lock_version: null } }
})

const memoryDoors = {
  "/agent_api/v1/profile/memory": memory("user/hostile.md"),
  "/agent_api/v1/workspaces/{workspace_id}/memory": memory("workspace/hostile.md"),
  "/agent_api/v1/profile/agents/{name}/memory": memory("agent/hostile.md"),
  "/agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/memory": memory("conversation/hostile.md")
}

/** Creates whose body may be left out (every member optional): an empty or null body is a create. */
export const optionalBodies: ReadonlySet<string> = new Set([
  "POST /api/v1/admin/deployment/release_check",
  "POST /agent_api/v1/workspaces/{workspace_id}/conversations",
  "POST /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/forks",
  "POST /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/turns/{turn_id}/regeneration",
  "POST /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/compaction",
  "POST /api/v1/admin/users/{user_public_id}/budgets/{public_id}/revocation",
  ...["start", "pause", "resume", "stop"].map(
    (verb) => `POST /agent_api/v1/workspaces/{workspace_id}/runs/{run_id}/${verb}`
  ),
  ...["pause", "resume", "cancel", "run"].map(
    (verb) => `POST /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/schedules/{job_id}/${verb}`
  ),
  ...["resolution", "retry", "abandon", "approve", "deny", "cancel", "compact"].map(
    (verb) => `POST /agent_api/v1/workspaces/{workspace_id}/runs/{run_id}/tasks/{task_key}/${verb}`
  )
])

const storeEntry = { store_entry: { namespace: "hostile", key: "hostile-key", value: new FreeJson({ a: "b" }, true) } }
const storeEntryPatch = { store_entry: { value: new FreeJson({ a: "c" }, true), lock_version: 0 } }

/**
 * Well-formed bodies for routes whose OpenAPI body declares no members (it is decoded by hand), keyed
 * by "METHOD path": each hostile body variant spoils one member of it. A route with neither sample
 * nor declared members gets the whole-body variants only.
 */
export const sampleBodies = (ids: SampleIds): Record<string, unknown> => ({
  "PUT /agent_api/v1/profile/agents/{name}": {
    scope: "instance",
    description: "Hostile helper",
    configuration: { approval_mode: "ask", default_model: "local/echo", tool_definitions: [] },
    display_name: "Hostile helper",
    system_prompt: "Be careful"
  },
  "PATCH /agent_api/v1/principals/{public_id}": { principal: { handle: "hostile-handle" } },
  "POST /agent_api/v1/profile/store_entries": storeEntry,
  "PATCH /agent_api/v1/profile/store_entries/{store_entry_id}": storeEntryPatch,
  "POST /agent_api/v1/workspaces/{workspace_id}/store_entries": storeEntry,
  "POST /agent_api/v1/workspaces/{workspace_id}/runs": {
    run: { approval_mode: "bypass", steps: [{ ask: { prompt: "Proceed?" } }] }
  },
  "POST /agent_api/v1/workspaces/{workspace_id}/runs/{run_id}/tasks": { steps: [{ ask: { prompt: "And then?" } }] },
  "POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/commit": { claim_token: "hostile", content: "done" },
  "POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/extend": { claim_token: "hostile", timeout_ms: 1000 },
  "POST /agent_api/v1/executor/progress": {
    frame: { run_public_id: ids.agentPublicId, task_key: "s1-tool-1", claim_token: "hostile", text_tail: "…" }
  },
  "PATCH /agent_api/v1/workspaces/{workspace_id}/store_entries/{store_entry_id}": storeEntryPatch,
  "POST /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/store_entries": storeEntry,
  "PATCH /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/store_entries/{store_entry_id}":
    storeEntryPatch,
  "PUT /agent_api/v1/executor/announcement": {
    tools: [tool],
    environment: new FreeJson({ os: "linux", cwd: "/srv" }),
    documents: [{ name: "README", description: "How to use me" }]
  },
  "POST /agent_api/v1/workspaces": { workspace: { name: "Hostile", metadata: new FreeJson({ color: "blue" }) } },
  // A stale lock_version: a well-formed edit is refused (409) and changes nothing.
  "PATCH /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}": {
    conversation: { title: "Hostile renamed", metadata: new FreeJson({ color: "red" }), lock_version: 999999 }
  },
  "POST /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/schedules": {
    schedule: { prompt: "Hostile", rule: { kind: "interval", every_seconds: 3600 } }
  },
  // A stale expected_lock_version: a well-formed edit is refused (409) and changes nothing.
  "PATCH /agent_api/v1/workspaces/{workspace_id}/conversations/{conversation_id}/schedules/{job_id}": {
    schedule: { name: "Hostile renamed", expected_lock_version: 999999 }
  },
  "PATCH /agent_api/v1/workspaces/{workspace_id}": {
    workspace: { name: "Hostile renamed", metadata: new FreeJson({ color: "red" }), lock_version: 0 }
  },
  "PUT /agent_api/v1/workspaces/{workspace_id}/access_mode": {
    access_mode: { access_mode: "account_wide", lock_version: 0 }
  },
  "POST /agent_api/v1/workspaces/{workspace_id}/ownership_transfer": {
    ownership_transfer: { target_user_public_id: ids.otherAgentPublicId, lock_version: 0 }
  },
  "POST /agent_api/v1/workspaces/{workspace_id}/archival": { command: { lock_version: 0 } },
  "PUT /api/v1/admin/account/cost_unit": { account: { cost_unit: "USD" } },
  "POST /api/v1/admin/users/{user_public_id}/budgets": {
    budget: { amount: "1", starts_at: "2090-01-01T00:00:00Z", expires_at: "2090-02-01T00:00:00Z", reason: "hostile" }
  },
  "PATCH /api/v1/admin/users/{user_public_id}/budgets/{public_id}": {
    budget: { kind: "credit", amount: "0.5", reason: "hostile" }
  },
  "POST /api/v1/admin/users/{user_public_id}/budgets/{public_id}/revocation": { revocation: { reason: "hostile" } },
  "POST /agent_api/v1/workspaces/{workspace_id}/restoration": { command: { lock_version: 0 } },
  "PUT /agent_api/v1/workspaces/{workspace_id}/messaging": {
    messaging: {
      agents: [{ agent_public_id: ids.agentPublicId, mode: "private", allowed_sender_public_ids: [] }],
      lock_version: 0
    }
  },
  "PUT /agent_api/v1/workspaces/{workspace_id}/tool_provider_overrides": {
    tool_provider_overrides: { overrides: {}, lock_version: 0 }
  },
  "PUT /agent_api/v1/profile/prompt_documents/{slot}": { prompt_document: { content: "Be kind.", role: "system" } },
  "PUT /agent_api/v1/workspaces/{workspace_id}/prompt_documents/{slot}": {
    prompt_document: { content: "Be kind.", role: "system" }
  },
  ...Object.fromEntries(
    Object.entries(memoryDoors).flatMap(([door, verbs]) =>
      Object.entries(verbs).map(([verb, body]) => [`POST ${door}${verb}`, body])
    )
  )
})
