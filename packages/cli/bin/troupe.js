#!/usr/bin/env node
// The `troupe` command. Runs the TypeScript sources directly, which needs Node 24 (type
// stripping); under an older Node it re-runs itself on the Node 24 the project pins.
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

if (Number(process.versions.node.split(".")[0]) < 24) {
  const require = createRequire(import.meta.url)
  const pinned = join(dirname(require.resolve("node/package.json")), "bin", "node")
  const child = spawn(pinned, [new URL(import.meta.url).pathname, ...process.argv.slice(2)], { stdio: "inherit" })
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal))
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
} else {
  await import("../src/main.ts")
}
