// Browser cookies: the session cookie (kind browser) and the CSRF nonce. Both httpOnly and
// SameSite=Lax; Secure when the public base URL is https.
export const sessionCookie = "troupe_session"
export const csrfCookie = "troupe_csrf"
