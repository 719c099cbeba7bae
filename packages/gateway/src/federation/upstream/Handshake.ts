/**
 * The 2025-era handshake every stateful transport shares (Streamable HTTP
 * sessions, HTTP+SSE, stdio): what `initialize` offers and what its result
 * must hold.
 *
 * **Rules**
 *
 * - `initialize` offers the newest stateful revision (2025-11-25), Janus's
 *   client capabilities (`CLIENT_CAPABILITIES`: what calling clients may be
 *   asked, relayed to them) and the gateway's client info.
 * - The result must name a stateful revision Janus speaks
 *   (`STATEFUL_VERSIONS`); anything else is `unavailable`, naming the
 *   revision (cut to 40 characters).
 * - `open` is the whole opening: `initialize`, its result checked, and only
 *   then `notifications/initialized`.
 *
 * @since 0.1.0
 */
import { Effect, Predicate } from "effect"
import { STATEFUL_VERSIONS } from "../../mcp/Protocol.ts"
import { unavailable, type UpstreamError } from "../Errors.ts"
import { CLIENT_CAPABILITIES, type Negotiated } from "./Session.ts"
import * as Wire from "./Wire.ts"

const statefulVersions: ReadonlyArray<string> = STATEFUL_VERSIONS

/** The params of `initialize`. */
export const initializeParams = (clientInfo: { readonly name: string; readonly version: string }): Wire.Params => ({
  protocolVersion: statefulVersions[0],
  capabilities: CLIENT_CAPABILITIES,
  clientInfo
})

/** Checks an `initialize` result. */
export const accept = (connection: string, result: unknown): Effect.Effect<Negotiated, UpstreamError> => {
  if (!Predicate.isReadonlyObject(result) || typeof result.protocolVersion !== "string") {
    return Effect.fail(unavailable(connection, "the initialize result has no protocolVersion"))
  }
  if (!statefulVersions.includes(result.protocolVersion)) {
    return Effect.fail(unavailable(
      connection,
      `the upstream chose protocol ${result.protocolVersion.slice(0, 40)}, which Janus does not speak`
    ))
  }
  return Effect.succeed({
    protocolVersion: result.protocolVersion,
    capabilities: Predicate.isReadonlyObject(result.capabilities) ? result.capabilities : {},
    serverInfo: Predicate.isReadonlyObject(result.serverInfo) ? result.serverInfo : undefined,
    instructions: typeof result.instructions === "string" ? result.instructions : undefined
  })
}

/** The opening of a 2025-era session: `initialize`, its result checked, then `notifications/initialized`. */
export const open = (
  connection: string,
  clientInfo: { readonly name: string; readonly version: string },
  session: {
    readonly request: (method: string, params: Wire.Params) => Effect.Effect<Wire.Params, UpstreamError>
    readonly notify: (method: string, params: Wire.Params) => Effect.Effect<void, UpstreamError>
  }
): Effect.Effect<Negotiated, UpstreamError> =>
  session.request("initialize", initializeParams(clientInfo)).pipe(
    Effect.flatMap((result) => accept(connection, result)),
    Effect.tap(() => session.notify("notifications/initialized", {}))
  )
