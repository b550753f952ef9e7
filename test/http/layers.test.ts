// The layers hold still (DESIGN "Layout"): http reaches data only through domain services (no
// storage import, no SQL client), the domain knows nothing of HTTP (no http or contracts
// import), and domain refusals carry codes, never statuses.
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Conflict, Forbidden, NotFound, statusOfCode, Unprocessable } from "@troupe/contracts/Errors"
import { Absent, Invalid, NotPermitted, StateConflict } from "@troupe/domain/kernel/Refusals"
import { answerRefusal } from "@troupe/http/conventions/DomainRefusals"
import { describe, expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")

/** Every TypeScript source under a package's src/, with its text. */
const sources = (pkg: string) =>
  readdirSync(join(root, pkg, "src"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => ({ file: join(pkg, "src", file), text: readFileSync(join(root, pkg, "src", file), "utf8") }))

const importing = (pkg: string, pattern: RegExp) =>
  sources(pkg)
    .filter(({ text }) => pattern.test(text))
    .map(({ file }) => file)

describe("layers", () => {
  it("http imports neither storage nor an SQL client", () => {
    expect(importing("packages/http", /from "@troupe\/storage\//)).toEqual([])
    expect(importing("packages/http", /from "effect\/sql/)).toEqual([])
  })

  it("the domain imports neither http nor contracts", () => {
    expect(importing("packages/domain", /from "@troupe\/(http|contracts)\//)).toEqual([])
  })

  it("a refusal carries its code and message; its status comes from the contract's table", () => {
    const refusals = [
      new Absent({ code: "memory_not_found", message: "No memory document at that path" }),
      new NotPermitted({ code: "not_workspace_owner", message: "Only the workspace's owner may do this" }),
      new StateConflict({ code: "transition_in_progress", message: "The workspace is archiving" }),
      new Invalid({ code: "target_not_eligible", message: "target_user_public_id must name an active human" })
    ]
    const classOfStatus = { 403: Forbidden, 404: NotFound, 409: Conflict, 422: Unprocessable }
    for (const refusal of refusals) {
      expect(Object.keys(refusal)).not.toContain("status")
      const answered = answerRefusal(refusal)
      expect(answered.error).toEqual({ code: refusal.code, message: refusal.message })
      expect(answered).toBeInstanceOf(classOfStatus[statusOfCode[refusal.code] as keyof typeof classOfStatus])
    }
  })
})
