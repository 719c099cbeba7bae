/**
 * The client address behind trusted proxies, and the per-IP limiter key.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { Headers } from "effect/http"
import * as ClientIp from "../../src/auth/ClientIp.ts"

const make = (trusted: ReadonlyArray<string> = []) => {
  const resolver = ClientIp.make(trusted)
  if (resolver instanceof ClientIp.InvalidTrustedProxy) throw new Error(resolver.message)
  return resolver
}

const xff = (value: string) => Headers.fromInput({ "x-forwarded-for": value })

describe("ClientIp", () => {
  it.effect("without trusted proxies X-Forwarded-For is never read", () =>
    Effect.sync(() => {
      const ip = make()
      assert.strictEqual(ip.address(xff("1.1.1.1"), "203.0.113.9"), "203.0.113.9")
      assert.strictEqual(ip.address(Headers.empty, undefined), "unknown")
    }))

  it.effect("a request from a trusted proxy: the rightmost untrusted hop is the client", () =>
    Effect.sync(() => {
      const ip = make(["10.0.0.0/8", "192.168.1.10"])
      // The client forged "6.6.6.6"; the proxy appended the real peer 198.51.100.4.
      assert.strictEqual(ip.address(xff("6.6.6.6, 198.51.100.4"), "10.1.2.3"), "198.51.100.4")
      // Two trusted proxies in a row.
      assert.strictEqual(ip.address(xff("6.6.6.6, 198.51.100.4, 10.9.9.9"), "192.168.1.10"), "198.51.100.4")
      // Every hop trusted: the leftmost.
      assert.strictEqual(ip.address(xff("10.0.0.7, 10.0.0.8"), "10.1.2.3"), "10.0.0.7")
      // Ports and brackets.
      assert.strictEqual(ip.address(xff("198.51.100.4:5123"), "10.1.2.3"), "198.51.100.4")
      assert.strictEqual(ip.address(xff("[2001:db8::1]:443"), "10.1.2.3"), "2001:db8::1")
      // Garbage ends the walk at the last trusted hop.
      assert.strictEqual(ip.address(xff("198.51.100.4, not-an-ip"), "10.1.2.3"), "10.1.2.3")
      // No header: the proxy itself.
      assert.strictEqual(ip.address(Headers.empty, "10.1.2.3"), "10.1.2.3")
      // Not from a trusted proxy: the header is ignored.
      assert.strictEqual(ip.address(xff("198.51.100.4"), "203.0.113.9"), "203.0.113.9")
    }))

  it.effect("IPv4-mapped IPv6 is IPv4 (for trust and for the key)", () =>
    Effect.sync(() => {
      const ip = make(["127.0.0.1"])
      assert.strictEqual(ip.address(Headers.empty, "::ffff:203.0.113.9"), "203.0.113.9")
      assert.strictEqual(ip.address(xff("198.51.100.4"), "::ffff:127.0.0.1"), "198.51.100.4")
      assert.strictEqual(ClientIp.normalize("::ffff:7f00:1"), "127.0.0.1")
      assert.strictEqual(ClientIp.normalize("fe80::1%eth0"), "fe80::1")
      assert.isUndefined(ClientIp.normalize("localhost"))
    }))

  it.effect("an IPv6 client is keyed by its /64; IPv4 by address", () =>
    Effect.sync(() => {
      const ip = make()
      const a = ip.bucket(Headers.empty, "2001:db8:1:2:aaaa::1")
      const b = ip.bucket(Headers.empty, "2001:db8:1:2:ffff:ffff:ffff:ffff")
      const other = ip.bucket(Headers.empty, "2001:db8:1:3::1")
      assert.strictEqual(a, "2001:db8:1:2::/64")
      assert.strictEqual(a, b)
      assert.notStrictEqual(a, other)
      assert.strictEqual(ip.bucket(Headers.empty, "::1"), "0:0:0:0::/64")
      assert.strictEqual(ClientIp.bucketOf("2001:db8::1.2.3.4"), "2001:db8:0:0::/64")
      assert.strictEqual(ip.bucket(Headers.empty, "203.0.113.9"), "203.0.113.9")
    }))

  it.effect("IPv6 trusted proxies and invalid entries", () =>
    Effect.sync(() => {
      const ip = make(["fd00::/8"])
      assert.strictEqual(ip.address(xff("2001:db8::7"), "fd12::1"), "2001:db8::7")
      for (const bad of ["10.0.0.0/33", "fd00::/129", "proxy", "10.0.0.0/x", "1.2.3.4/-1"]) {
        const result = ClientIp.make([bad])
        assert.instanceOf(result, ClientIp.InvalidTrustedProxy, bad)
      }
    }))
})
