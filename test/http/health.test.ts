// GET /health (liveness) and GET /ready (database answers at the server's migration level) on
// an in-process server whose PostgreSQL sits behind a TCP relay the test can cut: /ready turns
// 503 with Retry-After and the envelope while the database is unreachable, /health stays 200.
// The embedded database has no network hop to cut, so this file needs PostgreSQL.
import { connect, createServer, type Server, type Socket } from "node:net"
import { Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { request } from "../support/http.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const withPostgres = await postgresReachable()

/** A TCP relay to `target` that can be cut (every connection dropped, new ones refused) and restored. */
const relay = async (target: URL) => {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const open = () =>
    new Promise<void>((done) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("error", () => socket.destroy())
          socket.on("close", () => sockets.delete(socket))
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(port, "127.0.0.1", () => {
        const address = server!.address()
        if (typeof address === "object" && address) port = address.port
        done()
      })
    })
  await open()
  return {
    port,
    cut: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy()
        server!.close(() => done())
      }),
    restore: open
  }
}

describe.skipIf(!withPostgres)("health and readiness", () => {
  let database: TestDatabase
  let server: TestServer
  let link: Awaited<ReturnType<typeof relay>>

  beforeAll(async () => {
    database = await freshPostgres()
    if (database.config._tag !== "postgres") throw new Error("expected PostgreSQL")
    const direct = new URL(Redacted.value(database.config.url))
    link = await relay(direct)
    const relayed = new URL(direct)
    relayed.host = `127.0.0.1:${link.port}`
    server = await startTestServer({
      database: { config: { ...database.config, url: Redacted.make(relayed.toString()) }, drop: database.drop }
    })
  })
  afterAll(() => server?.close())

  it("GET /health answers 200 {status: ok} with no credentials", async () => {
    const health = await request(server.baseUrl, "GET", "/health")
    expect({ status: health.status, body: health.body }).toEqual({ status: 200, body: { status: "ok" } })
    expect(health.headers.get("cache-control")).toBe("no-store")
  })

  it("GET /ready answers 200 {status: ready} once the server is up", async () => {
    const ready = await request(server.baseUrl, "GET", "/ready")
    expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: "ready" } })
    expect(ready.headers.get("cache-control")).toBe("no-store")
  })

  it("GET /ready answers 503 not_ready with Retry-After while the database is unreachable, 200 again after", async () => {
    await link.cut()
    const down = await request(server.baseUrl, "GET", "/ready")
    expect(down.status).toBe(503)
    expect(down.headers.get("retry-after")).toBe("1")
    expect(down.body).toEqual({ error: { code: "not_ready", message: "The database does not answer" } })
    const health = await request(server.baseUrl, "GET", "/health")
    expect(health.status).toBe(200)
    await link.restore()
    const up = await request(server.baseUrl, "GET", "/ready")
    expect(up.status).toBe(200)
  })

  it("GET /ready answers 503 when the database lacks a migration the server started with", async () => {
    const [latest] = await server.run(
      SqlClient.use(
        (sql) =>
          sql<{ migration_id: number; name: string; created_at: Date }>`
            DELETE FROM effect_sql_migrations
            WHERE migration_id = (SELECT max(migration_id) FROM effect_sql_migrations)
            RETURNING migration_id, name, created_at`
      )
    )
    const behind = await request(server.baseUrl, "GET", "/ready")
    expect(behind.status).toBe(503)
    expect(behind.body.error).toEqual({
      code: "not_ready",
      message: "The database lacks migrations this server needs; run troupe migrate"
    })
    await server.run(SqlClient.use((sql) => sql`INSERT INTO effect_sql_migrations ${sql.insert(latest!)}`))
    expect((await request(server.baseUrl, "GET", "/ready")).status).toBe(200)
  })
})
