import { describe, expect, it } from "vitest"
import { SseParser } from "../src/sse.ts"

describe("SseParser", () => {
  it("parses events, signals, resync, comments and retry across chunk boundaries", () => {
    const p = new SseParser()
    const text = "retry: 3000\n\nid: 42\nevent: event\ndata: {\"topic\":\"calls\",\"data\":{}}\n\n: heartbeat\n\n" +
      "id: 43\r\nevent: signal\r\ndata: {\"topic\":\"connection\",\"about\":[\"c1\"]}\r\n\r\nevent: resync\ndata: {}\n\n"
    const frames = [...text].flatMap((ch) => p.push(ch))
    expect(frames.map((f) => [f.event, f.id])).toEqual([["event", "42"], ["signal", "43"], ["resync", "43"]])
    expect(frames[1]!.data).toBe("{\"topic\":\"connection\",\"about\":[\"c1\"]}")
    expect(p.retry).toBe(3000)
    expect(p.lastEventId).toBe("43")
  })

  it("joins multi-line data, keeps the id given at construction, and ignores an empty frame", () => {
    const p = new SseParser("7")
    expect(p.push("\n\ndata: a\ndata: b\n\n")).toEqual([{ event: "message", data: "a\nb", id: "7" }])
  })

  it("waits for LF after a trailing CR", () => {
    const p = new SseParser()
    expect(p.push("event: resync\r")).toEqual([])
    expect(p.push("\ndata: {}\r\n\r\n")).toEqual([{ event: "resync", data: "{}", id: undefined }])
  })
})
