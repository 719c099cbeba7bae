/**
 * `@janus/sse`: the slow-subscriber event hub of ADR-0197.
 *
 * The map of the package, one module per concept:
 *
 * - {@link Hub}: the service. `publish` events and signals, `subscribe` to a
 *   filter (optionally replaying after a `Last-Event-ID`), `attach` a custom
 *   writer; gauges and stats.
 * - {@link Frame}: events, change signals and the control frames (resync,
 *   reconnect, heartbeat, end), with their SSE bytes and size.
 * - {@link Filter}: which topics a subscriber receives.
 * - {@link Limits}: the ADR's bounds, as constants.
 * - {@link SubscriberQueue}: the bounded, coalescing queue of one subscriber.
 * - {@link Subscriber}: the policy (coalesce, overflow, drop) and the writer.
 * - {@link Handoff}: the writer's write when the subscriber is a stream.
 * - {@link ReplaySource}: the log a replay reads (implemented by storage), with
 *   an in-memory layer.
 * - {@link Replay}: `Last-Event-ID` replay, its cap and its seam.
 * - {@link Metrics}: `studio.sse.dropped{reason}` and `studio.sse.subscribers`.
 * - {@link Wire}: SSE bytes, proxy headers, the `HttpServerResponse` for
 *   `GET /api/v1/events`, `Last-Event-ID` parsing.
 *
 * @since 0.1.0
 */

/** Events, change signals and control frames; their SSE bytes and size. */
export * as Frame from "./Frame.ts"

/** Which topics a subscriber receives. */
export * as Filter from "./Filter.ts"

/** The ADR-0197 bounds as constants (not settings). */
export * as Limits from "./Limits.ts"

/** The hand-written bounded, coalescing queue of one subscriber. */
export * as SubscriberQueue from "./SubscriberQueue.ts"

/** One subscriber: the slow-subscriber policy and its writer fiber. */
export * as Subscriber from "./Subscriber.ts"

/** The writer-to-socket rendezvous that makes a blocked write visible. */
export * as Handoff from "./Handoff.ts"

/** The hub service and its layer. */
export * as Hub from "./Hub.ts"

/** The ordered event log interface, its error, and an in-memory layer. */
export * as ReplaySource from "./ReplaySource.ts"

/** Last-Event-ID replay: fetch with a cap, batches, release of the hold buffer. */
export * as Replay from "./Replay.ts"

/** `studio.sse.dropped` and `studio.sse.subscribers`. */
export * as Metrics from "./Metrics.ts"

/** SSE bytes, headers, the events HttpServerResponse, Last-Event-ID parsing. */
export * as Wire from "./Wire.ts"
