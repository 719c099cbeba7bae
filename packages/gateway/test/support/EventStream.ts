/**
 * A reader of `GET /api/v1/events` (Server-Sent Events) for tests: the
 * events of the stream (comments skipped) until a condition holds.
 */
import { Effect } from "effect"
import { HttpServer } from "effect/http"

export interface SseEvent {
  readonly id?: string
  readonly event?: string
  readonly data?: string
}

/** What `collect` read: the response's status and headers, its body when not 200, the events otherwise. */
export interface Collected {
  readonly status: number
  readonly headers: globalThis.Headers
  readonly body: string
  readonly events: ReadonlyArray<SseEvent>
}

const baseUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(base))

/** Reads SSE events from `path` until `until` says stop (or `timeoutMs` pass). */
export const collect = (
  path: string,
  headers: Record<string, string>,
  until: (events: ReadonlyArray<SseEvent>) => boolean,
  timeoutMs = 10_000
): Effect.Effect<Collected, never, HttpServer.HttpServer> =>
  Effect.flatMap(baseUrl, (base) =>
    Effect.promise(async (): Promise<Collected> => {
      const controller = new AbortController()
      const timer = setTimeout(() => controller.abort(), timeoutMs)
      const response = await fetch(new URL(path, base), { headers, signal: controller.signal })
      const events: Array<SseEvent> = []
      if (response.status !== 200) {
        clearTimeout(timer)
        return { status: response.status, headers: response.headers, body: await response.text(), events }
      }
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ""
      try {
        while (!until(events)) {
          const { done, value } = await reader.read()
          if (done) break
          buffer += value
          let end: number
          while ((end = buffer.indexOf("\n\n")) !== -1) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const event: Record<string, string> = {}
            for (const line of block.split("\n")) {
              const colon = line.indexOf(":")
              if (colon <= 0) continue
              event[line.slice(0, colon)] = line.slice(colon + 1).trimStart()
            }
            if (Object.keys(event).length > 0) events.push(event)
          }
        }
      } catch {
        // aborted by the timer: return what arrived
      } finally {
        clearTimeout(timer)
        controller.abort()
      }
      return { status: response.status, headers: response.headers, body: "", events }
    }))
