// A member's domain Caller read from its users row, as member authentication builds it (the
// member with its declared configuration; the human whose access counts: itself, or an agent's
// steward), for tests that call domain services directly.
import type { Caller } from "@troupe/domain/accounts/Caller"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestServer } from "./server.ts"

export const callerOf = (server: TestServer, publicId: string) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const [user] = yield* sql<{
        id: bigint
        account_id: bigint
        kind: "agent" | "human"
        configuration: unknown
        steward_id: bigint | null
        handle: string
        display_name: string
      }>`SELECT id, account_id, kind, configuration, steward_id, handle, display_name FROM users
        WHERE public_id = ${publicId}`
      return {
        user: {
          id: user!.id,
          accountId: user!.account_id,
          kind: user!.kind,
          publicId,
          handle: user!.handle,
          displayName: user!.display_name,
          configuration: user!.configuration
        },
        human: { id: user!.steward_id ?? user!.id, accountId: user!.account_id, kind: "human" }
      } satisfies Caller
    })
  )
