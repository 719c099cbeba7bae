/**
 * The pure pieces of the upstream layer: newline-delimited JSON framing
 * (`upstream/Wire.ts`), the stdio allow-list (`StdioAllowList.ts`), and the
 * scrubbing of a program's stderr (`upstream/StdioProcess.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as StdioAllowList from "../../src/federation/StdioAllowList.ts"
import { resolveExecutable, scrub } from "../../src/federation/upstream/StdioProcess.ts"
import * as Wire from "../../src/federation/upstream/Wire.ts"

const bytes = (...chunks: ReadonlyArray<string>) => Stream.fromIterable(chunks.map((c) => new TextEncoder().encode(c)))

const lines = (limit: number, ...chunks: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    yield* Wire.readLines("test", bytes(...chunks), limit, (line) => Effect.sync(() => seen.push(line) > 0))
    return seen
  })

describe("upstream wire", () => {
  it.effect("newline-delimited JSON: lines across chunks, CRLF, blank lines, an unterminated last line", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* lines(100, "{\"a\":1}\n{\"b\"", ":2}\r\n\n  \n{\"c\":3}\n", "{\"d\":4}"),
        ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "{\"d\":4}"]
      )
      // the limit holds for a line split over chunks too, and fails before the rest is read
      const error = yield* Effect.flip(lines(10, "{\"a\":\"12", "3456789\"}\n"))
      assert.include(error.detail, "larger than 10 bytes")
      assert.deepStrictEqual(yield* lines(10, "0123456789\n"), ["0123456789"])
    }))

  it("messages: one, a batch, and what is not JSON-RPC is left out", () => {
    assert.deepStrictEqual(
      Wire.parseMessages("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"),
      [
        { _tag: "Notification", method: "notifications/tools/list_changed", params: {} }
      ]
    )
    const batch = Wire.parseMessages(
      "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}},{\"jsonrpc\":\"1.0\",\"id\":2,\"result\":{}},{\"id\":3},7]"
    )
    assert.deepStrictEqual(batch, [{ _tag: "Response", id: 1, result: {}, error: undefined }])
    assert.isUndefined(Wire.parseMessages("Starting server..."))
  })
})

describe("JANUS_STDIO_COMMANDS", () => {
  it("names, absolute paths and * within one path segment; nothing when empty", () => {
    const none = StdioAllowList.make([])
    assert.isFalse(none.allows("npx"))
    assert.include(none.expected, "JANUS_STDIO_COMMANDS")
    const list = StdioAllowList.make(["npx", "/opt/mcp/bin/*", "node.exe", " uvx "])
    for (const allowed of ["npx", "/opt/mcp/bin/server", "node.exe", "uvx"]) {
      assert.isTrue(list.allows(allowed), allowed)
    }
    for (
      const refused of ["/usr/bin/npx", "npx2", "/opt/mcp/bin/a/b", "/opt/mcp/binx", "nodeXexe", "sh", "/opt/mcp/bin"]
    ) {
      assert.isFalse(list.allows(refused), refused)
    }
    assert.include(list.expected, "/opt/mcp/bin/*")
  })

  it("a bare name is looked up on the gateway's PATH only", () => {
    assert.strictEqual(resolveExecutable(process.execPath), process.execPath)
    assert.isUndefined(resolveExecutable("/nonexistent/program"))
    assert.isUndefined(resolveExecutable("sh", ""))
    assert.isString(resolveExecutable("sh", "/usr/bin:/bin"))
    // relative PATH entries are ignored (they would depend on the gateway's working directory)
    assert.isUndefined(resolveExecutable("sh", "relative/dir"))
  })
})

describe("stderr scrubbing", () => {
  it("replaces secret values, drops control characters, cuts long lines", () => {
    assert.strictEqual(
      scrub("token=s3cr3t-value\u0007 used \u001b[31mred s3cr3t-value", ["s3cr3t-value"]),
      "token=[secret] used [31mred [secret]"
    )
    assert.strictEqual(scrub("x".repeat(2_000), []).length, 1_001)
  })
})
