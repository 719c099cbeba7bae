/**
 * HTTP responses of the MCP endpoints: a JSON-RPC message as
 * `application/json`, a JSON-RPC error with the HTTP status its rule requires,
 * and `202 Accepted` for accepted notifications and responses (Streamable HTTP,
 * "Sending Messages to the Server"); and the 415 of a POST whose body is not
 * declared `application/json`, which both HTTP transports refuse alike.
 *
 * @since 0.1.0
 */
import { HttpServerResponse } from "effect/http"
import { encodeError, ProtocolError, type RequestId } from "./JsonRpc.ts"
import { Header, mediaTypeEssence } from "./Protocol.ts"

/** An encoded JSON-RPC message as `application/json`. */
export const json = (
  body: string,
  status = 200,
  headers?: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(body, {
    status,
    contentType: "application/json",
    ...(headers === undefined ? {} : { headers })
  })

/** A JSON-RPC error response with the error's HTTP status. */
export const error = (
  id: RequestId | null,
  failure: ProtocolError,
  headers?: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse => json(encodeError(id, failure), failure.status, headers)

/** `202 Accepted`, no body. */
export const accepted: HttpServerResponse.HttpServerResponse = HttpServerResponse.empty({ status: 202 })

/** `204 No Content`. */
export const noContent: HttpServerResponse.HttpServerResponse = HttpServerResponse.empty({ status: 204 })

/** The 415 refusal of a POST whose `Content-Type` is not `application/json`; `undefined` when it is. */
export const unlessJsonBody = (
  headers: Readonly<Record<string, string | undefined>>
): HttpServerResponse.HttpServerResponse | undefined => {
  const contentType = mediaTypeEssence(headers[Header.contentType])
  return contentType === "application/json" ? undefined : error(
    null,
    ProtocolError.invalidRequest(
      `Content-Type ${JSON.stringify(contentType ?? "(missing)")} is not supported; expected application/json`,
      415
    )
  )
}

/** A request body that parsed as JSON. */
export interface ParsedBody {
  readonly _tag: "ParsedBody"
  readonly value: unknown
}

/** Tells a parsed body from the response that refuses the request. */
export const isParsedBody = (u: ParsedBody | HttpServerResponse.HttpServerResponse): u is ParsedBody =>
  "_tag" in u && u._tag === "ParsedBody"
