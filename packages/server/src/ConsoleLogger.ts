// The console logger of `troupe serve`: the lines of Effect's default logger (time, level, fiber,
// log spans, the message as console.log renders it, then the cause) with the annotations after the
// message as ` key=value` (JSON for a value that is not a plain word), gathered by Effect's batched
// logger and written to stdout (stderr under LogToStderr) once per window, not per line. A busy
// server logs a line per request: a write per line cost a fifth of the CPU of a static answer,
// and inspecting the annotations as an object another sixth. Lines still pending are written
// when the server stops.
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

const plainWord = /^[\w./:@+-]+$/

const annotationValue = (value: unknown) => {
  if (typeof value === "string" && plainWord.test(value)) return value
  if (typeof value === "bigint") return value.toString()
  return JSON.stringify(value) ?? String(value)
}

const lineOf = Logger.make<unknown, Line>(({ cause, date, fiber, logLevel, message }) => {
  const toStderr = fiber.getRef(Logger.LogToStderr)
  const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
  let spans = ""
  for (const [label, startedAt] of fiber.getRef(References.CurrentLogSpans)) {
    spans += ` ${label.replace(/[\s="]/g, "_")}=${date.getTime() - startedAt}ms`
  }
  let annotated = ""
  for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) {
    annotated += ` ${key}=${annotationValue(value)}`
  }
  const head = `[${clockTime(date)}] ${logLevel.toUpperCase()} (#${fiber.id})${spans}:`
  const text =
    parts.length === 1 && typeof parts[0] === "string"
      ? `${head} ${parts[0]}`
      : formatWithOptions({ colors: colorsFor(toStderr ? process.stderr : process.stdout) }, "%s", head, ...parts)
  const shownCause = cause.reasons.length > 0 ? ` ${Cause.pretty(cause)}` : ""
  return { toStderr, text: `${text}${annotated}${shownCause}` }
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
