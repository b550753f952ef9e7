// Budget administration in tests, over the real platform routes: configure the cost unit, open a
// budget, adjust and revoke it with fresh Idempotency-Keys.
import { randomUUID } from "node:crypto"
import { Clock } from "effect"
import { bearer, request } from "./http.ts"
import type { TestServer } from "./server.ts"

export const budgetsOf = (userPublicId: string) => `/api/v1/admin/users/${userPublicId}/budgets`

/** A budget write with a fresh key unless one is given. */
export const budgetWrite = (
  server: TestServer,
  token: string,
  method: "POST" | "PATCH",
  path: string,
  body?: unknown,
  key: string = randomUUID()
) =>
  request(server.baseUrl, method, path, {
    headers: { ...bearer(token), "idempotency-key": key },
    ...(body === undefined ? {} : { body })
  })

export const configureUnit = (server: TestServer, token: string, unit = "USD") =>
  request(server.baseUrl, "PUT", "/api/v1/admin/account/cost_unit", {
    headers: bearer(token),
    body: { account: { cost_unit: unit } }
  })

/** Opens an open-ended budget of `amount` starting an hour before the server's clock. */
export const openBudget = async (server: TestServer, token: string, userPublicId: string, amount: string) => {
  const startsAt = new Date((await server.run(Clock.currentTimeMillis)) - 3_600_000).toISOString()
  const opened = await budgetWrite(server, token, "POST", budgetsOf(userPublicId), {
    budget: { amount, starts_at: startsAt, expires_at: null, reason: "tests" }
  })
  if (opened.status !== 201) throw new Error(`open failed: ${opened.status} ${opened.text}`)
  return opened.body.budget as { public_id: string; credited_amount: string; debited_amount: string }
}

export const adjustBudget = (
  server: TestServer,
  token: string,
  userPublicId: string,
  budgetPublicId: string,
  kind: "credit" | "debit",
  amount: string,
  key?: string
) =>
  budgetWrite(
    server,
    token,
    "PATCH",
    `${budgetsOf(userPublicId)}/${budgetPublicId}`,
    { budget: { kind, amount, reason: `${kind} in tests` } },
    key
  )
