// A loopback TCP relay for a test whose client must keep one address while the server behind it
// is replaced (a restarted `troupe serve` listens on a port of its own): new connections go to the
// port it points at, or are dropped while it points nowhere.
import { connect, createServer, type Socket } from "node:net"

export interface TcpRelay {
  readonly baseUrl: string
  /** Relays new connections to `port` (undefined: drops them) and drops every relayed one open now. */
  readonly point: (port: number | undefined) => void
  readonly close: () => Promise<void>
}

export const openTcpRelay = async (): Promise<TcpRelay> => {
  let target: number | undefined
  const open = new Set<Socket>()
  const dropAll = () => {
    for (const socket of open) socket.destroy()
    open.clear()
  }
  const relay = createServer((client) => {
    if (target === undefined) return void client.destroy()
    const upstream = connect(target, "127.0.0.1")
    const drop = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    open.add(client)
    open.add(upstream)
    for (const socket of [client, upstream]) socket.once("error", drop).once("close", drop)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  const port = await new Promise<number>((done, fail) => {
    relay.once("error", fail)
    relay.listen(0, "127.0.0.1", () => {
      const address = relay.address()
      return typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))
    })
  })
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    point: (next) => {
      target = next
      dropAll()
    },
    close: () =>
      new Promise<void>((done) => {
        target = undefined
        dropAll()
        relay.close(() => done())
      })
  }
}
