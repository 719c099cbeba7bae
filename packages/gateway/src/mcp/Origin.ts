/**
 * `Origin` validation against DNS rebinding.
 *
 * Spec rule (Streamable HTTP, every revision; "Security Warning" / "Security &
 * Endpoint"): servers MUST validate the `Origin` header on all incoming
 * connections and answer an invalid one with HTTP 403 Forbidden. A request
 * without `Origin` (every non-browser client) is allowed; a browser origin is
 * allowed when it is listed in the configured allowed origins or, unless
 * disabled, when its host is a loopback name (`localhost`, `127.0.0.1`,
 * `[::1]`), so a page served by the gateway's own host may call it.
 *
 * The decision is precomputed: the allowed origins are normalized once into a
 * set, so the check is one `Set.has` (plus a URL parse only for origins that
 * are not in the set).
 *
 * The admin API is stricter ({@link sameOrigin}): Studio is served by the
 * gateway itself, so a browser may call `/api/v1` only from the gateway's own
 * origin; requests without `Origin` (curl, scripts) pass. Same-origin means
 * the origin's host and port equal the `Host` header's (the scheme's default
 * port when the header has none, as behind TLS termination), or the browser
 * says so itself with `Sec-Fetch-Site: same-origin` (a header no page can
 * set), which still holds when a proxy rewrote `Host`. DNS rebinding makes a
 * hostile page same-origin too: the `Host` check (`http/HostCheck.ts`) is what
 * refuses it.
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export interface OriginPolicy {
  /** Exact origins (`scheme://host[:port]`) that browsers may call from. */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** Allow any loopback origin (`http(s)://localhost|127.0.0.1|[::1][:port]`). Default `true`. */
  readonly allowLocalhost?: boolean | undefined
}

const loopbackHosts: ReadonlySet<string> = new Set(["localhost", "127.0.0.1", "[::1]"])

const normalize = (origin: string): string | undefined => {
  try {
    const url = new URL(origin)
    if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
    return url.origin
  } catch {
    return undefined
  }
}

/**
 * Builds the check once; `check(origin)` is `true` when the request may proceed.
 */
export const make = (policy: OriginPolicy = {}): (origin: string | undefined) => boolean => {
  const allowed = new Set<string>()
  for (const origin of policy.allowedOrigins ?? []) {
    const normalized = normalize(origin)
    if (normalized === undefined) {
      throw new Error(
        `Invalid allowed origin '${origin}': expected an absolute http(s) origin such as 'https://studio.example.com'`
      )
    }
    allowed.add(normalized)
  }
  const allowLocalhost = policy.allowLocalhost ?? true
  return (origin) => {
    if (origin === undefined) return true
    if (allowed.has(origin)) return true
    const normalized = normalize(origin)
    if (normalized === undefined) return false
    if (allowed.has(normalized)) return true
    return allowLocalhost && loopbackHosts.has(new URL(normalized).hostname)
  }
}

/** The 403 message: which origin, and what would have been accepted. */
export const rejectionMessage = (origin: string): string =>
  `Origin '${origin}' is not allowed: expected no Origin header, a loopback origin, or one of the configured allowed origins`

/**
 * Whether a request to the admin API comes from no browser page, or from a
 * page of the gateway's own origin; see the module comment.
 */
export const sameOrigin = (
  origin: string | undefined,
  host: string | undefined,
  fetchSite: string | undefined
): boolean => {
  if (origin === undefined) return true
  if (fetchSite?.trim().toLowerCase() === "same-origin") return true
  if (host === undefined) return false
  try {
    const page = new URL(origin)
    if (page.protocol !== "http:" && page.protocol !== "https:") return false
    return new URL(`${page.protocol}//${host.trim()}`).host === page.host
  } catch {
    return false
  }
}

/** The admin API's 403 message. */
export const crossSiteMessage = (origin: string): string =>
  `Origin ${JSON.stringify(origin.slice(0, 200))} may not call the admin API: it accepts requests from ` +
  `Studio's own origin and from clients that send no Origin (curl, scripts), never from another site`
