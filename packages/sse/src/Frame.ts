/**
 * What flows to a subscriber: data frames (events and change signals) and the
 * control frames of the policy (resync, reconnect, heartbeat, end).
 *
 * **Details**
 *
 * - An `Event` carries data; a `Signal` ("a frame without data", ADR-0197) says
 *   that the resources in `about` changed and the client should refetch them.
 * - The size of a frame is the UTF-8 length of its SSE text plus
 *   {@link Limits.FRAME_OVERHEAD_BYTES} (ADR-0197: "the size of a frame is its
 *   text plus a fixed overhead").
 * - A signal's `coalesceKey` is its topic and its `about` set (order and
 *   duplicates ignored): two signals with the same key are interchangeable, so
 *   a queued one may be replaced by the newer one (ADR-0197 "Signals are
 *   coalesced").
 *
 * Wire format (`text/event-stream`):
 *
 * ```text
 * id: 42
 * event: event
 * data: {"topic":"audit","data":{...}}
 *
 * id: 43
 * event: signal
 * data: {"topic":"config","about":["connection:7"]}
 *
 * event: resync        <- refetch everything; no id, so Last-Event-ID is unchanged
 * data: {}
 *
 * retry: 0             <- reconnect at once, sending Last-Event-ID ...
 *
 * event: reconnect     <- ... then the server ends the stream
 * data: {}
 *
 * : heartbeat
 * ```
 *
 * **Gotchas**
 *
 * - Frames are shared by every subscriber they are published to. The SSE text
 *   is computed once, lazily, when the frame is first queued, and encoded to
 *   bytes once, when first written: a publish with no subscriber for the topic
 *   never serialises anything (publish is on the tools/call path), and a frame
 *   a stalled subscriber holds stays text (the cheaper form to hold).
 * - `data` that `JSON.stringify` rejects (a cycle, a bigint) is sent as `null`
 *   rather than failing the publisher.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Sse from "effect/encoding/Sse"
import { FRAME_OVERHEAD_BYTES } from "./Limits.ts"
import type { LoggedEvent } from "./ReplaySource.ts"

const utf8 = new TextEncoder()

const render = (id: number | undefined, event: string, data: string): string =>
  Sse.encoder.write({ _tag: "Event", id: id === undefined ? undefined : String(id), event, data })

const stringify = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return "null"
  }
}

abstract class Base {
  // Held as text until first written: a JS string lives in the heap at about one byte per character, while
  // each encoded frame has a backing store of its own (about 300 bytes more per frame held, measured with
  // 1,000 stalled subscribers in bench/stalled.ts). Once encoded, the text is let go.
  #text: string | undefined
  #bytes: Uint8Array | undefined
  #length = -1
  protected abstract render(): string
  private textOf(): string {
    return this.#text ??= this.render()
  }
  /** The SSE text of this frame, UTF-8 encoded; computed once, when first written. */
  get bytes(): Uint8Array {
    if (this.#bytes === undefined) {
      this.#bytes = utf8.encode(this.textOf())
      this.#length = this.#bytes.length
      this.#text = undefined
    }
    return this.#bytes
  }
  /** `bytes.length + FRAME_OVERHEAD_BYTES`: what this frame counts against the 1 MiB bound. */
  get size(): number {
    if (this.#length < 0) this.#length = Buffer.byteLength(this.textOf(), "utf8")
    return this.#length + FRAME_OVERHEAD_BYTES
  }
}

/** An event with data: `id`, `topic`, `data`. */
export class Event extends Base {
  readonly _tag = "Event" as const
  readonly id: number
  readonly topic: string
  readonly data: unknown
  constructor(id: number, topic: string, data: unknown) {
    super()
    this.id = id
    this.topic = topic
    this.data = data
  }
  protected render(): string {
    return render(this.id, "event", `{"topic":${JSON.stringify(this.topic)},"data":${stringify(this.data)}}`)
  }
}

/** A change signal: `id`, `topic` and the resources it is `about`; no payload. */
export class Signal extends Base {
  readonly _tag = "Signal" as const
  readonly id: number
  readonly topic: string
  readonly about: ReadonlyArray<string>
  #coalesceKey: string | undefined
  constructor(id: number, topic: string, about: ReadonlyArray<string>) {
    super()
    this.id = id
    this.topic = topic
    this.about = about
  }
  /** Equal for two signals of the same topic about the same set of resources. Computed once, when first queued. */
  get coalesceKey(): string {
    return this.#coalesceKey ??= JSON.stringify([this.topic, Array.from(new Set(this.about)).sort()])
  }
  protected render(): string {
    return render(this.id, "signal", JSON.stringify({ topic: this.topic, about: this.about }))
  }
}

/** The client must refetch its state: frames were dropped (overflow) or cannot be replayed. */
export class Resync extends Base {
  readonly _tag = "Resync" as const
  protected render(): string {
    return render(undefined, "resync", "{}")
  }
}

/** The client must reconnect at once with its Last-Event-ID; the stream ends after it. */
export class Reconnect extends Base {
  readonly _tag = "Reconnect" as const
  protected render(): string {
    const retry = Sse.encoder.write(new Sse.Retry({ duration: Duration.zero, lastEventId: undefined }))
    return retry + Sse.encoder.write({ _tag: "Event", id: undefined, event: "reconnect", data: "{}" })
  }
}

/** An SSE comment that keeps idle connections (and proxies) alive and gives the blocked-write check a tick. */
export class Heartbeat extends Base {
  readonly _tag = "Heartbeat" as const
  protected render(): string {
    return ": heartbeat\n\n"
  }
}

/** The end-of-stream marker: the writer stops when it reaches it. Never written. */
export class End extends Base {
  readonly _tag = "End" as const
  protected render(): string {
    return ""
  }
}

/** A frame that can be published: an event or a change signal. */
export type Data = Event | Signal

/** A control frame of the slow-subscriber policy. */
export type Control = Resync | Reconnect | Heartbeat | End

/** Anything a subscriber can hold. `End` is never emitted by a subscription stream. */
export type Frame = Data | Control

/** Builds an event frame. */
export const event = (options: { readonly id: number; readonly topic: string; readonly data: unknown }): Event =>
  new Event(options.id, options.topic, options.data)

/** Builds a change-signal frame. */
export const signal = (
  options: { readonly id: number; readonly topic: string; readonly about: ReadonlyArray<string> }
): Signal => new Signal(options.id, options.topic, options.about)

/** The shared resync frame. */
export const resync: Resync = new Resync()

/** The shared reconnect frame. */
export const reconnect: Reconnect = new Reconnect()

/** The shared heartbeat frame. */
export const heartbeat: Heartbeat = new Heartbeat()

/** The shared end-of-stream marker. */
export const end: End = new End()

/** A row of the event log as a frame: `data: null` is a change signal, anything else an event. */
export const fromLogged = (row: LoggedEvent): Data =>
  row.data === null
    ? new Signal(row.id, row.topic, row.about)
    : new Event(row.id, row.topic, row.data)

/** `true` for events and signals, the frames counted in `studio.sse.dropped`. */
export const isData = (frame: Frame): frame is Data => frame._tag === "Event" || frame._tag === "Signal"
