/**
 * Turns a downstream HTTP response into an MCP CallToolResult.
 *
 * **Rules**
 *
 * - 2xx: the body as text content; a JSON body is also given as
 *   `structuredContent` (an object as is; any other JSON value wrapped as
 *   `{ "result": value }`, since MCP requires an object there).
 * - 4xx/5xx: `isError: true` with the status and a trimmed body
 *   (`MAX_ERROR_BODY` characters), so the model sees why without a downstream
 *   flooding the client with an error page.
 * - The JSON text is parsed once and the original text is reused as the
 *   text content: no re-serialisation.
 * - A tool that declares an `outputSchema` returns `structuredContent` that
 *   conforms to it, or an `isError` result saying where it does not (and
 *   nothing of the non-conforming response): MCP requires structured results
 *   to conform, and a client validates them against the schema it listed.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"

/** At most this many characters of a downstream error body reach the client. */
export const MAX_ERROR_BODY = 2_048

export interface ToolResult {
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: Record<string, unknown>
  readonly isError?: boolean
}

const isJson = (contentType: string | undefined): boolean =>
  contentType !== undefined && /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.trim())

export const fromResponse = (response: {
  readonly status: number
  readonly statusText?: string
  readonly contentType: string | undefined
  readonly body: string
}): ToolResult => {
  if (response.status >= 400) {
    const trimmed = response.body.length > MAX_ERROR_BODY
      ? `${response.body.slice(0, MAX_ERROR_BODY)}… (${response.body.length - MAX_ERROR_BODY} more characters)`
      : response.body
    const reason = response.statusText ? ` ${response.statusText}` : ""
    return {
      content: [{ type: "text", text: `HTTP ${response.status}${reason}${trimmed === "" ? "" : `: ${trimmed}`}` }],
      isError: true
    }
  }
  if (isJson(response.contentType) && response.body !== "") {
    try {
      const value: unknown = JSON.parse(response.body)
      const structuredContent = Predicate.isReadonlyObject(value) ? value : { result: value }
      return { content: [{ type: "text", text: response.body }], structuredContent }
    } catch {
      // A body labelled JSON that is not JSON is still worth showing as text.
    }
  }
  return { content: [{ type: "text", text: response.body }] }
}

/**
 * `result` when it is an error or its `structuredContent` passes `check`;
 * otherwise an error result saying what does not conform.
 */
export const conform = (
  tool: string,
  result: ToolResult,
  contentType: string | undefined,
  check: (structuredContent: unknown) => string | undefined
): ToolResult => {
  if (result.isError === true) return result
  if (result.structuredContent === undefined) {
    return errorResult(
      `Tool '${tool}' declares an outputSchema, but the downstream answered with no structured content (${
        contentType === undefined ? "a body without a content type" : `a ${contentType.split(";")[0]} body`
      }, not JSON); the result was not passed on`
    )
  }
  const problem = check(result.structuredContent)
  return problem === undefined ? result : errorResult(
    `The result of tool '${tool}' does not conform to the tool's outputSchema: ${problem}; the result was not passed on`
  )
}

const errorResult = (text: string): ToolResult => ({ content: [{ type: "text", text }], isError: true })
