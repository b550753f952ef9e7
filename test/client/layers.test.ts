// The client's place in the layers (DESIGN "contracts ← client ← cli"): built from contracts and
// Effect alone, so an agent program can depend on it without the server; the CLI's operator
// commands call the API through it, never through a hand-written fetch.
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "vitest"

const root = join(import.meta.dirname, "../..")

const importsOf = (file: string) =>
  [...readFileSync(join(root, file), "utf8").matchAll(/from "([^"]+)"/g)].map((match) => match[1]!)

it("packages/client imports only contracts, effect and its own modules", () => {
  const files = readdirSync(join(root, "packages/client/src"), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => join("packages/client/src", file))
  expect(files.length).toBeGreaterThan(0)
  const foreign = files
    .flatMap(importsOf)
    .filter((source) => !/^(@troupe\/contracts\/|effect(\/|$)|\.\/[^/]+\.ts$)/.test(source))
  expect(foreign).toEqual([])
})

it("the CLI's operator commands reach the server through @troupe/client", () => {
  const operators = "packages/cli/src/operators.ts"
  expect(importsOf(operators)).toContain("@troupe/client/Client")
  expect(readFileSync(join(root, operators), "utf8")).not.toMatch(/\bfetch\(/)
})
