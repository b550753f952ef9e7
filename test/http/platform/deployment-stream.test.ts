// The deployment progress stream (spec "Deployment progress stream (SSE)") through the real
// server and the reference updater, read by a standard EventSource client (the `eventsource`
// package): progress events with next_cursor as their id, the end after a terminal status, a
// reconnect that resumes from Last-Event-ID, the query cursor's precedence, the authority rechecked
// while the stream runs, the window of ten observations one second apart, refusals before the
// stream opens as envelopes, an updater fault mid-stream as deployment.error.v1, and a stop of the
// server ending the stream at once.
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { EventSource } from "eventsource"
import { uuidv7 } from "uuidv7"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { holdRequest } from "../../support/held-request.ts"
import { bearer, request } from "../../support/http.ts"
import { apiToken, createHuman, createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { openTcpRelay } from "../../support/tcp-relay.ts"
import { startReferenceUpdater, walkedPhases } from "../../support/updater.ts"

const base = "/api/v1/admin/deployment"

interface Progress {
  readonly id: string
  readonly data: {
    readonly entries: ReadonlyArray<{ cursor: string; text: string }>
    readonly next_cursor: string
    readonly operation: { id: string; status: string; phase: string }
  }
}

interface Watch {
  readonly progress: Array<Progress>
  readonly errors: Array<{ code: string; message: string; operation_id?: string }>
  /** The Last-Event-ID of each connection the client made (null: none sent). */
  readonly connections: Array<string | null>
  readonly source: EventSource
}

/** An EventSource on `url` with the bearer on every connection, recording what arrives. */
const watch = (url: string, token: string): Watch => {
  const connections: Array<string | null> = []
  const source = new EventSource(url, {
    fetch: (input, init) => {
      const headers = new Headers(init?.headers)
      connections.push(headers.get("last-event-id"))
      headers.set("authorization", `Bearer ${token}`)
      return fetch(input, { ...init, headers })
    }
  })
  const watched: Watch = { progress: [], errors: [], connections, source }
  source.addEventListener("deployment.progress.v1", (event) =>
    watched.progress.push({ id: event.lastEventId, data: JSON.parse(event.data) })
  )
  source.addEventListener("deployment.error.v1", (event) => watched.errors.push(JSON.parse(event.data)))
  return watched
}

const phasesIn = (progress: ReadonlyArray<Progress>) =>
  progress.flatMap((event) => event.data.entries.map((entry) => entry.text.split(":")[0]))

/** Every event of one stream read to its end with fetch: [event name, id, data]. */
const readStream = async (url: string, headers: Record<string, string>) => {
  const response = await fetch(url, { headers })
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/event-stream")
  expect(response.headers.get("cache-control")).toBe("no-store")
  const text = await response.text()
  return text
    .split("\n\n")
    .filter((block) => block.includes("data:"))
    .map((block) => {
      const field = (name: string) =>
        block
          .split("\n")
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2)
      return { event: field("event"), id: field("id"), data: JSON.parse(field("data")!) }
    })
}

const setUp = async (options: { phaseSpacing?: Duration.Duration } = {}) => {
  const updater = await startReferenceUpdater(options)
  const server = await startTestServer({ deploymentSocket: updater.path })
  await createOwner(server)
  const owner = await apiToken(server)
  await request(server.baseUrl, "POST", `${base}/release_check`, { headers: bearer(owner) })
  const upgrade = async () => {
    const candidate = (await request(server.baseUrl, "GET", base, { headers: bearer(owner) })).body.deployment.candidate
    const accepted = await request(server.baseUrl, "POST", `${base}/upgrades`, {
      headers: { ...bearer(owner), "idempotency-key": uuidv7() },
      body: { candidate }
    })
    expect(accepted.status).toBe(202)
    return accepted.body.upgrade.id as string
  }
  const settled = (id: string) =>
    vi.waitFor(
      async () => {
        const receipt = await request(server.baseUrl, "GET", `${base}/upgrades/${id}`, { headers: bearer(owner) })
        expect(receipt.body.upgrade.status).not.toBe("running")
      },
      { timeout: 20_000, interval: 100 }
    )
  return { updater, server, owner, upgrade, settled }
}

