// How repositories read rows: each query is an `SqlSchema` query on the ambient SqlClient, its
// parameters and rows described by Schemas declared beside it. A row the schema refuses is a
// defect naming the query (the code and the table disagree; no caller can answer that). A
// repository's service holds its operations bound to the SqlClient its layer captured (`bind`).
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as SqlSchema from "effect/sql/SqlSchema"

/** A query's parameters or rows do not match its schemas. */
export class RowDecodeError extends Error {
  override readonly name = "RowDecodeError"
}

/** What a query declares: its parameters, the shape of one row, and the statement. */
export interface Query<Req extends Schema.Constraint, Res extends Schema.Constraint> {
  readonly Request: Req
  readonly Result: Res
  readonly execute: (request: Req["Encoded"], sql: SqlClient) => Effect.Effect<ReadonlyArray<unknown>, SqlError>
}

type Services<Req extends Schema.Constraint, Res extends Schema.Constraint> =
  | SqlClient
  | Req["EncodingServices"]
  | Res["DecodingServices"]

const onSql = <Req extends Schema.Constraint, Res extends Schema.Constraint>(query: Query<Req, Res>) => ({
  Request: query.Request,
  Result: query.Result,
  execute: (request: Req["Encoded"]) => Effect.flatMap(SqlClient, (sql) => query.execute(request, sql))
})

const defect = (name: string, problem: string) => (cause: unknown) =>
  Effect.die(new RowDecodeError(`${name}: ${problem}`, { cause }))

const schemaDefect = (name: string) => (error: Schema.SchemaError) =>
  defect(name, `a parameter or a row does not match its schema: ${error.message}`)(error)

/** Every row the statement answers, decoded. */
export const all = <Req extends Schema.Constraint, Res extends Schema.Constraint>(
  name: string,
  query: Query<Req, Res>
) => {
  const find = SqlSchema.findAll(onSql(query))
  return (request: Req["Type"]): Effect.Effect<ReadonlyArray<Res["Type"]>, SqlError, Services<Req, Res>> =>
    Effect.catchTag(find(request), "SchemaError", schemaDefect(name))
}

/**
 * The first row the statement answers, decoded; undefined when it answers none. Written out
 * rather than through `SqlSchema.findOneOption` (no Option to wrap and unwrap, and the request's
 * encoding, an Exit, applied eagerly): sessions are read this way on every authenticated request.
 */
export const maybe = <Req extends Schema.Constraint, Res extends Schema.Constraint>(
  name: string,
  query: Query<Req, Res>
) => {
  const encode = Schema.encodeEffect(query.Request)
  const decode = Schema.decodeUnknownEffect(query.Result)
  const { execute } = onSql(query)
  const first = (rows: ReadonlyArray<unknown>) => (rows.length === 0 ? Effect.undefined : decode(rows[0]))
  return (request: Req["Type"]): Effect.Effect<Res["Type"] | undefined, SqlError, Services<Req, Res>> =>
    Effect.flatMapEager(encode(request), execute).pipe(
      Effect.flatMap(first),
      Effect.catchTag("SchemaError", schemaDefect(name))
    )
}

/** The first row of a statement that always answers one (an INSERT or UPDATE ... RETURNING), decoded. */
export const one = <Req extends Schema.Constraint, Res extends Schema.Constraint>(
  name: string,
  query: Query<Req, Res>
) => {
  const find = SqlSchema.findOne(onSql(query))
  return (request: Req["Type"]): Effect.Effect<Res["Type"], SqlError, Services<Req, Res>> =>
    find(request).pipe(
      Effect.catchTag("SchemaError", schemaDefect(name)),
      Effect.catchTag("NoSuchElementError", defect(name, "the statement answered no row"))
    )
}

/** An operation on the ambient SqlClient, as a repository service holds it: needing no client. */
type Bound<Operation> =
  Operation extends Effect.Effect<infer A, infer E, infer R>
    ? Effect.Effect<A, E, Exclude<R, SqlClient>>
    : Operation extends (...args: infer P) => Effect.Effect<infer A, infer E, infer R>
      ? (...args: P) => Effect.Effect<A, E, Exclude<R, SqlClient>>
      : never

type Operation = Effect.Effect<any, any, any> | ((...args: any) => Effect.Effect<any, any, any>)

/**
 * The operations run on `sql`. A bound operation called inside the caller's `sql.withTransaction`
 * joins that transaction: the transaction rides on the fiber, not on the client.
 */
export const bind = <Operations extends Readonly<Record<string, Operation>>>(
  sql: SqlClient,
  operations: Operations
): { readonly [Name in keyof Operations]: Bound<Operations[Name]> } => {
  const onSql = Effect.provideService(SqlClient, sql)
  const bound: Record<string, unknown> = {}
  for (const [name, operation] of Object.entries(operations)) {
    bound[name] =
      typeof operation === "function"
        ? (...args: ReadonlyArray<unknown>) => onSql(operation(...args))
        : onSql(operation)
  }
  return bound as { readonly [Name in keyof Operations]: Bound<Operations[Name]> }
}
