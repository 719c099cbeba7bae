/**
 * The address policy: which destinations a downstream call may reach.
 *
 * **Rules**
 *
 * - Only `http:` and `https:` URLs, without user info (credentials belong in
 *   the connection's secret, not in a URL where they would be logged).
 * - Refused IPv4: unspecified and "this network" 0/8, RFC 1918 private,
 *   CGNAT 100.64/10, loopback 127/8, link-local 169.254/16 (with the cloud
 *   metadata addresses named), IETF 192.0.0/24, the documentation and
 *   benchmarking ranges, the deprecated 6to4 relay 192.88.99/24, multicast
 *   224/4, reserved 240/4 and broadcast; plus the Azure WireServer address.
 * - Refused IPv6: everything outside global unicast 2000::/3 (unspecified,
 *   loopback, ULA fc00::/7 incl. fd00:ec2::254, link-local, site-local,
 *   multicast, discard 100::/64, local NAT64 64:ff9b:1::/48), and inside it
 *   Teredo 2001::/32, the IETF block 2001::/23 and the documentation ranges.
 *   IPv4-compatible `::a.b.c.d` is refused outright (deprecated, never
 *   dialled legitimately). IPv4-mapped `::ffff:a.b.c.d`, NAT64
 *   `64:ff9b::a.b.c.d` and 6to4 `2002:AABB:CCDD::` are judged by the IPv4
 *   address they embed: they reach that address, so they are refused exactly
 *   when it is.
 * - Host names `localhost` and `*.localhost` are refused by name (RFC 6761);
 *   other names are judged at connect time by the addresses they resolve to
 *   (see `SafeDispatcher`).
 * - A connection's allow-list (CIDRs, addresses, host names, `.suffix`es,
 *   each with an optional port; the grammar is storage's `EgressAllowList`)
 *   overrides every refusal above, for the internal services an operator
 *   trusts. An allow-listed name is trusted whatever it resolves to. An
 *   entry with a port overrides on that port only, the port a URL reaches
 *   (its own or its scheme's default): at the URL check of the base URL and
 *   of every redirect hop, and at connect time, where `SafeDispatcher` hands
 *   the dialled port to `checkResolved`.
 *
 * Spellings: IPv4 shorthand (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`,
 * `0`, trailing dot, full-width digits, percent-encoding) is canonicalised by
 * the WHATWG URL parser before it reaches this module, and IPv6 (case, leading
 * zeros, embedded dotted quads, `::` runs) is canonicalised the same way;
 * zone ids are rejected by the parser and stripped from resolver answers.
 * Membership is tested with `net.BlockList`. The one hand-written parser
 * (`ipv6Groups`) exists because BlockList answers "is it in this range" but
 * cannot extract the IPv4 address embedded in a NAT64 or 6to4 address, which
 * decides whether it is refused; it only reads the URL parser's canonical
 * output.
 *
 * @since 0.1.0
 */
import { EgressAllowList } from "@janus/storage"
import { Context, Effect, Layer, Result } from "effect"
import * as Net from "node:net"
import { EgressRefused, InvalidEgressConfig, type RefusalPhase } from "./Errors.ts"

/**
 * The canonical spelling of an IP literal (brackets and zone id removed, IPv6
 * compressed and lower-cased), or `undefined` when `input` is not one.
 */
export const canonicalIp = EgressAllowList.canonicalIp

/** Lower-cased, without the trailing dot: the spelling host names are compared in. */
export const normalizeHostName = EgressAllowList.normalizeHostName

interface Rule {
  readonly list: Net.BlockList
  readonly reason: string
  readonly family: "ipv4" | "ipv6"
}

/** The rule refusing `cidr` (IPv6 when it has a `:`) for `reason`. */
const rule = (cidr: string, reason: string): Rule => {
  const list = new Net.BlockList()
  const [network, prefix] = cidr.split("/")
  const family = cidr.includes(":") ? "ipv6" : "ipv4"
  list.addSubnet(network!, Number(prefix), family)
  return { list, reason, family }
}

