// The run scenarios' world on a served Troupe (conversationServer.ts): runners connected through
// the device flow (the owner servedTroupe made signs in to the browser pages and approves them
// account-wide, as it does a `troupe runner` process's printed code) announcing one read-only
// tool; a keep-alive JSON client for their executor doors; and runs of one parallel fan of that
// tool (a wait on its first member as the follower a fan needs), created and started as the
// owner, whose members are then dispatched to the runner.
import { Agent, request } from "node:http"
import { Effect } from "effect"
import { type Answer, expectStatus, type ServedTroupe } from "./conversationServer.ts"

const connector = "svc-first-party-connector"
export const toolName = "grep"

/** A cookie-keeping form client for the browser pages (sign-in, the device decision). */
const browser = (baseUrl: string) => {
  const cookies = new Map<string, string>()
  const send = async (path: string, form?: Record<string, string>) => {
    const response = await fetch(new URL(path, baseUrl), {
      method: form === undefined ? "GET" : "POST",
      headers: {
        cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join("; "),
        ...(form === undefined ? {} : { "content-type": "application/x-www-form-urlencoded" })
      },
      ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() }),
      redirect: "manual"
    })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";")
      const at = pair!.indexOf("=")
      const value = pair!.slice(at + 1).trim()
      if (/max-age=0/i.test(line) || value === "") cookies.delete(pair!.slice(0, at).trim())
      else cookies.set(pair!.slice(0, at).trim(), value)
    }
    return { status: response.status, text: await response.text() }
  }
  return send
}

const csrfOf = (html: string) => {
  const match = /name="csrf_token" value="([^"]+)"/.exec(html)
  if (!match) throw new Error("the page has no CSRF field")
  return match[1]!
}

const formPost = async (baseUrl: string, path: string, fields: Record<string, string>) => {
  const response = await fetch(new URL(path, baseUrl), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString()
  })
  return { status: response.status, body: (await response.json()) as Record<string, any> }
}

/** A keep-alive JSON client for the executor doors (`/agent_api/v1/executor` + path). */
export const executorClient = (baseUrl: string, token: string) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const call = (method: string, path: string, body?: unknown) =>
    Effect.promise(
      () =>
        new Promise<Answer>((done, fail) => {
          const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
          const req = request(new URL(`/agent_api/v1/executor${path}`, baseUrl), {
            method,
            agent,
            headers: {
              authorization: `Bearer ${token}`,
              ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {})
            }
          })
          req.on("response", (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (chunk: Buffer) => chunks.push(chunk))
            response.on("end", () => {
              const text = Buffer.concat(chunks).toString()
              done({ status: response.statusCode!, body: text.length > 0 ? JSON.parse(text) : null })
            })
          })
          req.on("error", fail)
          req.end(payload)
        })
    )
  return { call, close: Effect.sync(() => agent.destroy()) }
}

export type ExecutorClient = ReturnType<typeof executorClient>

export interface Runner {
  readonly client: ExecutorClient
  readonly publicId: string
}

export type OwnerPage = ReturnType<typeof browser>

