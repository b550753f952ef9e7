// An expired receipt of the same caller, route and key is replaced by a new claim in one
// statement; a live one is found as before; two claims racing over an expired receipt make one
// claim and one finding of it.
import { IdempotencyReceiptsRepository, type ReceiptKey } from "@troupe/storage/repositories/IdempotencyReceipts"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"

let server: TestServer
let lifetime: bigint

beforeAll(async () => {
  server = await startTestServer()
  const [started] = await server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ id: bigint }>`INSERT INTO node_lifetimes (started_at) VALUES (now()) RETURNING id`
    )
  )
  lifetime = started!.id
})
afterAll(() => server?.close())

const day = 24 * 60 * 60 * 1000
const keyOf = (key: string): ReceiptKey => ({ caller: "user:1", route: "POST /probe", key })

const claim = (key: string, digest: number, at: Date) =>
  server.run(
    Effect.flatMap(IdempotencyReceiptsRepository, (receipts) =>
      receipts.claim(keyOf(key), new Uint8Array([digest]), lifetime, at, new Date(at.getTime() + day))
    )
  )

/** Leaves a completed receipt for the key that expired a day before `at`. */
const leaveExpired = (key: string, at: Date) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) => {
      const k = keyOf(key)
      return sql`
        INSERT INTO idempotency_receipts (caller, route, key, request_digest, state, response_status, response_body,
          created_at, expires_at)
        VALUES (${k.caller}, ${k.route}, ${k.key}, ${new Uint8Array([0])}, 'completed', 201, '{}',
          ${new Date(at.getTime() - 2 * day)}, ${new Date(at.getTime() - day)})`
    })
  )

const receiptsOf = (key: string) =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ id: bigint; state: string; request_digest: Uint8Array }>`
        SELECT id, state, request_digest FROM idempotency_receipts WHERE key = ${key}`
    )
  )

describe("claiming an Idempotency-Key", () => {
  it("replaces an expired receipt with a pending one, then finds that one live", async () => {
    const at = new Date()
    await leaveExpired("expired", at)
    const claimed = await claim("expired", 7, at)
    expect(claimed._tag).toBe("Claimed")
    const rows = await receiptsOf("expired")
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ state: "pending", request_digest: new Uint8Array([7]) })
    expect(claimed._tag === "Claimed" && claimed.claim.id).toBe(rows[0]!.id)
    const again = await claim("expired", 8, at)
    expect(again._tag === "Existing" && again.receipt.id).toBe(rows[0]!.id)
  })

  it("two claims racing over an expired receipt: one claims, the other finds its receipt", async () => {
    for (let round = 0; round < 5; round++) {
      const at = new Date()
      const key = `race-${round}`
      await leaveExpired(key, at)
      const outcomes = await Promise.all([claim(key, 1, at), claim(key, 2, at)])
      const tags = outcomes.map((outcome) => outcome._tag).sort()
      expect(tags).toEqual(["Claimed", "Existing"])
      const winner = outcomes.find((outcome) => outcome._tag === "Claimed")!
      const loser = outcomes.find((outcome) => outcome._tag === "Existing")!
      expect(loser._tag === "Existing" && loser.receipt.state).toBe("pending")
      expect(loser._tag === "Existing" && winner._tag === "Claimed" && loser.receipt.id).toBe(
        winner._tag === "Claimed" ? winner.claim.id : undefined
      )
      expect(await receiptsOf(key)).toHaveLength(1)
    }
  })
})
