// The hostile-input walk (issue 8): every route of the server's own /openapi.json, plus the OAuth
// doors and pages of test/support/hostile-routes.ts, meets malformed JSON, wrong types, deep nesting,
// invalid UTF-8, NUL, lone surrogates, huge strings, bad ids, cursors and limits, hostile forms, and
// wrong and missing credentials, carrying real credentials and ids so each request reaches body
// decoding. Every answer is below 500 and in its door's envelope (an API one is a 4xx), shows no
// stack or SQL, and no table gains or loses a row. A new route joins by being in /openapi.json.
import { afterAll, beforeAll, expect, it } from "vitest"
import { hostileContext } from "../support/hostile-fixtures.ts"
import type { VariantContext } from "../support/hostile-requests.ts"
import { type Door, type JsonSchema, type Route, routesOf } from "../support/hostile-routes.ts"
import { variantsOf } from "../support/hostile-variants.ts"
import { type RawAnswer, sendRaw } from "../support/raw-http.ts"
import { countChanges, rowCounts } from "../support/row-counts.ts"
import { startTestServer } from "../support/server.ts"

/** Tables that change with any request: the per-caller and per-IP request budgets. */
const perRequestTables = ["rate_limit_windows"]
/** Requests in flight at once; the 4 MiB bodies go two at a time. */
const concurrency = 8
const hugeConcurrency = 2

const server = await startTestServer({ trustedProxies: ["127.0.0.1/32"] })
const document = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as JsonSchema
const routes = routesOf(document)
let context: VariantContext

afterAll(() => server.close())

beforeAll(async () => {
  context = await hostileContext(server, document)
})

/** Stack frames, source paths and SQL or driver text that must never reach a client. */
const leak =
  /\n\s+at \S+ \(|node_modules|\.ts:\d+:\d+|SqlError|PostgresError|syntax error at or near|violates \w+ constraint|duplicate key value|invalid byte sequence|unsupported Unicode escape|\bINSERT INTO\b|\bSELECT\b[^<]{1,200}\bFROM\b/i

const parsed = (text: string) => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const envelopes: Record<Door, (body: any) => boolean> = {
  api: (body) =>
    Object.keys(body ?? {}).join() === "error" &&
    typeof body.error.code === "string" &&
    typeof body.error.message === "string",
  oauth: (body) => typeof body?.error === "string" && typeof body.error_description === "string",
  page: () => true
}

/** What is wrong with an answer, or undefined. */
const problemOf = (route: Route, answer: RawAnswer) => {
  if (answer.status >= 500) return "5xx"
  if (answer.status >= 400 && leak.test(answer.body)) return "stack or SQL text"
  if (route.door === "api" && answer.status < 400) return "accepted"
  if (answer.status < 400) return undefined
  return envelopes[route.door](parsed(answer.body)) ? undefined : `not the ${route.door} envelope`
}

const compact = (answer: RawAnswer) => `${answer.status} ${answer.body.replace(/\s+/g, " ").slice(0, 140)}`

/** Runs `work` over `items`, at most `limit` at once. */
const pooled = async <A, B>(items: ReadonlyArray<A>, limit: number, work: (item: A) => Promise<B>) => {
  const results: Array<B> = []
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

for (const route of routes) {
  it(`${route.method} ${route.path}`, async () => {
    const variants = variantsOf(route, context)
    const isHuge = (variant: { request: { body?: string | Buffer } }) => (variant.request.body?.length ?? 0) > 1 << 20
    const before = await rowCounts(server, perRequestTables)
    const run = (variant: (typeof variants)[number]) =>
      sendRaw(server.baseUrl, variant.request).then(
        (answers) =>
          answers
            .map((answer) => [problemOf(route, answer), answer] as const)
            .filter(([problem]) => problem !== undefined)
            .map(([problem, answer]) => `${variant.name} → ${problem}: ${compact(answer)}`),
        (error: Error) => [`${variant.name} → no answer: ${error.message}`]
      )
    const problems = [
      ...(await pooled(
        variants.filter((variant) => !isHuge(variant)),
        concurrency,
        run
      )),
      ...(await pooled(variants.filter(isHuge), hugeConcurrency, run))
    ].flat()
    const stored = countChanges(before, await rowCounts(server, perRequestTables))
    if (stored.length > 0) {
      problems.push(`stored → ${stored.join(", ")}`)
      // Fresh copies (new idempotency keys), one at a time, name the variants that store.
      for (const variant of variantsOf(route, context)) {
        const at = await rowCounts(server, perRequestTables)
        await sendRaw(server.baseUrl, variant.request).catch(() => [])
        const changed = countChanges(at, await rowCounts(server, perRequestTables))
        if (changed.length > 0) problems.push(`${variant.name} → stored: ${changed.join(", ")}`)
      }
    }
    expect(problems.length, `${problems.length} of ${variants.length} variants:\n${problems.join("\n")}`).toBe(0)
  })
}
