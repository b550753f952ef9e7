// Browser cookies: the session cookie (kind browser) and the CSRF nonce. Both httpOnly and
// SameSite=Lax; Secure when the public base URL is https.
import { browserSessionCookie } from "@troupe/contracts/Security"

export const sessionCookie = browserSessionCookie
export const csrfCookie = "troupe_csrf"
