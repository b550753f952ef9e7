#!/usr/bin/env node
// The `troupe` command. Runs the TypeScript sources directly, which needs Node 24 (type
// stripping); under an older Node it re-runs itself on the Node 24 the project pins. The child
// dies with its launcher however the launcher ends: signals are forwarded, and the IPC channel
// between them closes when the launcher dies (even by SIGKILL), which the child takes as SIGTERM.
// Started by npm (npx), it also stops when the shell npm put between them dies.
// V8's allocation-site pretenuring is turned off before anything loads (docs/decisions.md,
// "No allocation-site pretenuring").
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { setFlagsFromString } from "node:v8"

// Under npx the command runs as npm → sh → node, and npm hands a signal to the shell only, which
// dies of it and leaves this process behind; so a command npm started takes the loss of its parent
// (polled: Node has no event for it) as SIGTERM.
if (process.env.npm_command !== undefined && process.channel === undefined) {
  const parent = process.ppid
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    process.kill(process.pid, "SIGTERM")
  }, 250)
  watch.unref()
}

if (Number(process.versions.node.split(".")[0]) < 24) {
  const require = createRequire(import.meta.url)
  const pinned = join(dirname(require.resolve("node/package.json")), "bin", "node")
  const child = spawn(pinned, [new URL(import.meta.url).pathname, ...process.argv.slice(2)], {
    stdio: ["inherit", "inherit", "inherit", "ipc"]
  })
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal))
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
} else {
  if (process.channel !== undefined) {
    process.once("disconnect", () => process.kill(process.pid, "SIGTERM"))
    // Listening for "disconnect" holds the channel; it must not keep a finished command alive.
    process.channel.unref()
  }
  // Loading the API's schemas makes V8 tenure the allocation sites every request later uses, so
  // each request's short-lived objects were born old and held its young ones past two scavenges.
  setFlagsFromString("--no-allocation-site-pretenuring")
  await import("../src/main.ts")
}
