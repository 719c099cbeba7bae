/**
 * An incremental `text/event-stream` parser (the WHATWG rules Studio needs):
 * lines end in LF, CR or CRLF; `data` lines join with LF; `id` sets the last
 * event id (kept across frames, as EventSource does); `retry` sets the
 * reconnect delay; comment lines (`: heartbeat`) are ignored; a blank line
 * dispatches a frame unless it has no data and no event name.
 *
 * Studio cannot use `EventSource`: it cannot send `Authorization`, and the
 * admin token must never go into a URL.
 */
export interface SseFrame {
  readonly event: string
  readonly data: string
  /** The last event id in force when this frame was dispatched. */
  readonly id: string | undefined
}

export class SseParser {
  #buffer = ""
  #event = ""
  #data: Array<string> = []
  #sawData = false
  /** The last event id seen (`id:` field), sent back as `Last-Event-ID`. */
  lastEventId: string | undefined
  /** The last `retry:` in milliseconds, if any. */
  retry: number | undefined

  constructor(lastEventId?: string) {
    this.lastEventId = lastEventId
  }

  /** Feeds a chunk of text; returns the frames it completes. */
  push(chunk: string): Array<SseFrame> {
    this.#buffer += chunk
    const frames: Array<SseFrame> = []
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer)
      if (match === null) break
      // a lone CR at the very end may be the first half of CRLF: wait for more
      if (match[0] === "\r" && match.index === this.#buffer.length - 1) break
      const line = this.#buffer.slice(0, match.index)
      this.#buffer = this.#buffer.slice(match.index + match[0].length)
      const frame = this.#line(line)
      if (frame !== undefined) frames.push(frame)
    }
    return frames
  }

  #line(line: string): SseFrame | undefined {
    if (line === "") {
      const dispatch = this.#sawData || this.#event !== ""
      const frame = dispatch
        ? { event: this.#event === "" ? "message" : this.#event, data: this.#data.join("\n"), id: this.lastEventId }
        : undefined
      this.#event = ""
      this.#data = []
      this.#sawData = false
      return frame
    }
    if (line.startsWith(":")) return undefined
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    switch (field) {
      case "event":
        this.#event = value
        break
      case "data":
        this.#data.push(value)
        this.#sawData = true
        break
      case "id":
        if (!value.includes("\0")) this.lastEventId = value
        break
      case "retry":
        if (/^\d+$/.test(value)) this.retry = Number(value)
        break
    }
    return undefined
  }
}
