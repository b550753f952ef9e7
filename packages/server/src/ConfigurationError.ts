// What a misconfiguration looks like to an operator: one sentence naming the environment
// variable and the fix. Start-up failures that come from the environment (a busy port, a host
// that is not ours, a database that is not there, a data directory in use) are explained here.
import { DatabaseUnreachable } from "@troupe/storage/Database"
import { EmbeddedDatabaseError, EmbeddedDatabaseInUse } from "@troupe/storage/Embedded"
import { Cause, Data } from "effect"
import { ServeError } from "effect/http/HttpServerError"

export class ConfigurationError extends Data.TaggedError("ConfigurationError")<{
  readonly variable: string
  readonly message: string
}> {}

interface ListenError extends Error {
  readonly code?: string
  readonly address?: string
  readonly port?: number
  readonly hostname?: string
}

const fromListen = (error: ListenError): ConfigurationError | undefined => {
  const where = `${error.address ?? error.hostname}:${error.port}`
  switch (error.code) {
    case "EADDRINUSE":
      return new ConfigurationError({
        variable: "PORT",
        message: `PORT ${error.port} is already in use on ${error.address}; stop what listens there or set PORT to a free port`
      })
    case "EACCES":
      return new ConfigurationError({
        variable: "PORT",
        message: `PORT ${error.port} needs privileges this process lacks (${where}); set PORT to 1024 or above`
      })
    case "EADDRNOTAVAIL":
      return new ConfigurationError({
        variable: "HOST",
        message: `HOST ${error.address} is not an address of this machine; set HOST to one of its addresses, 127.0.0.1 or 0.0.0.0`
      })
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new ConfigurationError({
        variable: "HOST",
        message: `HOST ${error.hostname} does not resolve to an address; set HOST to an address such as 127.0.0.1 or 0.0.0.0`
      })
    default:
      return undefined
  }
}

const fromDatabase = (error: DatabaseUnreachable) => {
  const { host, port, database, user } = error.target
  const fix = (() => {
    switch (error.reason) {
      case "missing_database":
        return `create it (createdb -h ${host} -p ${port} -U ${user} ${database}, or CREATE DATABASE "${database}" in psql) or name an existing database in DATABASE_URL`
      case "authentication":
        return "correct the user and password in DATABASE_URL"
      case "refused":
      case "timeout":
        return "start PostgreSQL there or correct the host and port in DATABASE_URL"
      case "unknown_host":
        return "correct the host in DATABASE_URL"
      default:
        return "correct DATABASE_URL"
    }
  })()
  return new ConfigurationError({ variable: "DATABASE_URL", message: `DATABASE_URL: ${error.message}; ${fix}` })
}

const explain = (value: unknown): ConfigurationError | undefined => {
  if (value instanceof ConfigurationError) return value
  if (value instanceof DatabaseUnreachable) return fromDatabase(value)
  if (value instanceof EmbeddedDatabaseInUse) {
    return new ConfigurationError({
      variable: "TROUPE_DATA_DIR",
      message: `TROUPE_DATA_DIR: ${value.message}; stop process ${value.holder} or set TROUPE_DATA_DIR to another directory`
    })
  }
  if (value instanceof EmbeddedDatabaseError) {
    const detail = value.cause instanceof Error ? ` (${value.cause.message})` : ""
    return new ConfigurationError({
      variable: "TROUPE_DATA_DIR",
      message: `TROUPE_DATA_DIR: ${value.message}${detail}; set TROUPE_DATA_DIR to a directory this process can write`
    })
  }
  if (value instanceof ServeError && value.cause instanceof Error) return fromListen(value.cause)
  return undefined
}

/** The configuration error a start-up failure amounts to, if it comes from the environment. */
export const explainStartupFailure = (cause: Cause.Cause<unknown>): ConfigurationError | undefined => {
  for (const reason of cause.reasons) {
    const value = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    const explained = explain(value)
    if (explained !== undefined) return explained
  }
  return undefined
}