describe("with the reference updater (200 ms a phase)", () => {
  let setup: Awaited<ReturnType<typeof setUp>>
  let server: TestServer
  beforeAll(async () => {
    setup = await setUp()
    server = setup.server
  })
  afterAll(async () => {
    await server?.close()
    await setup?.updater.close()
  })

  it("follows an upgrade to its end: each event's id is its next_cursor, every phase once, in order", async () => {
    const id = await setup.upgrade()
    const watched = watch(`${server.baseUrl}${base}/upgrades/${id}/stream`, setup.owner)
    await vi.waitFor(() => expect(watched.progress.at(-1)?.data.operation.status).toBe("succeeded"), {
      timeout: 10_000,
      interval: 50
    })
    watched.source.close()
    expect(watched.connections[0]).toBeNull()
    for (const event of watched.progress) expect(event.id).toBe(event.data.next_cursor)
    expect(phasesIn(watched.progress)).toEqual(walkedPhases)
    expect(watched.errors).toEqual([])
  })

  it("ends after the terminal status; a query cursor takes precedence over Last-Event-ID", async () => {
    const id = await setup.upgrade()
    await setup.settled(id)
    const url = `${server.baseUrl}${base}/upgrades/${id}/stream`
    const whole = await readStream(url, bearer(setup.owner))
    expect(whole).toHaveLength(1)
    expect(whole[0]).toMatchObject({ event: "deployment.progress.v1", id: "9", data: { next_cursor: "9" } })
    expect(whole[0]!.data.operation).toMatchObject({ id, status: "succeeded", phase: "completed" })
    const resumed = await readStream(url, { ...bearer(setup.owner), "last-event-id": "2" })
    expect(resumed[0]!.data.entries.map((entry: { cursor: string }) => entry.cursor)).toEqual([
      "3",
      "4",
      "5",
      "6",
      "7",
      "8",
      "9"
    ])
    const queried = await readStream(`${url}?cursor=6`, { ...bearer(setup.owner), "last-event-id": "2" })
    expect(queried[0]!.data.entries.map((entry: { cursor: string }) => entry.cursor)).toEqual(["7", "8", "9"])
  })

  it("a cursor the updater refuses is a 400 envelope before the stream opens, so an EventSource stops", async () => {
    const id = await setup.upgrade()
    const url = `${server.baseUrl}${base}/upgrades/${id}/stream`
    for (const [query, headers] of [
      ["?cursor=sideways", {}],
      ["", { "last-event-id": "sideways" }]
    ] as const) {
      const response = await fetch(`${url}${query}`, { headers: { ...bearer(setup.owner), ...headers } })
      expect(response.status).toBe(400)
      expect(response.headers.get("cache-control")).toBe("no-store")
      const body = (await response.json()) as { error: { code: string } }
      expect(body.error.code).toBe("invalid_request")
    }
    await setup.settled(id)
  })

  it("a dropped connection reconnects with Last-Event-ID and resumes after it", async () => {
    const relay = await openTcpRelay()
    relay.point(Number(new URL(server.baseUrl).port))
    try {
      const id = await setup.upgrade()
      const watched = watch(`${relay.baseUrl}${base}/upgrades/${id}/stream`, setup.owner)
      await vi.waitFor(() => expect(watched.progress.length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 })
      const lastBeforeDrop = watched.progress.at(-1)!.id
      relay.point(Number(new URL(server.baseUrl).port))
      await vi.waitFor(() => expect(watched.progress.at(-1)?.data.operation.status).toBe("succeeded"), {
        timeout: 15_000,
        interval: 50
      })
      watched.source.close()
      expect(watched.connections.length).toBeGreaterThanOrEqual(2)
      expect(watched.connections[1]).toBe(lastBeforeDrop)
      expect(phasesIn(watched.progress)).toEqual(walkedPhases)
    } finally {
      await relay.close()
    }
  })

  it("authority is rechecked during the stream: a signed-out admin's stream ends with deployment.error.v1", async () => {
    await createHuman(server, {
      email: "ada@example.com",
      password: "admin password",
      displayName: "Ada",
      role: "admin"
    })
    const ada = await apiToken(server, { email: "ada@example.com", password: "admin password" })
    const id = await setup.upgrade()
    const watched = watch(`${server.baseUrl}${base}/upgrades/${id}/stream`, ada)
    await vi.waitFor(() => expect(watched.progress.length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 })
    expect((await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(ada) })).status).toBeLessThan(
      300
    )
    await vi.waitFor(() => expect(watched.errors).toHaveLength(1), { timeout: 10_000, interval: 20 })
    expect(watched.errors[0]).toMatchObject({ code: "unauthorized", operation_id: id })
    // The client's reconnect is refused (401): it gives up.
    await vi.waitFor(() => expect(watched.source.readyState).toBe(EventSource.CLOSED), {
      timeout: 10_000,
      interval: 50
    })
    await setup.settled(id)
  })

  it("a demoted admin's stream ends with deployment.error.v1 not_authorized", async () => {
    await createHuman(server, { email: "bo@example.com", password: "admin password", displayName: "Bo", role: "admin" })
    const bo = await apiToken(server, { email: "bo@example.com", password: "admin password" })
    const id = await setup.upgrade()
    const watched = watch(`${server.baseUrl}${base}/upgrades/${id}/stream`, bo)
    await vi.waitFor(() => expect(watched.progress.length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 })
    await server.run(
      Effect.flatMap(SqlClient, (sql) => sql`UPDATE users SET role = 'member' WHERE email = 'bo@example.com'`)
    )
    await vi.waitFor(() => expect(watched.errors).toHaveLength(1), { timeout: 10_000, interval: 20 })
    watched.source.close()
    expect(watched.errors[0]).toMatchObject({ code: "not_authorized", operation_id: id })
    await setup.settled(id)
  })
})

