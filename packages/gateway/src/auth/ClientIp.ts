/**
 * The client address of a request, the key of the per-IP limiter.
 *
 * **Rules**
 *
 * - The address is the socket's peer. `X-Forwarded-For` is read only when
 *   that peer is a trusted proxy (`trustedProxies`, a list of CIDRs or
 *   addresses): any client can send the header, and trusting it from anyone
 *   would let an attacker take a fresh bucket per request.
 * - Behind trusted proxies the header is walked from the right (the hop
 *   nearest to Janus first): trusted hops are skipped and the first untrusted
 *   address is the client. Nothing left of it is read (the client wrote it).
 *   When every hop is trusted, the leftmost is the client. An entry that is
 *   not an address ends the walk at the last trusted hop. Entries may carry a
 *   port (`1.2.3.4:5678`, `[2001:db8::1]:443`).
 * - `::ffff:a.b.c.d` (IPv4-mapped, what a dual-stack socket reports) is the
 *   IPv4 address `a.b.c.d`.
 * - The limiter key of an IPv6 client is its /64 (`2001:db8:0:1::/64`): one
 *   subscriber commonly holds a whole /64, and a per-address key would let it
 *   rotate addresses for fresh buckets. An IPv4 client is keyed by address.
 * - No socket address (not a TCP request): the key `unknown`, one bucket.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { Headers } from "effect/http"
import * as Net from "node:net"

/** A `trustedProxies` entry that is not a CIDR or an address. */
export class InvalidTrustedProxy extends Schema.TaggedError<InvalidTrustedProxy>()("InvalidTrustedProxy", {
  value: Schema.String
}) {
  override get message(): string {
    return `Trusted proxy ${JSON.stringify(this.value)} is not an IP address or CIDR ` +
      `(expected e.g. 10.0.0.0/8, 192.168.1.10 or fd00::/8)`
  }
}

/** The eight groups of a valid IPv6 address (no zone). */
const ipv6Groups = (address: string): Array<number> => {
  let text = address
  const tail: Array<number> = []
  const lastColon = text.lastIndexOf(":")
  if (text.indexOf(".", lastColon) !== -1) {
    // Embedded IPv4 (`::ffff:1.2.3.4`): its two groups come last.
    const [a = 0, b = 0, c = 0, d = 0] = text.slice(lastColon + 1).split(".").map(Number)
    tail.push((a << 8) | b, (c << 8) | d)
    text = text.slice(0, lastColon + 1)
    if (!text.endsWith("::")) text = text.slice(0, -1)
  }
  const parse = (part: string) => part === "" ? [] : part.split(":").map((g) => parseInt(g, 16))
  const parts = text.split("::")
  const left = parse(parts[0]!)
  if (parts.length === 1) return [...left, ...tail]
  const right = [...parse(parts[1]!), ...tail]
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}

/** The IPv4 address of an IPv4-mapped IPv6 address, or undefined. */
const mappedIpv4 = (address: string): string | undefined => {
  const lower = address.toLowerCase()
  if (lower.startsWith("::ffff:")) {
    const rest = address.slice(7)
    if (Net.isIPv4(rest)) return rest
  }
  if (!lower.includes("ffff")) return undefined
  const g = ipv6Groups(lower)
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`
  }
  return undefined
}

/**
 * A canonical address: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 without
 * its zone; undefined when `raw` is not an address.
 */
export const normalize = (raw: string): string | undefined => {
  if (Net.isIPv4(raw)) return raw
  const percent = raw.indexOf("%")
  const address = percent === -1 ? raw : raw.slice(0, percent)
  if (!Net.isIPv6(address)) return undefined
  return mappedIpv4(address) ?? address.toLowerCase()
}

/** The limiter key of a normalized address: IPv4 itself, IPv6 its /64. */
export const bucketOf = (address: string): string => {
  if (!address.includes(":")) return address
  const g = ipv6Groups(address)
  return `${g[0]!.toString(16)}:${g[1]!.toString(16)}:${g[2]!.toString(16)}:${g[3]!.toString(16)}::/64`
}

/** An `X-Forwarded-For` entry without port or brackets, normalized; undefined when not an address. */
const forwardedEntry = (entry: string): string | undefined => {
  const text = entry.trim()
  if (text.startsWith("[")) {
    const end = text.indexOf("]")
    return end === -1 ? undefined : normalize(text.slice(1, end))
  }
  const colon = text.indexOf(":")
  if (colon !== -1 && colon === text.lastIndexOf(":")) return normalize(text.slice(0, colon))
  return normalize(text)
}

/** Resolves the client address of requests. */
export interface ClientIp {
  /** The client's address, normalized (for logs and audit). */
  readonly address: (headers: Headers.Headers, remoteAddress: string | undefined) => string
  /** The per-IP limiter key of the client. */
  readonly bucket: (headers: Headers.Headers, remoteAddress: string | undefined) => string
}

/** Parses `trustedProxies`; fails on the first entry that is neither an address nor a CIDR. */
export const make = (trustedProxies: ReadonlyArray<string> = []): ClientIp | InvalidTrustedProxy => {
  const list = new Net.BlockList()
  for (const raw of trustedProxies) {
    const value = raw.trim()
    if (value === "") continue
    const slash = value.indexOf("/")
    const network = normalize(slash === -1 ? value : value.slice(0, slash))
    if (network === undefined) return new InvalidTrustedProxy({ value: raw })
    const family = network.includes(":") ? "ipv6" : "ipv4"
    const max = family === "ipv4" ? 32 : 128
    const prefixText = slash === -1 ? String(max) : value.slice(slash + 1)
    const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN
    if (!(prefix >= 0 && prefix <= max)) return new InvalidTrustedProxy({ value: raw })
    list.addSubnet(network, prefix, family)
    // An IPv4 rule also covers the IPv4-mapped form, which `normalize` already folds.
  }
  const anyTrusted = trustedProxies.some((p) => p.trim() !== "")
  const trusted = (address: string) => list.check(address, address.includes(":") ? "ipv6" : "ipv4")

  const address = (headers: Headers.Headers, remoteAddress: string | undefined): string => {
    if (remoteAddress === undefined) return "unknown"
    let client = normalize(remoteAddress)
    if (client === undefined) return "unknown"
    if (!anyTrusted || !trusted(client)) return client
    const forwarded = headers["x-forwarded-for"]
    if (forwarded === undefined) return client
    const hops = forwarded.split(",")
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = forwardedEntry(hops[i]!)
      if (hop === undefined) return client
      client = hop
      if (!trusted(hop)) return hop
    }
    return client
  }

  return {
    address,
    bucket: (headers, remoteAddress) => {
      const client = address(headers, remoteAddress)
      return client.includes(":") ? bucketOf(client) : client
    }
  }
}
