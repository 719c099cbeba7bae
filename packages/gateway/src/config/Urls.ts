/**
 * Two URL rules the configuration checks at startup and the modules it
 * configures apply again at run time, kept in one place so both agree.
 *
 * **Rules**
 *
 * - Loopback hosts (`localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]`) are
 *   the only ones plain http is accepted for without an explicit opt-in
 *   (`OAUTH_HTTP_ISSUERS`).
 * - Issuers are compared after removing one trailing slash (Auth0 issues
 *   `https://tenant.auth0.com/` and operators write it either way); nothing
 *   else is normalised (RFC 9068 §4).
 *
 * @since 0.1.0
 */

/** True for `localhost`, `127.0.0.0/8` and `::1`. */
export const isLoopbackHost = (hostname: string): boolean =>
  hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" ||
  /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)

/** The issuer without one trailing slash: the form issuers are compared in. */
export const normalizeIssuer = (issuer: string): string => issuer.endsWith("/") ? issuer.slice(0, -1) : issuer
