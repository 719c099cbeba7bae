/**
 * The grammar of a connection's egress allow-list entries: what may be
 * written, and what each entry means.
 *
 * **Rules**
 *
 * - An entry is an IP address (`10.0.0.5`, `fd00::1`), a CIDR
 *   (`10.0.0.0/8`, `fd00::/8`), a host name (`billing.internal`) or a suffix
 *   (`.svc.cluster.local`, also spelled `*.svc.cluster.local`, which matches
 *   names under it but not the suffix itself), each with an optional port:
 *   `10.0.0.5:8443`, `10.0.0.0/8:8443`, `[fd00::1]:8443`, `[fd00::/8]:8443`,
 *   `billing.internal:8443`, `.svc.cluster.local:8443`. IPv6 takes brackets
 *   when it has a port (an unbracketed `fd00::1:8443` is an address).
 * - An entry with a port allows that destination on that port only (the
 *   scheme's default port for a URL without one); without a port, on every
 *   port.
 * - Anything else is refused when it is written, with the value, what is
 *   wrong with it and the accepted forms: a URL (`http://…`), a path, user
 *   info, a zone id or any `%`, a port outside 1–65535, a prefix too long
 *   for its family, a lone `*`, IPv4 in brackets.
 * - Spellings are canonicalised as a URL's host is (WHATWG parser): IPv4
 *   shorthand (`127.1`), IPv6 compression and case, host-name case, a
 *   trailing dot and IDNs (to punycode). The storage keeps the entry as
 *   written; the gateway compiles the parsed form.
 *
 * This lives in storage because it is the format of a stored field: every
 * write path (admin API, CLI, OpenAPI import) goes through `Connections`,
 * which refuses a bad entry before anything is written.
 *
 * @since 0.1.0
 */
import * as Net from "node:net"

/** One parsed entry; `port` is `undefined` for every port. */
export type AllowListEntry =
  | {
    readonly _tag: "Range"
    /** Canonical IP address (IPv6 compressed, lower case). */
    readonly address: string
    readonly family: 4 | 6
    readonly prefix: number
    readonly port: number | undefined
  }
  | { readonly _tag: "Name"; readonly name: string; readonly port: number | undefined }
  /** `suffix` starts with a dot: `.svc.cluster.local`. */
  | { readonly _tag: "Suffix"; readonly suffix: string; readonly port: number | undefined }

/** The accepted forms, for error messages. */
export const ALLOW_LIST_FORMS = "an IP address (10.0.0.5, fd00::1), a CIDR (10.0.0.0/8, fd00::/8), " +
  "a host name (billing.internal) or a suffix (.svc.cluster.local or *.svc.cluster.local), " +
  "each with an optional port (10.0.0.5:8443, 10.0.0.0/8:8443, [fd00::1]:8443, [fd00::/8]:8443, " +
  "billing.internal:8443, .svc.cluster.local:8443)"

/**
 * The canonical spelling of an IP literal (brackets and zone id removed,
 * IPv6 compressed and lower-cased), or `undefined` when `input` is not one.
 */
export const canonicalIp = (input: string): { readonly address: string; readonly family: 4 | 6 } | undefined => {
  let host = input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input
  const zone = host.indexOf("%")
  if (zone !== -1) host = host.slice(0, zone)
  const family = Net.isIP(host)
  if (family === 4) return { address: host, family: 4 }
  if (family !== 6) return undefined
  try {
    return { address: new URL(`http://[${host}]/`).hostname.slice(1, -1), family: 6 }
  } catch {
    return undefined
  }
}

/** Lower-cased, without the trailing dot: the spelling host names are compared in. */
export const normalizeHostName = (host: string): string => {
  const lower = host.toLowerCase()
  return lower.endsWith(".") ? lower.slice(0, -1) : lower
}

