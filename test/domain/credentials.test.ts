// Pure credential rules: handles, session token shape and digests, password digests.
import { handleBase, handleCandidate, isHandle } from "@troupe/domain/accounts/Handles"
import { hashPassword, verifyPassword } from "@troupe/domain/accounts/Passwords"
import { mintSessionToken, parseSessionToken, sessionSecretMatches } from "@troupe/domain/accounts/SessionTokens"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"

describe("handles", () => {
  it("default from the display name, within the handle pattern", () => {
    expect(handleBase("Olive Owner")).toBe("olive-owner")
    expect(handleBase("  Zoë  Ørsted-Ünal ")).toBe("zoe-rsted-unal")
    expect(handleBase("___Dr. No!!")).toBe("dr-no")
    expect(handleBase("漢字")).toBe("user")
    expect(handleBase("X")).toBe("x0")
    expect(handleBase("a".repeat(50))).toHaveLength(32)
    for (const name of ["Olive Owner", "漢字", "X", "a".repeat(50), "--", "9 lives"])
      expect(isHandle(handleBase(name))).toBe(true)
  })

  it("take -2, -3 suffixes and stay within 32 characters", () => {
    expect(handleCandidate("olive", 1)).toBe("olive")
    expect(handleCandidate("olive", 2)).toBe("olive-2")
    const long = "b".repeat(32)
    expect(handleCandidate(long, 12)).toBe(`${"b".repeat(29)}-12`)
    expect(isHandle(handleCandidate(long, 12))).toBe(true)
  })

  it("pattern is [a-z0-9][a-z0-9_-]{1,31}", () => {
    for (const ok of ["ab", "a_b", "0-9", "a".repeat(32)]) expect(isHandle(ok)).toBe(true)
    for (const bad of ["a", "-ab", "_ab", "Ab", "a b", "a".repeat(33), "ab!"]) expect(isHandle(bad)).toBe(false)
  })
})

describe("session tokens", () => {
  it("are sk-svc-session-v1-<lookup>.<secret>, and only the digest matches the secret", () => {
    const minted = mintSessionToken()
    expect(minted.token).toMatch(/^sk-svc-session-v1-[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}$/)
    const parsed = parseSessionToken(minted.token)!
    expect(parsed.lookup).toBe(minted.lookup)
    expect(minted.token).not.toContain(Buffer.from(minted.digest).toString("base64url"))
    expect(sessionSecretMatches(parsed.secret, minted.salt, minted.digest)).toBe(true)
    const altered = `${parsed.secret.slice(0, -1)}${parsed.secret.endsWith("A") ? "B" : "A"}`
    expect(sessionSecretMatches(altered, minted.salt, minted.digest)).toBe(false)
    expect(mintSessionToken().token).not.toBe(minted.token)
  })

  it("refuse anything else", () => {
    for (const token of ["", "sk-svc-session-v1-", "sk-svc-api-v1-abc.def", `sk-svc-session-v1-${"a".repeat(16)}`]) {
      expect(parseSessionToken(token)).toBeUndefined()
    }
  })
})

describe("passwords", () => {
  it("are stored as scrypt digests and verified", async () => {
    const digest = await Effect.runPromise(hashPassword("correct horse"))
    expect(digest).toMatch(/^scrypt\$16384\$8\$1\$/)
    expect(digest).not.toContain("correct horse")
    expect(await Effect.runPromise(verifyPassword("correct horse", digest))).toBe(true)
    expect(await Effect.runPromise(verifyPassword("wrong horse", digest))).toBe(false)
    expect(await Effect.runPromise(verifyPassword("correct horse", null))).toBe(false)
    expect(await Effect.runPromise(hashPassword("correct horse"))).not.toBe(digest)
  })
})
