// This server as one node of a cluster of servers sharing one PostgreSQL (effect/cluster): it
// registers its runner address, takes its share of the shards (advisory locks held on its own
// connections, so a node that dies lets go at once), pings the others, and listens for the steps
// other nodes hand it. A busy TROUPE_CLUSTER_PORT is a configuration error.
import { createServer } from "node:net"
import { NodeClusterSocket } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { RunnerAddress, Sharding } from "effect/cluster"
import type { ClusterConfig } from "./Config.ts"
import { ConfigurationError } from "./ConfigurationError.ts"

/** A port nothing listens on now, for a node given none. */
const freePort = (host: string) =>
  Effect.callback<number, Error>((resume) => {
    const probe = createServer()
    probe.once("error", (error) => resume(Effect.fail(error)))
    probe.listen(0, host, () => {
      const address = probe.address()
      probe.close(() =>
        resume(
          typeof address === "object" && address ? Effect.succeed(address.port) : Effect.fail(new Error("no port"))
        )
      )
    })
  })

export const clusterNode = (config: ClusterConfig) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const port =
        config.port ??
        (yield* freePort(config.host).pipe(
          Effect.mapError(
            (error) =>
              new ConfigurationError({
                variable: "TROUPE_CLUSTER_HOST",
                message: `TROUPE_CLUSTER_HOST=${config.host} cannot be listened on (${error.message}); set it to an address of this machine that the other nodes reach`
              })
          )
        ))
      const address = RunnerAddress.make(config.host, port)
      return NodeClusterSocket.layer({
        storage: "sql",
        shardingConfig: {
          runnerAddress: Option.some(address),
          // Steps handed to this node are taken from memory, never from a serialized copy.
          simulateRemoteSerialization: false,
          // A node that dies (its PostgreSQL sessions end, releasing its shard locks) is counted out
          // once its heartbeat is 6 s old or pings fail, so its actors resume elsewhere within 10 s.
          shardLockRefreshInterval: "2 seconds",
          shardLockExpiration: "6 seconds",
          refreshAssignmentsInterval: "1 second",
          runnerHealthCheckInterval: "2 seconds"
        }
      }).pipe(
        Layer.catchTag("SocketServerError", (error) =>
          Layer.effect(
            Sharding.Sharding,
            Effect.fail(
              new ConfigurationError({
                variable: "TROUPE_CLUSTER_PORT",
                message: `TROUPE_CLUSTER_PORT=${port} on ${config.host} cannot be listened on (${error.message}); choose a free port`
              })
            )
          )
        )
      )
    })
  )
