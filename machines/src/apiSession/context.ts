// What the API session machine starts from and remembers: the kind of session it governs.
import { Schema } from "effect"

export const ApiSessionInput = Schema.Struct({ kind: Schema.Literals(["api", "browser"]) })
export type ApiSessionInput = typeof ApiSessionInput.Type

export const ApiSessionContext = Schema.Struct({ kind: Schema.Literals(["api", "browser"]) })
export type ApiSessionContext = typeof ApiSessionContext.Type
