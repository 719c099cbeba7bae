/**
 * A reader of the admin event stream (`GET /api/v1/events`) for the harness:
 * it records each event's id and data as it arrives and reports how the
 * connection ended, so a test can resume with `Last-Event-ID` elsewhere.
 */
import { BACKEND_HEADER } from "./Proxy.ts"

export interface ReceivedEvent {
  readonly id: number
  readonly event: string
  readonly data: any
}

export interface EventReader {
  /** The replica the proxy sent the stream to. */
  readonly backend: string
  readonly events: Array<ReceivedEvent>
  /** Resolves when the connection ends (cut, closed, or aborted). */
  readonly ended: Promise<void>
  readonly close: () => void
}

export const openEvents = async (
  base: string,
  adminToken: string,
  options: { readonly topics?: string; readonly lastEventId?: number } = {}
): Promise<EventReader> => {
  const controller = new AbortController()
  const url = new URL("/api/v1/events", base)
  if (options.topics !== undefined) url.searchParams.set("topics", options.topics)
  const response = await fetch(url, {
    headers: {
      authorization: `Bearer ${adminToken}`,
      accept: "text/event-stream",
      ...(options.lastEventId === undefined ? {} : { "last-event-id": String(options.lastEventId) })
    },
    signal: controller.signal
  })
  if (response.status !== 200 || response.body === null) {
    throw new Error(`GET /api/v1/events answered ${response.status}: ${await response.text()}`)
  }
  const events: Array<ReceivedEvent> = []
  const ended = (async () => {
    const decoder = new TextDecoder()
    let buffer = ""
    try {
      for await (const chunk of response.body!) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true })
        let end: number
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          let id: string | undefined
          let event = "message"
          const data: Array<string> = []
          for (const line of frame.split("\n")) {
            if (line.startsWith("id:")) id = line.slice(3).trim()
            else if (line.startsWith("event:")) event = line.slice(6).trim()
            else if (line.startsWith("data:")) data.push(line.slice(5).trimStart())
          }
          if (id !== undefined && id !== "" && data.length > 0) {
            events.push({ id: Number(id), event, data: JSON.parse(data.join("\n")) })
          }
        }
      }
    } catch {
      // cut: the replica died, or we aborted
    }
  })()
  return {
    backend: response.headers.get(BACKEND_HEADER) ?? "",
    events,
    ended,
    close: () => controller.abort()
  }
}
