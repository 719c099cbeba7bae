import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Result } from "effect"
import { AllowList, classifyAddress, EgressPolicy } from "../../src/egress/index.ts"

const check = (url: string, allow: ReadonlyArray<string> = []) =>
  Effect.map(
    Effect.service(EgressPolicy),
    (policy) => policy.checkUrl(new URL(url), Result.getOrThrow(AllowList.make(allow)), "url")
  )

// [URL as written, address reported, words in the reason]
const refused: ReadonlyArray<readonly [string, string, string]> = [
  ["http://127.0.0.1/", "127.0.0.1", "loopback"],
  ["http://2130706433/", "127.0.0.1", "loopback"],
  ["http://0177.0.0.1/", "127.0.0.1", "loopback"],
  ["http://0x7f.1/", "127.0.0.1", "loopback"],
  ["http://0x7F000001/", "127.0.0.1", "loopback"],
  ["http://127.1/", "127.0.0.1", "loopback"],
  ["http://127.0.0.1./", "127.0.0.1", "loopback"],
  ["http://127.000.000.001/", "127.0.0.1", "loopback"],
  ["http://%31%32%37.0.0.1/", "127.0.0.1", "loopback"],
  ["http://\uFF11\uFF12\uFF17.0.0.1/", "127.0.0.1", "loopback"],
  ["http://0/", "0.0.0.0", "unspecified"],
  ["http://0.0.0.0:8080/", "0.0.0.0", "unspecified"],
  ["http://0.1.2.3/", "0.1.2.3", "this network"],
  ["http://169.254.169.254/latest/meta-data/", "169.254.169.254", "link-local (cloud metadata)"],
  ["http://0xa9fea9fe/", "169.254.169.254", "link-local (cloud metadata)"],
  ["http://169.254.170.2/", "169.254.170.2", "container metadata"],
  ["http://169.254.1.1/", "169.254.1.1", "link-local"],
  ["http://100.100.100.200/", "100.100.100.200", "cloud metadata"],
  ["http://168.63.129.16/", "168.63.129.16", "Azure WireServer"],
  ["http://10.0.0.1/", "10.0.0.1", "private (RFC 1918)"],
  ["http://172.16.5.4/", "172.16.5.4", "private (RFC 1918)"],
  ["http://172.31.255.255/", "172.31.255.255", "private (RFC 1918)"],
  ["http://192.168.1.1/", "192.168.1.1", "private (RFC 1918)"],
  ["http://100.64.0.1/", "100.64.0.1", "carrier-grade NAT"],
  ["http://224.0.0.1/", "224.0.0.1", "multicast"],
  ["http://239.255.255.250/", "239.255.255.250", "multicast"],
  ["http://255.255.255.255/", "255.255.255.255", "broadcast"],
  ["http://240.0.0.1/", "240.0.0.1", "reserved"],
  ["http://192.0.0.8/", "192.0.0.8", "IETF protocol assignments"],
  ["http://192.0.2.1/", "192.0.2.1", "documentation (TEST-NET-1)"],
  ["http://198.51.100.7/", "198.51.100.7", "documentation (TEST-NET-2)"],
  ["http://203.0.113.9/", "203.0.113.9", "documentation (TEST-NET-3)"],
  ["http://198.18.0.1/", "198.18.0.1", "benchmarking"],
  ["http://192.88.99.1/", "192.88.99.1", "6to4 relay"],
  ["http://[::1]/", "::1", "loopback"],
  ["http://[0:0:0:0:0:0:0:1]/", "::1", "loopback"],
  ["http://[0000::0001]:8080/", "::1", "loopback"],
  ["http://[::]/", "::", "unspecified"],
  ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1", "IPv4-mapped 127.0.0.1, which is loopback"],
  ["http://[::FFFF:7F00:0001]/", "::ffff:7f00:1", "IPv4-mapped 127.0.0.1, which is loopback"],
  ["http://[0:0:0:0:0:ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe", "IPv4-mapped 169.254.169.254, which is link-local"],
  ["http://[::ffff:0:0]/", "::ffff:0:0", "IPv4-mapped 0.0.0.0, which is unspecified"],
  ["http://[::ffff:10.1.2.3]/", "::ffff:a01:203", "IPv4-mapped 10.1.2.3, which is private"],
  ["http://[64:ff9b::127.0.0.1]/", "64:ff9b::7f00:1", "NAT64 127.0.0.1, which is loopback"],
  ["http://[64:FF9B::A9FE:A9FE]/", "64:ff9b::a9fe:a9fe", "NAT64 169.254.169.254, which is link-local (cloud metadata)"],
  ["http://[64:ff9b:1::1]/", "64:ff9b:1::1", "local-use NAT64"],
  ["http://[::127.0.0.1]/", "::7f00:1", "IPv4-compatible"],
  ["http://[::8.8.8.8]/", "::808:808", "IPv4-compatible"],
  ["http://[2002:7f00:1::]/", "2002:7f00:1::", "6to4 127.0.0.1, which is loopback"],
  ["http://[2002:a9fe:a9fe::1]/", "2002:a9fe:a9fe::1", "6to4 169.254.169.254, which is link-local"],
  ["http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
  ["http://[fc00::1]/", "fc00::1", "unique-local"],
  ["http://[fd12:3456::1]/", "fd12:3456::1", "unique-local"],
  ["http://[fd00:ec2::254]/", "fd00:ec2::254", "unique-local (cloud metadata)"],
  ["http://[fe80::1]/", "fe80::1", "link-local"],
  ["http://[FE80::ABCD:1]/", "fe80::abcd:1", "link-local"],
  ["http://[fec0::1]/", "fec0::1", "site-local"],
  ["http://[ff02::1]/", "ff02::1", "multicast"],
  ["http://[100::1]/", "100::1", "discard-only"],
  ["http://[2001:db8::1]/", "2001:db8::1", "documentation"],
  ["http://[3fff::1]/", "3fff::1", "documentation"],
  ["http://[4000::1]/", "4000::1", "outside global unicast"],
  ["http://localhost/", "localhost", "localhost name"],
  ["http://LOCALHOST./", "localhost.", "localhost name"],
  ["http://api.localhost:8080/", "api.localhost", "localhost name"],
  ["file:///etc/passwd", "file:", "not an http(s) scheme"],
  ["gopher://example.com/", "gopher:", "not an http(s) scheme"],
  ["http://user:pw@example.com/", "example.com", "credentials in the URL"]
]

// Public addresses and names are only classified here, never dialled.
const allowed: ReadonlyArray<string> = [
  "http://8.8.8.8/",
  "https://1.1.1.1/",
  "http://134744072/", // 8.8.8.8 in decimal
  "http://172.32.0.1/", // just past 172.16/12
  "http://100.128.0.1/", // just past 100.64/10
  "http://169.253.255.255/",
  "http://192.169.0.1/",
  "http://[2606:4700:4700::1111]/",
  "http://[::ffff:8.8.8.8]/", // IPv4-mapped public: reaches 8.8.8.8
  "http://[64:ff9b::808:808]/", // NAT64 of a public address
  "http://[2002:808:808::1]/", // 6to4 of a public address
  "https://api.example.com/v1",
  "http://example.com./"
]

describe("EgressPolicy", () => {
  describe("refuses every spelling of a refused address", () => {
    for (const [url, address, reason] of refused) {
      it.effect(url, () =>
        Effect.gen(function*() {
          const refusal = yield* check(url)
          assert.isDefined(refusal, `${url} should be refused`)
          assert.strictEqual(refusal!._tag, "EgressRefused")
          assert.strictEqual(refusal!.address, address)
          assert.include(refusal!.reason, reason)
          assert.include(refusal!.message, `${address} is `)
        }).pipe(Effect.provide(EgressPolicy.layerDefault)))
    }
  })

  describe("lets public addresses and names through", () => {
    for (const url of allowed) {
      it.effect(url, () =>
        Effect.gen(function*() {
          assert.isUndefined(yield* check(url))
        }).pipe(Effect.provide(EgressPolicy.layerDefault)))
    }
  })

  it("has a battery of at least 30 address forms", () => {
    assert.isAtLeast(refused.length + allowed.length, 30)
  })

  it("names the metadata address in the message", () => {
    const policy = Effect.runSync(Effect.service(EgressPolicy).pipe(Effect.provide(EgressPolicy.layerDefault)))
    const refusal = policy.checkUrl(new URL("http://169.254.169.254/"), AllowList.empty, "url")
    assert.strictEqual(refusal?.message, "Egress refused: 169.254.169.254 is link-local (cloud metadata)")
  })

  it("relies on the URL parser to reject zone ids and overflowing numbers", () => {
    assert.throws(() => new URL("http://[fe80::1%25eth0]/"))
    assert.throws(() => new URL("http://4294967296/"))
  })

  it("classifies resolver answers in any spelling, zone ids included", () => {
    assert.strictEqual(classifyAddress("::ffff:127.0.0.1"), "IPv4-mapped 127.0.0.1, which is loopback")
    assert.strictEqual(classifyAddress("fe80::1%eth0"), "link-local")
    assert.strictEqual(classifyAddress("64:ff9b::10.0.0.1"), "NAT64 10.0.0.1, which is private (RFC 1918)")
    assert.strictEqual(classifyAddress("127.1"), "not an IP address") // resolvers answer canonically
    assert.isUndefined(classifyAddress("93.184.216.34"))
    assert.isUndefined(classifyAddress("2a00:1450:4001:82b::200e"))
  })

  describe("allow-list", () => {
    it.effect("a CIDR overrides the refusal for the addresses inside it only", () =>
      Effect.gen(function*() {
        assert.isUndefined(yield* check("http://127.0.0.1:8080/", ["127.0.0.1/32"]))
        assert.isUndefined(yield* check("http://2130706433/", ["127.0.0.1"]))
        assert.strictEqual((yield* check("http://127.0.0.2/", ["127.0.0.1/32"]))?.reason, "loopback")
        assert.isUndefined(yield* check("http://[fd00::5]/", ["fd00::/8"]))
        assert.isUndefined(yield* check("http://10.20.30.40/", ["10.0.0.0/8"]))
      }).pipe(Effect.provide(EgressPolicy.layerDefault)))

    it.effect("a host name is trusted whatever it resolves to", () =>
      Effect.gen(function*() {
        const policy = yield* EgressPolicy
        const allow = Result.getOrThrow(AllowList.make(["billing.internal", "*.svc.cluster.local", "localhost"]))
        assert.isUndefined(policy.checkResolved("billing.internal", "10.0.0.5", allow, 443))
        assert.isUndefined(policy.checkResolved("BILLING.internal.", "10.0.0.5", allow, 443))
        assert.isUndefined(policy.checkResolved("api.ns.svc.cluster.local", "10.96.0.1", allow, 443))
        assert.strictEqual(
          policy.checkResolved("svc.cluster.local", "10.96.0.1", allow, 443)?.reason,
          "private (RFC 1918)"
        )
        assert.strictEqual(policy.checkResolved("other.internal", "10.0.0.5", allow, 443)?.phase, "connect")
        assert.isUndefined(policy.checkUrl(new URL("http://localhost:9000/"), allow, "url"))
      }).pipe(Effect.provide(EgressPolicy.layerDefault)))

    it.effect("an entry with a port allows that port only, IP literals and names alike", () =>
      Effect.gen(function*() {
        const policy = yield* EgressPolicy
        assert.isUndefined(yield* check("http://127.0.0.1:9103/", ["127.0.0.1:9103"]))
        assert.strictEqual((yield* check("http://127.0.0.1:9104/", ["127.0.0.1:9103"]))?.reason, "loopback")
        assert.strictEqual((yield* check("http://127.0.0.1/", ["127.0.0.1:9103"]))?.reason, "loopback")
        // the scheme's default port is the port of a URL without one
        assert.isUndefined(yield* check("https://10.1.2.3/", ["10.0.0.0/8:443"]))
        assert.isUndefined(yield* check("http://10.1.2.3:443/", ["10.0.0.0/8:443"]))
        assert.strictEqual((yield* check("http://10.1.2.3/", ["10.0.0.0/8:443"]))?.reason, "private (RFC 1918)")
        assert.isUndefined(yield* check("http://[fd00::5]:8443/", ["[fd00::/8]:8443"]))
        assert.isUndefined(yield* check("http://[fd00::5]:8443/", ["[fd00::5]:8443"]))
        assert.strictEqual(
          (yield* check("http://[fd00::5]:8444/", ["[fd00::/8]:8443"]))?.reason,
          "unique-local (fc00::/7)"
        )
        // a port-less entry for the same address still allows every port
        assert.isUndefined(yield* check("http://127.0.0.1:9104/", ["127.0.0.1:9103", "127.0.0.1"]))

        const allow = Result.getOrThrow(
          AllowList.make(["billing.internal:8443", ".svc.cluster.local:80", "*.corp.example:443", "localhost:9000"])
        )
        assert.isUndefined(policy.checkResolved("billing.internal", "10.0.0.5", allow, 8443))
        assert.strictEqual(
          policy.checkResolved("billing.internal", "10.0.0.5", allow, 8444)?.reason,
          "private (RFC 1918)"
        )
        assert.isUndefined(policy.checkResolved("api.ns.svc.cluster.local", "10.96.0.1", allow, 80))
        assert.isDefined(policy.checkResolved("api.ns.svc.cluster.local", "10.96.0.1", allow, 8080))
        assert.isDefined(policy.checkResolved("svc.cluster.local", "10.96.0.1", allow, 80))
        assert.isUndefined(policy.checkResolved("git.corp.example", "10.9.9.9", allow, 443))
        assert.isUndefined(policy.checkUrl(new URL("http://localhost:9000/"), allow, "url"))
        assert.strictEqual(
          policy.checkUrl(new URL("http://localhost:9001/"), allow, "url")?.reason,
          "a localhost name (RFC 6761)"
        )
        // a name allowed on one port is still dialled only where it resolves to an allowed address on others
        assert.isUndefined(policy.checkResolved("billing.internal", "93.184.216.34", allow, 8444))
      }).pipe(Effect.provide(EgressPolicy.layerDefault)))

    it("refuses what is not an address, CIDR, host name or suffix (with an optional port), naming the value and the forms", () => {
      const refusedEntries: ReadonlyArray<readonly [string, string]> = [
        ["http://127.0.0.1:9103", "a URL"],
        ["https://billing.internal", "a URL"],
        ["billing.internal/v1", ""],
        ["user@billing.internal", ""],
        ["127.0.0.1:0", "port"],
        ["127.0.0.1:65536", "port"],
        ["127.0.0.1:", "port"],
        ["billing.internal:https", "port"],
        ["billing.internal:80:81", ""],
        ["[fd00::1]:", "port"],
        ["[fd00::1", ""],
        ["[10.0.0.1]:80", ""],
        ["10.0.0.0/8/9", ""],
        ["10.0.0.0/33:80", "prefix length"],
        ["*", ""],
        ["*.", ""],
        [".", ""],
        ["", ""],
        ["fe80::1%eth0", ""],
        ["999.1.1.1", ""],
        ["bad_host name", ""]
      ]
      for (const [entry, problem] of refusedEntries) {
        const made = AllowList.make(["10.0.0.0/8", entry])
        assert.isTrue(Result.isFailure(made), `${JSON.stringify(entry)} should be refused`)
        if (!Result.isFailure(made)) continue
        assert.include(made.failure, JSON.stringify(entry))
        assert.include(made.failure, problem)
        assert.include(made.failure, "billing.internal:8443", "the accepted forms are named")
      }
    })

    it("rejects malformed entries and spells equal lists alike", () => {
      for (const entry of ["10.0.0.0/33", "10.0.0.0/", "not a host", "fd00::/129", "a/b"]) {
        assert.isTrue(Result.isFailure(AllowList.make([entry])), entry)
      }
      const a = Result.getOrThrow(AllowList.make(["b.internal", "10.0.0.0/8"]))
      const b = Result.getOrThrow(AllowList.make(["10.0.0.0/8", "B.Internal."]))
      assert.strictEqual(a.key, b.key)
      const withPorts = Result.getOrThrow(AllowList.make(["b.internal:443", ".svc.local:80", "[FD00::1]:8443"]))
      const same = Result.getOrThrow(AllowList.make(["[fd00::1]:8443", "*.svc.local:80", "B.Internal.:443"]))
      assert.strictEqual(withPorts.key, same.key)
      assert.notStrictEqual(
        withPorts.key,
        Result.getOrThrow(AllowList.make(["b.internal", ".svc.local", "fd00::1"])).key
      )
      assert.isTrue(AllowList.empty.isEmpty)
    })
  })

  describe("operator ranges", () => {
    it.effect("refuses extra CIDRs", () =>
      Effect.gen(function*() {
        const policy = yield* EgressPolicy
        assert.strictEqual(policy.classify("8.8.8.8"), "refused by operator policy")
        assert.isUndefined(policy.classify("8.8.4.4"))
        assert.strictEqual(policy.classify("127.0.0.1"), "loopback")
      }).pipe(Effect.provide(EgressPolicy.layer({ refuse: ["8.8.8.0/24"] }))))

    it.effect("fails to build on a malformed range", () =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(
          Effect.provide(Effect.service(EgressPolicy), EgressPolicy.layer({ refuse: ["nope"] }))
        )
        assert.isTrue(Exit.isFailure(exit))
      }))
  })
})
