// The approval stage of a tool call (runs supplement "Task kinds and statuses"): one test per
// mode and origin rule, the matching precedence, globs, paths and the rule grammar check. Pure.

import type { ApprovalRule } from "@troupe/machines/run/context"
import { approvalRuleFault, globMatches, judgeApproval, textAtPath } from "@troupe/machines/run/rules/approval"
import { describe, expect, it } from "vitest"

const model = (toolName: string, input: Record<string, unknown> = {}) => ({ origin: "model" as const, toolName, input })
const author = (toolName: string, input: Record<string, unknown> = {}) => ({
  origin: "author" as const,
  toolName,
  input
})
const kernel = (toolName: string) => ({ origin: "kernel" as const, toolName, input: {} })

const grant = { verdict: "grant" }
const park = { verdict: "park" }
const fail = (reason: string) => ({ verdict: "fail", reason })

describe("approval of model calls", () => {
  it("bypass grants unless a deny rule matches", () => {
    expect(judgeApproval("bypass", [], model("memory_write"))).toEqual(grant)
    expect(judgeApproval("bypass", [{ tool: "memory_*", verdict: "ask" }], model("memory_write"))).toEqual(grant)
    expect(judgeApproval("bypass", [{ tool: "memory_*", verdict: "deny" }], model("memory_write"))).toEqual(
      fail("no approval rule allows memory_write")
    )
  })

  it("ask grants on an allow rule, fails on a deny rule and parks otherwise", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "memory_read", verdict: "allow" },
      { tool: "memory_delete", verdict: "deny", reason: "never delete" }
    ]
    expect(judgeApproval("ask", rules, model("memory_read"))).toEqual(grant)
    expect(judgeApproval("ask", rules, model("memory_delete"))).toEqual(fail("never delete"))
    expect(judgeApproval("ask", rules, model("memory_write"))).toEqual(park)
  })

  it("rules: allow grants, ask parks, deny or no match fails", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "memory_read|memory_ls", verdict: "allow" },
      { tool: "ask", verdict: "ask" },
      { tool: "memory_delete", verdict: "deny" }
    ]
    expect(judgeApproval("rules", rules, model("memory_ls"))).toEqual(grant)
    expect(judgeApproval("rules", rules, model("ask"))).toEqual(park)
    expect(judgeApproval("rules", rules, model("memory_delete"))).toEqual(fail("no approval rule allows memory_delete"))
    expect(judgeApproval("rules", rules, model("spawn"))).toEqual(fail("no approval rule allows spawn"))
  })

  it("matches deny over ask over allow whatever the order written", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "*", verdict: "allow" },
      { tool: "memory_*", verdict: "ask" },
      { tool: "memory_delete", verdict: "deny", reason: "no" }
    ]
    expect(judgeApproval("rules", rules, model("skill"))).toEqual(grant)
    expect(judgeApproval("rules", rules, model("memory_write"))).toEqual(park)
    expect(judgeApproval("rules", rules, model("memory_delete"))).toEqual(fail("no"))
  })

  it("ignores rules naming another origin", () => {
    const rules: ReadonlyArray<ApprovalRule> = [{ tool: "*", verdict: "allow", origin: "author" }]
    expect(judgeApproval("rules", rules, model("skill"))).toEqual(fail("no approval rule allows skill"))
    expect(judgeApproval("bypass", [{ tool: "*", verdict: "deny", origin: "kernel" }], model("skill"))).toEqual(grant)
  })

  it("a rule with origin model speaks to model calls", () => {
    expect(judgeApproval("rules", [{ tool: "skill", verdict: "allow", origin: "model" }], model("skill"))).toEqual(
      grant
    )
  })
})

describe("approval of author and kernel calls", () => {
  it("grants by origin whatever the mode, and ignores rules without origin", () => {
    const rules: ReadonlyArray<ApprovalRule> = [{ tool: "*", verdict: "deny" }]
    expect(judgeApproval("rules", rules, author("deploy"))).toEqual(grant)
    expect(judgeApproval("ask", rules, kernel("memory_write"))).toEqual(grant)
  })

  it("parks or fails when a rule naming the origin says ask or deny", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "deploy", verdict: "ask", origin: "author" },
      { tool: "rm_*", verdict: "deny", origin: "author", reason: "not from steps" },
      { tool: "memory_*", verdict: "deny", origin: "kernel" }
    ]
    expect(judgeApproval("bypass", rules, author("deploy"))).toEqual(park)
    expect(judgeApproval("bypass", rules, author("rm_rf"))).toEqual(fail("not from steps"))
    expect(judgeApproval("bypass", rules, author("memory_write"))).toEqual(grant)
    expect(judgeApproval("bypass", rules, kernel("memory_write"))).toEqual(fail("no approval rule allows memory_write"))
    expect(judgeApproval("bypass", rules, kernel("deploy"))).toEqual(grant)
  })

  it("an allow rule for the origin changes nothing", () => {
    expect(judgeApproval("rules", [{ tool: "x", verdict: "allow", origin: "author" }], author("y"))).toEqual(grant)
  })
})

