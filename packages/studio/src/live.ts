/**
 * The one connection to `GET /api/v1/events`.
 *
 * **Rules**
 *
 * - One stream per signed-in tab, opened with `fetch` so the admin token
 *   goes in `Authorization` (EventSource cannot send it).
 * - Every reconnect sends the last event id seen as `Last-Event-ID`, so the
 *   server replays what was missed (or sends one resync when the gap is too
 *   large).
 * - The delay before reconnecting is the server's `retry:` (3 s; `retry: 0`
 *   with a `reconnect` frame means at once), doubled after each failed
 *   attempt up to 30 s.
 * - The status (`connecting`, `live`, `reconnecting`, `refused`) is
 *   published so the UI can show it; a 401/403 stops retrying.
 */
import { decodeFrame, type LiveFrame } from "./resources.ts"
import { SseParser } from "./sse.ts"

export type LiveStatus = "connecting" | "live" | "reconnecting" | "refused" | "closed"

export interface LiveHandlers {
  readonly onFrame: (frame: LiveFrame) => void
  readonly onStatus: (status: LiveStatus) => void
}

export const MAX_DELAY_MS = 30_000

/** The next delay: the server's retry for the first attempt, doubled per failure, capped. */
export const nextDelay = (serverRetryMs: number, failures: number): number =>
  Math.min(MAX_DELAY_MS, failures <= 0 ? serverRetryMs : Math.max(serverRetryMs, 500) * 2 ** failures)

export const connect = (token: string, handlers: LiveHandlers): { close: () => void } => {
  let closed = false
  let controller: AbortController | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let lastEventId: string | undefined
  let retryMs = 3000
  let failures = 0

  const run = async () => {
    if (closed) return
    controller = new AbortController()
    handlers.onStatus(lastEventId === undefined && failures === 0 ? "connecting" : "reconnecting")
    let immediate = false
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: "text/event-stream" }
      if (lastEventId !== undefined) headers["last-event-id"] = lastEventId
      const response = await fetch("/api/v1/events", { headers, signal: controller.signal, cache: "no-store" })
      if (response.status === 401 || response.status === 403) {
        handlers.onStatus("refused")
        return
      }
      if (!response.ok || response.body === null) throw new Error(`events answered ${response.status}`)
      const parser = new SseParser(lastEventId)
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      handlers.onStatus("live")
      failures = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        for (const sse of parser.push(value)) {
          lastEventId = parser.lastEventId
          if (sse.event === "reconnect") immediate = true
          const frame = decodeFrame(sse.event, sse.data)
          if (frame !== undefined) handlers.onFrame(frame)
        }
        lastEventId = parser.lastEventId
        if (parser.retry !== undefined) retryMs = parser.retry
      }
    } catch {
      failures++
    }
    if (closed) return
    handlers.onStatus("reconnecting")
    timer = setTimeout(run, immediate ? 0 : nextDelay(retryMs, failures))
  }

  void run()
  return {
    close: () => {
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      controller?.abort()
      handlers.onStatus("closed")
    }
  }
}
