/**
 * A downstream connection's egress settings, as the gateway's config holds
 * them, and how its credential is injected.
 *
 * **Rules**
 *
 * - Auth schemes: none, bearer (`Authorization: Bearer <secret>`), header API
 *   key (`<name>: <secret>`), basic (`Authorization: Basic
 *   base64(<username>:<secret>)`).
 * - The credential is unwrapped from its `Redacted` only to build the header
 *   value handed to undici; it is never logged, never put in an error, and is
 *   dropped when a redirect leaves the connection's origin.
 * - A secret holding CR, LF or NUL is refused (header injection) without
 *   echoing it.
 * - What was injected (`injectedCredential`) is scrubbed from the response
 *   by the caller, so a downstream that echoes headers cannot hand it back.
 *
 * @since 0.1.0
 */
import { Duration, Redacted } from "effect"
import { InjectedSecrets } from "../redaction/InjectedSecrets.ts"
import type { BreakerOptions } from "./Breakers.ts"
import type { RetryOptions } from "./RetryPolicy.ts"

export type AuthScheme =
  | { readonly _tag: "None" }
  | { readonly _tag: "Bearer" }
  | { readonly _tag: "Header"; readonly name: string }
  | { readonly _tag: "Basic"; readonly username: string }

export interface EgressConnection {
  /** Stable id: the circuit breaker key and the name in errors. */
  readonly id: string
  /** `http(s)://host[:port][/base/path]`, no user info. */
  readonly baseUrl: string
  readonly auth?: AuthScheme | undefined
  /** Budget for the whole call, retries and redirects included; default 30 s. */
  readonly timeout?: Duration.Input | undefined
  readonly retry?: RetryOptions | undefined
  readonly breaker?: BreakerOptions | undefined
  /**
   * Trusted internal destinations: CIDRs, addresses, host names, `.suffix`es, each with an optional port
   * (storage's `EgressAllowList`). Overrides the refusals.
   */
  readonly allow?: ReadonlyArray<string> | undefined
  /** Largest response body accepted; default the client's (10 MiB). */
  readonly maxResponseBytes?: number | undefined
}

/** The header carrying the credential, or `undefined` for no auth. Lower-case. */
export const credentialHeader = (auth: AuthScheme | undefined): string | undefined => {
  switch (auth?._tag) {
    case undefined:
    case "None":
      return undefined
    case "Header":
      return auth.name.toLowerCase()
    case "Bearer":
    case "Basic":
      return "authorization"
  }
}

const unsafeHeaderValue = /[\r\n\0]/

/** The credential header's value, or `undefined` when the secret cannot go in a header. */
export const credentialValue = (auth: AuthScheme, secret: Redacted.Redacted<string>): string | undefined => {
  const value = Redacted.value(secret)
  if (unsafeHeaderValue.test(value)) return undefined
  switch (auth._tag) {
    case "None":
      return undefined
    case "Bearer":
      return `Bearer ${value}`
    case "Header":
      return value
    case "Basic":
      return `Basic ${Buffer.from(`${auth.username}:${value}`).toString("base64")}`
  }
}

const injectedMemo = new WeakMap<Redacted.Redacted<string>, { auth: AuthScheme; injected: InjectedSecrets }>()

/**
 * What `credentialValue` injects for `auth` and `secret`, to be scrubbed from
 * the response. Memoised on the secret object (the secret cache hands out the
 * same one until it changes) and the auth scheme object (the same one per
 * configuration snapshot): a warm call does one `WeakMap` lookup.
 */
export const injectedCredential = (auth: AuthScheme, secret: Redacted.Redacted<string>): InjectedSecrets => {
  const memo = injectedMemo.get(secret)
  if (memo !== undefined && memo.auth === auth) return memo.injected
  const value = auth._tag === "None" ? undefined : credentialValue(auth, secret)
  const injected = value === undefined ? InjectedSecrets.none : InjectedSecrets.fromHeaderValues([value])
  injectedMemo.set(secret, { auth, injected })
  return injected
}

const tokenPattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** Why the auth scheme is unusable, or `undefined`. */
export const authProblem = (auth: AuthScheme | undefined): string | undefined => {
  if (auth?._tag === "Header" && !tokenPattern.test(auth.name)) return `"${auth.name}" is not a valid header name`
  if (auth?._tag === "Basic" && (auth.username.includes(":") || unsafeHeaderValue.test(auth.username))) {
    return "a basic-auth username cannot contain ':' or a line break"
  }
  return undefined
}

// The default budget, shared rather than rebuilt per connection.
export const defaultTimeout: Duration.Duration = Duration.seconds(30)
