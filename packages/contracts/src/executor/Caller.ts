// The executor-transport caller: the delivery address a transport credential speaks for, with its
// row as authentication read it, so no handler or command reads the caller's executor again.
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { Unauthorized } from "../Errors.ts"
import { executorBearer } from "../Security.ts"
import type { ServedDocument, ServedTool } from "./Executor.ts"

/** The address's row as the server holds it (its internal ids never reach an answer). */
export interface ExecutorAddressRow {
  readonly id: bigint
  readonly public_id: string
  readonly account_id: bigint
  readonly kind: "agent_application" | "runner" | "tool_provider"
  readonly status: "active" | "revoked"
  readonly display_name: string
  readonly credential_epoch: number
  readonly manager_id: bigint
  readonly agent_id: bigint | null
  readonly assignment_scope: "agent_private" | "user_private" | "account_wide"
  readonly announcement: {
    readonly tools: ReadonlyArray<typeof ServedTool.Type>
    readonly environment: { readonly [key: string]: unknown } | null
    readonly documents: ReadonlyArray<typeof ServedDocument.Type>
  }
  readonly last_seen_at: Date | null
  readonly connected_at: Date | null
}

export interface ExecutorCaller {
  readonly executor: {
    readonly id: bigint
    readonly publicId: string
    readonly kind: "agent_application" | "runner" | "tool_provider"
    readonly status: "active" | "revoked"
    readonly displayName: string
    /** The epoch the credential carries: the address's, or the one its next step takes. */
    readonly credentialEpoch: number
    /** The address's row as authentication read it (active, at an epoch the credential is not fenced by). */
    readonly row: ExecutorAddressRow
  }
}

export class CurrentExecutorCaller extends Context.Service<CurrentExecutorCaller, ExecutorCaller>()(
  "@troupe/contracts/executor/CurrentExecutorCaller"
) {}

/** Executor plane: a transport credential; member and platform credentials are refused. */
export class ExecutorAuthentication extends HttpApiMiddleware.Service<
  ExecutorAuthentication,
  { provides: CurrentExecutorCaller }
>()("@troupe/contracts/executor/ExecutorAuthentication", {
  error: Unauthorized,
  security: { executor_bearer: executorBearer }
}) {}
