// The wrapped-or-top-level body reading (SUPPLEMENT "General shapes"): the wrapper wins when
// present, the top level is read otherwise, and failures point at the member as sent.
import { wrappedOrTopLevel } from "@troupe/contracts/Wrapped"
import { Exit, Schema } from "effect"
import { describe, expect, it } from "vitest"

const Body = wrappedOrTopLevel("memory", Schema.Struct({ path: Schema.String }))
const decode = Schema.decodeUnknownExit(Body)

describe("wrappedOrTopLevel", () => {
  it("reads the wrapper's members, or the same members at top level", () => {
    expect(decode({ memory: { path: "user/a" } })).toEqual(Exit.succeed({ path: "user/a" }))
    expect(decode({ path: "user/a" })).toEqual(Exit.succeed({ path: "user/a" }))
  })

  it("when the wrapper is present only its members are read", () => {
    expect(decode({ memory: { path: "user/inner" }, path: "user/outer" })).toEqual(Exit.succeed({ path: "user/inner" }))
    expect(Exit.isFailure(decode({ memory: {}, path: "user/outer" }))).toBe(true)
    expect(Exit.isFailure(decode({ memory: "user/a", path: "user/outer" }))).toBe(true)
  })

  it("when the wrapper is also a member, a non-object under it is that member at top level", () => {
    const Mode = wrappedOrTopLevel("mode", Schema.Struct({ mode: Schema.Literals(["a", "b"]), n: Schema.Number }))
    const decodeMode = Schema.decodeUnknownExit(Mode)
    expect(decodeMode({ mode: { mode: "a", n: 1 } })).toEqual(Exit.succeed({ mode: "a", n: 1 }))
    expect(decodeMode({ mode: "b", n: 2 })).toEqual(Exit.succeed({ mode: "b", n: 2 }))
    expect(Exit.isFailure(decodeMode({ mode: "c", n: 2 }))).toBe(true)
    expect(Exit.isFailure(decodeMode({ mode: { n: 1 }, n: 1 }))).toBe(true)
  })

  it("refuses a body that is not an object", () => {
    for (const body of [[], "x", 1, null]) expect(Exit.isFailure(decode(body))).toBe(true)
  })
})
