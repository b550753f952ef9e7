// What the API session machine remembers: the kind of session it governs.
export interface ApiSessionInput {
  readonly kind: "api" | "browser"
}

export interface ApiSessionContext {
  readonly kind: "api" | "browser"
}
