/**
 * Turns this instance's writes into change signals on the event log, and the
 * hub's `tools` signals into MCP list-changed notifications.
 *
 * **Rules**
 *
 * - Each committed write is announced once, by the instance that made it
 *   (storage's `ChangeFeed.local`), as a change signal (an event without
 *   data) on topic = the resource kind (`connection`, `endpoint`, ...) about
 *   the written ids: Studio refetches only what a signal is about.
 * - A write that changes the tool set (connections, endpoints, virtual
 *   servers) also signals topic `tools`. MCP clients' list-changed
 *   notifications are fed by a hub subscriber on that topic, so they are
 *   change signals under ADR-0197: coalesced, bounded, and the same on every
 *   replica since every replica's hub reads the same log. Changes of the
 *   upstream MCP servers' tools (health, their list-changed) are added per
 *   replica from its federated catalog.
 * - A change of an upstream's state on this replica (connecting, healthy,
 *   unhealthy, its channel, its program's pid) is signalled on topic
 *   `upstream`, at most once a second ({@link UPSTREAM_SIGNAL_INTERVAL}):
 *   Studio refetches `/api/v1/upstreams` on it instead of showing the state it
 *   loaded with (and polling nothing); a flapping upstream costs one event a
 *   second, not one per attempt.
 *
 * @since 0.1.0
 */
import { Filter, Hub } from "@janus/sse"
import { ChangeFeed, EventLog } from "@janus/storage"
import { Duration, Effect, Layer, Queue, Stream } from "effect"
import { FederatedCatalog } from "../federation/FederatedCatalog.ts"
import { UpstreamHealth } from "../federation/UpstreamHealth.ts"
import { ListChangedSignals } from "../mcp/ListChanged.ts"

/** The topic whose signals mean "the tool set changed". */
export const TOOLS_TOPIC = "tools"

const toolKinds = new Set(["connection", "endpoint", "virtual_server"])

/** Appends a change signal for every local write. */
export const AnnounceChanges: Layer.Layer<never, never, ChangeFeed | EventLog> = Layer.effectDiscard(
  Effect.gen(function*() {
    const feed = yield* ChangeFeed
    const log = yield* EventLog
    yield* feed.local.pipe(
      Stream.runForEach((change) =>
        Effect.andThen(
          log.append({ topic: change.kind, about: change.ids }),
          toolKinds.has(change.kind) ? log.append({ topic: TOOLS_TOPIC }) : Effect.void
        )
      ),
      Effect.forkScoped({ startImmediately: true })
    )
  })
)

/** The topic whose signals mean "an upstream's state changed on some replica". */
export const UPSTREAM_TOPIC = "upstream"

/** At most one `upstream` signal per replica per interval: enough for a screen, bounded for the log. */
export const UPSTREAM_SIGNAL_INTERVAL = Duration.seconds(1)

/** Appends an `upstream` signal when this replica's upstreams change state, coalesced per interval. */
export const AnnounceUpstreamChanges: Layer.Layer<never, never, EventLog | UpstreamHealth> = Layer.effectDiscard(
  Effect.gen(function*() {
    const log = yield* EventLog
    const health = yield* UpstreamHealth
    // Sliding capacity 1: changes during the pause collapse into one signal after it.
    const pending = yield* Queue.sliding<void>(1)
    yield* health.changes.pipe(
      Stream.runForEach(() => Queue.offer(pending, undefined)),
      Effect.forkScoped({ startImmediately: true })
    )
    yield* Queue.take(pending).pipe(
      Effect.andThen(log.append({ topic: UPSTREAM_TOPIC })),
      Effect.andThen(Effect.sleep(UPSTREAM_SIGNAL_INTERVAL)),
      Effect.forever,
      Effect.forkScoped({ startImmediately: true })
    )
  })
)

const fromHub = (upstreamChanges: Stream.Stream<void> | undefined) =>
  Effect.gen(function*() {
    const hub = yield* Hub.Hub
    return ListChangedSignals.of({
      subscribe: Effect.gen(function*() {
        // Sliding capacity 1: a pending "changed" is all a client needs.
        const pending = yield* Queue.sliding<void>(1)
        yield* hub.attach(Filter.topics([TOOLS_TOPIC]), {
          write: (batch) =>
            batch.some((frame) => frame._tag !== "Heartbeat") ? Queue.offer(pending, undefined) : Effect.void
        })
        if (upstreamChanges !== undefined) {
          yield* upstreamChanges.pipe(
            Stream.runForEach(() => Queue.offer(pending, undefined)),
            Effect.forkScoped({ startImmediately: true })
          )
        }
        return Stream.fromQueue(pending)
      })
    })
  })

/** List-changed signals from a hub subscriber on the `tools` topic. */
export const ListChangedFromHub: Layer.Layer<ListChangedSignals, never, Hub.Hub> = Layer.effect(
  ListChangedSignals,
  fromHub(undefined)
)

/**
 * {@link ListChangedFromHub} plus this replica's upstream MCP servers: their
 * tools come and go with their health and their own list-changed
 * notifications, which no storage write announces. Each replica watches its
 * upstreams itself, so its clients hear what it serves; the signals are
 * coalesced with the hub's in the same per-client slot.
 */
export const ListChangedFromHubAndUpstreams: Layer.Layer<ListChangedSignals, never, Hub.Hub | FederatedCatalog> = Layer
  .effect(
    ListChangedSignals,
    Effect.flatMap(Effect.service(FederatedCatalog), (federated) => fromHub(federated.changes))
  )
