// Small helpers over fetch for HTTP tests: JSON requests (or exact bodies), a cookie jar for
// browser flows, and the hidden CSRF field of a page.
export interface JsonResponse<T = any> {
  readonly status: number
  readonly headers: Headers
  /** The body parsed as JSON; its text when it is not JSON; undefined when empty. */
  readonly body: T
  /** The body verbatim, for rules about exact bytes. */
  readonly text: string
}

/** `body` goes as JSON; `raw` as it is (a Buffer with no Content-Type unless `headers` give one). */
export const request = async <T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: { readonly body?: unknown; readonly raw?: string | Buffer; readonly headers?: Record<string, string> } = {}
): Promise<JsonResponse<T>> => {
  const headers: Record<string, string> = { ...options.headers }
  let body: string | Buffer | undefined
  if (options.raw !== undefined) body = options.raw
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers["content-type"] ??= "application/json"
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body, redirect: "manual" })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = text === "" ? undefined : JSON.parse(text)
  } catch {
    parsed = text
  }
  return { status: response.status, headers: response.headers, body: parsed as T, text }
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** A browser: keeps cookies across requests and submits forms. */
export class Browser {
  readonly cookies = new Map<string, string>()
  readonly baseUrl: string
  constructor(baseUrl: string) {
    this.baseUrl = baseUrl
  }

  get cookieHeader() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ")
  }

  private remember(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";")
      const index = pair!.indexOf("=")
      const name = pair!.slice(0, index).trim()
      const value = pair!.slice(index + 1).trim()
      if (/max-age=0/i.test(line) || value === "") this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  async get(path: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${this.baseUrl}${path}`, {
      headers: { cookie: this.cookieHeader, ...headers },
      redirect: "manual"
    })
    this.remember(response)
    return { status: response.status, headers: response.headers, text: await response.text() }
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method: "POST",
      headers: { cookie: this.cookieHeader, "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual"
    })
    this.remember(response)
    return { status: response.status, headers: response.headers, text: await response.text() }
  }
}

export const csrfTokenIn = (html: string) => {
  const match = /name="csrf_token" value="([^"]+)"/.exec(html)
  if (!match) throw new Error("the page has no CSRF field")
  return match[1]!
}