/** The owner servedTroupe made for scenario `name`, signed in to the browser pages. */
export const signedInOwner = async (baseUrl: string, name: string): Promise<OwnerPage> => {
  const page = browser(baseUrl)
  const login = await page("/login")
  const signedIn = await page("/login", {
    email: `${name}-bench@example.com`,
    password: `${name}-bench-password`,
    csrf_token: csrfOf(login.text)
  })
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}`)
  return page
}

/** The owner approves a device code account-wide, as a person at the device page would. */
export const approveDevice = async (page: OwnerPage, userCode: string) => {
  const decision = await page(`/oauth/device?user_code=${encodeURIComponent(userCode)}`)
  await page("/oauth/device", {
    user_code: userCode,
    decision: "approve",
    assignment_scope: "account_wide",
    csrf_token: csrfOf(decision.text)
  })
}

/** One runner through the device flow, approved by the signed-in owner (`page`); answers its token and id. */
const connectOne = async (baseUrl: string, page: OwnerPage, identifier: string) => {
  const started = await formPost(baseUrl, "/oauth/device_authorization", {
    client_id: connector,
    registration_identifier: identifier,
    runner_display_name: `${identifier} runner`
  })
  if (started.status !== 200) throw new Error(`device authorization: ${JSON.stringify(started.body)}`)
  await approveDevice(page, started.body.user_code as string)
  const issued = await formPost(baseUrl, "/oauth/token", {
    grant_type: "urn:ietf:params:oauth:grant-type:device_code",
    device_code: started.body.device_code as string,
    client_id: connector
  })
  if (issued.status !== 200) throw new Error(`connecting ${identifier}: ${JSON.stringify(issued.body)}`)
  const token = issued.body.access_token as string
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const announced = await fetch(new URL("/agent_api/v1/executor/announcement", baseUrl), {
    method: "PUT",
    headers,
    body: JSON.stringify({ tools: [readOnlyTool] })
  })
  if (announced.status !== 200) throw new Error(`announcement answered ${announced.status}`)
  const self = await fetch(new URL("/agent_api/v1/executor", baseUrl), { headers })
  return { token, publicId: ((await self.json()) as any).executor.public_id as string }
}

/**
 * `count` runners connected through the device flow, approved account-wide by the owner
 * servedTroupe made for scenario `name` (its credentials follow that helper's naming), each
 * announcing the tool; their clients are closed with the scope.
 */
export const connectRunners = (served: ServedTroupe, name: string, count: number) =>
  Effect.gen(function* () {
    const connected = yield* Effect.promise(async () => {
      const page = await signedInOwner(served.baseUrl, name)
      const runners: Array<{ token: string; publicId: string }> = []
      for (let index = 0; index < count; index++) {
        runners.push(await connectOne(served.baseUrl, page, `${name}-runner-${index}`))
      }
      return runners
    })
    return yield* Effect.forEach(connected, ({ token, publicId }) =>
      Effect.map(
        Effect.acquireRelease(Effect.succeed(executorClient(served.baseUrl, token)), (client) => client.close),
        (client): Runner => ({ client, publicId })
      )
    )
  })

/** A read-only, intrinsically idempotent tool's effect profile (replayable: a lapse times out). */
export const readOnlyProfile = {
  kind: "read_only",
  destructive: false,
  effect_scope: "closed",
  idempotency: "intrinsic",
  reconciliation: "none"
}

const readOnlyTool = {
  name: toolName,
  effect_profile: readOnlyProfile,
  description: "Searches files",
  input_schema: { type: "object" }
}

export interface FanRun {
  readonly runId: string
  /** The fan members' keys, dispatched to the runner. */
  readonly keys: ReadonlyArray<string>
}

/** A run of one fan of `width` tool steps for the runner, created and started; its members dispatched. */
export const fanRun = (served: ServedTroupe, runnerId: string, width: number) =>
  Effect.gen(function* () {
    const runs = `/workspaces/${served.workspaceId}/runs`
    const members = Array.from({ length: width }, (_, index) => ({
      tool: { name: toolName, input: { pattern: `p${index}` } }
    }))
    const created = yield* expectStatus(
      yield* served.call("POST", runs, {
        run: {
          approval_mode: "bypass",
          default_runner_executor_public_id: runnerId,
          steps: [{ parallel: members }, { wait: { task: "s1-tool-1" } }]
        }
      }),
      201,
      "POST runs"
    )
    const runId = created.run.public_id as string
    const started = yield* expectStatus(yield* served.call("POST", `${runs}/${runId}/start`, {}), 200, "start")
    const tools = (started.run.tasks as ReadonlyArray<{ key: string; status: string; kind: string }>).filter(
      (task) => task.kind === "tool_task"
    )
    if (tools.length !== width || tools.some((task) => task.status !== "dispatched")) {
      return yield* Effect.die(new Error(`run ${runId} started without ${width} dispatched tool tasks`))
    }
    return { runId, keys: tools.map((task) => task.key) } satisfies FanRun
  })

/** Stops a run at once (force), settling what it has left; a settled run answers 409, ignored. */
export const stopRun = (served: ServedTroupe, runId: string) =>
  Effect.asVoid(served.call("POST", `/workspaces/${served.workspaceId}/runs/${runId}/stop`, { force: true }))
