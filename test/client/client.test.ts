// @troupe/client against a real server: an agent program connects through the device flow
// (a human approves in the browser pages), then works as a member with typed answers.
import { makeTroupeClient, TroupeClient } from "@troupe/client/Client"
import { DeviceFlowRefused, deviceFlow } from "@troupe/client/DeviceFlow"
import { Clock, Duration, Effect, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Browser, csrfTokenIn } from "../support/http.ts"
import { signedIn } from "../support/members.ts"
import { apiToken, createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let server: TestServer
let steward: Browser

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  steward = await signedIn(server, ownerCredentials)
})
afterAll(() => server?.close())

const approve = async (userCode: string, decision: "approve" | "deny" = "approve") => {
  const page = await steward.get(`/oauth/device?user_code=${encodeURIComponent(userCode)}`)
  await steward.post("/oauth/device", { user_code: userCode, decision, csrf_token: csrfTokenIn(page.text) })
}

const member = (token: string) =>
  makeTroupeClient({ baseUrl: server.baseUrl, token: Redacted.make(token) }).pipe(Effect.provide(FetchHttpClient.layer))

it("connects through the device flow, refreshes, and works as a member with typed answers", async () => {
  const flow = await Effect.runPromise(deviceFlow(server.baseUrl))
  const started = await Effect.runPromise(
    flow.start({ agent_identifier: "client-sdk", agent_display_name: "SDK agent", executor_display_name: "SDK app" })
  )
  expect(started.user_code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/)
  await approve(started.user_code)
  const tokens = await Effect.runPromise(flow.poll(started))
  expect(tokens.plane).toBe("member")

  const refreshed = await Effect.runPromise(flow.refresh(tokens.refresh_token))
  expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)

  const client = await Effect.runPromise(member(refreshed.access_token))
  const profile = await Effect.runPromise(client.memberProfile.show())
  expect(profile.member).toMatchObject({ kind: "agent", display_name: "SDK agent" })

  const { workspace } = await Effect.runPromise(
    client.workspaces.create({ headers: { "idempotency-key": "ws-1" }, payload: { name: "Notes" } })
  )
  expect(workspace.name).toBe("Notes")
  const { store_entry } = await Effect.runPromise(
    client.workspaceStoreEntries.create({
      params: { workspace_id: workspace.public_id },
      headers: { "idempotency-key": "entry-1" },
      payload: { store_entry: { namespace: "notes", key: "first", value: { text: "hello" } } }
    })
  )
  expect(store_entry).toMatchObject({ namespace: "notes", key: "first", value: { text: "hello" }, lock_version: 0 })

  // A named agent PUT answers 201 or 200 with one body; the client reads which from the status.
  const declare = (description: string) =>
    Effect.runPromise(
      client.namedAgents.put({
        params: { name: "triager" },
        payload: { scope: "steward", description, configuration: {} }
      })
    )
  const minted = await declare("Sorts the inbox")
  expect(minted).toMatchObject({ created: true, agent: { name: "triager", description: "Sorts the inbox" } })
  const replaced = await declare("Sorts the inbox twice")
  expect(replaced).toMatchObject({ created: false, agent: { public_id: minted.agent.public_id } })
})

it("polls at the server's interval while pending, and at the interval slow_down names", async () => {
  const flow = await Effect.runPromise(deviceFlow(server.baseUrl))
  const started = await Effect.runPromise(
    flow.start({ agent_identifier: "patient-sdk", agent_display_name: "Patient", executor_display_name: "Patient app" })
  )
  // Sleeps return at once: the first without the server's time passing (so the next poll comes
  // too soon), the second moving the server's clock past the interval after the human approves.
  const sleeps: Array<number> = []
  const real = Effect.runSync(Clock.clockWith(Effect.succeed))
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe(),
    currentTimeMillis: real.currentTimeMillis,
    currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe(),
    currentTimeNanos: real.currentTimeNanos,
    monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: real.monotonicTimeNanos,
    sleep: (duration) =>
      Effect.promise(async () => {
        const seconds = Duration.toSeconds(duration)
        sleeps.push(seconds)
        if (sleeps.length === 1) return
        await approve(started.user_code)
        server.clock.advance(Duration.seconds(seconds))
      })
  }
  const tokens = await Effect.runPromise(flow.poll(started).pipe(Effect.provideService(Clock.Clock, clock)))
  expect(tokens.plane).toBe("member")
  expect(sleeps[0]).toBe(started.interval)
  expect(sleeps[1]).toBeGreaterThan(started.interval)
  expect(sleeps).toHaveLength(2)
})

it("answers refusals as the contract's error classes, and a denied connection as DeviceFlowRefused", async () => {
  const flow = await Effect.runPromise(deviceFlow(server.baseUrl))
  const started = await Effect.runPromise(
    flow.start({ agent_identifier: "denied-sdk", agent_display_name: "Denied", executor_display_name: "Denied app" })
  )
  await approve(started.user_code, "deny")
  const denied = await Effect.runPromise(Effect.flip(flow.poll(started)))
  expect(denied).toBeInstanceOf(DeviceFlowRefused)
  expect((denied as DeviceFlowRefused).refusal.error).toBe("access_denied")

  const operator = TroupeClient.layer({ baseUrl: server.baseUrl, token: Redacted.make(await apiToken(server)) })
  const missing = await Effect.runPromise(
    Effect.flip(
      Effect.gen(function* () {
        const client = yield* TroupeClient
        return yield* client.admin.restartSupervisor({ params: { kind: "nope" } })
      }).pipe(Effect.provide(operator))
    )
  )
  expect(missing).toMatchObject({ _tag: "NotFound", error: { code: "not_found" } })
})
