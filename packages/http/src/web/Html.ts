// Server-rendered HTML: escaping and the page layout. No scripts, no external assets, so every
// page works without JavaScript and without internet.
import { HttpServerResponse } from "effect/http"

export const escapeHtml = (value: string): string =>
  value
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;")

const styles = `
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #1d1d1b; }
  main { max-width: 28rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 8px;
         box-shadow: 0 1px 3px rgba(0,0,0,.12); }
  h1 { font-size: 1.4rem; margin-top: 0; }
  label { display: block; margin: 1rem 0 .25rem; font-weight: 600; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; border: 1px solid #bbb; border-radius: 4px; }
  button { margin-top: 1.5rem; padding: .6rem 1.2rem; font: inherit; border: 0; border-radius: 4px;
           background: #2b4c7e; color: #fff; cursor: pointer; }
  .error { background: #fdecea; color: #8a1c12; padding: .75rem; border-radius: 4px; }
  .hint { color: #666; font-size: .9rem; }
`

export const page = (title: string, body: string, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Troupe</title>
<style>${styles}</style>
</head>
<body><main>${body}</main></body>
</html>`,
    {
      status,
      contentType: "text/html; charset=utf-8",
      headers: {
        "cache-control": "no-store",
        "content-security-policy":
          "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        "x-frame-options": "DENY",
        ...headers
      }
    }
  )

/** A link on from a refusal to the page of this site where the person can try again. */
export const tryAgain = (href: `/${string}`, label = "Go back and try again") =>
  `<p><a id="try-again" href="${escapeHtml(href)}">${escapeHtml(label)}</a></p>`

export const errorBox = (message: string | undefined) =>
  message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ""

export const field = (
  name: string,
  label: string,
  options: {
    readonly type?: string
    readonly value?: string
    readonly autocomplete?: string
    readonly required?: boolean
  } = {}
) =>
  `<label for="${name}">${escapeHtml(label)}</label>
<input id="${name}" name="${name}" type="${options.type ?? "text"}" value="${escapeHtml(options.value ?? "")}"${
    options.autocomplete ? ` autocomplete="${options.autocomplete}"` : ""
  }${options.required === false ? "" : " required"}>`

export const redirect = (location: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.empty({ status: 303, headers: { location, "cache-control": "no-store", ...headers } })
