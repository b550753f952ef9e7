// Domain refusals answered at the http layer: each refusal's code becomes the endpoint error of
// the status the contract's Errors table gives it (`statusOfCode`), with the refusal's message.
// Other failures pass through untouched.
import { type ErrorOfCode, errors } from "@troupe/contracts/Errors"
import { isRefusal, type Refusal, type RefusalCode } from "@troupe/domain/kernel/Refusals"
import { Effect } from "effect"

/** The endpoint error a refusal answers with. */
export const answerRefusal = <C extends RefusalCode>(refusal: {
  readonly code: C
  readonly message: string
}): ErrorOfCode<C> => errors.of(refusal.code, refusal.message)

/** The failures of an effect once its refusals are answered: each refusal's code at its status. */
export type Answered<E> = Exclude<E, Refusal> | ErrorOfCode<Extract<E, Refusal>["code"]>

/** Answers every domain refusal `effect` fails with; its other failures are left as they are. */
export const answerRefusals = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Answered<E>, R> =>
  // TypeScript cannot narrow a type parameter with a guard; isRefusal is the runtime split.
  Effect.mapError(effect, (error) => (isRefusal(error) ? answerRefusal(error) : error)) as Effect.Effect<
    A,
    Answered<E>,
    R
  >
