import { describe, expect, it } from "vitest"
import { addLive, changeLines, changeTitle, liveRow, rowKey, shownRows, TAIL_MAX } from "../src/auditLive.ts"

// an `admin` event's data, as AdminChanges publishes it: the row without id, `changes` parsed
const event = (at: string, resourceId: string, versionAfter: number) => ({
  kind: "admin",
  identity: "token:a1",
  outcome: "ok",
  callerName: "ops-alice",
  interface: "api",
  action: "update",
  resourceKind: "connection",
  resourceId,
  resourceName: "pets",
  versionBefore: versionAfter - 1,
  versionAfter,
  changes: { description: { old: null, new: "The pet API" } },
  at
})
// the same change as GET /api/v1/audit answers it: with its id, `changes` as the stored JSON text
const stored = (e: ReturnType<typeof event>, id: number) => ({ ...e, id, changes: JSON.stringify(e.changes) })

describe("admin changes live on the audit page", () => {
  it("a live change and its stored row have one key; distinct changes do not", () => {
    const e = event("2026-12-02T01:00:00.000Z", "c1", 2)
    expect(rowKey(e)).toBe(rowKey(stored(e, 7)))
    expect(rowKey(e)).not.toBe(rowKey(event("2026-12-02T01:00:00.000Z", "c1", 3)))
    expect(rowKey(e)).not.toBe(rowKey(event("2026-12-02T01:00:00.001Z", "c1", 2)))
    expect(rowKey({ kind: "call", tool: "get_pet", at: e.at })).toBeUndefined()
    expect(rowKey({ kind: "call", id: 9 })).toBe("id:9")
  })

  it("a view shows the events of its kind only", () => {
    const e = event("2026-12-02T01:00:00.000Z", "c1", 2)
    expect(liveRow("admin", e, "")).toMatchObject({ kind: "admin", resourceId: "c1" })
    expect(liveRow("admin", e, "admin")).toMatchObject({ kind: "admin" })
    expect(liveRow("admin", e, "call")).toBeUndefined()
    expect(liveRow("admin", e, "auth")).toBeUndefined()
    expect(liveRow("calls", { tool: "get_pet" }, "admin")).toBeUndefined()
    expect(liveRow("calls", { tool: "get_pet" }, "")).toMatchObject({ kind: "call", tool: "get_pet" })
    expect(liveRow("admin", null, "")).toBeUndefined()
    expect(liveRow("connection", e, "")).toBeUndefined()
  })

  it("adds a live change newest first, once: a replayed copy leaves the tail as it was", () => {
    const first = event("2026-12-02T01:00:00.000Z", "c1", 2)
    const second = event("2026-12-02T01:00:01.000Z", "c2", 1)
    const late = event("2026-12-02T01:00:00.500Z", "c3", 4)
    const tail = addLive(addLive(addLive([], first), second), late)
    expect(tail.map((r) => r.resourceId)).toEqual(["c2", "c3", "c1"])
    expect(addLive(tail, { ...first })).toBe(tail)
    // live calls have no key: two identical ones are two calls
    const call = { kind: "call", tool: "get_pet", at: "2026-12-02T01:00:02.000Z" }
    expect(addLive(addLive(tail, call), { ...call })).toHaveLength(5)
  })

  it(`keeps at most ${TAIL_MAX} live rows (200), dropping the oldest`, () => {
    let tail: ReadonlyArray<any> = []
    for (let i = 0; i < 201; i++) {
      tail = addLive(tail, event(new Date(Date.UTC(2026, 11, 2, 1, 0, i)).toISOString(), `c${i}`, 1))
    }
    expect(TAIL_MAX).toBe(200)
    expect(tail).toHaveLength(200)
    expect(tail[0].resourceId).toBe("c200")
    expect(tail.at(-1).resourceId).toBe("c1")
  })

  it("merges the tail over the stored page: the stored row wins over its live copy, newest first", () => {
    const a = event("2026-12-02T01:00:00.000Z", "c1", 2)
    const b = event("2026-12-02T01:00:05.000Z", "c2", 1)
    const older = stored(event("2026-12-02T00:59:00.000Z", "c0", 1), 5)
    const call = { kind: "call", tool: "get_pet", at: "2026-12-02T01:00:03.000Z" }
    const shown = shownRows([b, call, a], [stored(a, 6), older])
    expect(shown.map((r) => r.id ?? r.resourceId ?? r.tool)).toEqual(["c2", "get_pet", 6, 5])
    expect(shownRows([], [older])).toEqual([older])
  })

  it("shows an admin change's fields as diff lines, credentials only as changed", () => {
    expect(changeTitle(event("x", "c1", 2))).toBe("update connection pets")
    expect(changeTitle({ action: "rotate", resourceKind: "master_key", resourceName: null, resourceId: "k2" }))
      .toBe("rotate master key k2")
    // a refused admin write changed nothing: it is named by the request it refused
    expect(changeTitle({ outcome: "refused", action: null, method: "POST", path: "/api/v1/connections" }))
      .toBe("refused POST /api/v1/connections")
    const lines = changeLines(JSON.stringify({
      description: { old: null, new: "The pet API" },
      baseUrl: { old: "http://a", new: "http://b" },
      tags: { old: ["x"], new: null },
      value: "changed"
    }))
    expect(lines).toEqual([
      { key: "description", kind: "added", text: "description: \"The pet API\"" },
      { key: "baseUrl", kind: "changed", text: "baseUrl: \"http://a\" → \"http://b\"" },
      { key: "tags", kind: "removed", text: "tags: [\"x\"]" },
      { key: "value", kind: "changed", text: "value: changed (value not recorded)" }
    ])
    expect(changeLines({ enabled: { old: true, new: false } })).toEqual([
      { key: "enabled", kind: "changed", text: "enabled: true → false" }
    ])
    // stored text cut at 4,096 characters is no JSON: shown as it is
    expect(changeLines("{\"description\":{\"old\":\"aaa")).toEqual([
      { key: "raw", kind: "changed", text: "{\"description\":{\"old\":\"aaa" }
    ])
    expect(changeLines(null)).toEqual([])
  })
})
