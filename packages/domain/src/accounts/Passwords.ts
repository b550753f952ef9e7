// Password digests for human users: scrypt from node:crypto, parameters stored beside each
// digest so they can be raised later. Raw passwords are never stored or logged.
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Effect } from "effect"

const N = 16384
const r = 8
const p = 1
const keyLength = 32

const derive = (password: string, salt: Buffer, n: number, rr: number, pp: number) =>
  Effect.callback<Buffer>((resume) => {
    scrypt(password, salt, keyLength, { N: n, r: rr, p: pp, maxmem: 64 * 1024 * 1024 }, (error, key) =>
      resume(error ? Effect.die(error) : Effect.succeed(key))
    )
  })

/** `scrypt$N$r$p$<salt b64>$<key b64>` */
export const hashPassword = Effect.fnUntraced(function* (password: string) {
  const salt = randomBytes(16)
  const key = yield* derive(password, salt, N, r, p)
  return `scrypt$${N}$${r}$${p}$${salt.toString("base64")}$${key.toString("base64")}`
})

const dummyDigest = `scrypt$${N}$${r}$${p}$${Buffer.alloc(16).toString("base64")}$${Buffer.alloc(keyLength).toString("base64")}`

/**
 * Verifies a password against a stored digest. With no digest (unknown user) it still spends
 * the same work, so timing does not tell an unknown email from a wrong password.
 */
export const verifyPassword = Effect.fnUntraced(function* (password: string, digest: string | null) {
  const [scheme, n, rr, pp, salt, key] = (digest ?? dummyDigest).split("$")
  if (scheme !== "scrypt" || !n || !rr || !pp || !salt || !key) return false
  const expected = Buffer.from(key, "base64")
  const actual = yield* derive(password, Buffer.from(salt, "base64"), Number(n), Number(rr), Number(pp))
  return digest !== null && actual.length === expected.length && timingSafeEqual(actual, expected)
})