// Most specific first within a family: the first matching rule names the reason.
const builtInRules: ReadonlyArray<Rule> = [
  rule("169.254.169.254/32", "link-local (cloud metadata)"),
  rule("169.254.170.2/32", "link-local (container metadata)"),
  rule("100.100.100.200/32", "carrier-grade NAT (cloud metadata)"),
  rule("168.63.129.16/32", "a cloud platform endpoint (Azure WireServer)"),
  rule("255.255.255.255/32", "broadcast"),
  rule("0.0.0.0/32", "unspecified"),
  rule("0.0.0.0/8", "\"this network\" (RFC 1122)"),
  rule("10.0.0.0/8", "private (RFC 1918)"),
  rule("100.64.0.0/10", "carrier-grade NAT (RFC 6598)"),
  rule("127.0.0.0/8", "loopback"),
  rule("169.254.0.0/16", "link-local"),
  rule("172.16.0.0/12", "private (RFC 1918)"),
  rule("192.0.0.0/24", "IETF protocol assignments (RFC 6890)"),
  rule("192.0.2.0/24", "documentation (TEST-NET-1)"),
  rule("192.88.99.0/24", "6to4 relay anycast (deprecated, RFC 7526)"),
  rule("192.168.0.0/16", "private (RFC 1918)"),
  rule("198.18.0.0/15", "benchmarking (RFC 2544)"),
  rule("198.51.100.0/24", "documentation (TEST-NET-2)"),
  rule("203.0.113.0/24", "documentation (TEST-NET-3)"),
  rule("224.0.0.0/4", "multicast"),
  rule("240.0.0.0/4", "reserved (RFC 1112)"),
  rule("fd00:ec2::254/128", "unique-local (cloud metadata)"),
  rule("::/128", "unspecified"),
  rule("::1/128", "loopback"),
  rule("::/96", "IPv4-compatible (deprecated, RFC 4291)"),
  rule("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
  rule("100::/64", "discard-only (RFC 6666)"),
  rule("2001::/32", "Teredo (RFC 4380)"),
  rule("2001:db8::/32", "documentation (RFC 3849)"),
  rule("2001::/23", "IETF protocol assignments (RFC 2928)"),
  rule("3fff::/20", "documentation (RFC 9637)"),
  rule("fc00::/7", "unique-local (fc00::/7)"),
  rule("fe80::/10", "link-local"),
  rule("fec0::/10", "site-local (deprecated)"),
  rule("ff00::/8", "multicast")
]

const globalUnicast = rule("2000::/3", "")

/**
 * Splits a canonical IPv6 address (the URL parser's output: lower-case hex,
 * no leading zeros, one `::`, no dotted quad) into its eight 16-bit groups.
 */
const ipv6Groups = (canonical: string): ReadonlyArray<number> => {
  const [head, tail] = canonical.split("::") as [string, string | undefined]
  const left = head === "" ? [] : head.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = new Array<number>(8).fill(0)
  left.forEach((g, i) => groups[i] = parseInt(g, 16))
  right.forEach((g, i) => groups[8 - right.length + i] = parseInt(g, 16))
  return groups
}

const embeddedV4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`

interface Classifier {
  readonly v4: (address: string) => string | undefined
  readonly v6: (canonical: string) => string | undefined
}

const makeClassifier = (extraRefused: ReadonlyArray<Rule>): Classifier => {
  const v4All = [...builtInRules, ...extraRefused].filter((r) => r.family === "ipv4")
  const v6All = [...builtInRules, ...extraRefused].filter((r) => r.family === "ipv6")
  const v4 = (address: string): string | undefined => {
    for (const r of v4All) if (r.list.check(address, "ipv4")) return r.reason
    return undefined
  }
  const v6 = (canonical: string): string | undefined => {
    const g = ipv6Groups(canonical)
    const upperZero = g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0
    // Embedded IPv4 forms reach the embedded address: judge that address.
    if (upperZero && g[5] === 0xffff) return embedded("IPv4-mapped", embeddedV4(g[6]!, g[7]!))
    if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0) {
      return embedded("NAT64", embeddedV4(g[6]!, g[7]!))
    }
    if (g[0] === 0x2002) return embedded("6to4", embeddedV4(g[1]!, g[2]!))
    for (const r of v6All) if (r.list.check(canonical, "ipv6")) return r.reason
    if (!globalUnicast.list.check(canonical, "ipv6")) return "outside global unicast 2000::/3 (reserved)"
    return undefined
  }
  const embedded = (kind: string, address: string) => {
    const reason = v4(address)
    return reason === undefined ? undefined : `${kind} ${address}, which is ${reason}`
  }
  return { v4, v6 }
}

const defaultClassifier = makeClassifier([])

/**
 * Why the IP literal `address` is refused, or `undefined` when it may be
 * dialled. Not an IP literal: `"not an IP address"`. Ignores allow-lists.
 */
export const classifyAddress = (address: string): string | undefined => classifyWith(defaultClassifier, address)

const classifyWith = (classifier: Classifier, address: string): string | undefined => {
  const ip = canonicalIp(address)
  if (ip === undefined) return "not an IP address"
  return ip.family === 4 ? classifier.v4(ip.address) : classifier.v6(ip.address)
}

const isLocalhostName = (name: string) => name === "localhost" || name.endsWith(".localhost")

/** The port a URL reaches: its own, or its scheme's default. */
export const portOf = (url: URL): number => url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80

/** Every port, or a set of ports. */
type Ports = "any" | Set<number>

const addPort = (ports: Ports | undefined, port: number | undefined): Ports =>
  port === undefined || ports === "any" ? "any" : (ports ?? new Set<number>()).add(port)

const hasPort = (ports: Ports | undefined, port: number): boolean =>
  ports !== undefined && (ports === "any" || ports.has(port))

const familyName = (family: 4 | 6) => family === 4 ? "ipv4" : "ipv6"

/**
 * A compiled per-connection allow-list (entries as `EgressAllowList` in
 * storage parses them): ranges in a `BlockList` per port (and one for every
 * port), exact host names and `.suffix`es with their ports. `key` is a
 * canonical spelling, equal for equal lists, used to share one connection
 * pool between connections that trust the same destinations.
 */
export class AllowList {
  static readonly empty: AllowList = new AllowList("", new Map(), [], undefined, new Map())

  readonly key: string
  /** True when some entry names a port: the connect-time check then needs the port dialled. */
  readonly hasPorts: boolean
  private readonly names: ReadonlyMap<string, Ports>
  private readonly suffixes: ReadonlyArray<{ readonly suffix: string; readonly port: number | undefined }>
  private readonly anyPort: Net.BlockList | undefined
  private readonly byPort: ReadonlyMap<number, Net.BlockList>

  private constructor(
    key: string,
    names: ReadonlyMap<string, Ports>,
    suffixes: ReadonlyArray<{ readonly suffix: string; readonly port: number | undefined }>,
    anyPort: Net.BlockList | undefined,
    byPort: ReadonlyMap<number, Net.BlockList>
  ) {
    this.key = key
    this.names = names
    this.suffixes = suffixes
    this.anyPort = anyPort
    this.byPort = byPort
    this.hasPorts = byPort.size > 0 || suffixes.some((s) => s.port !== undefined) ||
      [...names.values()].some((ports) => ports !== "any")
  }

  get isEmpty(): boolean {
    return this.key === ""
  }

  /** Whether the host name (any spelling) is trusted on `port` whatever it resolves to. */
  allowsName(host: string, port: number): boolean {
    if (this.key === "") return false
    const name = normalizeHostName(host)
    if (hasPort(this.names.get(name), port)) return true
    for (const s of this.suffixes) {
      if (name.endsWith(s.suffix) && (s.port === undefined || s.port === port)) return true
    }
    return false
  }

  /** Whether the canonical IP address is inside a range allow-listed on `port`. */
  allowsAddress(address: string, family: 4 | 6, port: number): boolean {
    if (this.key === "") return false
    const type = familyName(family)
    if (this.anyPort !== undefined && this.anyPort.check(address, type)) return true
    const ranges = this.byPort.get(port)
    return ranges !== undefined && ranges.check(address, type)
  }

  /**
   * Compiles entries such as `10.0.0.0/8`, `192.168.1.10:8443`, `[fd00::/8]:443`,
   * `billing.internal:8443` or `.svc.cluster.local`; fails with what is wrong
   * with the first bad entry and the accepted forms.
   */
  static make(entries: ReadonlyArray<string>): Result.Result<AllowList, string> {
    if (entries.length === 0) return Result.succeed(AllowList.empty)
    const names = new Map<string, Ports>()
    const suffixes: Array<{ suffix: string; port: number | undefined }> = []
    const byPort = new Map<number, Net.BlockList>()
    const canonical: Array<string> = []
    let anyPort: Net.BlockList | undefined
    for (const raw of entries) {
      const parsed = EgressAllowList.parseAllowListEntry(raw)
      if ("error" in parsed) return Result.fail(parsed.error)
      const entry = parsed.entry
      canonical.push(EgressAllowList.canonicalEntry(entry))
      switch (entry._tag) {
        case "Range": {
          let list: Net.BlockList
          if (entry.port === undefined) {
            list = anyPort ??= new Net.BlockList()
          } else {
            list = byPort.get(entry.port) ?? new Net.BlockList()
            byPort.set(entry.port, list)
          }
          list.addSubnet(entry.address, entry.prefix, familyName(entry.family))
          break
        }
        case "Name":
          names.set(entry.name, addPort(names.get(entry.name), entry.port))
          break
        case "Suffix":
          suffixes.push({ suffix: entry.suffix, port: entry.port })
          break
      }
    }
    return Result.succeed(new AllowList([...new Set(canonical)].sort().join(","), names, suffixes, anyPort, byPort))
  }
}

/**
 * The address policy as a service, so an operator can add refused ranges and
 * tests can check it directly.
 */
export class EgressPolicy extends Context.Service<EgressPolicy, {
  /** Why the IP literal is refused, or `undefined` when it may be dialled (allow-lists aside). */
  readonly classify: (address: string) => string | undefined
  /**
   * Checks an address the resolver returned for `host`, at connect time,
   * for a connection to `port`. `host` allow-listed by name, or `address`
   * inside an allow-listed range, on that port (or every port), passes.
   */
  readonly checkResolved: (
    host: string,
    address: string,
    allow: AllowList,
    port: number
  ) => EgressRefused | undefined
  /**
   * Checks a URL before it is requested: scheme, user info, localhost names
   * and IP-literal hosts (Node never calls `lookup` for those, so this is
   * their only check). Other host names pass and are checked at connect time.
   */
  readonly checkUrl: (url: URL, allow: AllowList, phase: RefusalPhase) => EgressRefused | undefined
}>()("@janus/gateway/egress/EgressPolicy") {
  /**
   * The policy above, plus `refuse`: extra CIDRs an operator refuses (for
   * example the public ranges of its own VPC), named "refused by operator
   * policy".
   */
  static layer(options?: { readonly refuse?: ReadonlyArray<string> | undefined }): Layer.Layer<
    EgressPolicy,
    InvalidEgressConfig
  > {
    return Layer.effect(
      EgressPolicy,
      Effect.suspend(() => {
        const extra: Array<Rule> = []
        for (const cidr of options?.refuse ?? []) {
          const parsed = EgressAllowList.parseAllowListEntry(cidr)
          if (!("entry" in parsed) || parsed.entry._tag !== "Range" || parsed.entry.port !== undefined) {
            return Effect.fail(
              new InvalidEgressConfig({
                connection: "*",
                message: `refused range "${cidr}" is not an IP address or CIDR`
              })
            )
          }
          const { address, family, prefix } = parsed.entry
          const list = new Net.BlockList()
          list.addSubnet(address, prefix, familyName(family))
          extra.push({ list, reason: "refused by operator policy", family: familyName(family) })
        }
        return Effect.succeed(make(extra.length === 0 ? defaultClassifier : makeClassifier(extra)))
      })
    )
  }

  static readonly layerDefault: Layer.Layer<EgressPolicy> = Layer.sync(EgressPolicy, () => make(defaultClassifier))
}

function make(classifier: Classifier): EgressPolicy["Service"] {
  const classify = (address: string) => classifyWith(classifier, address)

  const checkResolved = (host: string, address: string, allow: AllowList, port: number) => {
    if (allow.allowsName(host, port)) return undefined
    const ip = canonicalIp(address)
    if (ip === undefined) return new EgressRefused({ address, reason: "not an IP address", phase: "connect" })
    if (allow.allowsAddress(ip.address, ip.family, port)) return undefined
    const reason = ip.family === 4 ? classifier.v4(ip.address) : classifier.v6(ip.address)
    return reason === undefined ? undefined : new EgressRefused({ address: ip.address, reason, phase: "connect" })
  }

  const checkUrl = (url: URL, allow: AllowList, phase: RefusalPhase): EgressRefused | undefined => {
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return new EgressRefused({ address: url.protocol, reason: "not an http(s) scheme", phase })
    }
    if (url.username !== "" || url.password !== "") {
      return new EgressRefused({
        address: url.hostname,
        reason: "addressed with credentials in the URL (use the connection's secret)",
        phase
      })
    }
    const ip = canonicalIp(url.hostname)
    if (ip === undefined) {
      const name = normalizeHostName(url.hostname)
      if (name === "") return new EgressRefused({ address: url.href, reason: "a URL without a host", phase })
      if (isLocalhostName(name) && !allow.allowsName(name, portOf(url))) {
        return new EgressRefused({ address: url.hostname, reason: "a localhost name (RFC 6761)", phase })
      }
      return undefined
    }
    if (allow.allowsAddress(ip.address, ip.family, portOf(url))) return undefined
    const reason = ip.family === 4 ? classifier.v4(ip.address) : classifier.v6(ip.address)
    return reason === undefined ? undefined : new EgressRefused({ address: ip.address, reason, phase })
  }

  return EgressPolicy.of({ classify, checkResolved, checkUrl })
}
