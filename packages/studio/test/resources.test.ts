import { describe, expect, it } from "vitest"
import { decodeFrame, staleKeys } from "../src/resources.ts"

const screen = [
  "connections",
  "connections/c1",
  "connections/c2",
  "endpoints",
  "client-tokens",
  "tools/jns_abc",
  "health"
]

describe("staleKeys (the live-update reducer)", () => {
  it("refetches only the list and the items a signal is about", () => {
    expect(staleKeys({ _tag: "signal", topic: "connection", about: ["c2"] }, screen)).toEqual([
      "connections",
      "connections/c2",
      "tools/jns_abc"
    ])
    expect(staleKeys({ _tag: "signal", topic: "client_token", about: ["t1"] }, screen)).toEqual(["client-tokens"])
  })

  it("refetches the upstreams' state when one changed on some replica, and nothing else", () => {
    expect(staleKeys({ _tag: "signal", topic: "upstream", about: [] }, [...screen, "upstreams"])).toEqual([
      "upstreams"
    ])
  })

  it("refetches every item of the kind when the signal names no ids", () => {
    expect(staleKeys({ _tag: "signal", topic: "connection", about: [] }, screen)).toEqual([
      "connections",
      "connections/c1",
      "connections/c2",
      "tools/jns_abc"
    ])
  })

  it("refetches nothing off screen, nothing for an unknown topic, nothing for a calls event", () => {
    expect(staleKeys({ _tag: "signal", topic: "virtual_server", about: ["v"] }, ["connections"])).toEqual([])
    expect(staleKeys({ _tag: "signal", topic: "other", about: [] }, screen)).toEqual([])
    expect(staleKeys({ _tag: "event", topic: "calls", data: {} }, screen)).toEqual([])
  })

  it("refetches everything on screen on resync, each key once", () => {
    expect(staleKeys({ _tag: "resync" }, [...screen, "health"])).toEqual(screen)
  })
})

describe("decodeFrame", () => {
  it("decodes the gateway's frames and drops what it does not know", () => {
    expect(decodeFrame("signal", "{\"topic\":\"endpoint\",\"about\":[\"e1\",3]}")).toEqual({
      _tag: "signal",
      topic: "endpoint",
      about: ["e1"]
    })
    expect(decodeFrame("event", "{\"topic\":\"calls\",\"data\":{\"tool\":\"t\"}}")).toEqual({
      _tag: "event",
      topic: "calls",
      data: { tool: "t" }
    })
    expect(decodeFrame("resync", "{}")).toEqual({ _tag: "resync" })
    expect(decodeFrame("reconnect", "{}")).toBeUndefined()
    expect(decodeFrame("signal", "not json")).toBeUndefined()
    expect(decodeFrame("signal", "{\"about\":[]}")).toBeUndefined()
  })
})
