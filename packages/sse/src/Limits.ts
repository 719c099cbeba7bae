/**
 * The limits of ADR-0197, as constants.
 *
 * **Details**
 *
 * ADR-0197: "The limits are constants of Subscriber, not settings: they bound
 * Studio's own memory, and an operator has no better value to give." Nothing
 * here is read from the environment. Tests shorten time through the `Clock`
 * the hub is built with, never by changing these values.
 *
 * **Gotchas**
 *
 * - The frame and byte bounds count the frames a subscriber holds: the ones
 *   queued and the batch its writer is writing. A stalled subscriber therefore
 *   holds at most {@link MAX_QUEUED_BYTES} of frames, plus the socket's own
 *   write buffer (Node's 16 KiB high-water mark) and its control frames.
 * - Control frames (resync, reconnect, heartbeat, end) are always admitted: they
 *   are what the policy falls back to, and a subscriber holds at most a few.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"

/** At most this many frames are held per subscriber, and per replay hold buffer. */
export const MAX_QUEUED_FRAMES = 1_000

/** At most this many bytes (sum of {@link frameSize}) are held per subscriber, and per replay hold buffer. */
export const MAX_QUEUED_BYTES = 1024 * 1024

/**
 * Added to the encoded length of every frame to give its size.
 *
 * Why 512: a queued frame costs more than its text, and the bound is meant to
 * bound real memory. Measured on Node 24 / V8 (bench/fanout.ts,
 * `heapPerFrame`): a small change signal costs about 490 bytes beyond its SSE
 * text (the frame object, its `about` array and coalescing key, the index
 * entry, the queue node, and the `Uint8Array` with its own backing store, the
 * largest part at ~220 bytes); a 1 KiB event about 335. With 512, 1,000 tiny
 * signals weigh what they really cost (about 0.6 MiB) instead of almost
 * nothing, and accounted bytes are never below real ones.
 */
export const FRAME_OVERHEAD_BYTES = 512

/** Three overflows ... */
export const OVERFLOW_LIMIT = 3

/** ... within 60 seconds drop the subscriber. */
export const OVERFLOW_WINDOW: Duration.Duration = Duration.seconds(60)

/** A single write blocked for more than this drops the subscriber. */
export const BLOCKED_WRITE_LIMIT: Duration.Duration = Duration.seconds(30)

/**
 * Every subscriber is sent a heartbeat comment this often when it has nothing
 * queued. The tick also runs the blocked-write check, so a blocked write is
 * detected at most `BLOCKED_WRITE_LIMIT + HEARTBEAT_INTERVAL` after it started,
 * even when nothing is published.
 */
export const HEARTBEAT_INTERVAL: Duration.Duration = Duration.seconds(15)

/**
 * A `Last-Event-ID` replay sends at most this many events; a larger gap gets
 * one resync instead.
 */
export const REPLAY_CAP = 10_000

/**
 * The writer hands at most this many frames to one write. Small batches keep a
 * write's duration meaningful for the blocked-write rule and keep fairness
 * between subscribers; large enough to amortise a socket write.
 */
export const WRITE_BATCH_FRAMES = 64

/** The writer hands at most this many bytes to one write (a larger single frame goes alone). */
export const WRITE_BATCH_BYTES = 64 * 1024

/** The `retry:` sent at the start of every stream: how long a client waits before reconnecting on its own. */
export const RECONNECT_DELAY: Duration.Duration = Duration.seconds(3)

/** @internal */
export const OVERFLOW_WINDOW_MILLIS = Duration.toMillis(OVERFLOW_WINDOW)

/** @internal */
export const BLOCKED_WRITE_LIMIT_MILLIS = Duration.toMillis(BLOCKED_WRITE_LIMIT)
