// Helpers for tests that watch Troupe's processes from outside: polling a condition until it
// holds, whether a pid is alive, whether a port accepts connections.
import { connect } from "node:net"

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