const labels = /^(?:[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/
const portPattern = /^[0-9]{1,5}$/
const bracketed = /^\[([^\]]*)\](?:\/([^:]*))?(?::(.*))?$/

type Parsed = { readonly entry: AllowListEntry } | { readonly problem: string }

const fail = (problem: string): Parsed => ({ problem })

const parsePort = (raw: string | undefined): number | undefined | Parsed => {
  if (raw === undefined) return undefined
  const port = Number(raw)
  return portPattern.test(raw) && port >= 1 && port <= 65_535
    ? port
    : fail(`the port must be a number from 1 to 65535, got ${JSON.stringify(raw)}`)
}

const range = (ip: string, prefixText: string | undefined, portText: string | undefined): Parsed => {
  const canonical = canonicalIp(ip)
  if (canonical === undefined) return fail(`${JSON.stringify(ip)} is not an IP address`)
  const max = canonical.family === 4 ? 32 : 128
  const prefix = prefixText === undefined ? max : Number(prefixText)
  if (prefixText !== undefined && (!/^[0-9]{1,3}$/.test(prefixText) || prefix > max)) {
    return fail(`the prefix length must be an integer from 0 to ${max}`)
  }
  const port = parsePort(portText)
  if (typeof port === "object") return port
  return { entry: { _tag: "Range", address: canonical.address, family: canonical.family, prefix, port } }
}

/** A host as the URL parser reads it (IPv4 shorthand, case, IDN), or `undefined` when it cannot be one. */
const urlHost = (host: string): string | undefined => {
  try {
    return new URL(`http://${host}/`).hostname
  } catch {
    return undefined
  }
}

const parse = (entry: string): Parsed => {
  if (entry === "") return fail("it is empty")
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) {
    return fail("it is a URL; write the host, and the port if only one is allowed (billing.internal:8443)")
  }
  if (/[\s\p{Cc}]/u.test(entry)) return fail("it contains a space or a control character")
  if (entry.includes("@")) return fail("it contains user info (@)")
  if (/[?#\\]/.test(entry)) return fail("it contains ?, # or \\, which a host cannot")
  if (entry.includes("%")) return fail("zone ids and percent signs are not allowed")

  // [v6], [v6]:port, [v6/len], [v6/len]:port, [v6]/len, [v6]/len:port
  if (entry.startsWith("[")) {
    const m = bracketed.exec(entry)
    if (m === null) return fail("an opening [ without its closing ]")
    const [inner, outerPrefix, port] = [m[1]!, m[2], m[3]]
    const slash = inner.indexOf("/")
    const ip = slash === -1 ? inner : inner.slice(0, slash)
    const prefix = slash === -1 ? outerPrefix : inner.slice(slash + 1)
    if (slash !== -1 && outerPrefix !== undefined) return fail("two prefix lengths")
    if (Net.isIP(ip) !== 6) return fail("only an IPv6 address goes in brackets")
    return range(ip, prefix, port)
  }

  // Two colons or more without brackets: an IPv6 address or CIDR, never a port.
  const colons = entry.split(":").length - 1
  if (colons >= 2) {
    const slash = entry.indexOf("/")
    const ip = slash === -1 ? entry : entry.slice(0, slash)
    if (Net.isIP(ip) !== 6) {
      return fail("not an IPv6 address (an IPv6 address with a port takes brackets: [fd00::1]:8443)")
    }
    return range(ip, slash === -1 ? undefined : entry.slice(slash + 1), undefined)
  }
  const [host, port] = colons === 1 ? entry.split(":") as [string, string] : [entry, undefined]

  const slash = host.indexOf("/")
  if (slash !== -1) {
    const ip = host.slice(0, slash)
    if (Net.isIP(ip) === 0) return fail("a path or a prefix length after something that is not an IP address")
    return range(ip, host.slice(slash + 1), port)
  }

  const suffix = host.startsWith("*.") ? host.slice(2) : host.startsWith(".") ? host.slice(1) : undefined
  const name = suffix ?? host
  const parsed = urlHost(name)
  if (parsed === undefined) return fail("not an IP address, a host name or a suffix")
  const ip = canonicalIp(parsed)
  if (ip !== undefined) {
    if (suffix !== undefined) return fail("a suffix is made of names, not an IP address")
    return range(ip.address, undefined, port)
  }
  const normal = normalizeHostName(parsed)
  if (!labels.test(normal)) return fail("not an IP address, a host name or a suffix")
  const checkedPort = parsePort(port)
  if (typeof checkedPort === "object") return checkedPort
  return {
    entry: suffix === undefined
      ? { _tag: "Name", name: normal, port: checkedPort }
      : { _tag: "Suffix", suffix: `.${normal}`, port: checkedPort }
  }
}

/**
 * Parses one entry (surrounding spaces ignored). A failure has the problem
 * alone (`problem`) and as a sentence naming the entry, the problem and the
 * accepted forms (`error`).
 */
export const parseAllowListEntry = (
  raw: string
): { readonly entry: AllowListEntry } | { readonly problem: string; readonly error: string } => {
  const parsed = parse(raw.trim())
  return "entry" in parsed ? parsed : {
    problem: parsed.problem,
    error: `allow-list entry ${JSON.stringify(raw)}: ${parsed.problem}; expected ${ALLOW_LIST_FORMS}`
  }
}

/** The canonical spelling of a parsed entry: equal for equal entries. */
export const canonicalEntry = (entry: AllowListEntry): string => {
  const port = entry.port === undefined ? "" : `:${entry.port}`
  switch (entry._tag) {
    case "Range":
      return entry.family === 6
        ? `[${entry.address}/${entry.prefix}]${port}`
        : `${entry.address}/${entry.prefix}${port}`
    case "Name":
      return `${entry.name}${port}`
    case "Suffix":
      return `*${entry.suffix}${port}`
  }
}
