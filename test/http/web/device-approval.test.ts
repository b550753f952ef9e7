// Web: the device approval page after the decision — a reload or a second submit by the human who
// approved (or denied) says so and what happens next; anyone else sees "unknown or expired", as for
// a code that never existed. The "Choose approve or deny" and "This form expired" pages link back
// to the code's confirm page (or the entry page when the code is not well formed).
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Browser, csrfTokenIn } from "../../support/http.ts"
import { createMember, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, signedInBrowser, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let owner: Browser
let member: Browser

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  await createMember(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  member = await signedInBrowser(server, memberCredentials.email, memberCredentials.password)
})
afterAll(() => server?.close())

const confirmPath = (userCode: string) => `/oauth/device?user_code=${encodeURIComponent(userCode)}`
const tryAgainHref = (html: string) => /<a id="try-again" href="([^"]*)"/.exec(html)?.[1]

it("a reload after approving says it was approved and that the program's next poll gets its credentials", async () => {
  const started = await startDevice(server, machineFields("reloaded-runner"))
  const token = csrfTokenIn((await owner.get(confirmPath(started.user_code))).text)
  expect((await decide(owner, started.user_code, "approve", "user_private")).status).toBe(200)

  const reloaded = await owner.get(confirmPath(started.user_code))
  expect(reloaded.status).toBe(200)
  expect(reloaded.text).toContain(`<h1 id="outcome">Already approved</h1>`)
  expect(reloaded.text).toContain("gets its credentials the next time it checks")
  expect(reloaded.text).not.toContain('id="approve"')
  // A second submit (the back button, a double click) decides nothing new and says the same.
  const again = await owner.post("/oauth/device", {
    user_code: started.user_code,
    decision: "deny",
    csrf_token: token
  })
  expect(again.status).toBe(200)
  expect(again.text).toContain("Already approved")

  expect((await poll(server, started.device_code)).status).toBe(200)
  const connected = await owner.get(confirmPath(started.user_code.toLowerCase()))
  expect(connected.status).toBe(200)
  expect(connected.text).toContain("Already approved")
  expect(connected.text).toContain("the program has connected")
})

it("a reload after denying says it was denied and links to the entry page", async () => {
  const started = await startDevice(server, machineFields("denied-runner"))
  expect((await decide(owner, started.user_code, "deny")).status).toBe(200)
  const reloaded = await owner.get(confirmPath(started.user_code))
  expect(reloaded.status).toBe(200)
  expect(reloaded.text).toContain(`<h1 id="outcome">Already denied</h1>`)
  expect(tryAgainHref(reloaded.text)).toBe("/oauth/device")
  expect((await poll(server, started.device_code)).body.error).toBe("access_denied")
})

it("another human entering a code someone else decided sees unknown or expired, as for a code that never existed", async () => {
  const approved = await startDevice(server, machineFields("owners-runner"))
  expect((await decide(owner, approved.user_code, "approve", "user_private")).status).toBe(200)
  const denied = await startDevice(server, machineFields("owners-denied-runner"))
  expect((await decide(owner, denied.user_code, "deny")).status).toBe(200)

  const pending = await startDevice(server, machineFields("members-runner"))
  const token = csrfTokenIn((await member.get(confirmPath(pending.user_code))).text)
  const never = await member.get(confirmPath("BCDF-GHJK"))
  expect(never.status).toBe(404)
  for (const code of [approved.user_code, denied.user_code]) {
    const seen = await member.get(confirmPath(code))
    expect(seen.status).toBe(404)
    expect(seen.text).toContain("That code is unknown or expired")
    expect(seen.text).toBe(never.text)
    const submitted = await member.post("/oauth/device", {
      user_code: code,
      decision: "approve",
      assignment_scope: "user_private",
      csrf_token: token
    })
    expect(submitted.status).toBe(404)
    expect(submitted.text).not.toContain("Already")
  }
})

it("the 'Choose approve or deny' page links back to the code's confirm page", async () => {
  const started = await startDevice(server, machineFields("undecided-runner"))
  const confirm = await owner.get(confirmPath(started.user_code))
  const undecided = await owner.post("/oauth/device", {
    user_code: started.user_code.toLowerCase(),
    csrf_token: csrfTokenIn(confirm.text)
  })
  expect(undecided.status).toBe(400)
  expect(undecided.text).toContain("Choose approve or deny.")
  const href = tryAgainHref(undecided.text)
  expect(href).toBe(confirmPath(started.user_code))
  const back = await owner.get(href!)
  expect(back.status).toBe(200)
  expect(back.text).toContain('id="approve"')
})

it("the 'This form expired' page links back to the code's confirm page, or to the entry page for a malformed code", async () => {
  const started = await startDevice(server, machineFields("expired-form-runner"))
  const expired = await owner.post("/oauth/device", {
    user_code: started.user_code,
    decision: "approve",
    csrf_token: "stale"
  })
  expect(expired.status).toBe(403)
  expect(expired.text).toContain("This form expired")
  expect(tryAgainHref(expired.text)).toBe(confirmPath(started.user_code))
  expect((await poll(server, started.device_code)).body.error).toBe("authorization_pending")

  const malformed = await owner.post("/oauth/device", {
    user_code: `"><script>alert(1)</script>`,
    decision: "approve",
    csrf_token: "stale"
  })
  expect(malformed.status).toBe(403)
  expect(tryAgainHref(malformed.text)).toBe("/oauth/device")
  expect(malformed.text).not.toContain("<script>")
})
