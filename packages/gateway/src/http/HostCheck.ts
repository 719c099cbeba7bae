/**
 * The `Host` check against DNS rebinding: a page on `attacker.example` whose
 * name is re-pointed at this gateway (127.0.0.1, a pod IP) becomes
 * "same-origin" with it for the browser, and no `Origin` check can tell; only
 * the name the browser used, carried in `Host`, gives it away.
 *
 * **Rules**
 *
 * - A request is served when its `Host` (port ignored, case-insensitive, a
 *   trailing dot dropped) is:
 *   - an IP address (v4 or bracketed v6): rebinding needs a name the attacker
 *     controls, never an address, so the kubelet's probes, Prometheus and
 *     pod-to-pod calls by pod IP need no configuration;
 *   - a loopback name: `localhost` and `*.localhost` (browsers resolve those
 *     to loopback themselves, RFC 6761);
 *   - the listen host `JANUS_HOST` when it is a name, and the host of
 *     `OAUTH_RESOURCE` (the public URL the operator already declared);
 *   - a name of `JANUS_ALLOWED_HOSTS`: exact, or `.example.com` for that
 *     domain and its subdomains; `*` turns the check off.
 * - Anything else is 403, with a JSON-RPC error on the MCP paths and the
 *   admin API's error body elsewhere, naming the Host and the setting to
 *   change. A request without `Host` (HTTP/1.0; never a browser) is served.
 * - `/healthz` and `/readyz` are never checked: probes and load balancers
 *   name whatever they like, and the answers hold nothing to steal.
 * - The policy is computed once; a check is a few string operations and one
 *   `Set.has`.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { isIP } from "node:net"
import { JanusConfig } from "../config/JanusConfig.ts"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"

/** Paths answered whatever the Host. */
export const UNCHECKED_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz"])

/** Paths whose clients read JSON-RPC errors. */
const MCP_PATHS = ["/mcp", "/sse", "/messages", "/servers/"]

/** Whether `path` (without its query) is one whose clients read JSON-RPC errors. */
export const isMcpPath = (path: string): boolean =>
  MCP_PATHS.some((prefix) => prefix.endsWith("/") ? path.startsWith(prefix) : path === prefix)

/** What the gateway answers to besides IP addresses and loopback names. */
export interface HostPolicy {
  /** `JANUS_ALLOWED_HOSTS`: names, `.domain` suffixes, or `*`. */
  readonly allowedHosts: ReadonlyArray<string>
  /** `JANUS_HOST`, allowed when it is a name. */
  readonly listenHost?: string | undefined
  /** `OAUTH_RESOURCE`: its host is allowed. */
  readonly resource?: string | undefined
}

/** The name part of a `Host` header value: lowercased, without port and trailing dot; brackets kept for IPv6. */
export const hostName = (host: string): string => {
  const value = host.trim().toLowerCase()
  if (value.startsWith("[")) {
    const end = value.indexOf("]")
    return end === -1 ? value : value.slice(0, end + 1)
  }
  const colon = value.lastIndexOf(":")
  const name = colon === -1 ? value : value.slice(0, colon)
  return name.endsWith(".") ? name.slice(0, -1) : name
}

const isAddress = (name: string): boolean =>
  name.startsWith("[") ? name.endsWith("]") && isIP(name.slice(1, -1)) === 6 : isIP(name) === 4

/** Builds the check once; `check(host)` is `true` when a request with this `Host` may be served. */
export const make = (policy: HostPolicy): (host: string | undefined) => boolean => {
  const exact = new Set<string>(["localhost"])
  const suffixes: Array<string> = [".localhost"]
  let any = false
  for (const entry of policy.allowedHosts) {
    if (entry === "*") any = true
    else if (entry.startsWith(".")) {
      suffixes.push(entry)
      exact.add(entry.slice(1))
    } else exact.add(entry)
  }
  if (policy.listenHost !== undefined) exact.add(hostName(policy.listenHost))
  if (policy.resource !== undefined && URL.canParse(policy.resource)) exact.add(hostName(new URL(policy.resource).host))
  return (host) => {
    if (host === undefined || any) return true
    const name = hostName(host)
    return exact.has(name) || isAddress(name) || suffixes.some((suffix) => name.endsWith(suffix))
  }
}

/** The 403 message: which Host, and how to serve it. */
export const rejectionMessage = (host: string): string =>
  `Host ${JSON.stringify(host.slice(0, 200))} is not a name of this gateway: it answers to IP addresses, ` +
  `localhost, JANUS_HOST, the host of OAUTH_RESOURCE and the names in JANUS_ALLOWED_HOSTS (a page reaching it ` +
  `under another name may be a DNS-rebinding attack); add the name to JANUS_ALLOWED_HOSTS to serve it`

const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

const refusal = (path: string, host: string): HttpServerResponse.HttpServerResponse => {
  const message = rejectionMessage(host)
  const headers = { "cache-control": "no-store", "x-content-type-options": "nosniff" }
  const mcp = isMcpPath(path)
  return mcp ?
    HttpServerResponse.jsonUnsafe({ jsonrpc: "2.0", id: null, error: { code: ErrorCode.invalidRequest, message } }, {
      status: 403,
      headers
    }) :
    HttpServerResponse.jsonUnsafe({ error: { code: "host_not_allowed", message } }, { status: 403, headers })
}

/** What the operator should know at start: the check is off, or only addresses reach a wildcard listener. */
const startNotice = (allowedHosts: ReadonlyArray<string>, listenHost: string): Effect.Effect<void> =>
  allowedHosts.includes("*") ?
    Effect.logWarning("JANUS_ALLOWED_HOSTS is *: every Host is served, without protection against DNS rebinding") :
    allowedHosts.length === 0 && isIP(listenHost) !== 0 && !["127.0.0.1", "::1"].includes(listenHost) ?
    Effect.logInfo(
      `Listening on ${listenHost} with no JANUS_ALLOWED_HOSTS: requests are served under IP addresses and ` +
        "localhost only; list the names clients use in JANUS_ALLOWED_HOSTS"
    ) :
    Effect.void

/** The check as a global middleware, from `JANUS_ALLOWED_HOSTS` and `JANUS_HOST`. */
export const layer: Layer.Layer<never, never, HttpRouter.HttpRouter | JanusConfig> = HttpRouter.middleware(
  Effect.flatMap(Effect.service(JanusConfig), (config) => {
    const allowed = make({
      allowedHosts: config.JANUS_ALLOWED_HOSTS,
      listenHost: config.JANUS_HOST,
      resource: Option.getOrUndefined(config.OAUTH_RESOURCE)
    })
    return Effect.as(
      startNotice(config.JANUS_ALLOWED_HOSTS, config.JANUS_HOST),
      (app) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const host = request.headers.host
          if (allowed(host)) return app
          const path = pathOf(request.url)
          return UNCHECKED_PATHS.has(path) ? app : Effect.succeed(refusal(path, host!))
        })
    )
  }),
  { global: true }
)
