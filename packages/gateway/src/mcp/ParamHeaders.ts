/**
 * Rule 6 of the stateless wire: every `tools/call` argument the tool marks
 * with `x-mcp-header` is mirrored in its `Mcp-Param-{Name}` header, so a proxy
 * can route on it without reading the body.
 *
 * - An argument that is absent or null needs no header.
 * - The header is decoded first (visible ASCII, or `=?base64?...?=`); a value
 *   that decodes to nothing valid is a mismatch.
 * - Strings compare exactly, booleans as `true`/`false`, numbers numerically
 *   (`42.0` mirrors `42`); any other argument type cannot be mirrored.
 * - The first violation is the answer (400, HeaderMismatch -32020), naming the
 *   header, the argument and both values.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"
import * as ClientText from "../observability/ClientText.ts"
import { ProtocolError } from "./JsonRpc.ts"
import { decodeHeaderValue } from "./Protocol.ts"
import type { HeaderBinding } from "./ToolList.ts"

const valueAt = (args: unknown, path: ReadonlyArray<string>): unknown => {
  let current = args
  for (const key of path) {
    if (!Predicate.isReadonlyObject(current) || !Object.hasOwn(current, key)) return undefined
    current = current[key]
  }
  return current
}

const headerMatches = (decoded: string, value: unknown): boolean => {
  switch (typeof value) {
    case "string":
      return decoded === value
    case "boolean":
      return decoded === String(value)
    case "number":
      return decoded.trim() !== "" && Number(decoded) === value
    default:
      return false
  }
}

/** Checks `Mcp-Param-*` headers against the arguments; the first violation, if any. */
export const checkParamHeaders = (
  headers: Readonly<Record<string, string | undefined>>,
  bindings: ReadonlyArray<HeaderBinding>,
  args: unknown
): ProtocolError | undefined => {
  for (const binding of bindings) {
    const value = valueAt(args, binding.path)
    if (value === undefined || value === null) continue
    const raw = headers[binding.header]
    if (raw === undefined) {
      return ProtocolError.headerMismatch(
        `${binding.headerName} header is missing: arguments.${binding.display} is ${
          ClientText.json(value)
        }, and the tool declares it with x-mcp-header, so the header must carry the same value`
      )
    }
    const decoded = decodeHeaderValue(raw)
    if (decoded === undefined) {
      return ProtocolError.headerMismatch(
        `${binding.headerName} header ${
          ClientText.json(raw)
        } has invalid characters or invalid Base64; expected visible ASCII or =?base64?<valid Base64>?=`
      )
    }
    if (!headerMatches(decoded, value)) {
      return ProtocolError.headerMismatch(
        `${binding.headerName} header ${ClientText.json(decoded)} does not match arguments.${binding.display} ${
          ClientText.json(value)
        }`
      )
    }
  }
  return undefined
}
