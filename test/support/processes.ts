// Small helpers for tests that start processes or watch them from outside: a free loopback port,
// a deadline on a promise, polling a condition, whether a pid is alive or a port accepts
// connections, and a command run to its end.
import { type SpawnOptions, spawn } from "node:child_process"
import { connect, createServer } from "node:net"

export const freePort = () =>
  new Promise<number>((done, fail) => {
    const probe = createServer()
    probe.once("error", fail)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))))
    })
  })

/** Rejects after `ms` unless `promise` settles first. */
export const within = <A>(ms: number, what: string | (() => string), promise: Promise<A>) => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, fail) => {
      timer = setTimeout(
        () => fail(new Error(`${typeof what === "string" ? what : what()}: nothing after ${ms} ms`)),
        ms
      )
    })
  ]).finally(() => clearTimeout(timer))
}

/** Polls `check` every `everyMs` until it answers true; rejects after `ms`. */
export const eventually = async (what: string, ms: number, check: () => boolean | Promise<boolean>, everyMs = 50) => {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return
    if (Date.now() > deadline) throw new Error(`${what}: not so after ${ms} ms`)
    await new Promise((done) => setTimeout(done, everyMs))
  }
}

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Whether something accepts TCP connections on the loopback port. */
export const accepting = (port: number) =>
  new Promise<boolean>((done) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      done(true)
    })
    socket.once("error", () => done(false))
  })

export interface CommandResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `command args` with no input; resolves with its exit code and all it wrote once it has closed. */
export const runToEnd = (command: string, args: ReadonlyArray<string>, options: Pick<SpawnOptions, "cwd" | "env">) =>
  new Promise<CommandResult>((done, fail) => {
    const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.once("error", fail)
    child.once("close", (code) => done({ code, stdout, stderr }))
  })
