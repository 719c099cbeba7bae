/**
 * Tool-list change signals for the streams that carry
 * `notifications/tools/list_changed`: the 2026-07-28 `subscriptions/listen`
 * stream, the 2025-era GET stream and the deprecated HTTP+SSE stream.
 *
 * Rule (SPEC "list-changed notifications ... are change signals: coalesced per
 * ADR-0197"): a change signal is replaced by a newer one, so a subscriber that
 * falls behind receives one notification, never a backlog. Each subscriber
 * holds at most one pending signal.
 *
 * This is a small adapter so the sse package's subscriber hub can replace it:
 * `layerFromCatalog` fans `ToolCatalog.changes` out through a sliding PubSub
 * of capacity 1 (per-subscriber coalescing); another layer can provide the
 * same service from the hub.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, PubSub, type Scope, Stream } from "effect"
import { ToolCatalog } from "./ToolCatalog.ts"

/** @since 0.1.0 */
export class ListChangedSignals extends Context.Service<ListChangedSignals, {
  /**
   * Subscribes now (changes after this point are observed) and returns the
   * coalesced signal stream; the subscription lives as long as the scope.
   */
  readonly subscribe: Effect.Effect<Stream.Stream<void>, never, Scope.Scope>
}>()("@janus/gateway/mcp/ListChangedSignals") {
  /** Signals from `ToolCatalog.changes`, coalesced per subscriber. */
  static readonly layerFromCatalog: Layer.Layer<ListChangedSignals, never, ToolCatalog> = Layer.effect(
    ListChangedSignals,
    Effect.gen(function*() {
      const catalog = yield* ToolCatalog
      const hub = yield* PubSub.sliding<void>(1)
      yield* catalog.changes.pipe(
        Stream.runForEach(() => PubSub.publish(hub, undefined)),
        Effect.forkScoped({ startImmediately: true })
      )
      return ListChangedSignals.of({
        subscribe: Effect.map(PubSub.subscribe(hub), Stream.fromSubscription)
      })
    })
  )
}
