/**
 * What the MCP endpoint serves besides tools: resources, resource templates,
 * prompts and completion, as a service the federation implements from its
 * upstreams (see `federation/FederatedFeatures.ts`) and tests may implement
 * in memory. Without it the endpoint serves empty lists.
 *
 * **Contract**
 *
 * - `list(caller, kind)` returns what `caller` sees of `kind`, ordered by
 *   `key` (the served URI, URI template or prompt name): pagination relies
 *   on the order (see `Cursor.ts`).
 * - `route(caller, method, params)` resolves a `resources/read`,
 *   `resources/subscribe` / `unsubscribe`, `prompts/get` or
 *   `completion/complete` to what owns it without calling anything: `label`
 *   is what the guard authorizes and audits (`<connection>/<name or uri>`),
 *   `run` performs it. Unknown names and malformed params fail at once with
 *   Invalid Params (-32602) or, for a resource, Resource not found (-32002).
 * - `capabilities(caller)` is what the upstreams in the caller's view offer
 *   (`resources` with `subscribe` / `listChanged`, `prompts`,
 *   `completions`): advertised in `initialize` and `server/discover`.
 * - `changes` emits the kind whose list changed (`resources` covers
 *   templates); `updatesFor(caller)` emits, for a resource that changed
 *   upstream (`notifications/resources/updated`), the URIs under which the
 *   caller's view serves it: none when its upstream is outside that view, so
 *   a caller never hears of another view's resources, even one with the
 *   same URI. It subscribes when it runs, not when its stream is first
 *   pulled: a listen subscribes before it holds its URIs and acknowledges,
 *   so an update the upstream sends right after it was asked is not lost.
 * - `hold(caller, uri)` keeps the owner of `uri` telling of its updates
 *   until the scope closes: a 2025 session holds each URI it subscribed to
 *   until it unsubscribes or ends, a 2026-07-28 `subscriptions/listen` its
 *   `resourceSubscriptions` while it is open. A URI outside the caller's
 *   view holds nothing (`false`); it never fails.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, type Scope, Stream } from "effect"
import type { Caller } from "./Caller.ts"
import type { ProtocolError } from "./JsonRpc.ts"
import type { ToolCallRefused } from "./ToolCatalog.ts"

/** A list the endpoint serves. */
export type FeatureKind = "resources" | "resourceTemplates" | "prompts"

/** The list kinds a change signal names (`resources` covers templates). */
export type ChangeKind = "resources" | "prompts"

/** One listed item: its sort key and what goes on the wire. */
export interface FeatureItem {
  readonly key: string
  readonly json: Readonly<Record<string, unknown>>
}

/** Server capabilities beyond tools and logging. */
export interface FeatureCapabilities {
  readonly resources?: { readonly subscribe?: boolean; readonly listChanged?: boolean } | undefined
  readonly prompts?: { readonly listChanged?: boolean } | undefined
  readonly completions?: Readonly<Record<string, never>> | undefined
}

/** The methods `route` serves. */
export const ROUTED_METHODS: ReadonlySet<string> = new Set([
  "resources/read",
  "resources/subscribe",
  "resources/unsubscribe",
  "prompts/get",
  "completion/complete"
])

/** A resolved request: the guard's label and the work. */
export interface Route {
  /** `<connection>/<prompt name or resource URI>`: authorized like a tool name, and audited. */
  readonly label: string
  /** The result object, as the upstream gave it (minus `resultType` and its `serverInfo` `_meta`). */
  readonly run: Effect.Effect<Readonly<Record<string, unknown>>, ProtocolError | ToolCallRefused>
}

/** @since 0.1.0 */
export class Features extends Context.Service<Features, {
  readonly capabilities: (caller: Caller) => Effect.Effect<FeatureCapabilities>
  readonly list: (caller: Caller, kind: FeatureKind) => Effect.Effect<ReadonlyArray<FeatureItem>>
  readonly route: (
    caller: Caller,
    method: string,
    params: Readonly<Record<string, unknown>>
  ) => Effect.Effect<Route, ProtocolError>
  readonly changes: Stream.Stream<ChangeKind>
  /** Subscribes when run (before the caller holds anything, so no update is missed); see the module doc. */
  readonly updatesFor: (caller: Caller) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>
  readonly hold: (caller: Caller, uri: string) => Effect.Effect<boolean, never, Scope.Scope>
}>()("@janus/gateway/mcp/Features") {
  /** Nothing besides tools: empty lists, no capabilities. */
  static readonly layerEmpty: Layer.Layer<Features> = Layer.succeed(
    Features,
    Features.of({
      capabilities: () => Effect.succeed({}),
      list: () => Effect.succeed([]),
      route: () => Effect.die(new Error("Features.layerEmpty routes nothing")),
      changes: Stream.never,
      updatesFor: () => Effect.succeed(Stream.never),
      hold: () => Effect.succeed(false)
    })
  )
}
