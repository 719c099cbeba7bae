import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { call, egress, httpServer, trustLoopback } from "./servers.ts"

// The test allow-lists its own loopback server (127.0.0.1/32 only), the way an
// operator allow-lists an internal service, and makes it redirect elsewhere.
const redirector = httpServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x")
  if (url.pathname === "/to") {
    res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: url.searchParams.get("u") ?? "/" })
    return res.end("moved")
  }
  const loop = /^\/loop\/(\d+)$/.exec(url.pathname)
  if (loop !== null) {
    res.writeHead(302, { location: `/loop/${Number(loop[1]) + 1}` })
    return res.end()
  }
  res.writeHead(200, { "content-type": "text/plain" })
  res.end(`final ${req.method}`)
})

const to = (target: string, status = 302) => `/to?status=${status}&u=${encodeURIComponent(target)}`

describe("redirects", () => {
  it.live("follows a same-origin redirect", () =>
    Effect.gen(function*() {
      const server = yield* redirector
      const response = yield* call({ id: "r", baseUrl: server.origin, allow: trustLoopback }, {
        method: "GET",
        path: to("/final")
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.redirects, 1)
      assert.strictEqual(new URL(response.url).pathname, "/final")
    }).pipe(Effect.provide(egress())))

  describe("refuses a redirect to a refused address before dialling it", () => {
    const targets: ReadonlyArray<readonly [string, string]> = [
      ["http://169.254.169.254/latest/meta-data/iam/", "169.254.169.254"],
      ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe"],
      ["http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1"],
      ["http://[::1]/", "::1"],
      ["http://127.0.0.2/", "127.0.0.2"],
      ["http://2130706434/", "127.0.0.2"],
      ["http://0x0a.1/", "10.0.0.1"],
      ["http://localhost/", "localhost"],
      ["http://[fd00:ec2::254]/", "fd00:ec2::254"],
      ["file:///etc/passwd", "file:"]
    ]
    for (const [target, address] of targets) {
      it.live(target, () =>
        Effect.gen(function*() {
          const server = yield* redirector
          const error = yield* Effect.flip(
            call({ id: "r", baseUrl: server.origin, allow: trustLoopback }, { method: "GET", path: to(target, 307) })
          )
          assert.strictEqual(error._tag, "EgressRefused")
          if (error._tag !== "EgressRefused") return
          assert.strictEqual(error.phase, "redirect")
          assert.strictEqual(error.address, address)
          assert.strictEqual(server.received.length, 1)
        }).pipe(Effect.provide(egress())))
    }
  })

  it.live("refuses a redirect to a name that resolves to a refused address, at connect time", () =>
    Effect.gen(function*() {
      const server = yield* redirector
      const error = yield* Effect.flip(
        call({ id: "r", baseUrl: server.origin, allow: trustLoopback }, {
          method: "GET",
          path: to("http://metadata.test/computeMetadata/v1/")
        })
      )
      assert.strictEqual(error._tag, "EgressRefused")
      if (error._tag !== "EgressRefused") return
      assert.strictEqual(error.phase, "connect")
      assert.strictEqual(error.reason, "link-local (cloud metadata)")
    }).pipe(Effect.provide(egress({ names: { "metadata.test": "169.254.169.254" } }))))

  it.live("an allow-list entry with a port: the call reaches that port, a redirect to another port is refused", () =>
    Effect.gen(function*() {
      const allowed = yield* redirector
      const other = yield* redirector
      const connection = { id: "r", baseUrl: allowed.origin, allow: [`127.0.0.1:${allowed.port}`] }
      const response = yield* call(connection, { method: "GET", path: to("/final") })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.redirects, 1)
      const error = yield* Effect.flip(call(connection, { method: "GET", path: to(`${other.origin}/final`, 307) }))
      assert.strictEqual(error._tag, "EgressRefused")
      if (error._tag !== "EgressRefused") return
      assert.strictEqual(error.phase, "redirect")
      assert.strictEqual(error.address, "127.0.0.1")
      assert.strictEqual(other.received.length, 0)
    }).pipe(Effect.provide(egress())))

  it.live("a host name allow-listed with a port is trusted on that port only, checked where it is dialled", () =>
    Effect.gen(function*() {
      const allowed = yield* redirector
      const other = yield* redirector
      const connection = { id: "r", baseUrl: `http://svc.test:${allowed.port}`, allow: [`svc.test:${allowed.port}`] }
      const response = yield* call(connection, { method: "GET", path: to("/final") })
      assert.strictEqual(response.status, 200)
      const error = yield* Effect.flip(
        call(connection, { method: "GET", path: to(`http://svc.test:${other.port}/final`, 307) })
      )
      assert.strictEqual(error._tag, "EgressRefused")
      if (error._tag !== "EgressRefused") return
      assert.strictEqual(error.phase, "connect")
      assert.strictEqual(error.reason, "loopback")
      assert.strictEqual(other.received.length, 0)
    }).pipe(Effect.provide(egress({ names: { "svc.test": "127.0.0.1" } }))))

  it.live("stops after 5 redirects", () =>
    Effect.gen(function*() {
      const server = yield* redirector
      const error = yield* Effect.flip(
        call({ id: "r", baseUrl: server.origin, allow: trustLoopback }, { method: "GET", path: "/loop/0" })
      )
      assert.strictEqual(error._tag, "DownstreamUnavailable")
      if (error._tag === "DownstreamUnavailable") {
        assert.strictEqual(error.reason, "more than 5 redirects")
        assert.isFalse(error.transient)
      }
      assert.strictEqual(server.received.length, 6)
    }).pipe(Effect.provide(egress())))

  it.live("drops the credential when a redirect leaves the connection's origin", () =>
    Effect.gen(function*() {
      const a = yield* redirector
      const b = yield* redirector
      const response = yield* call({ id: "r", baseUrl: a.origin, allow: trustLoopback, auth: { _tag: "Bearer" } }, {
        method: "GET",
        path: to(`${b.origin}/final`),
        secret: Redacted.make("s3cr3t-token")
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(a.received[0]?.headers.authorization, "Bearer s3cr3t-token")
      assert.isUndefined(b.received[0]?.headers.authorization)
    }).pipe(Effect.provide(egress())))

  it.live("303 turns POST into GET without a body; 307 keeps both", () =>
    Effect.gen(function*() {
      const server = yield* redirector
      const connection = { id: "r", baseUrl: server.origin, allow: trustLoopback }
      const seeOther = yield* call(connection, { method: "POST", path: to("/final", 303), body: "{\"a\":1}" })
      assert.strictEqual(new TextDecoder().decode(seeOther.body), "final GET")
      assert.strictEqual(server.received[1]?.body, "")
      const temporary = yield* call(connection, { method: "POST", path: to("/final", 307), body: "{\"a\":1}" })
      assert.strictEqual(new TextDecoder().decode(temporary.body), "final POST")
      assert.strictEqual(server.received[3]?.body, "{\"a\":1}")
    }).pipe(Effect.provide(egress())))

  it.live("with maxRedirects 0 a 3xx is returned as data", () =>
    Effect.gen(function*() {
      const server = yield* redirector
      const response = yield* call({ id: "r", baseUrl: server.origin, allow: trustLoopback }, {
        method: "GET",
        path: to("http://169.254.169.254/")
      })
      assert.strictEqual(response.status, 302)
      assert.strictEqual(response.headers["location"], "http://169.254.169.254/")
    }).pipe(Effect.provide(egress({ maxRedirects: 0 }))))
})