describe("a slow upgrade (1.5 s a phase)", () => {
  let setup: Awaited<ReturnType<typeof setUp>>
  beforeAll(async () => {
    setup = await setUp({ phaseSpacing: Duration.millis(1500) })
  })
  afterAll(async () => {
    await setup?.server.close()
    await setup?.updater.close()
  })

  it("each connection observes at most ten times, one second apart", async () => {
    const id = await setup.upgrade()
    const started = Date.now()
    const events = await readStream(`${setup.server.baseUrl}${base}/upgrades/${id}/stream`, bearer(setup.owner))
    expect(Date.now() - started).toBeGreaterThanOrEqual(9000)
    expect(events).toHaveLength(10)
    expect(events.every((event) => event.event === "deployment.progress.v1")).toBe(true)
    expect(events.at(-1)!.data.operation.status).toBe("running")
  })
})

describe("a stop of the server during the stream", () => {
  it("ends the stream at once, while a request in flight still gets the stop's grace", async () => {
    const setup = await setUp({ phaseSpacing: Duration.millis(1500) })
    const id = await setup.upgrade()
    const response = await fetch(`${setup.server.baseUrl}${base}/upgrades/${id}/stream`, {
      headers: bearer(setup.owner)
    })
    expect(response.status).toBe(200)
    const held = await holdRequest(setup.server.baseUrl, "POST", "/api/v1/session", ownerCredentials)
    const closing = setup.server.close()
    // The stream ends cleanly (its last chunk), before the request in flight has been answered.
    expect(await response.text()).toContain("event: deployment.progress.v1")
    expect(held.answeredSoFar()).toBe("")
    expect((await held.release()).status).toBe(201)
    await closing
    await setup.updater.close()
  })
})

describe("an updater that goes away during the stream", () => {
  let setup: Awaited<ReturnType<typeof setUp>>
  beforeAll(async () => {
    setup = await setUp({ phaseSpacing: Duration.millis(1500) })
  })
  afterAll(async () => {
    await setup?.server.close()
  })

  it("ends the window with deployment.error.v1 updater_unavailable", async () => {
    const id = await setup.upgrade()
    const watched = watch(`${setup.server.baseUrl}${base}/upgrades/${id}/stream`, setup.owner)
    await vi.waitFor(() => expect(watched.progress.length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 })
    await setup.updater.close()
    await vi.waitFor(() => expect(watched.errors).toHaveLength(1), { timeout: 10_000, interval: 20 })
    expect(watched.errors[0]).toMatchObject({ code: "updater_unavailable", operation_id: id })
    // The client's reconnect is refused (503, an envelope): it gives up.
    await vi.waitFor(() => expect(watched.source.readyState).toBe(EventSource.CLOSED), {
      timeout: 10_000,
      interval: 50
    })
  })
})
