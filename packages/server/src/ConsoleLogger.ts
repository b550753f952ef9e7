// The console logger of `troupe serve`: the lines of Effect's default logger (time, level, fiber,
// log spans, message, annotations, cause; rendered as console.log renders them), gathered by
// Effect's batched logger and written to stdout (stderr under LogToStderr) once per window
// instead of once per line. A busy server logs a line per request, and a write per line cost a
// fifth of the CPU of a static answer. Lines still pending are written when the server stops.
import { formatWithOptions } from "node:util"
import { Cause, Effect, Logger, References } from "effect"

/** How long a line may wait before it is written. */
export const logWindowMillis = 50

interface Line {
  readonly toStderr: boolean
  readonly text: string
}

const twoDigits = (value: number) => value.toString().padStart(2, "0")

const clockTime = (date: Date) =>
  `${twoDigits(date.getHours())}:${twoDigits(date.getMinutes())}:${twoDigits(date.getSeconds())}.${date
    .getMilliseconds()
    .toString()
    .padStart(3, "0")}`

const colorsFor = (stream: NodeJS.WriteStream) => stream.isTTY === true && stream.hasColors()

const lineOf = Logger.make<unknown, Line>(({ cause, date, fiber, logLevel, message }) => {
  const toStderr = fiber.getRef(Logger.LogToStderr)
  const parts: Array<unknown> = Array.isArray(message) ? [...message] : [message]
  if (cause.reasons.length > 0) parts.push(Cause.pretty(cause))
  let spans = ""
  for (const [label, startedAt] of fiber.getRef(References.CurrentLogSpans)) {
    spans += ` ${label.replace(/[\s="]/g, "_")}=${date.getTime() - startedAt}ms`
  }
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  if (Object.keys(annotations).length > 0) parts.push(annotations)
  const head = `[${clockTime(date)}] ${logLevel.toUpperCase()} (#${fiber.id})${spans}:`
  const colors = colorsFor(toStderr ? process.stderr : process.stdout)
  return { toStderr, text: formatWithOptions({ colors }, head, ...parts) }
})

const write = (lines: ReadonlyArray<Line>, toStderr: boolean) => {
  let text = ""
  for (const line of lines) if (line.toStderr === toStderr) text += `${line.text}\n`
  if (text !== "") (toStderr ? process.stderr : process.stdout).write(text)
}

/** Replaces the default console logger (the tracer's logger stays) for the life of the layer. */
export const consoleLoggerLayer = Logger.layer([
  Logger.batched(lineOf, {
    window: `${logWindowMillis} millis`,
    flush: (lines) =>
      Effect.sync(() => {
        write(lines, false)
        write(lines, true)
      })
  }),
  Logger.tracerLogger
])