describe("rule matching", () => {
  it("tool globs are anchored, with * any run and ? one character", () => {
    expect(globMatches("memory_*", "memory_write")).toBe(true)
    expect(globMatches("memory_*", "memory_")).toBe(true)
    expect(globMatches("memory_*", "my_memory_write")).toBe(false)
    expect(globMatches("memory_?s", "memory_ls")).toBe(true)
    expect(globMatches("memory_?s", "memory_lss")).toBe(false)
    expect(globMatches("a.b", "axb")).toBe(false)
    expect(globMatches("a+(b)", "a+(b)")).toBe(true)
    const rules: ReadonlyArray<ApprovalRule> = [{ tool: "memory_*|ask|delegate_task", verdict: "allow" }]
    expect(judgeApproval("rules", rules, model("delegate_task"))).toEqual(grant)
    expect(judgeApproval("rules", rules, model("ask_more"))).toEqual(fail("no approval rule allows ask_more"))
  })

  it("path and match judge the text found in the input", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "memory_write", path: "path", match: "scratch/*", verdict: "allow" },
      { tool: "run", path: "options.env.HOME", verdict: "deny", reason: "no HOME" }
    ]
    expect(judgeApproval("rules", rules, model("memory_write", { path: "scratch/a.md" }))).toEqual(grant)
    expect(judgeApproval("rules", rules, model("memory_write", { path: "notes/a.md" }))).toEqual(
      fail("no approval rule allows memory_write")
    )
    expect(judgeApproval("rules", rules, model("memory_write"))).toEqual(fail("no approval rule allows memory_write"))
    expect(judgeApproval("ask", rules, model("run", { options: { env: { HOME: "/" } } }))).toEqual(fail("no HOME"))
    expect(judgeApproval("ask", rules, model("run", { options: { env: {} } }))).toEqual(park)
  })

  it("a non-string value is matched as its canonical JSON text", () => {
    const input = { n: 3, flag: true, list: ["a", 1], obj: { b: 1, a: 2 }, none: null }
    expect(textAtPath(input, "n")).toBe("3")
    expect(textAtPath(input, "flag")).toBe("true")
    expect(textAtPath(input, "list")).toBe('["a",1]')
    expect(textAtPath(input, "list.0")).toBe("a")
    expect(textAtPath(input, "list.length")).toBeUndefined()
    expect(textAtPath(input, "obj")).toBe('{"a":2,"b":1}')
    expect(textAtPath(input, "none")).toBe("null")
    expect(textAtPath(input, "missing.deeper")).toBeUndefined()
    expect(textAtPath(input, "toString")).toBeUndefined()
    const rules: ReadonlyArray<ApprovalRule> = [{ tool: "*", path: "n", match: "?", verdict: "allow" }]
    expect(judgeApproval("rules", rules, model("t", input))).toEqual(grant)
    expect(judgeApproval("rules", rules, model("t", { n: 12 }))).toEqual(fail("no approval rule allows t"))
  })
})

describe("approval rule grammar", () => {
  it("accepts well formed rules", () => {
    expect(approvalRuleFault({ tool: "memory_*|ask", verdict: "allow" })).toBeUndefined()
    expect(
      approvalRuleFault({ tool: "run", path: "a.b", match: "x*", verdict: "deny", reason: "r", origin: "author" })
    ).toBeUndefined()
  })

  it("names the member at fault", () => {
    expect(approvalRuleFault("allow")).toBe("rule")
    expect(approvalRuleFault([])).toBe("rule")
    expect(approvalRuleFault({ tool: "x", verdict: "allow", extra: 1 })).toBe("extra")
    expect(approvalRuleFault({ verdict: "allow" })).toBe("tool")
    expect(approvalRuleFault({ tool: "a||b", verdict: "allow" })).toBe("tool")
    expect(approvalRuleFault({ tool: "x" })).toBe("verdict")
    expect(approvalRuleFault({ tool: "x", verdict: "maybe" })).toBe("verdict")
    expect(approvalRuleFault({ tool: "x", verdict: "allow", path: "a..b" })).toBe("path")
    expect(approvalRuleFault({ tool: "x", verdict: "allow", match: "y" })).toBe("match")
    expect(approvalRuleFault({ tool: "x", verdict: "allow", path: "a", match: 3 })).toBe("match")
    expect(approvalRuleFault({ tool: "x", verdict: "deny", reason: null })).toBe("reason")
    expect(approvalRuleFault({ tool: "x", verdict: "allow", origin: "human" })).toBe("origin")
  })
})
