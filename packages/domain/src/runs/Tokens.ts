// The secrets a run hands out: claim tokens (rotating per claim) and an authored ask's
// resolution token, each shown once; only their SHA-256 digests reach the run actor and its rows.
import { createHash, randomBytes } from "node:crypto"
import type { CompiledTaskSpec } from "@troupe/machines/run/context"
import type { CompiledSteps } from "./Compiler.ts"

export const newToken = () => randomBytes(24).toString("base64url")

export const digestOf = (token: string) => createHash("sha256").update(token, "utf8").digest("hex")

/** The compiled tasks with a resolution token minted for every authored ask (digest on the spec). */
export const mintTokens = (compiled: CompiledSteps) => {
  const tokens: Record<string, string> = {}
  const tasks = compiled.tasks.map((task): CompiledTaskSpec => {
    if (task.ask === null || !compiled.askKeys.includes(task.key)) return task
    const token = newToken()
    tokens[task.key] = token
    return { ...task, ask: { ...task.ask, tokenDigest: digestOf(token) } }
  })
  return { tasks, tokens }
}
