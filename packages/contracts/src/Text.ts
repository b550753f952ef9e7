// Printable text as request members carry it (names, descriptions, one-line values): the rule of
// domain/kernel/Text.ts, restated here because the domain and the contracts may not import each
// other (test/contracts/text.test.ts holds the two to the same answers).
import { Schema } from "effect"

/** Controls (Cc), format characters (Cf) and line and paragraph separators (Zl, Zp). */
const unprintableCharacter = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

/** Text that renders as one line and holds nothing invisible that changes how it reads. */
export const isPrintable = (text: string): boolean => text.isWellFormed() && !unprintableCharacter.test(text)

/** Length in Unicode code points, not UTF-16 code units. */
export const codePointLength = (text: string): number => {
  let length = 0
  for (const _ of text) length++
  return length
}

/** A check: printable text of `min` to `max` code points. */
export const isPrintableText = (min: number, max: number, annotations?: Schema.Annotations.Filter) =>
  Schema.makeFilter<string>(
    (text) => {
      const length = isPrintable(text) ? codePointLength(text) : -1
      return length >= min && length <= max
    },
    { expected: `${min} to ${max} printable characters on one line`, ...annotations }
  )

/** UTF-8 bytes of the whitespace-free JSON of a value: what the spec's "canonical JSON" limits measure. */
export const canonicalBytes = (value: unknown): number => new TextEncoder().encode(JSON.stringify(value)).length
