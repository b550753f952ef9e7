// An actor's refusal naming a code the sentences of kernel/RefusalMessages.ts do not know still
// answers a sentence that names the code (spec "Errors": messages are for people).
import { Invalid, StateConflict } from "@troupe/domain/kernel/Refusals"
import { describe, expect, it } from "vitest"

describe("refusal sentences", () => {
  it("a known code answers its sentence, whichever kind of refusal carries it", () => {
    expect(StateConflict.sentenceOf("not_adjudicable")).toMatch(/^The run is completed or canceled/)
    expect(Invalid.sentenceOf("nothing_to_compact")).toMatch(/^Nothing follows the newest completed summary/)
  })

  it("an unknown code answers the kind's generic sentence naming it; object keys are no sentences", () => {
    expect(StateConflict.sentenceOf("new_code")).toBe("Refused in the current state of what it acts on (new_code)")
    expect(Invalid.sentenceOf("new_code")).toBe("Refused as outside the rules of what it acts on (new_code)")
    expect(StateConflict.sentenceOf("constructor")).toBe(
      "Refused in the current state of what it acts on (constructor)"
    )
  })
})
