// The request every route reads (RequestConventions installs it): the same request, with body
// readers that refuse what they cannot read faithfully instead of rewriting it. `text` (and so
// `json`) decodes UTF-8 fatally and applies the JSON bounds to a JSON body; `urlParamsBody`
// percent-decodes strictly; a Content-Encoding other than identity is 415 (bodies are never
// decompressed); and a body sent without a Content-Type is application/octet-stream (RFC 9110
// §8.3), so no door takes it for JSON or a form. A refusal travels as the request's own parse
// error (RequestParseError) carrying a RequestRefused, which the error envelope shapes per door.
// A request with no body (no Content-Length above 0, no Transfer-Encoding) and no refused
// Content-Encoding reads the same through either readers, so it is passed on as it is (a view
// makes each request a prototype, which V8 makes costly).
import { Effect, Stream } from "effect"
import { Headers, HttpServerError, type HttpServerRequest, UrlParams } from "effect/http"
import { RequestRefused } from "./Refusal.ts"
import { decodeUtf8, jsonProblem, parseForm } from "./StrictText.ts"

type Request = HttpServerRequest.HttpServerRequest

const essence = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

const isJson = (contentType: string | undefined) => {
  const type = essence(contentType)
  return type === "application/json" || type.endsWith("+json")
}

const carriesBody = (headers: Headers.Headers) =>
  headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0

const refusedEncoding = (encoding: string | undefined) => {
  if (encoding === undefined || ["", "identity"].includes(encoding.trim().toLowerCase())) return undefined
  return new RequestRefused({
    status: 415,
    code: "unsupported_media_type",
    message: `Content-Encoding ${encoding} is not accepted; send the body uncompressed`
  })
}

const parseError = (request: Request, refused: RequestRefused) =>
  new HttpServerError.HttpServerError({
    reason: new HttpServerError.RequestParseError({
      request,
      reason: "Parse",
      description: refused.message,
      cause: refused
    })
  })

/** The readers of one request's body, shared by every view `modify` makes of it. */
interface Body {
  readonly bytes: Effect.Effect<ArrayBuffer, HttpServerError.HttpServerError>
  readonly text: Effect.Effect<string, HttpServerError.HttpServerError>
  readonly form: Effect.Effect<UrlParams.UrlParams, HttpServerError.HttpServerError>
  readonly stream: Stream.Stream<Uint8Array, HttpServerError.HttpServerError>
}

const bodyOf = (request: Request): Body => {
  const encoding = refusedEncoding(request.headers["content-encoding"])
  const refuse = (refused: RequestRefused) => Effect.fail(parseError(request, refused))
  const bytes = encoding === undefined ? request.arrayBuffer : refuse(encoding)
  const decoded = Effect.flatMap(bytes, (buffer) => {
    const text = decodeUtf8(buffer)
    return typeof text === "string" ? Effect.succeed(text) : refuse(text)
  })
  const text = Effect.flatMap(decoded, (text) => {
    const problem = isJson(request.headers["content-type"]) ? jsonProblem(text) : undefined
    return problem === undefined ? Effect.succeed(text) : refuse(problem)
  })
  const form = Effect.flatMap(decoded, (text) => {
    const fields = parseForm(text)
    return fields instanceof RequestRefused ? refuse(fields) : Effect.succeed(UrlParams.make(fields))
  })
  return {
    bytes,
    text: Effect.runSync(Effect.cached(text)),
    form: Effect.runSync(Effect.cached(form)),
    stream: encoding === undefined ? request.stream : Stream.fail(parseError(request, encoding))
  }
}

// A view over the platform's request object: everything but the body readers and `modify` is its own.
const strictView = (request: Request, body: Body): Request =>
  Object.create(request, {
    arrayBuffer: { get: () => body.bytes },
    text: { get: () => body.text },
    urlParamsBody: { get: () => body.form },
    stream: { get: () => body.stream },
    modify: { value: (options: Parameters<Request["modify"]>[0]) => strictView(request.modify(options), body) }
  })

/** The request with `url` (the canonical target) and strict body readers. */
export const strictRequest = (request: Request, url: string): Request => {
  const body = carriesBody(request.headers)
  if (!body && url === request.url && refusedEncoding(request.headers["content-encoding"]) === undefined) {
    return request
  }
  const untyped = request.headers["content-type"] === undefined && body
  const canonical =
    url === request.url && !untyped
      ? request
      : request.modify({
          url,
          ...(untyped ? { headers: Headers.set(request.headers, "content-type", "application/octet-stream") } : {})
        })
  return strictView(canonical, bodyOf(canonical))
}
